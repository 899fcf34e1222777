#!/usr/bin/env python3
"""realized_model.py's scheduler against kubesim's own: the model copies kubesim's filters and
scores (tests/kubesim/scheduler.cpp) to place replacements without a running cluster, so this
test keeps the copy true. It starts kubesim on a cluster of spot-like and on-demand-like nodes
(some with PreferNoSchedule or NoSchedule taints, labels, an extended resource, one cordoned,
pods already running), creates pods one at a time (random requests, tolerations, node selectors,
and now and then the preferred node affinity that steering adds), and checks that kubesim binds
each to the node the model's Cluster.schedule() picks, or leaves it Pending when the model finds
none. The model then charges the pod where kubesim put it, so one difference is reported once.

  realized_model_scheduler_test.py KUBESIM_BINARY
"""

import json
import os
import random
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "tests", "support"))
import kubesim  # noqa: E402
import realized_model  # noqa: E402

GPU = "example.com/gpu"
NAMESPACE = "apps"


def node(rng, name):
    cpu, memory = rng.choice([(4, 16), (8, 32), (16, 64), (32, 128)])
    taints = []
    if rng.random() < 0.3:
        taints.append({"key": "spotshift.io/on-demand", "value": "true", "effect": "PreferNoSchedule"})
    if rng.random() < 0.15:
        taints.append({"key": "dedicated", "value": "batch", "effect": "NoSchedule"})
    allocatable = {"cpu": str(cpu), "memory": f"{memory}Gi", "pods": str(rng.choice([4, 8, 110]))}
    if rng.random() < 0.4:
        allocatable[GPU] = str(rng.choice([1, 2, 4, 8]))
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": "node-" + name,
                         "labels": {"kubernetes.io/hostname": name, "pool": rng.choice(["a", "b"])}},
            "spec": {"taints": taints},
            "status": {"allocatable": allocatable, "capacity": dict(allocatable),
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def pod(rng, name, nodes, on=None):
    requests = {"cpu": rng.choice(["100m", "250m", "500m", "1", "1500m", "3"]),
                "memory": rng.choice(["128Mi", "512Mi", "1Gi", "3Gi", "6Gi"])}
    if rng.random() < 0.2:
        requests[GPU] = str(rng.choice([1, 2]))
    spec = {"containers": [{"name": "app", "image": "app:1", "resources": {"requests": requests}}]}
    if GPU in requests:
        spec["containers"][0]["resources"]["limits"] = {GPU: requests[GPU]}
    tolerations = []
    if rng.random() < 0.4:
        tolerations.append({"key": "spotshift.io/on-demand", "operator": "Exists", "effect": "PreferNoSchedule"})
    if rng.random() < 0.3:
        tolerations.append({"key": "dedicated", "operator": "Equal", "value": "batch", "effect": "NoSchedule"})
    if tolerations:
        spec["tolerations"] = tolerations
    if rng.random() < 0.2:
        spec["nodeSelector"] = {"pool": rng.choice(["a", "b"])}
    steered = None
    if on:
        spec["nodeName"] = on
    elif rng.random() < 0.3:
        # What steering adds (lib/drain/steering.cpp): prefer the planned node, weight 100.
        steered = rng.choice(nodes)
        spec["affinity"] = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "preference": {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [steered]}]}}]}}
    item = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACE, "uid": "pod-" + name},
            "spec": spec}
    if on:
        item["status"] = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    return item, steered


def request(base, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(base + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def placement(base, name):
    """The node kubesim bound the pod to, or None once it reports the pod unschedulable."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        p = request(base, "GET", f"/api/v1/namespaces/{NAMESPACE}/pods/{name}")
        if p["spec"].get("nodeName"):
            return p["spec"]["nodeName"]
        for c in p.get("status", {}).get("conditions", []):
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                return None
        time.sleep(0.02)
    sys.exit(f"pod {name}: neither bound nor reported unschedulable after 10 s")


def main():
    binary = sys.argv[1]
    rng = random.Random(11)
    names = [f"node-{i:02d}" for i in range(12)]
    items = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}]
    items += [node(rng, n) for n in names]
    items[1]["spec"]["unschedulable"] = True  # a cordoned node, as a drained one is
    for i in range(10):
        existing, _ = pod(rng, f"running-{i}", names, on=rng.choice(names[1:]))
        items.append(existing)
    model = realized_model.Cluster(items)
    with tempfile.TemporaryDirectory() as tmp:
        scenario = os.path.join(tmp, "scenario.json")
        with open(scenario, "w") as f:
            json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
        server, port = kubesim.start(binary, ["--scenario", scenario, "--port", "0"], tmp, timeout=20)
        try:
            base = f"http://127.0.0.1:{port}"
            differences, bound, pending, steered_pods = [], 0, 0, 0
            for i in range(150):
                item, steered = pod(rng, f"new-{i:03d}", names)
                want = realized_model.requests(item)
                expected = model.schedule(item, want, None, steered, steered is not None)
                request(base, "POST", f"/api/v1/namespaces/{NAMESPACE}/pods", item)
                got = placement(base, item["metadata"]["name"])
                if got != expected:
                    differences.append(f"{item['metadata']['name']} ({json.dumps(item['spec'])}): kubesim {got}, model {expected}")
                if got is None:
                    pending += 1
                    continue
                bound += 1
                steered_pods += steered is not None
                model.pods[(NAMESPACE, item["metadata"]["name"])] = item
                model.move(item, want, got)
        finally:
            server.terminate()
            server.wait(timeout=10)
    print(f"{bound} pods bound ({steered_pods} steered), {pending} left Pending, {len(differences)} placed differently")
    # Both outcomes, and steering, came up often enough to mean something.
    if bound < 60 or pending < 10 or steered_pods < 15:
        sys.exit(f"too few cases: {bound} bound, {pending} Pending, {steered_pods} steered")
    if differences:
        sys.exit("the model's scheduler and kubesim's disagree:\n  " + "\n  ".join(differences))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""realized_model.py on a cluster small enough to reason about: three spot nodes with 8 GPUs,
and three on-demand nodes, one running a 6-GPU and a 2-GPU pod, the others a 7-GPU pod each. The
plan in drainOrder RequestedCPU puts the 6-GPU and 2-GPU pods on one spot node and a 7-GPU pod
on each of the others, and drains the first node first (least CPU; every pod fits on all three
spot nodes, so the sequence keeps that order). kubesim's scheduler gives the 2-GPU pod the
emptiest spot node instead of the 6-GPU pod's, leaving 6 GPUs there, so one 7-GPU pod finds no
room and its node is not drained; steered, the 2-GPU pod joins the 6-GPU pod and all three
drain. In the default drainOrder, Auto (ScarceResources here, since the pods ask for GPUs), the
7-GPU nodes drain first and the pair last, when the scheduler has one spot node left for both:
all three drain without steering.

Then a drain that stops halfway: one on-demand node runs a 2-GPU pod asking for more CPU and an
8-GPU pod; the plan puts the 2-GPU pod on a spot node with 2 GPUs free and much of its CPU taken,
the 8-GPU pod on an empty 8-GPU node. Evicted first, the 2-GPU pod's replacement goes to the
emptier node, the check before the next eviction finds no room for the 8-GPU pod, and the drain
stops; steered, the node empties.

  realized_model_test.py SPOTSHIFT_BINARY
"""

import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
GPU = "example.com/gpu"


def node(name, role, gpus):
    taints = [{"key": "spotshift.io/on-demand", "value": "true", "effect": "PreferNoSchedule"}] if role == "worker" else []
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "uid": "node-" + name, "labels": {"kubernetes.io/hostname": name, f"node-role.kubernetes.io/{role}": ""}},
            "spec": {"taints": taints},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110", GPU: str(gpus)},
                       "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110", GPU: str(gpus)},
                       "conditions": [{"type": "Ready", "status": "True"}]}}


def workload(name, on, cpu, gpus):
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
          "metadata": {"name": name, "namespace": "apps", "uid": "rs-" + name, "labels": {"app": name}},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}}}}
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name + "-0", "namespace": "apps", "uid": "pod-" + name, "labels": {"app": name},
                        "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": name, "uid": "rs-" + name, "controller": True}]},
           "spec": {"nodeName": on, "containers": [{"name": "app", "image": "app:1",
                                                      "resources": {"requests": {"cpu": cpu, "memory": "8Gi", GPU: str(gpus)},
                                                                    "limits": {GPU: str(gpus)}}}]},
           "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    return [rs, pod]


def run(binary, snapshot, policy, *extra):
    r = subprocess.run([sys.executable, os.path.join(HERE, "realized_model.py"), "--snapshot", snapshot, "--policy", policy,
                        "--spotshift", binary, *extra], capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"realized_model.py {' '.join(extra)} failed:\n{r.stderr}{r.stdout}")
    return json.loads(r.stdout)


def expect(what, got, want):
    if got != want:
        sys.exit(f"{what}: got {got!r}, want {want!r}")
    print(f"ok: {what} = {got!r}")


def write(tmp, items, spec="{drainOrder: RequestedCPU}"):
    snapshot, policy = os.path.join(tmp, "cluster.json"), os.path.join(tmp, "policy.yaml")
    with open(snapshot, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": items}, f)
    with open(policy, "w") as f:
        f.write(f"apiVersion: spotshift.io/v1alpha1\nkind: ReschedulePolicy\nmetadata: {{name: default}}\nspec: {spec}\n")
    return snapshot, policy


def main():
    binary = sys.argv[1]
    paired = [node("spot-a", "spot-worker", 8), node("spot-b", "spot-worker", 8), node("spot-c", "spot-worker", 8),
              node("od-1", "worker", 8), node("od-2", "worker", 8), node("od-3", "worker", 8)]
    paired += workload("six", "od-1", "1", 6) + workload("two", "od-1", "1", 2)
    paired += workload("seven-a", "od-2", "3", 7) + workload("seven-b", "od-3", "3", 7)
    halfway = [node("spot-a", "spot-worker", 8), node("spot-b", "spot-worker", 8), node("od-1", "worker", 8)]
    halfway += workload("busy", "spot-b", "28", 6) + workload("two", "od-1", "2", 2) + workload("eight", "od-1", "1", 8)
    with tempfile.TemporaryDirectory() as tmp:
        snapshot, policy = write(tmp, paired)
        off = run(binary, snapshot, policy)
        expect("first plan drainable", off["firstPlanDrainable"], 3)
        expect("pods the first plan moves", off["firstPlanPods"], 4)
        expect("emptied without steering", off["emptied"], 2)
        expect("not emptied without steering", off["firstPlanNotEmptied"], ["od-3"])
        expect("replacements on the planned node without steering", off["onPlannedNode"], 2)
        expect("drains stopped without steering", off["abortedDrains"], [])
        steered = run(binary, snapshot, policy, "--steering")
        expect("emptied with steering", steered["emptied"], 3)
        expect("replacements on the planned node with steering", steered["onPlannedNode"], 4)
        expect("evictions on the first plan's nodes with steering", steered["evictionsOnFirstPlanNodes"], steered["firstPlanPods"])
        snapshot, policy = write(tmp, paired, spec="{}")
        auto = run(binary, snapshot, policy)
        expect("drainOrder Auto: first plan drainable", auto["firstPlanDrainable"], 3)
        expect("drainOrder Auto: emptied without steering", auto["emptied"], 3)

        snapshot, policy = write(tmp, halfway)
        off = run(binary, snapshot, policy)
        expect("halfway: first plan drainable", off["firstPlanDrainable"], 1)
        expect("halfway: emptied without steering", off["emptied"], 0)
        expect("halfway: drains stopped without steering", off["abortedDrains"], ["od-1"])
        expect("halfway: evictions without steering", off["evictions"], 1)
        steered = run(binary, snapshot, policy, "--steering")
        expect("halfway: emptied with steering", steered["emptied"], 1)
        expect("halfway: drains stopped with steering", steered["abortedDrains"], [])


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A quick model of figure g (realized drains): plan a snapshot with the real planner, drain the
first node of the plan's sequence as if at once, place each replacement the way kubesim's
scheduler scores nodes, plan again, until nothing is drainable.

  realized_model.py --snapshot cluster.json --policy policy.yaml [--spotshift BIN] [--steering]

The clusters are scenario_gen's (`scenario_gen openb --workloads [--seed S] [--multi-gpu 0.5]`),
the policies those of kubesim_bench's figure g (kept with `--keep`). A run takes a minute or two on
the multi-GPU variant and about five on the others, where the bench takes 9 to 35: use it to
compare drain sequences before measuring the one you keep. It is a model, not the figure: no
time passes (no drain delay, no budgets waiting for replacements to turn Ready), replacements keep
their pod's name and are placed at once (none is Pending: a pod that fits nowhere stops its
drain, as the operator's check before each eviction does, and that node is not tried again),
and the scheduler is kubesim's (filters: taints, nodeSelector, pod count and every resource
asked for; scores: LeastAllocated over CPU and memory, TaintToleration's PreferNoSchedule weight
3, and with --steering NodeAffinity weight 2 for the planned node). Affinity, spread constraints
and host ports are not modelled; pods that have them are counted and reported.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from decimal import Decimal

SUFFIX = {"": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50}


def quantity(text, milli=False):
    """A Kubernetes quantity as an integer: in thousandths with milli (CPU), else whole units."""
    m = re.fullmatch(r"([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)", str(text).strip())
    if not m or m.group(2) not in SUFFIX:
        raise ValueError(f"not a quantity: {text!r}")
    value = Decimal(m.group(1)) * SUFFIX[m.group(2)] * (1000 if milli else 1)
    return int(value.to_integral_value(rounding="ROUND_CEILING"))


def requests(pod):
    """The pod's requests as the scheduler counts them: its containers' sum, at least each init
    container's, plus its overhead."""
    def of(container):
        out = Counter()
        for name, value in container.get("resources", {}).get("requests", {}).items():
            out[name] += quantity(value, milli=(name == "cpu"))
        return out
    spec = pod["spec"]
    total = Counter()
    for c in spec.get("containers", []):
        total += of(c)
    for c in spec.get("initContainers", []):
        for name, value in of(c).items():
            total[name] = max(total[name], value)
    for name, value in spec.get("overhead", {}).items():
        total[name] += quantity(value, milli=(name == "cpu"))
    return total


def tolerated(tolerations, taint):
    for t in tolerations:
        if t.get("effect") and t["effect"] != taint["effect"]:
            continue
        if t.get("operator") == "Exists":
            if not t.get("key") or t["key"] == taint["key"]:
                return True
        elif t.get("key") == taint["key"] and t.get("value", "") == taint.get("value", ""):
            return True
    return False


class Cluster:
    def __init__(self, items):
        self.items = items
        self.nodes = {}
        self.pods = {}
        for item in items:
            if item["kind"] == "Node":
                self.nodes[item["metadata"]["name"]] = item
            elif item["kind"] == "Pod":
                self.pods[(item["metadata"].get("namespace", "default"), item["metadata"]["name"])] = item
        self.alloc = {}
        for name, node in self.nodes.items():
            a = node["status"].get("allocatable", {})
            self.alloc[name] = Counter({k: quantity(v, milli=(k == "cpu")) for k, v in a.items()})
        self.used = {name: Counter() for name in self.nodes}
        # Readiness and cordons do not change while the model runs: the candidates, in kubesim's
        # order (by name), are taken once.
        self.schedulable = sorted(name for name in self.nodes if self.usable(name))
        self.unmodelled = 0
        for pod in self.pods.values():
            node = pod["spec"].get("nodeName")
            if node in self.used and pod.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
                self.used[node] += requests(pod)
                self.used[node]["pods"] += 1
            spec = pod["spec"]
            if spec.get("affinity") or spec.get("topologySpreadConstraints") or any(
                    p.get("hostPort") for c in spec.get("containers", []) for p in c.get("ports", [])):
                self.unmodelled += 1

    def usable(self, name):
        node = self.nodes[name]
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in node["status"].get("conditions", []))
        return ready and not node["spec"].get("unschedulable")

    def schedule(self, pod, want, draining, planned, steering):
        """kubesim's choice for the pod asking for `want`: the highest score among the nodes that
        pass, ties to the first by name; None when none passes."""
        tolerations = pod["spec"].get("tolerations", [])
        selector = pod["spec"].get("nodeSelector", {})
        feasible = []
        for name in self.schedulable:
            if name == draining:
                continue
            node = self.nodes[name]
            taints = node["spec"].get("taints", [])
            if any(t["effect"] in ("NoSchedule", "NoExecute") and not tolerated(tolerations, t) for t in taints):
                continue
            labels = node["metadata"].get("labels", {})
            if any(labels.get(k) != v for k, v in selector.items()):
                continue
            a, u = self.alloc[name], self.used[name]
            if u["pods"] + 1 > a["pods"] or any(v > 0 and u[k] + v > a[k] for k, v in want.items() if k != "pods"):
                continue

            def free_share(k):
                return max(0.0, (a[k] - u[k] - want[k]) * 100.0 / a[k]) if a[k] > 0 else 0.0
            least = (free_share("cpu") + free_share("memory")) / 2
            prefer_no = sum(1 for t in taints if t["effect"] == "PreferNoSchedule" and not tolerated(tolerations, t))
            feasible.append((name, least, prefer_no, 100 if steering and name == planned else 0))
        if not feasible:
            return None
        max_pns = max(f[2] for f in feasible)
        max_aff = max(f[3] for f in feasible)
        best, best_score = None, -1.0
        for name, least, pns, aff in feasible:
            taint = 100.0 * (1.0 - pns / max_pns) if max_pns else 100.0
            affinity = 100.0 * aff / max_aff if max_aff else 0.0
            score = least + 3 * taint + 2 * affinity
            if score > best_score + 1e-9:
                best, best_score = name, score
        return best

    def move(self, pod, want, to):
        old = pod["spec"].get("nodeName")
        if old in self.used:
            self.used[old] -= want
            self.used[old]["pods"] -= 1
        pod["spec"]["nodeName"] = to
        self.used[to] += want
        self.used[to]["pods"] += 1


def plan(spotshift, cluster, policy, scratch):
    with open(scratch, "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List", "items": cluster.items}, f)
    r = subprocess.run([spotshift, "plan", "--snapshot", scratch, "--policy", policy, "-o", "json"],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"spotshift plan failed:\n{r.stderr or r.stdout}")
    return json.loads(r.stdout)


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--snapshot", required=True, help="a v1 List in JSON (scenario_gen's output)")
    ap.add_argument("--policy", required=True, help="a ReschedulePolicy file")
    ap.add_argument("--spotshift", default=os.path.join(root, "build-release", "operator", "spotshift"),
                    help="the spotshift binary (default: the release build's)")
    ap.add_argument("--steering", action="store_true", help="prefer each replacement's planned spot node (weight 2, as steering: Preferred)")
    ap.add_argument("--max-drains", type=int, default=100000, help="stop after this many drains")
    args = ap.parse_args()
    if not os.access(args.spotshift, os.X_OK):
        sys.exit(f"{args.spotshift}: not found; build it with `ninja -C build-release operator/spotshift` or pass --spotshift")
    with open(args.snapshot) as f:
        cluster = Cluster(json.load(f)["items"])
    if cluster.unmodelled:
        print(f"note: {cluster.unmodelled} pods have affinity, spread constraints or host ports, which the model ignores", file=sys.stderr)

    first = None
    emptied, evictions, planned, on_demand, aborted = [], Counter(), 0, 0, set()
    with tempfile.TemporaryDirectory() as tmp:
        scratch = os.path.join(tmp, "snapshot.json")
        while len(emptied) < args.max_drains:
            p = plan(args.spotshift, cluster, args.policy, scratch)
            drainable = p.get("drainableNodes", [])
            if first is None:
                first = {n["node"]: len(n.get("moves", [])) for n in drainable}
                on_demand_nodes = set(first) | {n["node"] for n in p.get("undrainableNodes", [])}
            # A drain that stopped is not tried again (the operator backs off from it for a while).
            node = next((n for n in drainable if n["node"] not in aborted), None)
            if node is None:
                break
            for m in node.get("moves", []):
                pod = cluster.pods[(m["namespace"], m["pod"])]
                want = requests(pod)
                to = cluster.schedule(pod, want, node["node"], m.get("targetNode"), args.steering)
                if to is None:
                    # The operator's check before each eviction finds no room for the pod: the
                    # drain stops, with the pods evicted so far moved.
                    aborted.add(node["node"])
                    break
                cluster.move(pod, want, to)
                evictions[node["node"]] += 1
                planned += to == m.get("targetNode")
                on_demand += to in on_demand_nodes
            else:
                emptied.append(node["node"])

    in_first = [n for n in emptied if n in first]
    drained = set(emptied)
    lost = [n for n in first if n not in drained]
    total = sum(evictions.values())
    print(json.dumps({
        "firstPlanDrainable": len(first),
        "firstPlanPods": sum(first.values()),
        "emptied": len(emptied),
        "emptiedOfFirstPlan": len(in_first),
        "evictions": total,
        "evictionsPerEmptiedNode": round(total / len(emptied), 3) if emptied else None,
        "evictionsOnFirstPlanNodes": sum(evictions[n] for n in in_first),  # of the drains that emptied them
        "firstPlanPodsOnThem": sum(first[n] for n in in_first),
        "onPlannedNode": planned,
        "onOnDemandNodes": on_demand,
        "abortedDrains": sorted(aborted),
        "firstPlanNotEmptied": lost,
    }, indent=1))


if __name__ == "__main__":
    main()

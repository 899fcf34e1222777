#!/usr/bin/env python3
"""Chaos soak: kubesim and two leader-electing spotshift replicas under random disruption.

Usage: tests/soak/chaos.py [--seed N[,N...]] [--seconds S] [--build DIR] [--keep DIR]

Starts kubesim on tests/soak/soak.yaml, applies the CRD and two policies that share the spot
nodes (one for the on-demand nodes of zone-0, one for the rest), runs two replicas with short
leases, uncordons most spot nodes, then for S seconds does one random thing every one to four
seconds: SIGKILL or SIGTERM a replica (and start it again), edit a policy (drain delay, dryRun),
scale a Deployment, tighten or loosen a PodDisruptionBudget, cordon or uncordon a spot node,
turn one NotReady or Ready, delete a pod on an on-demand node, pause the scheduler for a few
seconds (Pending pods and replacements), inject API faults (10 % 503s, dropped watches, an
expired watch, refused evictions, failed policy status writes, lease requests stalled past the
renew deadline). Then it calms everything down, lets the operator work for 40 s, stops both
replicas with SIGTERM and checks what must hold:

  - every SIGTERM ended with exit status 0 (no crash at shutdown);
  - no node carries a spotshift.io/draining taint (stray taints: 0);
  - every Deployment has all its replicas Ready and no pod is lost or stuck (pods lost: 0);
  - no eviction took a budget below its minimum as the disruption controller computes it from
    the pods at that moment (kubesim's budgetViolations: 0);
  - no eviction came from a replica after another one had taken the Lease (0).

It prints the actions, the checks and the figures (drains attempted, succeeded, aborted;
evictions; the four counts above), writes the figures to figures.json, and exits 1 when a check
fails. With several seeds it runs them one after another and prints a table over them. Not
part of `make test` (it takes minutes and is random by design); see docs/development.md, "Soak".
"""

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import kubesim  # noqa: E402

# Two policies over disjoint on-demand nodes and the same spot nodes: their drains must take
# turns (SharedSpotNodes).
POLICY = """apiVersion: spotshift.io/v1alpha1
kind: ReschedulePolicy
metadata: {{name: {name}}}
spec:
  onDemandNodeSelector:
    matchExpressions:
    - {{key: node-role.kubernetes.io/worker, operator: Exists}}
    - {{key: topology.kubernetes.io/zone, operator: {op}, values: [zone-0]}}
  nodeDrainDelay: {delay}
  podEvictionTimeout: 30s
  dryRun: {dry}
"""
POLICIES = {"default": "NotIn", "zone-0": "In"}


def policy(name, delay, dry):
    return POLICY.format(name=name, op=POLICIES[name], delay=delay, dry=dry)


class Soak:
    def __init__(self, args):
        self.rng = random.Random(args.seed)
        self.build = os.path.abspath(args.build)
        self.dir = args.keep or tempfile.mkdtemp(prefix="spotshift-soak-")
        os.makedirs(self.dir, exist_ok=True)
        self.env = dict(os.environ, KUBECONFIG=os.path.join(self.dir, "kubeconfig"))
        self.ops = {}
        self.failures = []
        self.kubesim = None
        self.port = None
        self.deployments = {}  # name -> namespace
        self.spots = [f"spot-{i:02d}" for i in range(24)]
        self.figures = {}

    # --- plumbing ------------------------------------------------------------------------------
    def kubectl(self, *args, stdin=None, check=False):
        # The harness's own requests meet the faults it injects (10 % 503s on every verb): a read
        # or write it depends on is tried again, as a person at kubectl would.
        for _ in range(10):
            r = subprocess.run(["kubectl", *args], env=self.env, capture_output=True, text=True, input=stdin)
            if not (check and r.returncode != 0 and "injected fault" in r.stderr):
                break
            time.sleep(0.1)
        if check and r.returncode != 0:
            raise RuntimeError(f"kubectl {' '.join(args)}: {r.stderr.strip()}")
        return r

    def sim(self, path, body=None, method="POST"):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method)
        try:
            return urllib.request.urlopen(req, timeout=10).read()
        except OSError as e:
            print(f"    /_sim{path}: {e}")
            return None

    def start_kubesim(self):
        self.kubesim, self.port = kubesim.start(
            os.path.join(self.build, "tests/kubesim/kubesim"),
            ["--scenario", os.path.join(ROOT, "tests/soak/soak.yaml"), "--kubeconfig-out", self.env["KUBECONFIG"],
             "--time-scale", "10", "--audit-log", os.path.join(self.dir, "audit.log")], self.dir, timeout=10)

    def start_replica(self, name):
        log = open(os.path.join(self.dir, f"operator-{name}.log"), "a")
        self.ops[name] = subprocess.Popen(
            [os.path.join(self.build, "operator/spotshift"), "run", "--kubeconfig", self.env["KUBECONFIG"],
             "--leader-elect", "--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s",
             "--leader-elect-retry-period", "1s", "--metrics-bind-address", "127.0.0.1:0",
             "--health-probe-bind-address", "127.0.0.1:0"],
            stdout=log, stderr=subprocess.STDOUT)

    def stop_replica(self, name, sig):
        p = self.ops[name]
        if p.poll() is not None:
            return p.returncode
        p.send_signal(sig)
        try:
            rc = p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            rc = "no exit 30 s after the signal"
        # 0, or 1 from a replica that had lost its lease and was already stopping when the signal came.
        if sig == signal.SIGTERM and rc != 0 and not (rc == 1 and self.lost_lease(name)):
            self.failures.append(f"replica {name} exited with {rc} after SIGTERM (see operator-{name}.log)")
        return rc

    def lost_lease(self, name):
        """Whether the replica's last run stopped because it lost its lease."""
        with open(os.path.join(self.dir, f"operator-{name}.log")) as f:
            last_run = f.read().rsplit("spotshift: starting", 1)[-1]
        return "stopping: leadership lost" in last_run

    def cleanup(self):
        for p in self.ops.values():
            if p.poll() is None:
                p.kill()
        if self.kubesim and self.kubesim.poll() is None:
            self.kubesim.terminate()
            self.kubesim.wait()

    # --- disruptions ---------------------------------------------------------------------------
    def kill_replica(self):
        name = self.rng.choice(sorted(self.ops))
        print(f"    SIGKILL {name}: {self.stop_replica(name, signal.SIGKILL)}")
        self.start_replica(name)

    def term_replica(self):
        name = self.rng.choice(sorted(self.ops))
        print(f"    SIGTERM {name}: exit status {self.stop_replica(name, signal.SIGTERM)}")
        self.start_replica(name)

    def edit_policy(self):
        name = self.rng.choice(sorted(POLICIES))
        delay, dry = self.rng.choice(["0s", "1s", "3s"]), self.rng.choice(["false", "false", "true"])
        self.kubectl("apply", "-f", "-", stdin=policy(name, delay, dry))
        print(f"    {name}: nodeDrainDelay {delay}, dryRun {dry}")

    def pause_scheduler(self):
        # Pods created meanwhile (replacements of evicted pods, scale-ups) stay Pending.
        seconds = self.rng.uniform(2, 6)
        self.sim("/_sim/controllers", {"scheduler": False})
        time.sleep(seconds)
        self.sim("/_sim/controllers", {"scheduler": True})
        print(f"    scheduler paused {seconds:.1f}s")

    def scale(self):
        name = self.rng.choice(sorted(self.deployments))
        replicas = self.rng.randint(2, 9)
        r = self.kubectl("scale", "deploy", name, "-n", self.deployments[name], f"--replicas={replicas}")
        print(f"    scale {name} to {replicas}: {(r.stdout or r.stderr).strip()}")

    def budget(self):
        pdbs = json.loads(self.kubectl("get", "pdb", "-A", "-o", "json", check=True).stdout)["items"]
        m = self.rng.choice(pdbs)["metadata"]
        floor = self.rng.choice(['"100%"', "1"])
        self.kubectl("patch", "pdb", m["name"], "-n", m["namespace"], "--type=merge",
                     "-p", f'{{"spec":{{"minAvailable":{floor},"maxUnavailable":null}}}}')
        print(f"    PodDisruptionBudget {m['namespace']}/{m['name']}: minAvailable {floor}")

    def cordon(self):
        node, verb = self.rng.choice(self.spots), self.rng.choice(["cordon", "uncordon", "uncordon"])
        self.kubectl(verb, node)
        print(f"    {verb} {node}")

    def readiness(self):
        node, status = self.rng.choice(self.spots), self.rng.choice(["False", "True", "True"])
        self.sim(f"/_sim/nodes/{node}/conditions", {"type": "Ready", "status": status})
        print(f"    {node} Ready={status}")

    def delete_pod(self):
        pods = json.loads(self.kubectl("get", "pods", "-A", "-o", "json", check=True).stdout)["items"]
        pods = [p for p in pods if p["spec"].get("nodeName", "").startswith("od-")]
        if pods:
            m = self.rng.choice(pods)["metadata"]
            self.kubectl("delete", "pod", m["name"], "-n", m["namespace"], "--wait=false")
            print(f"    deleted {m['namespace']}/{m['name']}")

    def fault(self):
        kind = self.rng.choice(["503", "drop", "expire", "refuse", "status", "lease", "clear"])
        if kind == "503":
            self.sim("/_sim/faults", {"verb": "*", "resource": "*", "status": 503, "probability": 0.1, "count": 200})
        elif kind == "drop":
            self.sim("/_sim/watch/drop", {})
        elif kind == "expire":
            self.sim("/_sim/watch/expire", {"resource": self.rng.choice(["pods", "nodes"])})
        elif kind == "refuse":
            self.sim("/_sim/faults", {"verb": "create", "resource": "pods/eviction", "status": 429,
                                      "retryAfterSeconds": 1, "count": 5})
        elif kind == "status":
            # Status writes fail: a drain whose start cannot be recorded must not start.
            self.sim("/_sim/faults", {"verb": "update", "resource": "reschedulepolicies/status", "status": 500,
                                      "probability": 0.5, "count": 20})
        elif kind == "lease":
            # Lease requests answered after the renew deadline (3 s): the leader must stop first.
            self.sim("/_sim/faults", {"verb": "*", "resource": "leases", "delayMs": 5000, "count": 3})
        else:
            self.sim("/_sim/faults", None, "DELETE")
        print(f"    fault: {kind}")

    # --- the run -------------------------------------------------------------------------------
    def run(self, seconds):
        self.start_kubesim()
        self.kubectl("apply", "-f", os.path.join(ROOT, "crds/reschedulepolicies.spotshift.io.yaml"), check=True)
        for name in POLICIES:
            self.kubectl("apply", "-f", "-", stdin=policy(name, "2s", "false"), check=True)
        for d in json.loads(self.kubectl("get", "deploy", "-A", "-o", "json", check=True).stdout)["items"]:
            self.deployments[d["metadata"]["name"]] = d["metadata"]["namespace"]
        for name in ("a", "b"):
            self.start_replica(name)
        time.sleep(2)
        for node in self.spots[:16]:
            self.kubectl("uncordon", node)
        actions = [self.kill_replica, self.term_replica, self.edit_policy, self.scale, self.budget, self.cordon,
                   self.readiness, self.delete_pod, self.pause_scheduler, self.fault]
        started = time.time()
        while time.time() - started < seconds:
            action = self.rng.choice(actions)
            print(f"{time.time() - started:6.1f}s {action.__name__}")
            action()
            time.sleep(self.rng.uniform(1, 4))

        print("calm: faults cleared, every spot node Ready and schedulable, policy live, budgets loose")
        self.sim("/_sim/faults", None, "DELETE")
        self.sim("/_sim/controllers", {"scheduler": True})
        for node in self.spots:
            self.sim(f"/_sim/nodes/{node}/conditions", {"type": "Ready", "status": "True"})
            self.kubectl("uncordon", node)
        for p in json.loads(self.kubectl("get", "pdb", "-A", "-o", "json", check=True).stdout)["items"]:
            m = p["metadata"]
            self.kubectl("patch", "pdb", m["name"], "-n", m["namespace"], "--type=merge",
                         "-p", '{"spec":{"minAvailable":1,"maxUnavailable":null}}')
        for name in POLICIES:
            self.kubectl("apply", "-f", "-", stdin=policy(name, "1s", "false"), check=True)
        for name, p in self.ops.items():
            if p.poll() is not None:
                self.start_replica(name)
        time.sleep(40)
        for name in sorted(self.ops):
            print(f"final SIGTERM {name}: exit status {self.stop_replica(name, signal.SIGTERM)}")
        self.check()

    def check(self):
        nodes = json.loads(self.kubectl("get", "nodes", "-o", "json", check=True).stdout)["items"]
        tainted = [n["metadata"]["name"] for n in nodes
                   if any(t["key"] == "spotshift.io/draining" for t in n["spec"].get("taints", []))]
        if tainted:
            self.failures.append(f"nodes left tainted spotshift.io/draining: {tainted}")
        deployments = json.loads(self.kubectl("get", "deploy", "-A", "-o", "json", check=True).stdout)["items"]
        short = [f"{d['metadata']['namespace']}/{d['metadata']['name']} "
                 f"{d['status'].get('readyReplicas', 0)}/{d['spec']['replicas']}"
                 for d in deployments if d["status"].get("readyReplicas", 0) != d["spec"]["replicas"]]
        lost = sum(max(0, d["spec"]["replicas"] - d["status"].get("readyReplicas", 0)) for d in deployments)
        if short:
            self.failures.append(f"Deployments without all replicas Ready: {short}")
        pods = json.loads(self.kubectl("get", "pods", "-A", "-o", "json", check=True).stdout)["items"]
        phases = {}
        for p in pods:
            phase = p["status"].get("phase")
            phases[phase] = phases.get(phase, 0) + 1
        if set(phases) != {"Running"}:
            self.failures.append(f"pods not Running: {phases}")
        moved = [p for p in pods if p["spec"].get("nodeName", "").startswith("od-")
                 and not any(o["kind"] == "DaemonSet" for o in p["metadata"].get("ownerReferences", []))]

        # Evictions, and the Lease's holder when each was answered, from the audit log in order:
        # the holder is the replica whose lease write succeeded last (its User-Agent names it).
        evictions, accepted, former_leader = {}, 0, []
        holder = None
        for line in open(os.path.join(self.dir, "audit.log")):
            entry = json.loads(line)
            agent = entry.get("userAgent", "")
            if not agent.startswith("spotshift/"):
                continue
            if entry.get("resource") == "leases" and entry.get("method") in ("PUT", "POST") and entry.get("code") in (200, 201):
                holder = agent
            if entry.get("resource") == "pods/eviction":
                evictions[entry["code"]] = evictions.get(entry["code"], 0) + 1
                if entry["code"] == 201:
                    accepted += 1
                    if holder != agent:
                        former_leader.append(f"{entry['time']} {entry['path']} by {agent} (holder: {holder})")
        if former_leader:
            self.failures.append(f"evictions by a replica that no longer held the Lease: {former_leader}")
        state = json.loads(self.sim("/_sim/state", method="GET") or b"{}")
        violations = state.get("budgetViolations", [])
        if violations:
            self.failures.append(f"evictions that took a budget below its minimum: {violations}")

        # Drains, from the events about nodes (each drain has one on its node).
        drains = {"DrainStarted": 0, "DrainSucceeded": 0, "DrainAborted": 0, "DrainSkipped": 0}
        for e in json.loads(self.kubectl("get", "events", "-A", "-o", "json", check=True).stdout)["items"]:
            if e.get("involvedObject", {}).get("kind") == "Node" and e.get("reason") in drains:
                drains[e["reason"]] += max(1, e.get("count") or 1)
        self.figures = {
            "drainsAttempted": drains["DrainStarted"], "drainsSucceeded": drains["DrainSucceeded"],
            "drainsAborted": drains["DrainAborted"], "evictions": accepted, "budgetViolations": len(violations),
            "podsLost": lost, "strayTaints": len(tainted), "evictionsByFormerLeader": len(former_leader),
        }
        with open(os.path.join(self.dir, "figures.json"), "w") as f:
            json.dump(self.figures, f)
        print(f"pods: {phases}; on on-demand nodes (not DaemonSet): {len(moved)}")
        print(f"eviction requests by answer: {evictions}")
        print("figures: " + ", ".join(f"{k} {v}" for k, v in self.figures.items()))
        for f in self.failures:
            print(f"FAILED: {f}")
        print(f"{'FAILED' if self.failures else 'OK'} (logs in {self.dir})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", default="1", help="a seed, or several separated by commas")
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the meson build directory")
    ap.add_argument("--keep", help="write logs here instead of a temporary directory")
    args = ap.parse_args()
    if not shutil.which("kubectl"):
        sys.exit("chaos.py needs kubectl on PATH (Debian: apt-get install kubernetes-client)")
    for binary in ("operator/spotshift", "tests/kubesim/kubesim"):
        if not os.access(os.path.join(args.build, binary), os.X_OK):
            sys.exit(f"no {binary} in {args.build}: build first (make test, or ninja -C {args.build})")
    seeds = [int(x) for x in str(args.seed).split(",")]
    results = []
    for seed in seeds:
        print(f"=== seed {seed}")
        keep = args.keep and (args.keep if len(seeds) == 1 else os.path.join(args.keep, f"seed-{seed}"))
        soak = Soak(argparse.Namespace(seed=seed, build=args.build, keep=keep))
        try:
            soak.run(args.seconds)
        finally:
            soak.cleanup()
        results.append((seed, soak))
    if len(seeds) > 1:
        keys = list(results[0][1].figures) if getattr(results[0][1], "figures", None) else []
        print("seed  " + "  ".join(keys) + "  result")
        totals = dict.fromkeys(keys, 0)
        for seed, soak in results:
            figures = getattr(soak, "figures", {})
            for k in keys:
                totals[k] += figures.get(k, 0)
            print(f"{seed:<5} " + "  ".join(f"{figures.get(k, '-'):>{len(k)}}" for k in keys) +
                  f"  {'FAILED' if soak.failures else 'OK'}")
        print("total " + "  ".join(f"{totals[k]:>{len(k)}}" for k in keys))
    sys.exit(1 if any(soak.failures for _, soak in results) else 0)


if __name__ == "__main__":
    main()

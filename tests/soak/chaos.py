#!/usr/bin/env python3
"""Chaos soak: kubesim and two leader-electing spotshift replicas under random disruption.

Usage: tests/soak/chaos.py [--seed N] [--seconds S] [--build DIR] [--keep DIR]

Starts kubesim on tests/soak/soak.yaml, applies the CRD and a policy, runs two replicas with
short leases, uncordons most spot nodes, then for S seconds does one random thing every one to
four seconds: SIGKILL or SIGTERM a replica (and start it again), edit the policy (drain delay,
dryRun), scale a Deployment, tighten or loosen a PodDisruptionBudget, cordon or uncordon a spot
node, turn one NotReady or Ready, delete a pod on an on-demand node, inject API faults (10 %
503s, dropped watches, an expired watch, refused evictions). Then it calms everything down,
lets the operator work for 40 s, stops both replicas with SIGTERM and checks what must hold:

  - every SIGTERM ended with exit status 0 (no crash at shutdown);
  - no node carries a spotshift.io/draining taint;
  - every Deployment has all its replicas Ready and no pod is lost or stuck.

It prints the actions, the checks and a summary, and exits 1 when a check fails. Not part of
`make test` (it takes minutes and is random by design); see docs/development.md, "Soak".
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

POLICY = """apiVersion: spotshift.io/v1alpha1
kind: ReschedulePolicy
metadata: {{name: default}}
spec:
  nodeDrainDelay: {delay}
  podEvictionTimeout: 30s
  dryRun: {dry}
"""


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
        port_file = os.path.join(self.dir, "port")
        self.kubesim = subprocess.Popen(
            [os.path.join(self.build, "tests/kubesim/kubesim"), "--scenario", os.path.join(ROOT, "tests/soak/soak.yaml"),
             "--port-file", port_file, "--kubeconfig-out", self.env["KUBECONFIG"], "--time-scale", "10",
             "--audit-log", os.path.join(self.dir, "audit.log")],
            stdout=open(os.path.join(self.dir, "kubesim.log"), "w"), stderr=subprocess.STDOUT)
        for _ in range(200):
            if os.path.exists(port_file) and open(port_file).read().strip():
                self.port = open(port_file).read().strip()
                return
            time.sleep(0.05)
        raise RuntimeError("kubesim did not start (see kubesim.log)")

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
        if sig == signal.SIGTERM and rc != 0:
            self.failures.append(f"replica {name} exited with {rc} after SIGTERM (see operator-{name}.log)")
        return rc

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
        delay, dry = self.rng.choice(["0s", "1s", "3s"]), self.rng.choice(["false", "false", "true"])
        self.kubectl("apply", "-f", "-", stdin=POLICY.format(delay=delay, dry=dry))
        print(f"    nodeDrainDelay {delay}, dryRun {dry}")

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
        kind = self.rng.choice(["503", "drop", "expire", "refuse", "clear"])
        if kind == "503":
            self.sim("/_sim/faults", {"verb": "*", "resource": "*", "status": 503, "probability": 0.1, "count": 200})
        elif kind == "drop":
            self.sim("/_sim/watch/drop", {})
        elif kind == "expire":
            self.sim("/_sim/watch/expire", {"resource": self.rng.choice(["pods", "nodes"])})
        elif kind == "refuse":
            self.sim("/_sim/faults", {"verb": "create", "resource": "pods/eviction", "status": 429,
                                      "retryAfterSeconds": 1, "count": 5})
        else:
            self.sim("/_sim/faults", None, "DELETE")
        print(f"    fault: {kind}")

    # --- the run -------------------------------------------------------------------------------
    def run(self, seconds):
        self.start_kubesim()
        self.kubectl("apply", "-f", os.path.join(ROOT, "crds/reschedulepolicies.spotshift.io.yaml"), check=True)
        self.kubectl("apply", "-f", "-", stdin=POLICY.format(delay="2s", dry="false"), check=True)
        for d in json.loads(self.kubectl("get", "deploy", "-A", "-o", "json", check=True).stdout)["items"]:
            self.deployments[d["metadata"]["name"]] = d["metadata"]["namespace"]
        for name in ("a", "b"):
            self.start_replica(name)
        time.sleep(2)
        for node in self.spots[:16]:
            self.kubectl("uncordon", node)
        actions = [self.kill_replica, self.term_replica, self.edit_policy, self.scale, self.budget, self.cordon,
                   self.readiness, self.delete_pod, self.fault]
        started = time.time()
        while time.time() - started < seconds:
            action = self.rng.choice(actions)
            print(f"{time.time() - started:6.1f}s {action.__name__}")
            action()
            time.sleep(self.rng.uniform(1, 4))

        print("calm: faults cleared, every spot node Ready and schedulable, policy live, budgets loose")
        self.sim("/_sim/faults", None, "DELETE")
        for node in self.spots:
            self.sim(f"/_sim/nodes/{node}/conditions", {"type": "Ready", "status": "True"})
            self.kubectl("uncordon", node)
        for p in json.loads(self.kubectl("get", "pdb", "-A", "-o", "json", check=True).stdout)["items"]:
            m = p["metadata"]
            self.kubectl("patch", "pdb", m["name"], "-n", m["namespace"], "--type=merge",
                         "-p", '{"spec":{"minAvailable":1,"maxUnavailable":null}}')
        self.kubectl("apply", "-f", "-", stdin=POLICY.format(delay="1s", dry="false"), check=True)
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
        evictions = {}
        for line in open(os.path.join(self.dir, "audit.log")):
            entry = json.loads(line)
            if entry.get("resource") == "pods/eviction":
                evictions[entry["code"]] = evictions.get(entry["code"], 0) + 1
        policy = json.loads(self.kubectl("get", "rsp", "default", "-o", "json", check=True).stdout).get("status", {})
        print(f"pods: {phases}; on on-demand nodes (not DaemonSet): {len(moved)}")
        print(f"eviction requests by answer: {evictions}; nodes drained: {policy.get('nodesDrainedTotal')}, "
              f"pods evicted: {policy.get('podsEvictedTotal')}")
        for f in self.failures:
            print(f"FAILED: {f}")
        print(f"{'FAILED' if self.failures else 'OK'} (logs in {self.dir})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=120)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"), help="the meson build directory")
    ap.add_argument("--keep", help="write logs here instead of a temporary directory")
    args = ap.parse_args()
    if not shutil.which("kubectl"):
        sys.exit("chaos.py needs kubectl on PATH (Debian: apt-get install kubernetes-client)")
    for binary in ("operator/spotshift", "tests/kubesim/kubesim"):
        if not os.access(os.path.join(args.build, binary), os.X_OK):
            sys.exit(f"no {binary} in {args.build}: build first (make test, or ninja -C {args.build})")
    soak = Soak(args)
    try:
        soak.run(args.seconds)
    finally:
        soak.cleanup()
    sys.exit(1 if soak.failures else 0)


if __name__ == "__main__":
    main()

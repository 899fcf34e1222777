#!/usr/bin/env python3
"""kubesim's fidelity, measured against a real API server.

Runs every request sequence of tests/fidelity/corpus.json against kubesim and against the real
control plane (scripts/realkube.sh), normalises what comes back (uids, times, resourceVersions,
continue tokens) and compares the parts each step names. A difference is either fixed in kubesim
or listed, with its reason, in tests/fidelity/differences.json (docs/kubesim.md explains them);
an unexplained difference fails, and so does a listed one that no longer happens (the list
stays true).

    tests/fidelity/fidelity.py --kubesim build/tests/kubesim/kubesim [--keep DIR] [--only NAME]

The corpus, one sequence:

    {"name": "...", "steps": [STEP, ...]}

A STEP is an HTTP request: {"method", "path", "body" (JSON, or a string), "content_type",
"accept", "as" ("admin" by default, or "nobody": an authenticated user with no permissions)},
plus:
  "compare": paths of the response to compare, e.g. "code", "body.reason",
             "body.items[*].metadata.name", "body" (all of it); "code" when absent;
             "sorted:PATH" compares the values in any order (the API server reports a
             schema's causes in Go map order, which varies from run to run)
  "save":    {"var": "body.metadata.resourceVersion"}: later steps use ${var}
  "wait":    {"path": "...", "equals": V, "seconds": N}: repeat the request until it holds
  "watch":   true: the response is a watch stream, read until the server ends it; its body
             is the list of events
  "sleep":   seconds to wait before the step
  "compact": a resourceVersion: instead of a request, compact the backend's history up to it
             (kubesim's /_sim/compact; etcd's compaction under the real API server)
"${ns}" is the sequence's own namespace, created before its steps on both backends (and, on the
real API server, its default ServiceAccount awaited, which pods need).

Then kubectl's create commands, which send their objects as protobuf (KUBECTL_CREATES), run
against both; every field kubesim stores from one must be the real API server's (which adds its
defaults).
"""

import argparse
import base64
import http.client
import json
import os
import re
import shlex
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "support"))
import kubesim  # noqa: E402


class Backend:
    """One API server: its address, TLS context and credentials per user, and how its storage's
    history is compacted."""

    def __init__(self, name, server, ssl_ctx_for, compact):
        self.name = name
        self.server = urllib.parse.urlparse(server)
        self.ssl_ctx_for = ssl_ctx_for  # user -> (ssl context, extra headers)
        self.compact = compact          # resourceVersion -> None

    def request(self, method, path, body=None, content_type=None, accept=None, user="admin", timeout=30):
        ctx, headers = self.ssl_ctx_for(user)
        conn = http.client.HTTPSConnection(self.server.hostname, self.server.port, context=ctx, timeout=timeout)
        h = dict(headers)
        h["User-Agent"] = "spotshift-fidelity/1"
        if accept:
            h["Accept"] = accept
        else:
            h["Accept"] = "application/json"
        data = None
        if body is not None:
            data = body if isinstance(body, str) else json.dumps(body)
            h["Content-Type"] = content_type or "application/json"
        conn.request(method, path, body=data, headers=h)
        resp = conn.getresponse()
        raw = resp.read().decode("utf-8", "replace")
        conn.close()
        return resp.status, raw


def client_context(ca, cert=None, key=None):
    ctx = ssl.create_default_context(cafile=ca)
    if cert:
        ctx.load_cert_chain(cert, key)
    return ctx


def start_kubesim(binary, work):
    tokens = os.path.join(work, "tokens.csv")
    with open(tokens, "w") as f:
        f.write('admin-token,admin,1,"system:masters"\n')
        f.write("nobody-token,nobody,2\n")
    kubeconfig = os.path.join(work, "kubesim.kubeconfig")
    proc, port = kubesim.start(binary, ["--tls", "--token-file", tokens, "--kubeconfig-out", kubeconfig], work)
    # The kubeconfig carries the CA kubesim generated.
    ca = os.path.join(work, "kubesim-ca.crt")
    text = open(kubeconfig).read()
    m = re.search(r"certificate-authority-data:\s*(\S+)", text)
    with open(ca, "wb") as f:
        f.write(base64.b64decode(m.group(1)))
    ctx = client_context(ca)

    def creds(user):
        return ctx, {"Authorization": f"Bearer {user}-token"}

    backend = None

    def compact(rv):
        code, raw = backend.request("POST", "/_sim/compact", {"resourceVersion": int(rv)})
        if code != 200:
            raise SystemExit(f"kubesim: compacting at {rv}: {code} {raw}")

    backend = Backend("kubesim", f"https://127.0.0.1:{port}", creds, compact)
    return proc, backend


def start_real(work):
    d = os.path.join(work, "realkube")
    r = subprocess.run([os.path.join(ROOT, "scripts/realkube.sh"), "start", d], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"the real control plane did not start:\n{r.stdout}{r.stderr}")
    pki = os.path.join(d, "pki")
    # A user the RBAC authorizer knows nothing about: authenticated, no permissions.
    subprocess.run(["sh", "-c", f"""cd {pki} &&
        openssl ecparam -name prime256v1 -genkey -noout -out nobody.key &&
        openssl req -new -key nobody.key -subj /CN=nobody -out nobody.csr 2>/dev/null &&
        openssl x509 -req -in nobody.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -out nobody.crt 2>/dev/null"""],
                   check=True)
    server = open(os.path.join(d, "server")).read().strip()
    ca = os.path.join(pki, "ca.crt")
    ctxs = {"admin": client_context(ca, os.path.join(pki, "admin.crt"), os.path.join(pki, "admin.key")),
            "nobody": client_context(ca, os.path.join(pki, "nobody.crt"), os.path.join(pki, "nobody.key"))}
    etcd = urllib.parse.urlparse(open(os.path.join(d, "etcd-url")).read().strip())

    def compact(rv):
        # The API server's resourceVersions are etcd revisions.
        conn = http.client.HTTPConnection(etcd.hostname, etcd.port, timeout=10)
        conn.request("POST", "/v3/kv/compaction", body=json.dumps({"revision": str(rv), "physical": True}))
        resp = conn.getresponse()
        raw = resp.read()
        if resp.status != 200:
            raise SystemExit(f"real: compacting etcd at {rv}: {resp.status} {raw}")

    return d, Backend("real", server, lambda user: (ctxs[user], {}), compact)


# --- normalisation -------------------------------------------------------------------------

TIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
UID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
VOLATILE = {"resourceVersion", "uid", "continue", "selfLink", "managedFields"}


def normalise(v, key=None):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k == "managedFields":
                continue
            if k in VOLATILE and isinstance(x, str) and x:
                out[k] = f"<{k}>"
            else:
                out[k] = normalise(x, k)
        return out
    if isinstance(v, list):
        return [normalise(x) for x in v]
    if isinstance(v, str):
        if TIME.match(v):
            return "<time>"
        if UID.match(v):
            return "<uid>"
    return v


def normalise_at(path, values):
    """Values selected at a path; a volatile field (a continue token, a uid) compares as present."""
    last = re.findall(r"[^.\[\]]+", path)[-1]
    if last in VOLATILE:
        return [f"<{last}>" if v else v for v in values]
    return normalise(values)


def parse_body(raw, watch):
    if watch:
        events = []
        for line in raw.splitlines():
            line = line.strip()
            if line:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    events.append({"unparsed": line})
        return events
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def select(doc, path):
    """Values at a dotted path with [*] and [n]: a list of matches (empty when absent)."""
    parts = re.findall(r"[^.\[\]]+|\[\*\]|\[\d+\]", path)
    cur = [doc]
    for p in parts:
        nxt = []
        for c in cur:
            if p == "[*]":
                if isinstance(c, list):
                    nxt.extend(c)
            elif p.startswith("["):
                i = int(p[1:-1])
                if isinstance(c, list) and i < len(c):
                    nxt.append(c[i])
            elif isinstance(c, dict) and p in c:
                nxt.append(c[p])
        cur = nxt
    return cur


def substitute(v, env):
    """${var} is the saved value; ${var:url} the same, escaped for a query string."""
    def value(m):
        if m.group(1) not in env:
            return m.group(0)
        x = str(env[m.group(1)])
        return urllib.parse.quote(x, safe="") if m.group(2) == ":url" else x
    if isinstance(v, str):
        return re.sub(r"\$\{(\w+)(:url)?\}", value, v)
    if isinstance(v, list):
        return [substitute(x, env) for x in v]
    if isinstance(v, dict):
        return {k: substitute(x, env) for k, x in v.items()}
    return v


def run_step(backend, step, env):
    if "compact" in step:
        backend.compact(substitute(step["compact"], env))
        return {"code": 0, "body": None}
    method = step.get("method", "GET")
    path = substitute(step["path"], env)
    body = substitute(step.get("body"), env)
    watch = step.get("watch", False)
    wait = step.get("wait")
    deadline = time.time() + (wait.get("seconds", 30) if wait else 0)
    while True:
        code, raw = backend.request(method, path, body, step.get("content_type"), step.get("accept"), step.get("as", "admin"))
        doc = {"code": code, "body": parse_body(raw, watch)}
        if not wait:
            break
        got = select(doc, wait["path"])
        if got and got[0] == wait["equals"]:
            break
        if time.time() > deadline:
            doc["wait_failed"] = f"{wait['path']} never became {wait['equals']!r} (last {got!r})"
            break
        time.sleep(0.2)
    for var, p in step.get("save", {}).items():
        got = select(doc, p)
        env[var] = got[0] if got else ""
    return doc


def run_sequence(backend, seq, ns):
    env = {"ns": ns}
    code, raw = backend.request("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    if code not in (200, 201):
        raise SystemExit(f"{backend.name}: creating namespace {ns}: {code} {raw}")
    if backend.name == "real":
        deadline = time.time() + 30
        while backend.request("GET", f"/api/v1/namespaces/{ns}/serviceaccounts/default")[0] != 200:
            if time.time() > deadline:
                raise SystemExit(f"real: the default ServiceAccount of {ns} never appeared")
            time.sleep(0.1)
    out = []
    for step in seq["steps"]:
        if step.get("sleep"):
            time.sleep(step["sleep"])
        out.append(run_step(backend, step, env))
    return out


def compare(seq, results):
    """The differences of one sequence: (step index, path, kubesim's value, the real value)."""
    diffs = []
    ks, real = results["kubesim"], results["real"]
    for i, step in enumerate(seq["steps"]):
        for p in step.get("compare", ["code"]):
            # "sorted:PATH" compares the values in any order (what Go iterates from a map).
            path, in_order = (p[7:], False) if p.startswith("sorted:") else (p, True)
            a = normalise_at(path, select(ks[i], path))
            b = normalise_at(path, select(real[i], path))
            if not in_order:
                a, b = sorted(a, key=json.dumps), sorted(b, key=json.dumps)
            if a != b:
                diffs.append((i, p, a, b))
        for name, r in (("kubesim", ks[i]), ("real", real[i])):
            if "wait_failed" in r:
                diffs.append((i, "wait", f"{name}: {r['wait_failed']}", ""))
    return diffs


# kubectl create commands (they send protobuf) and the object each makes; run in one namespace.
KUBECTL_CREATES = [
    ("deployment/idle", "create deployment idle --image nginx:1.27 --replicas 0 --port 8080 -- sleep 10"),
    ("deployment/shop", "create deployment shop --image nginx --image busybox:1"),
    ("pdb/none", "create pdb none --selector app=shop --min-available 0"),
    ("pdb/quarter", "create pdb quarter --selector 'app=shop,tier in (a,b)' --max-unavailable 25%"),
    ("job/once", "create job once --image busybox -- echo hi"),
    ("service/front", "create service nodeport front --tcp 80:8080 --node-port 30080"),
    ("service/back", "create service clusterip back --tcp 5432 --tcp 443:https"),
    ("serviceaccount/robot", "create serviceaccount robot"),
    ("role/reader", "create role reader --verb get,list --resource pods,deployments.apps --resource-name x"),
    ("rolebinding/reads", "create rolebinding reads --role reader --serviceaccount NS:robot --user bob --group g"),
    ("clusterrole/fidelity-health", "create clusterrole fidelity-health --verb get --non-resource-url /healthz"),
    ("clusterrolebinding/fidelity-health", "create clusterrolebinding fidelity-health --clusterrole fidelity-health --user alice"),
    ("priorityclass/fidelity-below", "create priorityclass fidelity-below --value -5 --description spare --preemption-policy Never"),
    ("configmap/settings", "create configmap settings --from-literal a=b --from-literal mode=fast"),
    ("secret/token", "create secret generic token --from-literal password=s3cr3t --type example.com/token"),
]
SERVER_SET = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


def leaves(v, path=""):
    if isinstance(v, dict):
        return [leaf for k, x in v.items() for leaf in leaves(x, f"{path}.{k}" if path else k)]
    if isinstance(v, list):
        return [leaf for i, x in enumerate(v) for leaf in leaves(x, f"{path}[{i}]")]
    return [(path, v)]


def kubectl_creates(kubeconfigs, work):
    """Runs KUBECTL_CREATES against each backend (name -> kubeconfig); returns the problems: a
    command that failed, or a field kubesim stores with another value than the real API server,
    or stores where the real one has nothing. The first backend is compared with the others."""
    ns = "fidelity-kubectl"
    stored, problems = {}, []
    for name, kubeconfig in kubeconfigs.items():
        env = dict(os.environ, KUBECONFIG=kubeconfig, KUBECACHEDIR=os.path.join(work, f"kubectl-cache-{name}"))

        def kubectl(args):
            try:
                return subprocess.run(["kubectl", *args], env=env, capture_output=True, text=True, timeout=60)
            except FileNotFoundError:
                raise SystemExit("kubectl not found: scripts/setup.sh builds it (make test runs it)")

        kubectl(["create", "namespace", ns])
        stored[name] = {}
        for what, command in KUBECTL_CREATES:
            r = kubectl(["-n", ns, *shlex.split(command.replace("NS", ns))])
            if r.returncode != 0:
                problems.append(f"{name}: kubectl {command}: {r.stderr.strip()}")
                continue
            got = kubectl(["get", what, "-n", ns, "-o", "json"])
            if got.returncode != 0:
                problems.append(f"{name}: kubectl get {what}: {got.stderr.strip()}")
                continue
            obj = json.loads(got.stdout)
            obj.pop("status", None)
            for key in SERVER_SET:
                obj["metadata"].pop(key, None)
            stored[name][what] = dict(leaves(obj))
    first, *others = stored
    for other in others:
        for what in stored[first]:
            theirs = stored[other].get(what)
            if theirs is None:
                continue
            for path, value in stored[first][what].items():
                if theirs.get(path, "<absent>") != value:
                    problems.append(f"kubectl {what}, {path}: {first} {value!r}, {other} {theirs.get(path, '<absent>')!r}")
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kubesim", required=True, help="the kubesim binary")
    ap.add_argument("--corpus", default=os.path.join(HERE, "corpus.json"))
    ap.add_argument("--differences", default=os.path.join(HERE, "differences.json"))
    ap.add_argument("--keep", help="keep logs and state in this directory")
    ap.add_argument("--only", help="run only the sequences whose name contains this")
    args = ap.parse_args()

    corpus = json.load(open(args.corpus))
    known = {(d["sequence"], d["step"], d["path"]): d["reason"] for d in json.load(open(args.differences))}
    work = args.keep or tempfile.mkdtemp(prefix="spotshift-fidelity.")
    os.makedirs(work, exist_ok=True)
    sim = real_dir = None
    try:
        sim, ks = start_kubesim(args.kubesim, work)
        real_dir, real = start_real(work)
        unexplained, explained, stale, steps = [], 0, [], 0
        seen = set()
        for n, seq in enumerate(corpus):
            if args.only and args.only not in seq["name"]:
                continue
            ns = f"fidelity-{n}"
            results = {"kubesim": run_sequence(ks, seq, ns), "real": run_sequence(real, seq, ns)}
            steps += len(seq["steps"])
            diffs = compare(seq, results)
            for (i, p, a, b) in diffs:
                key = (seq["name"], i, p)
                seen.add(key)
                if key in known:
                    explained += 1
                    continue
                unexplained.append(f"{seq['name']}, step {i} ({seq['steps'][i].get('method', 'GET')} "
                                   f"{seq['steps'][i]['path']}), {p}:\n    kubesim: {json.dumps(a)[:600]}\n"
                                   f"    real:    {json.dumps(b)[:600]}")
            for key in known:
                if key[0] == seq["name"] and key not in seen:
                    stale.append(f"{key[0]}, step {key[1]}, {key[2]}: listed in differences.json but kubesim now agrees")
        creates = kubectl_creates({"kubesim": os.path.join(work, "kubesim.kubeconfig"),
                                   "real": os.path.join(real_dir, "kubeconfig")}, work)
        for p in creates:
            print("KUBECTL " + p)
        print(f"fidelity: {len(KUBECTL_CREATES)} kubectl create commands (protobuf) on each backend; "
              f"{len(creates)} fields or commands that differ")
        for u in unexplained:
            print("DIFFERENCE " + u)
        for s in stale:
            print("STALE " + s)
        ran = len([s for s in corpus if not args.only or args.only in s["name"]])
        print(f"fidelity: {ran} sequences, {steps} requests on each backend; "
              f"{len(unexplained)} unexplained differences, {explained} explained (differences.json), {len(stale)} stale")
        return 1 if unexplained or stale or creates else 0
    finally:
        if sim:
            sim.send_signal(signal.SIGTERM)
            try:
                sim.wait(10)
            except subprocess.TimeoutExpired:
                sim.kill()
        if real_dir:
            subprocess.run([os.path.join(ROOT, "scripts/realkube.sh"), "stop", real_dir], capture_output=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env bash
# A real Kubernetes control plane on loopback, for tests and for trying spotshift by hand:
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (fake nodes), built by
# scripts/kube-tools.sh at the versions pinned in scripts/kube-versions.sh.
#
#   scripts/realkube.sh start DIR [NODES_FILE...]   start everything, state and logs under DIR;
#                                                   writes DIR/kubeconfig (cluster admin); returns
#                                                   once /readyz passes, the controllers run and
#                                                   they have synced the files' workloads
#   scripts/realkube.sh load DIR NODES_FILE...      load nodes and workloads into a running one
#   scripts/realkube.sh reset DIR                   delete everything loaded or created since start:
#                                                   the cluster as a fresh start leaves it
#   scripts/realkube.sh stop DIR                    stop every process start started; logs stay
#
# A nodes file is YAML (several documents) or a JSON List such as `kubectl get ... -o json`
# writes, like kubesim's --scenario. Nodes are created as kwok's fake nodes (Ready, kept alive by
# kwok, their pods Running and Ready shortly after binding). Pods that name a node keep it; the
# namespaces the objects name are created when the file does not hold them. `load` creates the
# workloads (ReplicaSets, Deployments, StatefulSets, DaemonSets, Jobs) after their pods, so their
# controllers adopt them, as a controller adopts orphans it selects, and waits until they have.
# `start` loads its files before the ReplicaSet, StatefulSet and DaemonSet controllers run: those
# workloads first, then their pods with ownerReferences to them (adoption takes minutes for
# thousands of pods). uids and resourceVersions in the file are dropped: the API server assigns
# them.
#
# Every process listens on 127.0.0.1 only, on ports picked free at start.
set -Eeuo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=kube-versions.sh
. "$here/kube-versions.sh"
bin=$("$here/kube-tools.sh" bin)

usage() {
  echo "usage: scripts/realkube.sh start DIR [NODES_FILE...] | load DIR NODES_FILE... | reset DIR | stop DIR" >&2
  exit 2
}

log() { echo "realkube: $*" >&2; }

free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# ECDSA P-256 keys: generated in milliseconds, accepted by every component.
gen_key() { openssl ecparam -name prime256v1 -genkey -noout -out "$1" 2>/dev/null; }

# gen_cert NAME SUBJECT [EXTFILE]: NAME.key and NAME.crt signed by the CA in the current directory.
gen_cert() {
  local name=$1 subj=$2 ext=${3:-}
  gen_key "$name.key"
  openssl req -new -key "$name.key" -subj "$subj" -out "$name.csr" 2>/dev/null
  openssl x509 -req -in "$name.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 -sha256 \
    ${ext:+-extfile "$ext"} -out "$name.crt" 2>/dev/null
  rm -f "$name.csr"
}

write_kubeconfig() {
  local file=$1 server=$2 pki=$3 user=$4
  cat >"$file" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: realkube
  cluster:
    server: $server
    certificate-authority: $pki/ca.crt
users:
- name: $user
  user:
    client-certificate: $pki/$user.crt
    client-key: $pki/$user.key
contexts:
- name: realkube
  context: {cluster: realkube, user: $user}
current-context: realkube
EOF
}

# start_proc NAME COMMAND...: runs it in the background, its output in DIR/logs/NAME.log, its pid
# in DIR/pids/NAME.
start_proc() {
  local name=$1
  shift
  "$@" >"$dir/logs/$name.log" 2>&1 &
  echo $! >"$dir/pids/$name"
}

wait_for() {
  local what=$1 seconds=$2
  shift 2
  local deadline=$(( $(date +%s) + seconds ))
  until "$@" >/dev/null 2>&1; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "$what did not come up within ${seconds}s; logs in $dir/logs"
      return 1
    fi
    local p
    for p in "$dir"/pids/*; do
      kill -0 "$(cat "$p")" 2>/dev/null || { log "$(basename "$p") exited; its log: $dir/logs/$(basename "$p").log"; tail -n 20 "$dir/logs/$(basename "$p").log" >&2; return 1; }
    done
    sleep 0.2
  done
}

kubectl_() { "$bin/kubectl" --kubeconfig "$dir/kubeconfig" --cache-dir "$dir/kubectl-cache" "$@"; }

# start_controller_manager CONTROLLERS: kube-controller-manager with those controllers.
start_controller_manager() {
  local pki="$dir/pki"
  start_proc kube-controller-manager "$bin/kube-controller-manager" \
    --kubeconfig "$dir/controller-manager.kubeconfig" \
    --authentication-kubeconfig "$dir/controller-manager.kubeconfig" \
    --authorization-kubeconfig "$dir/controller-manager.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false \
    --controllers "$1" \
    --use-service-account-credentials=true \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --cluster-signing-cert-file "$pki/ca.crt" --cluster-signing-key-file "$pki/ca.key" \
    --concurrent-gc-syncs 5 \
    --kube-api-qps 100 --kube-api-burst 200
}

# wait_workloads_synced: waits until the workload controllers have synced every ReplicaSet,
# StatefulSet and DaemonSet once (each workload's status.observedGeneration caught up with its
# generation). Their first sync writes every workload's status; until a controller has worked
# through thousands of them, a pod evicted from one of them gets its replacement late.
wait_workloads_synced() {
  wait_for "the workload controllers' first sync" 600 sh -c \
    "'$bin/kubectl' --kubeconfig '$dir/kubeconfig' get replicasets,statefulsets,daemonsets -A -o json | python3 -c '
import json, sys
sys.exit(any(w.get(\"status\", {}).get(\"observedGeneration\", 0) < w[\"metadata\"].get(\"generation\", 1)
             for w in json.load(sys.stdin)[\"items\"]))'"
}

# wait_gone NAME SECONDS: waits until the process started as NAME has exited.
wait_gone() {
  local pid deadline=$(( $(date +%s) + $2 ))
  pid=$(cat "$dir/pids/$1")
  while kill -0 "$pid" 2>/dev/null; do
    [ "$(date +%s)" -lt "$deadline" ] || { kill -KILL "$pid" 2>/dev/null || true; break; }
    sleep 0.1
  done
}

cmd_start() {
  "$here/kube-tools.sh" check
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  if [ -d "$dir/pids" ] && ls "$dir/pids"/* >/dev/null 2>&1; then
    log "$dir already holds a running control plane (stop it first)"
    exit 1
  fi
  local started
  started=$(date +%s.%N)
  # A start that fails part way stops what it started.
  trap 'cmd_stop' ERR
  rm -rf "$dir/etcd" "$dir/pki" "$dir/logs" "$dir/pids"
  mkdir -p "$dir/pki" "$dir/logs" "$dir/pids" "$dir/etcd"
  local pki="$dir/pki"
  (
    cd "$pki"
    gen_key ca.key
    openssl req -x509 -new -key ca.key -subj "/CN=realkube-ca" -days 3650 -sha256 -out ca.crt 2>/dev/null
    printf 'subjectAltName=IP:127.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\nextendedKeyUsage=serverAuth\n' >serving.ext
    printf 'extendedKeyUsage=clientAuth\n' >client.ext
    gen_cert apiserver "/CN=kube-apiserver" serving.ext
    gen_cert admin "/O=system:masters/CN=realkube-admin" client.ext
    gen_cert controller-manager "/CN=system:kube-controller-manager" client.ext
    gen_cert scheduler "/CN=system:kube-scheduler" client.ext
    gen_key sa.key
    openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
  )
  local ports etcd_client etcd_peer api
  read -r etcd_client etcd_peer api <<<"$(free_ports 3)"
  local server="https://127.0.0.1:$api"
  echo "$server" >"$dir/server"
  echo "http://127.0.0.1:$etcd_client" >"$dir/etcd-url"
  write_kubeconfig "$dir/kubeconfig" "$server" "$pki" admin
  write_kubeconfig "$dir/controller-manager.kubeconfig" "$server" "$pki" controller-manager
  write_kubeconfig "$dir/scheduler.kubeconfig" "$server" "$pki" scheduler

  start_proc etcd "$bin/etcd" --name realkube --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
    --initial-cluster "realkube=http://127.0.0.1:$etcd_peer" --unsafe-no-fsync --log-level warn
  wait_for etcd 30 curl -sf "http://127.0.0.1:$etcd_client/health"

  # Every request is audited at Metadata level: tests read which requests a client made. The log
  # is never rotated (the API server would at 100 MB by default): tests count its lines.
  cat >"$dir/audit-policy.yaml" <<'EOF'
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: Metadata
EOF
  start_proc kube-apiserver "$bin/kube-apiserver" \
    --etcd-servers "http://127.0.0.1:$etcd_client" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --client-ca-file "$pki/ca.crt" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --api-audiences https://kubernetes.default.svc.cluster.local \
    --service-cluster-ip-range 10.96.0.0/16 \
    --authorization-mode Node,RBAC \
    --endpoint-reconciler-type none \
    --allow-privileged=true \
    --audit-policy-file "$dir/audit-policy.yaml" --audit-log-path "$dir/logs/audit.log" \
    --audit-log-mode blocking --audit-log-maxsize 100000
  wait_for kube-apiserver 60 curl -sf --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" "$server/readyz"

  # With files to load, the workload controllers wait until the file is in (below).
  start_controller_manager "*,-nodeipam${1:+,-replicaset-controller,-daemonset-controller,-statefulset-controller}"
  start_proc kube-scheduler "$bin/kube-scheduler" \
    --kubeconfig "$dir/scheduler.kubeconfig" \
    --authentication-kubeconfig "$dir/scheduler.kubeconfig" \
    --authorization-kubeconfig "$dir/scheduler.kubeconfig" \
    --bind-address 127.0.0.1 --secure-port 0 --leader-elect=false
  start_proc kwok "$bin/kwok" --kubeconfig "$dir/kubeconfig" --config "$here/realkube-kwok.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector kwok.x-k8s.io/node=fake \
    --cidr 10.244.0.1/16 --node-ip 10.0.0.1 --node-lease-duration-seconds 40

  # The controllers run once the service account controller has made the default namespace's
  # ServiceAccount (kube-controller-manager's own start takes a few seconds).
  wait_for kube-controller-manager 60 kubectl_ get serviceaccount default -n default
  wait_for kube-scheduler 30 sh -c "grep -q 'Successfully\\|Starting Kubernetes Scheduler\\|Serving' '$dir/logs/kube-scheduler.log' || kubectl_ get --raw /readyz"
  local elapsed
  elapsed=$(python3 -c "import time;print(f'{time.time()-$started:.1f}')")
  log "Kubernetes $KUBERNETES_VERSION up in ${elapsed}s: kubeconfig $dir/kubeconfig, server $server"
  if [ $# -gt 0 ]; then
    # A controller adopts the orphans it selects one sync at a time, a few per second, which for a
    # file of thousands of pods is many minutes. So while the workload controllers are off, the
    # workloads are created first and their pods with ownerReferences to them; then the
    # controllers start and find their pods in place.
    owners=1 cmd_load "$@"
    kill -TERM "$(cat "$dir/pids/kube-controller-manager")"
    wait_gone kube-controller-manager 30
    start_controller_manager '*,-nodeipam'
    wait_workloads_synced
    elapsed=$(python3 -c "import time;print(f'{time.time()-$started:.1f}')")
    log "loaded, and the controllers restarted and synced, at ${elapsed}s"
  fi
  trap - ERR
}

# Converts the files to one JSON List (kubectl's client-side conversion reads YAML and JSON alike)
# and creates it in dependency order.
cmd_load() {
  local f
  local lists=()
  for f in "$@"; do
    [ -f "$f" ] || { log "no such nodes file: $f"; exit 1; }
    lists+=("$dir/load-$(basename "$f").json")
    kubectl_ create --dry-run=client -o json -f "$f" >"${lists[-1]}"
  done
  rm -f "$dir"/load-phase-*.json "$dir"/load-namespaces.json
  local counts count owned
  counts=$(python3 - "$dir/load" "${owners:-0}" "${lists[@]}" <<'PY'
import json, sys
out, owners = sys.argv[1], sys.argv[2] == "1"
items = []
dec = json.JSONDecoder()
for path in sys.argv[3:]:
    text, pos = open(path).read(), 0
    # kubectl prints one JSON object per document, one after another.
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos == len(text):
            break
        doc, pos = dec.raw_decode(text, pos)
        items += doc.get("items", []) if doc.get("kind", "").endswith("List") else [doc]
order = {"Namespace": 0, "CustomResourceDefinition": 0, "Node": 1, "PriorityClass": 1,
         "StorageClass": 1, "PersistentVolume": 2, "PersistentVolumeClaim": 3, "ConfigMap": 3,
         "Secret": 3, "ServiceAccount": 3, "PodDisruptionBudget": 4, "Pod": 5}
phases = [[] for _ in range(7)]
# Pods whose controller is a ReplicaSet, StatefulSet or DaemonSet of the file: the load waits
# until their controllers have them. With owners (the workload controllers off), those workloads
# are created before the pods (phase 5, the pods 6) and the pods keep that ownerReference, its uid
# filled in once the workload exists.
controllers = ("ReplicaSet", "StatefulSet", "DaemonSet")
workloads = {(o.get("kind"), o.get("metadata", {}).get("namespace") or "default", o.get("metadata", {}).get("name"))
             for o in items if o.get("kind") in controllers}
def controller_ref(o):
    for r in o.get("metadata", {}).get("ownerReferences") or []:
        if r.get("controller") and (r.get("kind"), o["metadata"].get("namespace") or "default", r.get("name")) in workloads:
            return {k: r[k] for k in ("apiVersion", "kind", "name", "controller", "blockOwnerDeletion") if k in r}
    return None
owned = 0
if owners:
    order.update({k: 5 for k in controllers}, Pod=6)
for o in items:
    meta = o.setdefault("metadata", {})
    ref = controller_ref(o) if o.get("kind") == "Pod" else None
    owned += ref is not None
    for k in ("uid", "resourceVersion", "creationTimestamp", "ownerReferences", "managedFields", "generation"):
        meta.pop(k, None)
    if owners and ref:
        meta["ownerReferences"] = [ref]
    kind = o.get("kind")
    if kind == "Node":
        meta.setdefault("annotations", {})["kwok.x-k8s.io/node"] = "fake"
        # kwok reports what the node says it has; conditions and addresses are kwok's.
        st = o.get("status", {})
        o["status"] = {k: v for k, v in st.items() if k in ("capacity", "allocatable")}
    elif kind == "Pod":
        o.pop("status", None)
    elif kind in ("StatefulSet", "DaemonSet"):
        # The file's pods carry no revision of the controller's: a rolling update strategy would
        # replace them at once. OnDelete keeps the file's pods where the file put them.
        o.setdefault("spec", {})["updateStrategy"] = {"type": "OnDelete"}
        o.pop("status", None)
    else:
        o.pop("status", None)
    phases[order.get(kind, 6)].append(o)
# The namespaces the objects name but the file does not hold (a `kubectl get nodes,pods -A`
# snapshot has none): created as they are, as kubesim does (load-namespaces.json, applied, so a
# second load of the same namespace is no error).
system = {"default", "kube-system", "kube-public", "kube-node-lease"}
held = {o["metadata"].get("name") for o in phases[0] if o.get("kind") == "Namespace"}
implied = sorted({o["metadata"]["namespace"] for o in items if o["metadata"].get("namespace")} - held - system)
if implied:
    with open(f"{out}-namespaces.json", "w") as f:
        json.dump({"apiVersion": "v1", "kind": "List",
                   "items": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in implied]}, f)
# One List per phase that has objects (load-phase-N-M.json), a phase of many objects in four
# parts that are created at once, and the number of objects.
for i, p in enumerate(phases):
    parts = 4 if len(p) > 1000 else 1
    for m in range(parts):
        part = p[m::parts]
        if part:
            with open(f"{out}-phase-{i}-{m}.json", "w") as f:
                json.dump({"apiVersion": "v1", "kind": "List", "items": part}, f)
print(len(items), owned)
PY
  )
  read -r count owned <<<"$counts"
  # In order: namespaces before what enters them, nodes before the pods bound to them, pods
  # before the workloads that adopt them (with owners, the workloads before their pods). A
  # phase's parts are created side by side (one kubectl creates one object at a time).
  [ ! -e "$dir/load-namespaces.json" ] || kubectl_ apply -f "$dir/load-namespaces.json" >/dev/null
  local phase part failed=0
  for phase in 0 1 2 3 4 5 6; do
    local pids=()
    for part in "$dir"/load-phase-"$phase"-*.json; do
      [ -e "$part" ] || continue
      # Not the start's ERR trap: a failed create here is reported below, it stops nothing.
      ( trap - ERR; kubectl_ create -f "$part" >/dev/null ) &
      pids+=($!)
    done
    for part in "${pids[@]}"; do wait "$part" || failed=1; done
    [ $failed -eq 0 ] || { log "loading $* failed: kubectl's messages above"; exit 1; }
    if [ "${owners:-0}" = 1 ] && [ "$phase" = 5 ] && ls "$dir"/load-phase-6-*.json >/dev/null 2>&1; then
      kubectl_ get replicasets,statefulsets,daemonsets -A -o json >"$dir/load-workloads.json"
      python3 - "$dir/load-workloads.json" "$dir"/load-phase-6-*.json <<'PY'
import json, sys
uids = {(w["kind"], w["metadata"]["namespace"], w["metadata"]["name"]): w["metadata"]["uid"]
        for w in json.load(open(sys.argv[1]))["items"]}
for path in sys.argv[2:]:
    part = json.load(open(path))
    for o in part["items"]:
        for r in o["metadata"].get("ownerReferences", []):
            r["uid"] = uids[(r["kind"], o["metadata"].get("namespace") or "default", r["name"])]
    json.dump(part, open(path, "w"))
PY
    fi
  done
  # A controller adopts the orphans it selects as it syncs: with thousands of workloads that takes a
  # while, and until then the pods have no controller (a drain would not move them).
  [ "$owned" -eq 0 ] || wait_for "the workloads' adoption of their $owned pods" 600 sh -c \
    "[ \$('$bin/kubectl' --kubeconfig '$dir/kubeconfig' get pods -A -o jsonpath='{range .items[*]}{.metadata.ownerReferences[?(@.controller==true)].kind}{\"\\n\"}{end}' | grep -c .) -ge $owned ]"
  # With the workload controllers running (not start's load), they sync what was loaded now.
  [ "${owners:-0}" = 1 ] || wait_workloads_synced
  log "loaded $* ($count objects)"
}

cmd_reset() {
  local system=" default kube-system kube-public kube-node-lease "
  # Policies and workloads first, so nothing recreates what goes next; pods are force-deleted
  # (a test may have kept one terminating); then namespaces, what the system namespaces gathered,
  # nodes, CRDs, and what a Helm release left at cluster scope.
  kubectl_ delete reschedulepolicies.spotshift.io --all --wait=false >/dev/null 2>&1 || true
  kubectl_ delete deploy,rs,sts,ds,job --all -A --cascade=orphan --wait=false >/dev/null
  kubectl_ delete pods --all -A --force --grace-period=0 >/dev/null 2>&1
  local ns extra=()
  for ns in $(kubectl_ get ns -o jsonpath='{.items[*].metadata.name}'); do
    [[ $system == *" $ns "* ]] || extra+=("$ns")
  done
  [ ${#extra[@]} -eq 0 ] || kubectl_ delete ns "${extra[@]}" --wait=false >/dev/null
  # What tests leave in the system namespaces (the control plane's own objects there stay).
  kubectl_ delete pdb,events,leases --all -n default >/dev/null
  kubectl_ delete pdb,events --all -n kube-system >/dev/null
  kubectl_ delete leases --all -n kube-node-lease >/dev/null
  kubectl_ delete nodes --all >/dev/null
  kubectl_ delete clusterrole,clusterrolebinding -l app.kubernetes.io/managed-by=Helm >/dev/null
  kubectl_ delete crd --all --wait=true --timeout=60s >/dev/null
  wait_for "the reset" 90 sh -c "[ -z \"\$('$bin/kubectl' --kubeconfig '$dir/kubeconfig' get pods -A -o name)\" ] &&
    [ \"\$('$bin/kubectl' --kubeconfig '$dir/kubeconfig' get ns -o name | wc -l)\" -eq 4 ]"
}

cmd_stop() {
  [ -d "$dir/pids" ] || { log "nothing started in $dir"; return 0; }
  local p pids=()
  # Everything is asked to stop at once; what is still running 3 s later is killed (the state is
  # thrown away, and kube-apiserver's graceful shutdown waits for its watches).
  for p in "$dir"/pids/*; do
    [ -f "$p" ] || continue
    pids+=("$(cat "$p")")
    rm -f "$p"
  done
  [ ${#pids[@]} -eq 0 ] || kill -TERM "${pids[@]}" 2>/dev/null || true
  local deadline=$(( $(date +%s%N) + 3000000000 ))
  while [ "$(date +%s%N)" -lt "$deadline" ]; do
    local alive=0
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive -eq 1 ] || break
    sleep 0.1
  done
  [ ${#pids[@]} -eq 0 ] || kill -KILL "${pids[@]}" 2>/dev/null || true
  log "stopped; logs in $dir/logs"
}

[ $# -ge 2 ] || usage
cmd=$1
dir=$2
shift 2
case $cmd in
  start) cmd_start "$@" ;;
  load) dir=$(cd "$dir" && pwd); [ $# -ge 1 ] || usage; cmd_load "$@" ;;
  reset) dir=$(cd "$dir" && pwd); cmd_reset ;;
  stop) cmd_stop ;;
  *) usage ;;
esac

#!/usr/bin/env bash
# The main job: spotshift on the kubesim demo cluster.
#
# Starts kubesim with tests/kubesim/scenarios/demo.yaml (four on-demand nodes, two empty spot
# nodes), installs the ReschedulePolicy CRD and a policy with kubectl, runs the operator, and
# shows `kubectl get reschedulepolicies` and `kubectl events` while on-demand nodes empty onto
# the spot nodes one after another. The PodDisruptionBudget-bound node and the node with a
# pinned pod are left alone, and say why. Ends by itself (about a minute) and leaves nothing
# running.
set -euo pipefail

build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
kubesim="$build/tests/kubesim/kubesim"
spotshift="$build/operator/spotshift"
for bin in "$kubesim" "$spotshift"; do
  [ -x "$bin" ] || { echo "demo: $bin is missing; run make demo (it builds first)" >&2; exit 1; }
done
command -v kubectl >/dev/null || { echo "demo: kubectl is not on PATH (Debian: apt-get install kubernetes-client)" >&2; exit 1; }

work=$(mktemp -d)
sim_pid=""
op_pid=""
cleanup() {
  [ -n "$op_pid" ] && kill "$op_pid" 2>/dev/null && wait "$op_pid" 2>/dev/null || true
  [ -n "$sim_pid" ] && kill "$sim_pid" 2>/dev/null && wait "$sim_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

bold=$(tput bold 2>/dev/null || true)
plain=$(tput sgr0 2>/dev/null || true)
step() { printf '\n%s== %s ==%s\n' "$bold" "$1" "$plain"; }
show() { printf '%s$ %s%s\n' "$bold" "$*" "$plain"; "$@"; }

step "Starting kubesim with the demo cluster"
# The simulated kubelet starts pods in 0.3 s and stops them within 1 s, so the demo moves quickly;
# the clock itself runs at real speed, so kubectl's ages and event times read naturally.
"$kubesim" --scenario "$root/tests/kubesim/scenarios/demo.yaml" --port-file "$work/port" \
  --kubeconfig-out "$work/kubeconfig" --kubelet-start-delay 300ms --termination-cap 1s >"$work/kubesim.log" 2>&1 &
sim_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { cat "$work/kubesim.log" >&2; echo "demo: kubesim did not start" >&2; exit 1; }
export KUBECONFIG="$work/kubeconfig"
echo "kubesim is an API server and a scheduler with simulated kubelets: its pods run no containers,"
echo "so kubectl logs, exec and top have nothing to show (docs/kubesim.md)."
sleep 1
show kubectl get nodes -L karpenter.sh/capacity-type
show kubectl get pods -n shop -o wide

step "Installing the ReschedulePolicy CRD and a policy"
show kubectl apply -f "$root/crds/reschedulepolicies.spotshift.io.yaml"
show kubectl apply -f "$root/docs/examples/reschedulepolicy.yaml"

step "What spotshift would do, planned offline from a snapshot"
kubectl get nodes,pods,pdb,namespaces -A -o json >"$work/snapshot.json"
show "$spotshift" plan --snapshot "$work/snapshot.json" --policy "$root/docs/examples/reschedulepolicy.yaml"

step "Running the operator (log: spotshift.log in the demo's temporary directory)"
"$spotshift" run --metrics-bind-address 127.0.0.1:0 --health-probe-bind-address 127.0.0.1:0 >"$work/spotshift.log" 2>&1 &
op_pid=$!

drained() { kubectl get rsp default -o jsonpath='{.status.nodesDrainedTotal}' 2>/dev/null || true; }
draining() { kubectl get rsp default -o jsonpath='{.status.currentDrain.node}' 2>/dev/null || true; }
deadline=$((SECONDS + 100))
last=""
while [ $SECONDS -lt $deadline ]; do
  now="$(drained)/$(draining)"
  if [ "$now" != "$last" ]; then
    show kubectl get reschedulepolicies
    last="$now"
  fi
  if [ "$(drained)" = "2" ] && [ -z "$(draining)" ]; then break; fi
  if ! kill -0 "$op_pid" 2>/dev/null; then cat "$work/spotshift.log" >&2; echo "demo: the operator exited" >&2; exit 1; fi
  sleep 1
done

step "Events: what spotshift did and why"
show kubectl events -A --types Normal,Warning | grep -E "REASON|Drain|PodEvicted|NotDrainable|WouldDrain|Replacement" || true

step "Where the pods run now"
show kubectl get pods -n shop -o wide

step "Why the other on-demand nodes stay"
show kubectl get rsp default -o jsonpath='{range .status.undrainableNodes[*]}{.node}{": "}{.reasons[0]}{"\n"}{end}'

step "The policy's status"
show kubectl get reschedulepolicies
if [ "$(drained)" != "2" ]; then
  echo "demo: expected two drained nodes, found $(drained); the operator's log follows" >&2
  cat "$work/spotshift.log" >&2
  exit 1
fi
echo
echo "demo: ondemand-1 and ondemand-2 were emptied onto spot nodes; ondemand-3 (a pinned pod) and"
echo "demo: ondemand-4 (a PodDisruptionBudget) were left alone. Done."

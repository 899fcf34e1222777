#!/usr/bin/env bash
# Builds the real Kubernetes components the tests run against, from the Go module proxy, at the
# versions pinned in scripts/kube-versions.sh, once per machine into a cache outside any build
# directory:
#
#   scripts/kube-tools.sh build [COMPONENT...]   build what is missing (all by default), one line each
#   scripts/kube-tools.sh bin                    print the directory holding the binaries
#   scripts/kube-tools.sh check                  exit 1 (naming what is missing) unless all are built
#   scripts/kube-tools.sh recipe COMPONENT       what the component is built from (version, flags)
#
# Components: kubectl kube-apiserver kube-controller-manager kube-scheduler etcd helm kwok promtool.
# The cache is $SPOTSHIFT_KUBE_CACHE (default /var/cache/spotshift/kube as root, else
# ~/.cache/spotshift/kube), keyed by version:
# <cache>/kubernetes-<version>/bin. A binary is written under a temporary name and renamed when
# complete, so an interrupted build leaves nothing that looks built. The machine's Go (1.26 or
# newer, /usr/local/go/bin first) builds them; Debian's golang-go is too old.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# Go keeps its module and build caches under the home directory.
export HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
# shellcheck source=kube-versions.sh
. "$here/kube-versions.sh"

if [ "$(id -u)" -eq 0 ]; then default_cache=/var/cache/spotshift/kube; else default_cache=${XDG_CACHE_HOME:-$HOME/.cache}/spotshift/kube; fi
cache=${SPOTSHIFT_KUBE_CACHE:-$default_cache}
root="$cache/kubernetes-$KUBERNETES_VERSION"
bin="$root/bin"
all=(kubectl kube-apiserver kube-controller-manager kube-scheduler etcd helm kwok promtool)

find_go() {
  local g
  for g in /usr/local/go/bin/go "$(command -v go 2>/dev/null || true)"; do
    [ -x "$g" ] || continue
    local v
    v=$("$g" env GOVERSION 2>/dev/null | sed -E 's/^go([0-9]+)\.([0-9]+).*/\1 \2/')
    set -- $v
    if [ "${1:-0}" -gt 1 ] || { [ "${1:-0}" -eq 1 ] && [ "${2:-0}" -ge 26 ]; }; then
      echo "$g"
      return 0
    fi
  done
  echo "kube-tools: Go 1.26 or newer is needed to build Kubernetes $KUBERNETES_VERSION (found none; Debian's golang-go is too old)" >&2
  return 1
}

# The module that builds k8s.io/kubernetes' commands: its go.mod is the release's own, with each
# staging module (replaced there by a local path) replaced by its published k8s.io/<name> v0.Y.Z.
prepare_module() {
  local go=$1 src="$root/src"
  [ -f "$src/go.mod" ] && return 0
  mkdir -p "$src/etcd"
  local gomod
  gomod=$("$go" mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["GoMod"])')
  local staging="v0.${KUBERNETES_VERSION#v1.}"
  {
    sed -E -e 's#^module k8s.io/kubernetes$#module spotshift.local/kubetools#' \
      -e "s#^(\s*)(k8s.io/[A-Za-z0-9._-]+) => ./staging/src/k8s.io/[A-Za-z0-9._-]+#\1\2 => \2 $staging#" "$gomod"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
  } >"$src/go.mod.tmp"
  # etcd: the server release this Kubernetes requires, started through its own command's main.
  cat >"$src/etcd/main.go" <<'GO'
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
GO
  mv "$src/go.mod.tmp" "$src/go.mod"
}

version_ldflags() {
  local v=$KUBERNETES_VERSION major minor
  major=${v#v}; major=${major%%.*}
  minor=${v#v*.}; minor=${minor%%.*}
  local f="" p
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    f+=" -X $p.gitVersion=$v -X $p.gitMajor=$major -X $p.gitMinor=$minor"
    f+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  echo "-s -w$f"
}

# Helm's version, and the Kubernetes version `helm template` and `helm lint` assume without a
# cluster: the pinned one (Helm's own build stamps its client-go's).
helm_ldflags() {
  local minor=${KUBERNETES_VERSION#v1.}
  minor=${minor%%.*}
  local f="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" p
  for p in helm.sh/helm/v3/pkg/chartutil helm.sh/helm/v3/pkg/lint/rules; do
    f+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$minor"
  done
  echo "$f"
}

# What a component is built from: a binary built from another recipe is built again.
recipe() {
  case $1 in
    helm) echo "helm $HELM_VERSION $(helm_ldflags)" ;;
    kwok) echo "kwok $KWOK_VERSION" ;;
    promtool) echo "promtool $PROMETHEUS_VERSION" ;;
    *) echo "$1 $KUBERNETES_VERSION $(version_ldflags)" ;;
  esac
}

built() { [ -x "$bin/$1" ] && [ "$(cat "$bin/.$1.recipe" 2>/dev/null)" = "$(recipe "$1")" ]; }

build_one() {
  local go=$1 c=$2 start out
  start=$(date +%s)
  out="$bin/.$c.tmp"
  mkdir -p "$bin"
  local log="$root/build-$c.log"
  case $c in
    kubectl | kube-apiserver | kube-controller-manager | kube-scheduler)
      prepare_module "$go"
      (cd "$root/src" && GOFLAGS=-mod=mod CGO_ENABLED=0 "$go" build -trimpath -ldflags "$(version_ldflags)" \
        -o "$out" "k8s.io/kubernetes/cmd/$c") >"$log" 2>&1 ;;
    etcd)
      prepare_module "$go"
      (cd "$root/src" && GOFLAGS=-mod=mod CGO_ENABLED=0 "$go" build -trimpath -ldflags "-s -w" -o "$out" ./etcd) >"$log" 2>&1 ;;
    helm)
      (GOBIN="$root/gobin-helm" CGO_ENABLED=0 "$go" install -trimpath -ldflags "$(helm_ldflags)" \
        "helm.sh/helm/v3/cmd/helm@$HELM_VERSION" && mv "$root/gobin-helm/helm" "$out") >"$log" 2>&1 ;;
    kwok)
      (GOBIN="$root/gobin-kwok" CGO_ENABLED=0 "$go" install -trimpath -ldflags "-s -w" \
        "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" && mv "$root/gobin-kwok/kwok" "$out") >"$log" 2>&1 ;;
    promtool)
      (GOBIN="$root/gobin-promtool" CGO_ENABLED=0 "$go" install -trimpath -ldflags "-s -w" \
        "github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION" && mv "$root/gobin-promtool/promtool" "$out") >"$log" 2>&1 ;;
    *) echo "kube-tools: unknown component $c (known: ${all[*]})" >&2; return 2 ;;
  esac || {
    tail -n 30 "$log" >&2
    echo "kube-tools: building $c failed (log: $log)" >&2
    return 1
  }
  mv "$out" "$bin/$c"
  recipe "$c" >"$bin/.$c.recipe"
  echo "kube-tools: built $c $(component_version "$c") in $(( $(date +%s) - start )) s"
}

component_version() {
  case $1 in
    helm) echo "$HELM_VERSION" ;;
    kwok) echo "$KWOK_VERSION" ;;
    promtool) echo "(Prometheus $PROMETHEUS_VERSION)" ;;
    etcd) echo "(of Kubernetes $KUBERNETES_VERSION's go.mod)" ;;
    *) echo "$KUBERNETES_VERSION" ;;
  esac
}

cmd=${1:-build}
shift || true
case $cmd in
  bin) echo "$bin" ;;
  recipe) recipe "$1" ;;
  check)
    missing=()
    for c in "${all[@]}"; do built "$c" || missing+=("$c"); done
    if [ ${#missing[@]} -ne 0 ]; then
      echo "kube-tools: not built: ${missing[*]} (build them with: scripts/kube-tools.sh build)" >&2
      exit 1
    fi ;;
  build)
    want=("$@")
    [ ${#want[@]} -eq 0 ] && want=("${all[@]}")
    todo=()
    for c in "${want[@]}"; do built "$c" || todo+=("$c"); done
    [ ${#todo[@]} -eq 0 ] && exit 0
    go=$(find_go)
    echo "kube-tools: building ${todo[*]} of Kubernetes $KUBERNETES_VERSION into $bin (once per machine)"
    for c in "${todo[@]}"; do build_one "$go" "$c"; done ;;
  *) echo "usage: scripts/kube-tools.sh build [COMPONENT...] | bin | check" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Installs every build and test dependency on Debian 12. Idempotent and quiet: it installs only
# what is missing and prints one line when there is nothing to do.
#
#   scripts/setup.sh               everything make test needs, the whole real control plane included
#   scripts/setup.sh kubectl       the packages and kubectl only (make demo)
set -euo pipefail

packages=(
  g++ make meson ninja-build pkg-config git python3
  libboost1.81-dev rapidjson-dev libyaml-cpp-dev libfmt-dev catch2 libssl-dev
  clang libclang-rt-14-dev   # the libFuzzer build
  clang-format               # the style check (scripts/format.sh)
  openssl curl procps        # certificates and probes in end-to-end tests
  umoci                      # the operator image as an OCI archive (scripts/build-image.sh)
  tzdata                     # disruption windows' time zones (and the image's copy of them)
  golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev  # the chart renderer (Helm's engine)
)

here=$(cd "$(dirname "$0")" && pwd)

# The real control plane the tests run against, and the kubectl they drive, built from the Go
# module proxy at the pinned versions (scripts/kube-versions.sh), once per machine, cached
# (scripts/kube-tools.sh). The pinned kubectl is linked into /usr/local/bin unless a kubectl that
# is not ours is already there; Debian's kubernetes-client (1.20) is too old for the tests.
components=("$@")
kube_components() {
  "$here/kube-tools.sh" build "${components[@]}"
  local kbin link=/usr/local/bin/kubectl
  kbin="$("$here/kube-tools.sh" bin)/kubectl"
  if [ "$(id -u)" -eq 0 ] && { [ ! -e "$link" ] || [ -L "$link" ]; } && [ "$(readlink "$link" || true)" != "$kbin" ]; then
    ln -sf "$kbin" "$link"
    echo "setup: kubectl $("$kbin" version --client -o json | python3 -c 'import json,sys;print(json.load(sys.stdin)["clientVersion"]["gitVersion"])') installed as $link"
  fi
}

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present"
  kube_components
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing packages: ${missing[*]}" >&2
  echo "setup: run as root (or: sudo apt-get install ${missing[*]})" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "setup: apt-get failed (output above)" >&2
  exit 1
fi
rm -f "$log"
echo "setup: packages installed"
kube_components

#!/usr/bin/env bash
# Installs every build and test dependency on Debian 12. Idempotent and quiet: it installs only
# what is missing and prints one line when there is nothing to do.
set -euo pipefail

packages=(
  g++ make meson ninja-build pkg-config git python3
  libboost1.81-dev rapidjson-dev libyaml-cpp-dev libfmt-dev catch2 libssl-dev
  clang libclang-rt-14-dev   # the libFuzzer build
  openssl curl procps        # certificates and probes in end-to-end tests
  golang-go golang-github-masterminds-sprig-dev golang-gopkg-yaml.v2-dev  # the chart renderer (Helm's engine)
)
# kubectl: any kubectl on PATH will do (the tests drive it); Debian's package otherwise.
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all dependencies present"
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
echo "setup: done"

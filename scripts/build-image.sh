#!/usr/bin/env bash
# Builds the operator image as an OCI archive, without a container engine or a daemon: a root
# filesystem with only what `spotshift` needs (the binary, the shared libraries it links and their
# loader, the CA bundle, the tz database, a non-root user), put into an OCI image layout with umoci.
#
#   scripts/build-image.sh [--binary PATH] [--out FILE] [--tag TAG]
#   scripts/build-image.sh --rootfs-only DIR [--binary PATH]     (the Dockerfile's build stage)
#
# Without --binary, the operator is built first (release, no tests) in build-image/. The archive
# (default: build-image/spotshift-image.oci.tar) is an OCI layout in a tar: load it with
# `skopeo copy oci-archive:FILE docker://REGISTRY/spotshift:TAG`, or `podman load -i FILE`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
binary="" out="" tag="" rootfs_only=""
version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$root/meson.build" | head -1)
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) binary=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --rootfs-only) rootfs_only=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
tag=${tag:-$version}
out=${out:-$root/build-image/spotshift-image.oci.tar}

if [ -z "$binary" ]; then
  if [ ! -f "$root/build-image/build.ninja" ]; then
    meson setup "$root/build-image" "$root" --buildtype=release -Db_ndebug=true -Dtests=disabled >/dev/null
  fi
  ninja -C "$root/build-image" operator/spotshift >/dev/null
  binary=$root/build-image/operator/spotshift
fi
[ -x "$binary" ] || { echo "build-image: $binary is not an executable" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
strip -o "$rootfs/usr/local/bin/spotshift" "$binary"

# The shared libraries the binary links, and the loader, at the paths the binary asks for.
ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | sort -u | while read -r lib; do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done
if ldd "$binary" | grep -q 'not found'; then
  echo "build-image: $binary links a library this machine does not have" >&2
  exit 1
fi
cp -L /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/ca-certificates.crt"
# The tz database, for disruption windows' time zones (without the leap-second and POSIX copies).
[ -f /usr/share/zoneinfo/Europe/Berlin ] || { echo "build-image: the tz database is missing (apt-get install tzdata)" >&2; exit 1; }
mkdir -p "$rootfs/usr/share/zoneinfo"
tar -C /usr/share/zoneinfo --exclude=./right --exclude=./posix --exclude=./localtime -cf - . | tar -C "$rootfs/usr/share/zoneinfo" -xf -
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$rootfs/etc/group"

if [ -n "$rootfs_only" ]; then
  mkdir -p "$rootfs_only"
  cp -a "$rootfs/." "$rootfs_only/"
  exit 0
fi

command -v umoci >/dev/null || { echo "build-image: umoci is missing (apt-get install umoci, or scripts/setup.sh)" >&2; exit 1; }
layout=$work/layout
revision=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci unpack --rootless --image "$layout:$tag" "$work/bundle" >/dev/null
cp -a "$rootfs/." "$work/bundle/rootfs/"
umoci repack --image "$layout:$tag" "$work/bundle"
umoci config --image "$layout:$tag" \
  --os linux --architecture amd64 \
  --config.user 65532:65532 \
  --config.entrypoint /usr/local/bin/spotshift --config.cmd run \
  --config.workingdir / \
  --config.exposedports 8080/tcp --config.exposedports 8081/tcp \
  --config.env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt \
  --config.label org.opencontainers.image.title=spotshift \
  --config.label "org.opencontainers.image.description=Moves every pod off an on-demand node onto spot nodes when all of them fit" \
  --config.label org.opencontainers.image.source=https://github.com/spotshift/spotshift \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "org.opencontainers.image.revision=$revision" \
  --history.created_by "scripts/build-image.sh"
umoci gc --layout "$layout"
mkdir -p "$(dirname "$out")"
tar -C "$layout" -cf "$out" .
echo "build-image: $out (spotshift:$tag, $(du -h "$out" | cut -f1))"

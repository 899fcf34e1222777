#!/usr/bin/env bash
# The main job. Until the operator and kubesim land, it runs the unit tests of what exists.
set -euo pipefail
build=${1:-build}
meson test -C "$build" --suite core --suite model

#!/usr/bin/env bash
# Formats the C++ sources with clang-format and the repository's .clang-format, or with --check
# lists the files that are not formatted (exit 1) and changes nothing.
#
#   scripts/format.sh           format every tracked .cpp and .hpp file in place
#   scripts/format.sh --check   the check `make test` runs
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
want=14
tool=${CLANG_FORMAT:-clang-format}
if ! command -v "$tool" >/dev/null; then
  echo "format: $tool is not installed (scripts/setup.sh installs Debian's clang-format)" >&2
  exit 1
fi
have=$("$tool" --version | sed -n 's/.*version \([0-9]*\)\..*/\1/p')
if [ "$have" != "$want" ]; then
  echo "format: $tool is version $have; the style is checked with clang-format $want (set CLANG_FORMAT to one)" >&2
  exit 1
fi

mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
if [ "${1:-}" != "--check" ]; then
  "$tool" -i --style=file "${files[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  if ! "$tool" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if [ ${#bad[@]} -gt 0 ]; then
  echo "format: ${#bad[@]} file(s) are not formatted as .clang-format says (run scripts/format.sh, or make format):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "format: ${#files[@]} files formatted as .clang-format says"

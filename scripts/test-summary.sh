#!/usr/bin/env bash
# Prints "N passed, N failed" from meson test logs (testlog.json), counting every test result,
# after one line per failed test ("DIR: FAIL: name") and its first failed check, briefly.
# Usage: test-summary.sh BUILD_DIR... ; exits 1 when anything failed or no test ran.
passed=0
failed=0
for dir in "$@"; do
  log="$dir/meson-logs/testlog.json"
  [ -f "$log" ] || continue
  p=$(grep -c '"result": "OK"' "$log" || true)
  f=$(grep -cE '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
  # Name every failed test: CI shows only the end of the output, where this lands.
  grep -E '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" |
    sed -E 's/^\{"name": "([^"]*)".*"result": "([A-Z]+)".*/\2: \1/' |
    while read -r line; do echo "$dir: $line"; done
  # And its first failed check, briefly (Catch2's "FAILED:" and the lines after it).
  if [ "$f" -gt 0 ] && command -v python3 >/dev/null; then
    python3 - "$log" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    t = json.loads(line)
    if t.get("result") not in ("FAIL", "TIMEOUT", "ERROR", "UNEXPECTEDPASS"):
        continue
    out = (t.get("stdout") or "").splitlines()
    at = next((i for i, l in enumerate(out) if l.rstrip().endswith("FAILED:")), None)
    lines = out[at:at + 8] if at is not None else out[-6:]
    print(f"  {t['name']}:")
    for l in lines:
        print("    " + l[:200])
PY
  fi
  passed=$((passed + p))
  failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]

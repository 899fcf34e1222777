#!/usr/bin/env bash
# Prints "N passed, N failed" from meson test logs (testlog.json), counting every test result.
# Usage: test-summary.sh BUILD_DIR... ; exits 1 when anything failed or no test ran.
passed=0
failed=0
for dir in "$@"; do
  log="$dir/meson-logs/testlog.json"
  [ -f "$log" ] || continue
  p=$(grep -c '"result": "OK"' "$log" || true)
  f=$(grep -cE '"result": "(FAIL|TIMEOUT|ERROR|UNEXPECTEDPASS)"' "$log" || true)
  passed=$((passed + p))
  failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]

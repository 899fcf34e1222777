#!/usr/bin/env bash
# Prints "N passed, N failed" from meson test logs (testlog.json), counting every test result,
# after one line per failed test ("DIR: FAIL: name").
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
  passed=$((passed + p))
  failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]

#!/usr/bin/env bash
# The README's "Using it" block, run line by line as written from the repository's root, with
# the programs on the PATH as scripts/setup.sh puts them. Its endured is the one of ~/.endure,
# so HOME is a scratch folder here, whose config.json gives it a free port.
# Usage: readme_test.sh BUILD_DIR SOURCE_DIR   (root; loopback only)
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
if [ "$build" != "$source/build" ]; then
  echo "readme_test: the README's lines name build/; this tree is $build" >&2
  exit 77
fi
# shellcheck source=tests/install/common.sh
. "$source/tests/install/common.sh"
scratch=$(mktemp -d /tmp/endure-readme-test-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
# The lines: the indented block that follows "## Using it".
python3 - "$source/README.md" >"$scratch/lines" <<'PY'
import sys
section = open(sys.argv[1]).read().split("\n## Using it\n", 1)[1]
lines = []
for line in section.splitlines()[1:]:
    if line.startswith("    "):
        lines.append(line[4:])
    elif lines:
        break
print("\n".join(lines))
PY
grep -q '^build/bin/endured &' "$scratch/lines" || { echo "readme_test: no endured line" >&2; exit 1; }
export HOME=$scratch/home
mkdir -p "$HOME/.endure"
port=$(free_port)
echo "{\"Port\": $port}" >"$HOME/.endure/config.json"
export PATH=$build/bin:$PATH
cd "$source"
endured_pid=
cleanup() {
  if [ -n "$endured_pid" ]; then
    endure delete-cluster --cluster-name demo --wait >/dev/null 2>&1 || true
    kill "$endured_pid" 2>/dev/null || true
    wait "$endured_pid" 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT
while IFS= read -r line; do
  echo "\$ $line"
  if [[ $line == "build/bin/endured &"* ]]; then
    build/bin/endured >"$scratch/endured.log" 2>&1 &
    endured_pid=$!
    # Where a person types the next line, endured has written its endpoint.
    wait_for_endpoint "$HOME/.endure" "$endured_pid" "$scratch/endured.log"
    continue
  fi
  # A shell on the node reads this test's empty stdin and exits.
  bash -c "$line" </dev/null || { echo "readme_test: failed: $line" >&2; tail -n 20 "$scratch/endured.log" >&2; exit 1; }
done <"$scratch/lines"
echo "readme_test: ok"

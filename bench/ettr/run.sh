#!/bin/bash
# bench/ettr: simulated training-job goodput (ETTR). Runs alone, no cluster; the last line
# of stdout is one JSON object. --smoke: a 2-day job, 2 seeds, the PNG in a temp dir.
# Other flags go to run.py (see /usr/bin/python3 bench/ettr/run.py --help).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = "--smoke" ]; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  /usr/bin/python3 "$here/run.py" --png "$tmp/ettr.png" "$@"
  test -s "$tmp/ettr.png"
else
  exec /usr/bin/python3 "$here/run.py" "$@"
fi

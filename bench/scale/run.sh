#!/bin/bash
# bench/scale: one endured against 1,000 / 5,000 / 10,000 agents played with the real
# protocol (run.py says what is real and what is simulated). Needs 2 CPUs and the build;
# the last line of stdout is one JSON object. --smoke: N=200 and a 15 s window.
# Other flags go to run.py (/usr/bin/python3 bench/scale/run.py --help).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${BIN:-$here/../../build/bin}
for b in endure-scale-endured endure-scale-swarm; do
  [ -x "$bin/$b" ] || { echo "run.sh: no $bin/$b: build the project first" >&2; exit 2; }
done
exec /usr/bin/python3 "$here/run.py" --bin "$bin" "$@"

#!/usr/bin/env bash
# endure.checkpoint (import endure) against torch.save / torch.load on the same machine, in
# the same run, with the same state (a ~125M-parameter model's weights and AdamW state,
# CPU), and the cost of a checkpoint every step in a DDP training loop: bench/pytorch/
# bench.py says how each figure is taken.
#   save stall (overlapped, what a step waits)   vs torch.save's call       target <= 1/20
#   restore into the same model, cold cache      vs torch.load + load_state_dict   >= 2x
#   a checkpoint every step in DDP (2 ranks)     vs none, steps/s           cost <= 2 %
#
#   bash bench/pytorch/run.sh            # the measurement (about 10 minutes, ~16 GiB of memory)
#   bash bench/pytorch/run.sh --smoke    # a small model: checks that the bench works
# Env: ENDURE_LIBRARY (default build/libendure.so), BENCH_DIR (default
# /var/tmp/endure-bench-pytorch-PID: on disk, not tmpfs), REPEAT (part 1's rounds, 3),
# ROUNDS and BLOCK (the DDP part's, 4 and 4). Needs root to drop the page cache before each
# restore (without it the restores read from memory, and the table says so).
# Prints a table, and as its very last line one JSON object with every figure and ratio.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=/usr/bin/python3  # Debian's, with python3-torch (1.13: the peer's version)
export ENDURE_LIBRARY=${ENDURE_LIBRARY:-$PWD/build/libendure.so}
[ -e "$ENDURE_LIBRARY" ] || { echo "run.sh: no $ENDURE_LIBRARY: run scripts/setup.sh first" >&2; exit 2; }
"$py" -c 'import torch' 2>/dev/null || { echo "run.sh: $py has no torch (python3-torch)" >&2; exit 2; }
dir=${BENCH_DIR:-/var/tmp/endure-bench-pytorch-$$}
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
args=(--dir "$dir" --repeat "${REPEAT:-3}" --rounds "${ROUNDS:-4}" --block "${BLOCK:-4}")
[ "${1:-}" = "--smoke" ] && args+=(--smoke)
PYTHONPATH=$PWD/python "$py" bench/pytorch/bench.py "${args[@]}"

#!/usr/bin/env bash
# bench/dp: endure's data-parallel training on this machine (ranks as processes on 127.0.0.1),
# measured beside its peers in the same run:
#   - the all-reduce bus bandwidth of endure::comm against a plain Gloo all-reduce program at
#     the same sizes, in the same processes (endure-comm-bench), at 2 and 4 ranks;
#   - training: tokens/s and peak memory per rank at 1, 2 and 4 ranks x 1 thread for
#     endure-train --zero 0..3 and PyTorch DDP (ddp_peer.py), stories15M, batch 8 per rank,
#     seq 256; endure at 1 rank x 2 threads (batch 16); ZeRO state bytes against the ZeRO
#     paper's arithmetic; the fraction of communication hidden behind backward
#     (bench/dp/train_rows.py runs these rows and prints the report).
#
#   bash bench/dp/run.sh            # about 12 minutes on 2 cores
#   bash bench/dp/run.sh --smoke    # the tiny model, 1 and 2 ranks, a few steps: a check
#
# Env: BIN (default build/bin); SWEEPS (the comm sweeps, each size's row their median,
# default 3); STEPS (steps a training row at 1 and 2 ranks, default 12),
# STEPS4 (at 4 ranks, default 8), SKIP (first steps not timed, default 2). Progress on
# stderr; stdout gets the tables and, as its very last line, one JSON object with every
# figure. Targets (README.md): endure >= 90 % of plain Gloo's bus bandwidth at every size
# >= 1 MiB; endure >= 1.5x DDP's tokens/s at 2 and 4 ranks; 2 ranks x 1 thread >= 90 % of
# 1 rank x 2 threads; ZeRO state within 10 % of the paper's. Exit status 0 measured
# (targets met or not), 1 a run failed, 2 bad usage or no build.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$REPO/build/bin}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
SMOKE=0
for arg in "$@"; do
  case "$arg" in
    --smoke) SMOKE=1 ;;
    *) echo "run.sh: unknown argument: $arg (use --smoke)" >&2; exit 2 ;;
  esac
done
for b in endure-comm-bench endure-train endure-data; do
  [ -x "$BIN/$b" ] || { echo "run.sh: no $BIN/$b: build first" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/bench-dp-XXXXXX)
CHILD=""
# Stop the command running now (by its pid: timeout(1) and train_rows.py pass it on to
# the processes they started), then remove the folder.
cleanup() {
  if [ -n "$CHILD" ]; then
    kill -TERM "$CHILD" 2>/dev/null
    wait "$CHILD" 2>/dev/null
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
# Runs a command in the background and waits for it, so that a signal to this script is
# handled at once (the trap above) rather than after the command ends.
bounded() {
  "$@" &
  CHILD=$!
  wait "$CHILD"
  local rc=$?
  CHILD=""
  return $rc
}

if [ "$SMOKE" = 1 ]; then
  RANKS=(2) MAX=$((256 << 10)) ITERS=3 COMM_TIMEOUT=60 SWEEPS=1
  SAMPLE=256K VOCABS=(512) ROWS=(--smoke --steps 4 --steps4 4 --skip 2 --timeout 30)
else
  RANKS=(2 4) MAX=$((64 << 20)) ITERS=30 COMM_TIMEOUT=300 SWEEPS=${SWEEPS:-3}
  # The model's vocabulary is stories15M's 32000 whatever the data's (the ids' values do
  # not change a step's work); the biggest the corpus accepts, 32000 if it can.
  SAMPLE=2M VOCABS=(32000 8000 2048)
  ROWS=(--steps "${STEPS:-12}" --steps4 "${STEPS4:-8}" --skip "${SKIP:-2}" --timeout 240)
fi

for sweep in $(seq "$SWEEPS"); do
  for n in "${RANKS[@]}"; do
    echo "[bench dp] sweep $sweep/$SWEEPS, $n ranks: all-reduce 4 KiB .. $((MAX >> 10)) KiB," \
      "$ITERS pairs each" >&2
    bounded timeout "$COMM_TIMEOUT" "$BIN/endure-comm-bench" --ranks "$n" --iters "$ITERS" \
      --max-bytes "$MAX" >>"$WORK/comm.jsonl" || exit 1
  done
done

echo "[bench dp] data: a $SAMPLE sample, tokenized" >&2
bounded timeout 60 "$BIN/endure-data" sample --out "$WORK/sample.jsonl" --bytes "$SAMPLE" \
  --seed 1 >/dev/null || exit 1
for v in "${VOCABS[@]}"; do
  if bounded timeout 120 "$BIN/endure-data" prepare --input "$WORK/sample.jsonl" --vocab-size "$v" \
    --out "$WORK/data" --seed 1 >/dev/null 2>"$WORK/prepare.err"; then
    break
  fi
  echo "[bench dp] vocab $v refused: $(tail -n 1 "$WORK/prepare.err")" >&2
  rm -rf "$WORK/data"
done
[ -d "$WORK/data" ] || { echo "run.sh: endure-data prepare failed" >&2; exit 1; }

bounded "$PY" "$REPO/bench/dp/train_rows.py" --bin "$BIN" --data "$WORK/data" --work "$WORK" \
  --comm "$WORK/comm.jsonl" "${ROWS[@]}"

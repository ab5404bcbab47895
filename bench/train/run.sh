#!/usr/bin/env bash
# endure-train against PyTorch eager on the same machine, in the same run, with the same
# threads, model (the stories15M preset: dim 288, 6 layers, 6 heads, vocab 32000, seq 256),
# batch and sequence length:
#   tokens/s of endure-train (real data through its loader, AdamW, clipping; the median
#     step after warm-up, from its own JSON lines)      vs tests/train/llama_reference.py
#     --bench (the same model in torch eager fp32, Debian's python3-torch)   target >= 1.5x
#   endure-train's model FLOPs utilisation against the machine's sgemm rate (OpenBLAS
#     2048^3 with the same threads, measured in this run)
#   the training stall of a checkpoint (weights + AdamW moments) per save, through the
#     checkpoint engine, against the step time
#   a checkpoint every step (memory tier, then disk; on one rank the state lives in the
#     checkpoint's slots and each save copies nothing, its checksums taken as AdamW writes
#     it; a save due while the disk still writes, or rests after a write (endure-train's
#     --ckpt-disk-duty, 0.25 by default), goes to memory alone) against none:
#     wall-clock tokens/s, the saves' stalls included, of two runs that take turns a step
#     at a time (bench/train/interleave.py: a step's time drifts by several % within a
#     minute here, and whole runs one after the other could not resolve 1 %), each run
#     once as the one started first; with the stall per save, what training waited for a
#     slot, how many saves went to memory alone, and a turn's extra time split into the
#     optimizer step (the step lines' update_ms), the stall and the rest
#                                                                   target: cost <= 1 %
#
#   bash bench/train/run.sh            # batch 8, seq 256, 12 timed steps, 3 rounds
#   bash bench/train/run.sh --smoke    # batch 2, 3 steps, 1 round: checks the bench works
# Env: THREADS (default: every core), BATCH, STEPS, REPEAT (rounds; ours and torch's
# alternate, medians compared), EVERY_TURNS (default 40: the steps of each of two runs
# taking turns), BENCH_DIR (default /var/tmp/endure-bench-train-PID).
# Prints a table, and as its very last line one JSON object with every figure and ratio
# (bench/train/figures.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
threads=${THREADS:-$(nproc)}
batch=${BATCH:-8}
steps=${STEPS:-12}
repeat=${REPEAT:-3}
turns=${EVERY_TURNS:-40}
warmup=2
if [ "${1:-}" = "--smoke" ]; then batch=2 steps=3 repeat=1 warmup=1 turns=3; fi
for b in endure-train endure-data endure-model-bench; do
  [ -x "build/bin/$b" ] || { echo "run.sh: no build/bin/$b: run scripts/setup.sh first" >&2; exit 2; }
done
dir=${BENCH_DIR:-/var/tmp/endure-bench-train-$$}
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
results=$dir/results.jsonl
: >"$results"

# Token ids below 2048 from a small tokenizer; the model's vocabulary is 32000 all the same
# (the work of a step does not depend on the ids' values).
echo "run.sh: preparing data" >&2
build/bin/endure-data sample --out "$dir/sample.jsonl" --bytes 2M --seed 1 >/dev/null
build/bin/endure-data prepare --input "$dir/sample.jsonl" --vocab-size 2048 --out "$dir/data" \
  --val-fraction 0.02 --seed 1 >/dev/null

# One endure-train run's figures (tokens/s, checkpoint stalls, saves), one JSON line, from
# its own JSON lines (figures.py run).
train_figures() {
  python3 bench/train/figures.py run "$1" "$warmup"
}

sgemm=$(build/bin/endure-model-bench --sgemm-only --threads "$threads")
echo "$sgemm" | sed 's/^{/{"kind": "sgemm", /' >>"$results"
for round in $(seq "$repeat"); do
  echo "run.sh: round $round of $repeat (endure-train, then torch eager)" >&2
  # Checkpoints on every 2nd step, to the disk: their stall shows in the figures.
  timeout 900 build/bin/endure-train --data "$dir/data" --model stories15M --vocab-size 32000 \
    --batch "$batch" --steps $((warmup + steps)) --warmup 1 --eval-every 0 --threads "$threads" \
    --ckpt-dir "$dir/ckpt-$round" --ckpt-every 2 --keep-last 1 >"$dir/train.jsonl"
  rm -rf "$dir/ckpt-$round"
  train_figures "$dir/train.jsonl" | sed 's/^{/{"kind": "endure", /' >>"$results"
  # No checkpoint against one every step (memory tier in /dev/shm, the disk behind it), the
  # two runs taking turns a step at a time (interleave.py), twice: each run once as the one
  # started first, since the second runs faster by 1-2 % here whichever it is.
  for first in 0 1; do
    every=(--ckpt-dir "$dir/every-$round" --ckpt-memory "/dev/shm/endure-bench-train-$$-$round"
      --ckpt-every 1 --keep-last 1)
    run=(build/bin/endure-train --data "$dir/data" --model stories15M --vocab-size 32000
      --batch "$batch" --steps $((warmup + turns)) --warmup 1 --eval-every 0 --threads "$threads")
    if [ "$first" = 0 ]; then
      runs=(-- "${run[@]}" --- "${run[@]}" "${every[@]}")
      out=b none=a
    else
      runs=(-- "${run[@]}" "${every[@]}" --- "${run[@]}")
      out=a none=b
    fi
    pair=$(timeout 900 python3 bench/train/interleave.py --turns "$turns" --warmup "$warmup" \
      --out-a "$dir/a.jsonl" --out-b "$dir/b.jsonl" "${runs[@]}")
    rm -rf "$dir/every-$round" "/dev/shm/endure-bench-train-$$-$round"
    echo "$pair" | sed "s/^{/{\"kind\": \"turns\", \"round\": $round, \"every_first\": $first, /" >>"$results"
    train_figures "$dir/$out.jsonl" | sed "s/^{/{\"kind\": \"every1\", \"round\": $round, /" >>"$results"
    train_figures "$dir/$none.jsonl" | sed "s/^{/{\"kind\": \"every0\", \"round\": $round, /" >>"$results"
  done
  timeout 900 /usr/bin/python3 tests/train/llama_reference.py --bench --preset stories15M \
    --batch "$batch" --threads "$threads" --steps "$steps" --warmup "$warmup" |
    sed 's/^{/{"kind": "torch", /' >>"$results"
done

python3 bench/train/figures.py report "$results" "$batch" "$threads"

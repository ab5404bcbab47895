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
# Prints a table, and as its very last line one JSON object with every figure and ratio.
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

# The median tokens/s of the steps after warm-up, the mean checkpoint stall, the mean wait
# for a copy before the optimizer step and the saves to memory alone, from endure-train's
# JSON lines.
train_figures() {
  python3 - "$1" "$warmup" <<'PY'
import json, statistics, sys
lines = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
start = next(l for l in lines if l.get("start"))
steps = [l for l in lines if "loss" in l][int(sys.argv[2]):]
saves = [l for l in lines if "checkpoint" in l]
stalls = [l["stall_ms"] / 1e3 for l in saves]
out = {"train_tokens_per_s": statistics.median(l["tokens_per_s"] for l in steps),
       "copy_wait_s": statistics.mean(l.get("ckpt_copy_wait_ms", 0) / 1e3 for l in steps),
       "update_s": statistics.median(l["update_ms"] / 1e3 for l in steps),
       "saves": len(saves), "saves_memory_only": sum(l.get("tiers") == "memory" for l in saves),
       "train_step_s": statistics.median(l["step_ms"] / 1e3 for l in steps),
       "flops_per_token": start["flops_per_token"], "params": start["params"],
       "train_loss_last": steps[-1]["loss"]}
if stalls:
    out["ckpt_stall_s"] = statistics.mean(stalls)
    # Robust to the few saves a run taking turns is stopped in (interleave.py).
    out["ckpt_stall_median_s"] = statistics.median(stalls)
print(json.dumps(out))
PY
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

python3 - "$results" "$batch" "$threads" <<'PY'
import json, math, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
batch, threads = int(sys.argv[2]), int(sys.argv[3])
sgemm = next(r for r in rows if r["kind"] == "sgemm")["sgemm_gflops"]
ours = [r for r in rows if r["kind"] == "endure"]
torch = [r for r in rows if r["kind"] == "torch"]
med = lambda rs, k: statistics.median(r[k] for r in rs)
ours_tps = med(ours, "train_tokens_per_s")
torch_tps = med(torch, "tokens_per_s_median")
fpt = ours[0]["flops_per_token"]
mfu = ours_tps * fpt / 1e9 / sgemm
torch_mfu = torch_tps * fpt / 1e9 / sgemm
stall = med(ours, "ckpt_stall_s") if all("ckpt_stall_s" in r for r in ours) else None
# A checkpoint every step against none: each round's two pairs of runs taking turns, one
# with each run started first; the ratios' geometric mean cancels the order's own effect.
pairs = [r for r in rows if r["kind"] == "turns"]
# A pair's figure `key` ("{}": a or b) of the run saving every step, and of the other.
def every_none(r, key):
    a, b = r[key.format("a")], r[key.format("b")]
    return (a, b) if r["every_first"] else (b, a)
def every_ratio(r):  # tokens/s with a checkpoint every step / without
    every, none = every_none(r, "tokens_per_s_{}")
    return every / none
def geomean(xs):
    return math.exp(statistics.mean(math.log(x) for x in xs))
round_costs = [1 - geomean([every_ratio(r) for r in pairs if r["round"] == k])
               for k in sorted({r["round"] for r in pairs})]
every_cost = 1 - geomean([every_ratio(r) for r in pairs])
none_tps = geomean([every_none(r, "tokens_per_s_{}")[1] for r in pairs])
each_tps = none_tps * (1 - every_cost)
every_rows = [r for r in rows if r["kind"] == "every1"]
copy_wait = statistics.median(r["copy_wait_s"] for r in every_rows)
every_stall = statistics.median(r["ckpt_stall_median_s"] for r in every_rows if "ckpt_stall_s" in r)
every_step_s = statistics.median(r["train_step_s"] for r in every_rows)
memory_only = sum(r["saves_memory_only"] for r in every_rows)
# Where a turn's extra time goes: the optimizer step (out of place, checksums taken as it
# writes), the saves' stalls, and the rest (the forward and backward, the disk's writes).
none_rows = [r for r in rows if r["kind"] == "every0"]
turns = [every_none(r, "turn_{}_s") for r in pairs]
turn_every = statistics.median(every for every, _ in turns)
turn_none = statistics.median(none for _, none in turns)
update_extra = statistics.median(e["update_s"] - n["update_s"] for e, n in zip(every_rows, none_rows))
turn_extra = statistics.median(every - none for every, none in turns)
saves_total = sum(r["saves"] for r in every_rows)
step_s = med(ours, "train_step_s")
ratio = ours_tps / torch_tps
print(f"endure-train vs PyTorch eager: stories15M ({ours[0]['params'] / 1e6:.1f}M parameters), "
      f"batch {batch}, seq 256, {threads} threads, {len(ours)} round(s), medians")
print(f"{'':24} {'tokens/s':>10} {'GFLOP/s':>9} {'MFU':>7}")
print(f"{'endure-train':24} {ours_tps:>10.0f} {ours_tps * fpt / 1e9:>9.1f} {mfu:>7.1%}")
print(f"{'torch eager':24} {torch_tps:>10.0f} {torch_tps * fpt / 1e9:>9.1f} {torch_mfu:>7.1%}")
print(f"{'sgemm (OpenBLAS 2048^3)':24} {'':>10} {sgemm:>9.1f} {1:>7.0%}")
print(f"endure-train / torch: {ratio:.2f}x (target >= 1.5x: {'met' if ratio >= 1.5 else 'not met'})")
if stall is not None:
    print(f"checkpoint stall (weights + AdamW moments, every 2nd step): {stall * 1e3:.1f} ms "
          f"= {stall / step_s:.1%} of a {step_s:.2f} s step")
print(f"a checkpoint every step (memory tier, the state kept in place): {each_tps:.0f} "
      f"tokens/s against {none_tps:.0f} with none, two runs taking turns a step at a time "
      f"({len(pairs)} pairs of {pairs[0]['turns']} steps each): cost {every_cost:.2%} "
      f"(target <= 1 %: {'met' if every_cost <= 0.01 else 'not met'})")
print(f"  per save: a stall of {every_stall * 1e3:.1f} ms = {every_stall / every_step_s:.1%} of a step; "
      f"waits for the state's memory before the optimizer step: {copy_wait * 1e3:.2f} ms a step; "
      f"saves to the memory tier alone (the disk writing or resting): {memory_only} of {saves_total}")
print(f"  a turn (a step and its save) {turn_extra * 1e3:+.1f} ms (median of the pairs; "
      f"{turn_every:.3f} s against {turn_none:.3f} s): optimizer step {update_extra * 1e3:+.1f} ms, "
      f"save stall {every_stall * 1e3:.1f} ms, the rest {(turn_extra - update_extra - every_stall) * 1e3:+.1f} ms")
print(f"  cost per round: {' '.join(f'{c:+.2%}' for c in round_costs)}; per pair (none started "
      f"first, then second): {' '.join(f'{1 - every_ratio(r):+.2%}' for r in pairs)}")
print(json.dumps({"bench": "train", "preset": "stories15M", "batch": batch, "seq": 256,
                  "threads": threads, "rounds": len(ours), "endure_tokens_per_s": round(ours_tps, 1),
                  "torch_tokens_per_s": round(torch_tps, 1), "ratio_vs_torch": round(ratio, 3),
                  "sgemm_gflops": round(sgemm, 1), "endure_mfu": round(mfu, 4),
                  "torch_mfu": round(torch_mfu, 4), "flops_per_token": fpt,
                  "ckpt_stall_s": stall, "step_s": step_s, "target_met": ratio >= 1.5,
                  "tokens_per_s_ckpt_every_0": round(none_tps, 1),
                  "tokens_per_s_ckpt_every_1": round(each_tps, 1),
                  "ckpt_every_step_cost": round(every_cost, 4),
                  "ckpt_every_step_cost_rounds": [round(c, 4) for c in round_costs],
                  "ckpt_every_step_cost_pairs": [round(1 - every_ratio(r), 4) for r in pairs],
                  "ckpt_every_step_copy_wait_s": round(copy_wait, 5),
                  "ckpt_every_step_stall_s": round(every_stall, 5),
                  "ckpt_every_step_turn_extra_s": round(turn_extra, 5),
                  "ckpt_every_step_update_extra_s": round(update_extra, 5),
                  "ckpt_every_step_saves": saves_total, "ckpt_every_step_saves_memory_only": memory_only,
                  "ckpt_every_step_target_met": every_cost <= 0.01}))
PY

#!/usr/bin/env bash
# endure-train's ranks as processes of this machine, met as srun's tasks would (SLURM_PROCID
# of SLURM_NTASKS, a rendezvous in the checkpoint folder): 4 ranks, then 3 ranks at ZeRO-2
# from the 4 ranks' checkpoint, then 4 at ZeRO-3 from the 3 ranks' one. The global batch is
# kept through micro-batches, so every step after each reshard has the loss of an
# uninterrupted 4-rank run within 1e-5 (only the order of the sums differs).
# Usage: train_ranks_test.sh path/to/endure-train path/to/endure-data
set -euo pipefail
bin=${1:?usage: train_ranks_test.sh ENDURE_TRAIN ENDURE_DATA}
data_bin=${2:?usage: train_ranks_test.sh ENDURE_TRAIN ENDURE_DATA}
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$data_bin" sample --out "$tmp/s.jsonl" --bytes 300k --seed 5 >/dev/null
"$data_bin" prepare --input "$tmp/s.jsonl" --vocab-size 400 --out "$tmp/d" --seed 5 >/dev/null

# run WORLD ZERO CKPT_DIR STEPS: one try of WORLD ranks; rank 0's lines go to CKPT_DIR.log.
# A constant learning rate: the schedule does not depend on where a try stops.
try=0
run() {
  local world=$1 zero=$2 dir=$3 steps=$4
  try=$((try + 1))
  pids=()
  for ((r = 0; r < world; r++)); do
    SLURM_JOB_ID=9 SLURM_PROCID=$r SLURM_NTASKS=$world ENDURE_AUTO_RESUME_COUNT=$try \
      ENDURE_COMM_ADDRESS=127.0.0.1 timeout 120 "$bin" --data "$tmp/d" --model tiny \
      --seq-len 32 --batch 1 --global-batch 12 --threads 1 --warmup 2 --lr 1e-3 --min-lr 1e-3 \
      --eval-every 0 --steps "$steps" --zero "$zero" --ckpt-dir "$dir" --ckpt-every 5 \
      --comm-timeout 60 >>"$dir.log" 2>>"$dir.err" &
    pids+=($!)
  done
  for p in "${pids[@]}"; do wait "$p" || fail "a rank of $world at ZeRO-$zero: $(cat "$dir.err")"; done
  pids=()
}

run 4 0 "$tmp/reference" 30
run 4 0 "$tmp/resharded" 10
run 3 2 "$tmp/resharded" 20
run 4 3 "$tmp/resharded" 30
python3 - "$tmp/reference.log" "$tmp/resharded.log" <<'PY'
import json, sys
def read(path):
    lines = [json.loads(l) for l in open(path)]
    return lines, {l["step"]: l["loss"] for l in lines if "loss" in l}
ref_lines, ref = read(sys.argv[1])
lines, got = read(sys.argv[2])
starts = [l for l in lines if l.get("start")]
assert [s["world"] for s in starts] == [4, 3, 4], starts
assert [s["resumed_from"] for s in starts] == [None, 10, 20], starts
assert starts[1]["micro_batches"] == 4 and starts[0]["micro_batches"] == 3, starts
reshards = [(l["from_world"], l["world"]) for l in lines if l.get("resharded")]
assert reshards == [(4, 3), (3, 4)], reshards
assert sorted(got) == list(range(1, 31)), sorted(got)
worst = max(abs(got[s] - ref[s]) / abs(ref[s]) for s in range(11, 31))
assert worst <= 1e-5, ("relative loss difference", worst)
assert all(got[s] == ref[s] for s in range(1, 11)), "the first 10 steps are the same run"
print("train_ranks: ok (4 -> 3 -> 4 ranks, worst relative loss difference %.2g)" % worst)
PY

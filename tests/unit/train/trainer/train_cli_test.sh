#!/usr/bin/env bash
# endure-train end to end on a small corpus: a run, its JSON lines, a resume, a --config
# file, and one-line errors (exit 2, nothing written) on bad input.
# Usage: train_cli_test.sh path/to/endure-train path/to/endure-data
set -euo pipefail
bin=${1:?usage: train_cli_test.sh ENDURE_TRAIN ENDURE_DATA}
data_bin=${2:?usage: train_cli_test.sh ENDURE_TRAIN ENDURE_DATA}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Expects exit 2 and a one-line error holding the given text; no checkpoint folder made.
expect_error() {
  local want=$1; shift
  local rc=0
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" -eq 2 ] || fail "exit $rc (not 2) for '$*': $(cat "$tmp/err")"
  grep -qF -- "$want" "$tmp/err" || fail "error for '$*' lacks '$want': $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "error for '$*' is not one line: $(cat "$tmp/err")"
  [ ! -e "$tmp/bad-ckpt" ] || fail "a refused run made its checkpoint folder"
}

"$data_bin" sample --out "$tmp/s.jsonl" --bytes 300k --seed 5 >/dev/null
"$data_bin" prepare --input "$tmp/s.jsonl" --vocab-size 400 --out "$tmp/d" --seed 5 >/dev/null
small=(--data "$tmp/d" --model tiny --seq-len 32 --batch 2 --threads 1 --warmup 2)

# A run: one start line, a line per step with loss and tokens/s, evaluations, checkpoints.
"$bin" "${small[@]}" --steps 12 --eval-every 5 --ckpt-dir "$tmp/ck" --ckpt-every 4 \
  --log "$tmp/log.jsonl" >"$tmp/run.out"
cmp "$tmp/run.out" "$tmp/log.jsonl" || fail "--log differs from stdout"
python3 - "$tmp/run.out" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
start = lines[0]
assert start["start"] and start["resumed_from"] is None, start
assert start["model"]["vocab_size"] == 400, start   # the data's vocabulary
steps = [l for l in lines if "loss" in l]
assert [l["step"] for l in steps] == list(range(1, 13)), steps
assert all(l["tokens_per_s"] > 0 and l["lr"] > 0 for l in steps), steps
assert steps[-1]["loss"] < steps[0]["loss"], (steps[0], steps[-1])
evals = [l["step"] for l in lines if l.get("eval")]
assert evals == [5, 10, 12], evals
assert [l["checkpoint"] for l in lines if "checkpoint" in l] == [4, 8, 12], lines
assert lines[-1]["done"] and lines[-1]["final_step"] == 12, lines[-1]
EOF

# Started again with more steps: resumes from step 12 and goes on.
"$bin" "${small[@]}" --steps 16 --eval-every 0 --ckpt-dir "$tmp/ck" --ckpt-every 4 >"$tmp/run2.out"
head -1 "$tmp/run2.out" | grep -q '"resumed_from":12' || fail "no resume: $(head -1 "$tmp/run2.out")"
grep -q '"step":13,' "$tmp/run2.out" || fail "the resumed run did not make step 13"
grep -q '"step":12,' "$tmp/run2.out" && fail "the resumed run re-made step 12"

# A --config file, with a flag laid over it.
cat >"$tmp/c.json" <<EOF
{"data": "$tmp/d", "model": {"preset": "tiny", "seq_len": 32}, "batch": 2, "steps": 3,
 "warmup": 1, "eval_every": 0, "threads": 1}
EOF
"$bin" --config "$tmp/c.json" --steps 2 >"$tmp/c.out"
tail -1 "$tmp/c.out" | grep -q '"final_step":2' || fail "--steps over --config: $(tail -1 "$tmp/c.out")"

# Bad input: each one a clear error naming the field and the rule.
bad=(--ckpt-dir "$tmp/bad-ckpt")
expect_error "dim 66 is not divisible by n_heads 4" "${small[@]}" --dim 66 "${bad[@]}"
expect_error "n_heads 4 is not divisible by n_kv_heads 3" "${small[@]}" --n-kv-heads 3 "${bad[@]}"
expect_error "model.vocab_size 100 is smaller than the data's vocabulary of 400" \
  "${small[@]}" --vocab-size 100 "${bad[@]}"
expect_error "unknown model preset \"stories1B\"" --data "$tmp/d" --model stories1B "${bad[@]}"
expect_error "batch must be in [1, 65536], got 0" "${small[@]}" --batch 0 "${bad[@]}"
expect_error "--lr \"fast\" is not a number" "${small[@]}" --lr fast "${bad[@]}"
expect_error "warmup 50 must be below steps 10" "${small[@]}" --warmup 50 --steps 10 "${bad[@]}"
expect_error "min_lr 0.01 is above lr 0.001" "${small[@]}" --lr 1e-3 --min-lr 1e-2 "${bad[@]}"
expect_error "data is required" --model tiny "${bad[@]}"
expect_error "data: " --data "$tmp/nothing-here" --model tiny "${bad[@]}"
echo '{"data": "x", "epochs": 3}' >"$tmp/bad.json"
expect_error "unknown training config key \"epochs\"" --config "$tmp/bad.json" "${bad[@]}"
echo '{"data": ' >"$tmp/broken.json"
expect_error "is not a JSON object" --config "$tmp/broken.json" "${bad[@]}"
# A sequence longer than the val split holds one window of.
expect_error "eval_every 0 turns it off" "${small[@]}" --seq-len 100000 "${bad[@]}"
# The command line itself: an unknown flag, a flag without its value, and a positional
# argument (endure-train has no subcommands, so a word in their place is unexpected).
expect_error "--bogus" "${small[@]}" --bogus 1 "${bad[@]}"
expect_error "--steps" "${small[@]}" "${bad[@]}" --steps
expect_error "not expected: resume" resume "${small[@]}" "${bad[@]}"
# Across ranks (srun's environment): a world that does not divide the global batch, a
# global batch that does not split into micro-batches, a ZeRO stage out of range.
SLURM_JOB_ID=5 SLURM_PROCID=0 SLURM_NTASKS=3 expect_error \
  "global_batch 8 does not divide among 3 ranks (SLURM_NTASKS)" \
  "${small[@]}" --global-batch 8 "${bad[@]}"
expect_error "each of 1 ranks 12 sequences a step: not a multiple of batch 5" \
  "${small[@]}" --global-batch 12 --batch 5 "${bad[@]}"
expect_error "zero must be in [0, 3], got 4" "${small[@]}" --zero 4 "${bad[@]}"
expect_error "ckpt_disk_duty must be in [0.01, 1], got 0" "${small[@]}" --ckpt-disk-duty 0 \
  "${bad[@]}"
SLURM_JOB_ID=5 SLURM_PROCID=3 SLURM_NTASKS=2 expect_error \
  "SLURM_PROCID 3 is not below SLURM_NTASKS 2" "${small[@]}" "${bad[@]}"

# A checkpoint of another model or of other data: refused before anything is written (no
# log, no new checkpoint, no rendezvous).
"$data_bin" prepare --input "$tmp/s.jsonl" --vocab-size 380 --out "$tmp/d2" --seed 6 >/dev/null
before=$(find "$tmp/ck" | sort | md5sum)
expect_error "holds step 16 of another model" "${small[@]}" --dim 64 --ckpt-dir "$tmp/ck" \
  --log "$tmp/refused.log"
expect_error "was made on other data" --data "$tmp/d2" --model tiny --seq-len 32 --batch 2 \
  --threads 1 --warmup 2 --vocab-size 400 --ckpt-dir "$tmp/ck" --log "$tmp/refused.log"
[ "$(find "$tmp/ck" | sort | md5sum)" = "$before" ] || fail "a refused run changed ckpt_dir"
[ ! -e "$tmp/refused.log" ] || fail "a refused run made its log"
echo "train_cli: ok"

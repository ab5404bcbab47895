#!/usr/bin/env bash
# endure-data end to end: sample -> prepare -> inspect, and one-line errors on bad input.
# Usage: data_cli_test.sh path/to/endure-data
set -euo pipefail
bin=${1:?usage: data_cli_test.sh ENDURE_DATA}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Expects exit 2 and a one-line error holding the given text; nothing in --out.
expect_error() {
  local want=$1; shift
  local rc=0
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" -eq 2 ] || fail "exit $rc (not 2) for '$*': $(cat "$tmp/err")"
  grep -qF -- "$want" "$tmp/err" || fail "error for '$*' lacks '$want': $(cat "$tmp/err")"
  [ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "error for '$*' is not one line: $(cat "$tmp/err")"
}

"$bin" sample --out "$tmp/s.jsonl.zst" --bytes 600k --seed 2
"$bin" sample --out "$tmp/s2.jsonl.zst" --bytes 600k --seed 2
cmp "$tmp/s.jsonl.zst" "$tmp/s2.jsonl.zst" || fail "sample is not deterministic"
zstd -qdc "$tmp/s.jsonl.zst" >"$tmp/s.jsonl"
python3 -c 'import json,sys
for line in open(sys.argv[1]):
    d = json.loads(line)
    assert isinstance(d["text"], str) and "source" in d["meta"], line[:200]' "$tmp/s.jsonl"

"$bin" prepare --input "$tmp/s.jsonl.zst" --vocab-size 800 --out "$tmp/d" --seed 1
for f in index.json tokenizer.model train-00000.bin val-00000.bin; do
  [ -s "$tmp/d/$f" ] || fail "prepare wrote no $f"
done
"$bin" inspect "$tmp/d" --show 32 | grep -q "checksums verified" || fail "inspect"
# A given tokenizer (the one just trained) gives the same shards.
"$bin" prepare --input "$tmp/s.jsonl.zst" --tokenizer "$tmp/d/tokenizer.model" --out "$tmp/d2" --seed 1
cmp "$tmp/d/train-00000.bin" "$tmp/d2/train-00000.bin" || fail "--tokenizer changes the shards"
"$bin" tokenizer --input "$tmp/s.jsonl.zst" --vocab-size 800 --out "$tmp/tok" --seed 1
cmp "$tmp/tok.model" "$tmp/d/tokenizer.model" || fail "tokenizer differs from prepare's"
[ "$(wc -l <"$tmp/tok.vocab")" -eq 800 ] || fail "tok.vocab"

printf '{"text": "ok"}\n{"text": 3}\n' >"$tmp/bad.jsonl"
expect_error "bad.jsonl:2: field \"text\" must be a string" \
  prepare --input "$tmp/bad.jsonl" --vocab-size 300 --out "$tmp/x"
printf '\n\n' >"$tmp/empty.jsonl"
expect_error "the corpus is empty" prepare --input "$tmp/empty.jsonl" --vocab-size 300 --out "$tmp/x"
expect_error "--vocab-size 90000 is larger than the data supports" \
  prepare --input "$tmp/s.jsonl.zst" --vocab-size 90000 --out "$tmp/x"
expect_error "already exists" prepare --input "$tmp/s.jsonl.zst" --vocab-size 800 --out "$tmp/d"
expect_error "--input $tmp/nope.jsonl does not exist" \
  prepare --input "$tmp/nope.jsonl" --vocab-size 800 --out "$tmp/x"
expect_error "--val-fraction" \
  prepare --input "$tmp/s.jsonl.zst" --vocab-size 800 --val-fraction 0.9 --out "$tmp/x"
expect_error "give --tokenizer MODEL or --vocab-size N" prepare --input "$tmp/s.jsonl.zst" --out "$tmp/x"
# The command line itself: an unknown flag, a flag without its value, an unknown subcommand.
expect_error "--bogus" prepare --input "$tmp/s.jsonl.zst" --vocab-size 800 --out "$tmp/x" --bogus
expect_error "--out" prepare --input "$tmp/s.jsonl.zst" --vocab-size 800 --out
expect_error "unknown subcommand 'frobnicate'" frobnicate --out "$tmp/x"
[ ! -e "$tmp/x" ] || fail "a failed prepare left $tmp/x"
[ -z "$(find "$tmp" -maxdepth 1 -name '.*tmp*')" ] || fail "a failed prepare left a temp folder"
echo "data_cli: ok"

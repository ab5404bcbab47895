#!/usr/bin/env bash
# bench/dp, its first part: the all-reduce bus bandwidth of endure::comm against a plain
# Gloo all-reduce program at the same sizes, in the same processes and the same run
# (endure-comm-bench), at 2 and 4 ranks on this machine (processes on 127.0.0.1).
# The training rows (tokens/s and memory per rank against PyTorch DDP, ZeRO) come with
# the trainer's data-parallel mode.
#
#   bash bench/dp/run.sh            # 2 and 4 ranks, 4 KiB to 64 MiB, 20 all-reduces a size
#   bash bench/dp/run.sh --smoke    # 2 ranks, to 256 KiB, 3 a size: a check that it works
#
# Env: BIN (default build/bin). Progress on stderr; stdout gets a table and, as its very
# last line, one JSON object with every figure. Target: endure >= 90 % of plain Gloo's bus
# bandwidth at every size >= 1 MiB. Exit status 0 measured (target met or not), 1 a run
# failed, 2 bad usage or no build.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$REPO/build/bin}
SMOKE=0
for arg in "$@"; do
  case "$arg" in
    --smoke) SMOKE=1 ;;
    *) echo "run.sh: unknown argument: $arg (use --smoke)" >&2; exit 2 ;;
  esac
done
[ -x "$BIN/endure-comm-bench" ] || { echo "run.sh: no $BIN/endure-comm-bench: build first" >&2; exit 2; }
if [ "$SMOKE" = 1 ]; then RANKS=(2); MAX=$((256 << 10)); ITERS=3; else RANKS=(2 4); MAX=$((64 << 20)); ITERS=20; fi
OUT=$(mktemp /tmp/bench-dp-XXXX.jsonl)
trap 'rm -f "$OUT"' EXIT
for n in "${RANKS[@]}"; do
  echo "[bench dp] $n ranks: all-reduce 4 KiB .. $((MAX >> 10)) KiB, $ITERS each" >&2
  timeout 900 "$BIN/endure-comm-bench" --ranks "$n" --iters "$ITERS" --max-bytes "$MAX" >>"$OUT" || exit 1
done
python3 - "$OUT" "$SMOKE" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
smoke = sys.argv[2] == "1"
print()
print("all-reduce bus bandwidth, GB/s (bytes * 2 (N-1) / N / median time), endure::comm beside")
print("plain Gloo (its ring all-reduce on a context of its own), same processes, same run")
print()
hdr = "%5s %10s %12s %12s %8s" % ("ranks", "bytes", "endure", "plain Gloo", "ratio")
print(hdr)
print("-" * len(hdr))
met = True
for r in rows:
    r["ratio"] = round(r["endure_busbw_gbs"] / r["gloo_busbw_gbs"], 3)
    if r["bytes"] >= 1 << 20 and r["ratio"] < 0.9:
        met = False
    print("%5d %10d %12.3f %12.3f %7.2fx" % (r["ranks"], r["bytes"], r["endure_busbw_gbs"], r["gloo_busbw_gbs"], r["ratio"]))
big = [r for r in rows if r["bytes"] >= 1 << 20]
print()
print("target: endure >= 90 %% of plain Gloo at every size >= 1 MiB: %s" % (
    ("met" if met else "not met") if big else "no size >= 1 MiB measured"))
if smoke:
    print("(smoke run: a check that the bench works, not a measurement)")
print(json.dumps({"bench": "dp", "part": "comm", "smoke": smoke, "rows": rows,
                  "min_ratio_from_1MiB": min((r["ratio"] for r in big), default=None),
                  "target_ratio": 0.9, "target_met": met if big else None}, separators=(",", ":")))
PY

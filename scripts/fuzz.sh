#!/usr/bin/env bash
# Runs every fuzz target (fuzz/*_fuzz.cpp: libFuzzer, built with clang under AddressSanitizer
# and UndefinedBehaviorSanitizer, every library instrumented) for SECONDS each, from its seed
# corpus in fuzz/corpus/<target>, with a time limit of 10 s and a memory limit of 2 GiB per
# input. Prints a table of targets with executions, coverage and findings, and as its last
# line one JSON object. A finding (crash, leak, timeout, out-of-memory) is kept in
# build-fuzz/findings/ and makes the script exit 1.
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]      # default 60 s each, every target
#   scripts/fuzz.sh --smoke SECONDS TARGET     # CTest's pass: no build (77, skipped, without one)
# Env: FUZZ_BUILD (the build folder, default build-fuzz), SANITIZE_BUILD_TYPE (default
# RelWithDebInfo: optimized, for the most executions a second; the folder is
# scripts/test.sh's, which builds it Debug). Needs clang and libFuzzer (Debian: clang,
# libclang-rt-14-dev).
set -euo pipefail
cd "$(dirname "$0")/.."
smoke=false
if [ "${1:-}" = --smoke ]; then smoke=true; shift; fi
seconds=${1:-60}
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in fuzz/*_fuzz.cpp; do t=$(basename "$f" _fuzz.cpp); targets+=("$t"); done
fi
build=${FUZZ_BUILD:-build-fuzz}
if $smoke; then
  # scripts/test.sh builds the targets (scripts/sanitize.sh address build) before CTest runs.
  for t in "${targets[@]}"; do
    [ -x "$build/bin/fuzz_$t" ] || { echo "fuzz.sh: no $build/bin/fuzz_$t: run scripts/sanitize.sh address build" >&2; exit 77; }
  done
else
  command -v clang++ >/dev/null || { echo "fuzz.sh: needs clang (scripts/setup.sh installs it)" >&2; exit 2; }
  CC=clang CXX=clang++ cmake -S . -B "$build" -DENDURE_FUZZ=ON -DCMAKE_BUILD_TYPE="${SANITIZE_BUILD_TYPE:-RelWithDebInfo}" >/dev/null
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null
fi
findings=$build/findings
mkdir -p "$findings"
scratch=$(mktemp -d /tmp/endure-fuzz-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
results=$scratch/results.jsonl
status=0
for t in "${targets[@]}"; do
  echo "fuzz.sh: $t for ${seconds} s" >&2
  mkdir -p "$scratch/$t"
  rc=0
  # New inputs go to a scratch corpus; the seeds in fuzz/corpus are only read.
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    timeout $((seconds + 120)) "$build/bin/fuzz_$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$findings/$t-" \
    "$scratch/$t" "fuzz/corpus/$t" >"$scratch/$t.log" 2>&1 || rc=$?
  cp "$scratch/$t.log" "$findings/$t.log"
  python3 - "$t" "$rc" "$scratch/$t.log" "$findings" >>"$results" <<'PY'
import json, os, re, sys
t, rc, log, findings = sys.argv[1], int(sys.argv[2]), open(sys.argv[3], errors="replace").read(), sys.argv[4]
execs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
cov = re.findall(r"\bcov: (\d+)", log)
found = sorted(f for f in os.listdir(findings) if f.startswith(t + "-"))
print(json.dumps({"target": t, "executions": int(execs[-1]) if execs else 0,
                  "coverage": int(cov[-1]) if cov else 0, "findings": found, "exit": rc}))
PY
  [ "$rc" = 0 ] || status=1
done
python3 - "$results" "$seconds" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(f"{'target':16} {'executions':>12} {'coverage':>9} {'findings':>9}  (each {sys.argv[2]} s, ASan+UBSan)")
for r in rows:
    print(f"{r['target']:16} {r['executions']:>12,} {r['coverage']:>9} {len(r['findings']):>9}  {' '.join(r['findings'])}")
print(json.dumps({"fuzz": rows, "seconds": int(sys.argv[2]),
                  "findings": sum(len(r["findings"]) for r in rows)}))
PY
exit $status

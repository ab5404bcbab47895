#!/usr/bin/env bash
# How long the S3 client and the checkpoint engine's S3 tier take to give up, or to move
# on, when the store fails them (the timings the S3 tests once asserted), each beside its
# reference in the same run (give_up_bench.cpp says which):
#   unreachable, server_errors, upload_killed, ckpt_wait_killed  vs the retry schedule's
#                                       longest sleep              (target <= 10x + 2 s)
#   rank0_moves_on                      vs rank 0's wait() with no step skipped
#                                                                  (target <= plain + 2 s)
#
#   bash bench/s3/run.sh            # 3 rounds
#   bash bench/s3/run.sh --smoke    # 1 round: checks that the bench works
# Env: ROUNDS, BIN (default build/bin). Needs the S3 test server (scripts/setup.sh). Prints
# a table and, as its very last line, one JSON object (bench/s3/report.py). Exit status: 0
# measured (targets met or not), 1 a measurement failed, 2 no build, 77 no S3 test server
# (under CI, where setup.sh installs it, that is 1).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${BIN:-$here/../../build/bin}
rounds=${ROUNDS:-3}
[ "${1:-}" = "--smoke" ] && rounds=1
[ -x "$bin/endure-s3-give-up-bench" ] ||
  { echo "run.sh: no $bin/endure-s3-give-up-bench: build the project first" >&2; exit 2; }
if [ ! -f "$here/../../tools/s3rver/node_modules/@20minutes/s3rver/package.json" ] ||
  ! command -v node >/dev/null; then
  echo "run.sh: the S3 test server is not installed (scripts/setup.sh installs it)" >&2
  case "${CI:-}" in "" | 0 | false) exit 77 ;; *) exit 1 ;; esac
fi
results=$(mktemp /tmp/endure-bench-s3-XXXXXX)
trap 'rm -f "$results"' EXIT
timeout 600 "$bin/endure-s3-give-up-bench" "$rounds" >"$results"
exec /usr/bin/python3 "$here/report.py" "$results"

#!/usr/bin/env bash
# The checkpoint engine against the machine's own limits and the usual ways of saving, on
# the same disk and in the same run, for several state sizes:
#   stall per save        vs a memcpy of the same bytes          (target <= 1.25x)
#   stall per overlapped  save_overlapped() + wait_copied() after a step of compute lasting
#   save                  3 memcpys, vs a memcpy                  (target <= 0.1x)
#   persist bandwidth     vs dd bs=1M conv=fsync of the same size (target >= 80 %)
#   restore bandwidth     vs two sequential reads of the same shard file, timed from the open
#                         as the restore is, the page cache dropped before each, each the
#                         fastest of seven turns (the shared disk's noise only adds): into a hot
#                         1 MiB buffer, as dd to /dev/null does (target >= 80 %), and into a
#                         touched destination of the shard's size, the memory a restore fills
#                         (target >= 90 %); targets hold in every round
#   also: the naive save (serialize, write, fsync in the caller's thread) and torch.save
#   (Debian's python3-torch) of the same bytes, fsynced.
#   S3 rows (sizes in S3_SIZES, default 64 and 256 MiB; skipped, saying why, without the
#   test server or an aws CLI): the S3 tier's upload of a committed step and its restore
#   (every chunk verified, into memory) against `aws s3 cp` of a file of the same size up
#   and down (into /dev/shm), both against the same S3-compatible server (tools/s3rver, on
#   loopback), the page cache dropped before each; the aws CLI's own start (an `aws s3api
#   head-bucket`, timed in the same round) is taken off its figures  (target >= 90 % both ways)
#
#   bash bench/ckpt/run.sh              # 64, 256, 1024 and 2048 MiB
#   bash bench/ckpt/run.sh --smoke      # 64 MiB only: checks that the bench works
# Env: SIZES="64 256", S3_SIZES, REPEAT (rounds per size, default 3; medians), BENCH_DIR (default /var/tmp/endure-bench-ckpt-PID: on disk, not
# tmpfs). Needs root (it drops the page cache before each read, so reads come from disk).
# Prints a table, and as its very last line one JSON object with every figure and ratio
# (bench/ckpt/figures.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
sizes=${SIZES:-"64 256 1024 2048"}
[ "${1:-}" = "--smoke" ] && sizes=64
bin=build/bin/endure-ckpt-bench
[ -x "$bin" ] || { echo "run.sh: no $bin: run scripts/setup.sh first" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (drop_caches)" >&2; exit 2; }
dir=${BENCH_DIR:-/var/tmp/endure-bench-ckpt-$$}
mkdir -p "$dir"
trap 'rm -rf "$dir"' EXIT
py=/usr/bin/python3  # Debian's, with python3-torch
results=$dir/results.jsonl
: > "$results"

dd_seconds() { # dd's own "copied, S s" figure
  "$@" 2>&1 | sed -n 's/.*copied, \([0-9.e+-]*\) s.*/\1/p'
}

# The S3-compatible server for the S3 rows, with a key pair of its own; stopped by its pid.
s3_sizes=${S3_SIZES:-"64 256"}
[ "${1:-}" = "--smoke" ] && s3_sizes=64
# The aws CLI on the PATH, else the one setup.sh finds in root's pyenv.
aws_cli=$(command -v aws || true)
[ -n "$aws_cli" ] || [ ! -x /root/.pyenv/shims/aws ] || aws_cli=/root/.pyenv/shims/aws
s3_pid=""
if [ -z "$aws_cli" ]; then
  echo "run.sh: no aws CLI on the PATH: no S3 rows" >&2; s3_sizes=""
elif [ ! -d tools/s3rver/node_modules ] || ! command -v node >/dev/null; then
  echo "run.sh: the S3 test server is not installed (scripts/setup.sh): no S3 rows" >&2; s3_sizes=""
else
  mkdir -p "$dir/s3"
  node --openssl-legacy-provider tools/s3rver/serve.js --dir "$dir/s3" --port-file "$dir/s3.port" \
    --access-key endure-bench --secret-key endure-bench-secret --bucket endure-bench \
    >"$dir/s3.log" 2>&1 &
  s3_pid=$!
  trap '[ -z "$s3_pid" ] || kill "$s3_pid" 2>/dev/null; rm -rf "$dir"' EXIT
  for _ in $(seq 200); do [ -s "$dir/s3.port" ] && break; sleep 0.1; done
  [ -s "$dir/s3.port" ] || { echo "run.sh: the S3 test server did not start:" >&2; cat "$dir/s3.log" >&2; exit 1; }
  export AWS_ENDPOINT_URL="http://127.0.0.1:$(cat "$dir/s3.port")" AWS_REGION=us-east-1 \
    AWS_ACCESS_KEY_ID=endure-bench AWS_SECRET_ACCESS_KEY=endure-bench-secret \
    AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
fi

# Seconds a command takes (bash's own clock), its output dropped.
seconds_of() {
  local TIMEFORMAT=%R
  { time "$@" >/dev/null 2>&1; } 2>&1
}

# aws s3 cp of `mib` MiB up and down, each the median of three, and the CLI's start.
aws_figures() {
  local mib=$1 up=() down=() fixed=()
  head -c $((mib << 20)) /dev/urandom >"$dir/peer.bin"
  for _ in 1 2 3; do
    sync && echo 3 >/proc/sys/vm/drop_caches
    up+=("$(seconds_of "$aws_cli" s3 cp "$dir/peer.bin" "s3://endure-bench/peer-$mib" --endpoint-url "$AWS_ENDPOINT_URL")")
    sync && echo 3 >/proc/sys/vm/drop_caches
    down+=("$(seconds_of "$aws_cli" s3 cp "s3://endure-bench/peer-$mib" "/dev/shm/endure-bench-peer-$$" --endpoint-url "$AWS_ENDPOINT_URL")")
    rm -f "/dev/shm/endure-bench-peer-$$"
    fixed+=("$(seconds_of "$aws_cli" s3api head-bucket --bucket endure-bench --endpoint-url "$AWS_ENDPOINT_URL")")
  done
  rm -f "$dir/peer.bin"
  python3 bench/ckpt/figures.py aws-row "$mib" "${up[*]}" "${down[*]}" "${fixed[*]}"
}

# The disk is shared and noisy (1 GiB dd runs here went from 0.4 to 1.2 GB/s back to back):
# each size is measured REPEAT times, ours and the peers alternating, and medians compared.
repeat=${REPEAT:-3}
[ "${1:-}" = "--smoke" ] && repeat=1
for mib in $sizes; do
for round in $(seq "$repeat"); do
  echo "run.sh: $mib MiB, round $round of $repeat" >&2
  # dd's write, then our save, persist and restore, each measured next to the disk figure it
  # is compared with (the bench times the sequential read of our shard itself, between
  # our restores).
  w=$(dd_seconds dd if=/dev/zero of="$dir/dd.bin" bs=1M count="$mib" conv=fsync)
  rm -f "$dir/dd.bin"
  s3=""
  case " $s3_sizes " in *" $mib "*) s3="s3://endure-bench/round-$round" ;; esac
  ours=$(ENDURE_BENCH_S3="$s3" timeout 600 "$bin" "$dir" "$mib")
  [ -z "$s3" ] || aws_figures "$mib" >>"$results"
  t=$(timeout 600 "$py" bench/ckpt/torch_save.py "$dir/torch.pt" "$mib")
  rm -f "$dir/torch.pt"
  printf '{"mib": %s, "dd_write_s": %s, "torch_save_s": %s}\n' "$mib" "$w" "$t" >> "$results"
  echo "$ours" >> "$results"
done
done

python3 bench/ckpt/figures.py report "$results"

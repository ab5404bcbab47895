#!/usr/bin/env bash
# endure-fsx (a node's /fsx: a FUSE passthrough to the shared folder) against writing straight
# to its backing folder, on the same disk and in the same run:
#   large writes: MIB MiB in 1 MiB writes, then fsync (dd bs=1M conv=fsync from /dev/zero),
#   through the mount  vs  into the backing folder directly. No target yet: the figure and
#   the ratio (what share of the direct bandwidth endure-fsx keeps).
#
#   bash bench/fsx/run.sh            # 256 MiB, 3 rounds
#   bash bench/fsx/run.sh --smoke    # 16 MiB, 1 round: checks that the bench works
# Env: MIB, REPEAT (rounds, ours and the peer's back to back in each; medians),
# BIN (default build/bin), BENCH_DIR (default /var/tmp/endure-bench-fsx-PID: on disk, not
# tmpfs). Needs root and /dev/fuse: endure-fsx is mounted in a private mount namespace, so
# that the mount never reaches the host.
# Prints a table, and as its very last line one JSON object with every figure and ratio.
set -euo pipefail
cd "$(dirname "$0")/../.."
mib=${MIB:-256}
repeat=${REPEAT:-3}
if [ "${1:-}" = "--smoke" ]; then mib=16 repeat=1; fi
bin=${BIN:-build/bin}/endure-fsx
[ -x "$bin" ] || { echo "run.sh: no $bin: run scripts/setup.sh first" >&2; exit 2; }
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (mounts FUSE)" >&2; exit 2; }
[ -w /dev/fuse ] || { echo "run.sh: no /dev/fuse" >&2; exit 2; }
if [ -z "${ENDURE_BENCH_FSX_NS:-}" ]; then
  ENDURE_BENCH_FSX_NS=1 exec unshare --mount --propagation private bash "$0" "$@"
fi

dir=${BENCH_DIR:-/var/tmp/endure-bench-fsx-$$}
mkdir -p "$dir/backing" "$dir/mnt"
fsx_pid=
stop_fsx() { # SIGTERM unmounts; the namespace goes with the last process in it
  [ -n "$fsx_pid" ] || return 0
  kill "$fsx_pid" 2>/dev/null || true
  wait "$fsx_pid" || echo "run.sh: endure-fsx ended with status $?" >&2
  fsx_pid=
}
trap 'stop_fsx; rm -rf "$dir"' EXIT
"$bin" "$dir/backing" "$dir/mnt" --pid-file "$dir/fsx.pid" --foreground &
fsx_pid=$!
for _ in $(seq 100); do [ -s "$dir/fsx.pid" ] && break; sleep 0.1; done
[ -s "$dir/fsx.pid" ] || { echo "run.sh: endure-fsx did not mount within 10 s" >&2; exit 1; }

dd_seconds() { # dd's own "copied, S s" figure
  dd if=/dev/zero of="$1" bs=1M count="$mib" conv=fsync 2>&1 | sed -n 's/.*copied, \([0-9.e+-]*\) s.*/\1/p'
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print v[int(NR / 2) + 1]}'; }

# The disk is shared and noisy: each round times the direct write and ours back to back,
# and the ratio is taken within the round.
direct=() through=() ratio=()
for round in $(seq "$repeat"); do
  echo "run.sh: $mib MiB, round $round of $repeat" >&2
  d=$(dd_seconds "$dir/backing/direct.bin")
  rm -f "$dir/backing/direct.bin"
  t=$(dd_seconds "$dir/mnt/through.bin")
  rm -f "$dir/mnt/through.bin"
  direct+=("$d") through+=("$t") ratio+=("$(awk -v d="$d" -v t="$t" 'BEGIN {print d / t}')")
done
stop_fsx

d=$(median "${direct[@]}") t=$(median "${through[@]}") r=$(median "${ratio[@]}")
mbps() { awk -v s="$1" -v mib="$mib" 'BEGIN {printf "%.1f", mib * 1048576 / 1e6 / s}'; }
echo "endure-fsx vs the backing folder directly: $mib MiB in 1 MiB writes + fsync, same disk, $repeat round(s), medians"
printf '%-22s %9s %9s\n' "" seconds MB/s
printf '%-22s %9.3f %9s\n' "through endure-fsx" "$t" "$(mbps "$t")"
printf '%-22s %9.3f %9s\n' "backing folder" "$d" "$(mbps "$d")"
printf 'endure-fsx / direct: %.2f (each round'"'"'s ratio of bandwidths, median)\n' "$r"
printf '{"bench": "fsx", "mib": %s, "rounds": %s, "fsx_write_s": %s, "direct_write_s": %s, "fsx_mbps": %s, "direct_mbps": %s, "fsx_vs_direct": %s}\n' \
  "$mib" "$repeat" "$t" "$d" "$(mbps "$t")" "$(mbps "$d")" "$(printf '%.3f' "$r")"

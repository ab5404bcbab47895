#!/usr/bin/env bash
# The cluster memory tier's transport: a shard put into a node's memory store and restored
# from it over the store's data path (endure-memstore, the real program), against bare TCP
# between the same two addresses with the same system calls (the network's own limit), in
# the same run, round after round (ours and the peer's back to back in each; medians).
#   Target (issue 46): a shard restored from a peer at >= 80 % of the TCP throughput.
# Here the store and the client are on one machine, on two loopback addresses (127.0.0.2
# serves, the client connects from the machine's loopback): the figures are this
# machine's, labelled so; the same program runs between two nodes of a cluster.
#
#   bash bench/checkpointless/run.sh            # a 1 GiB shard, 5 rounds
#   bash bench/checkpointless/run.sh --smoke    # 64 MiB, 2 rounds: checks that it works
# Env: MIB, ROUNDS, BIN (default build/bin).
# Prints a table, and as its very last line one JSON object with every figure and ratio.
set -euo pipefail
cd "$(dirname "$0")/../.."
mib=${MIB:-1024}
rounds=${ROUNDS:-5}
if [ "${1:-}" = "--smoke" ]; then mib=64 rounds=2; fi
bin=${BIN:-build/bin}
for p in endure-memstore endure-memstore-bench; do
  [ -x "$bin/$p" ] || { echo "run.sh: no $bin/$p: run scripts/setup.sh first" >&2; exit 2; }
done

dir=$(mktemp -d /dev/shm/endure-bench-memstore-XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT
# Ports from this shell's pid: two benches on one machine do not collide.
port=$((20000 + ($$ % 2000) * 4))
token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '{"ClusterName": "bench", "InstanceMemoryAllocationPercentage": 50, "Port": %d, "Token": "%s"}\n' \
  "$port" "$token" > "$dir/memory_store.json"
# Room for three shards: the fourth round on reuses a dropped one's pages, as training does.
"$bin/endure-memstore" --config "$dir/memory_store.json" --address 127.0.0.2 --arena "$dir/arena" \
  --capacity-bytes $((mib * 3 * 1048576 + 1048576)) > "$dir/store.log" 2>&1 &
pids+=($!)
head -c $((mib * 1048576)) /dev/urandom > "$dir/tcp-bytes"
"$bin/endure-memstore-bench" tcp-source --address 127.0.0.2 --port $((port + 2)) --file "$dir/tcp-bytes" \
  --rounds "$rounds" > "$dir/tcp.out" &
pids+=($!)
for _ in $(seq 100); do grep -q ready "$dir/tcp.out" 2>/dev/null && grep -q 'memory store of' "$dir/store.log" && break; sleep 0.1; done
"$bin/endure-memstore-bench" measure --store "127.0.0.2:$port" --token "$token" --tcp "127.0.0.2:$((port + 2))" \
  --mib "$mib" --rounds "$rounds" > "$dir/rows.jsonl"
python3 bench/checkpointless/report.py "$dir/rows.jsonl" "$mib" "$rounds"

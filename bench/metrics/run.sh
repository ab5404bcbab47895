#!/usr/bin/env bash
# GET /metrics on endured with a 5-node local cluster (1 controller + 4 workers): 1,000
# scrapes back to back, renders past the collector's cache, and a trivial GET on the same
# server as the machine's own floor (scrape.py does the timing); then how long Debian's
# Prometheus, scraping every second, takes to see a deleted worker leave Running after the
# API shows it, against one scrape interval + the collector's cache (prometheus_lag.py;
# LAG_ROUNDS workers, 3, or 1 with --smoke).
#
#   bash bench/metrics/run.sh          # SCRAPES (1000) scrapes, RENDERS (20) renders
#   bash bench/metrics/run.sh --smoke  # 100 scrapes, 5 renders: a quick end-to-end check
#
# Env: SCRAPES, RENDERS, LAG_ROUNDS, BENCH_PORT (endured's port, 7450), KEEP_HOME=1.
# Starts its own endured (private ENDURE_HOME under /tmp) and one cluster "bench-metrics",
# deletes it and stops endured on exit, whatever happens. Progress goes to stderr; stdout
# gets a table and, as its very last line, one JSON object. Target: under 5 ms a scrape.
# Exit status: 0 measured (target met or not), 1 a step failed, 2 bad usage or no build,
# 3 the host is not free for it (a port in use, or Slurm already running).
set -uo pipefail

SMOKE=0
for arg in "$@"; do
  case "$arg" in
    --smoke) SMOKE=1 ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument: $arg" >&2; exit 2 ;;
  esac
done
SCRAPES=${SCRAPES:-1000}
RENDERS=${RENDERS:-20}
LAG_ROUNDS=${LAG_ROUNDS:-3}
if [ "$SMOKE" = 1 ]; then SCRAPES=100; RENDERS=5; LAG_ROUNDS=1; fi
TARGET_MS=5
REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BIN:-$REPO/build/bin}
PORT=${BENCH_PORT:-7450}
NAME=bench-metrics

for b in endured endure endure-agent; do
  [ -x "$BIN/$b" ] || { echo "run.sh: no $BIN/$b: build the project first" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (local nodes are namespaces)" >&2; exit 2; }
if ss -Hltn "sport = :$PORT" | grep -q .; then
  echo "run.sh: port $PORT is in use; set BENCH_PORT" >&2; exit 3
fi
if ss -Hltnp | grep -q slurm; then
  echo "run.sh: Slurm daemons already run here (another cluster): run one at a time" >&2; exit 3
fi
unset ENDURE_ENDPOINT ENDURE_TOKEN

log() { echo "[bench metrics] $*" >&2; }
HOME_DIR=$(mktemp -d /tmp/bench-metrics-XXXX)
export ENDURE_HOME=$HOME_DIR
ENDURED_PID=
CREATED=0
RC=0

cleanup() {
  if [ -n "$ENDURED_PID" ] && kill -0 "$ENDURED_PID" 2>/dev/null; then
    if [ "$CREATED" = 1 ]; then
      log "delete-cluster $NAME"
      timeout 400 "$BIN/endure" delete-cluster --cluster-name "$NAME" --wait --wait-timeout 360 \
        >>"$HOME_DIR/cleanup.log" 2>&1 || { log "delete-cluster failed"; RC=1; }
    fi
    kill "$ENDURED_PID" 2>/dev/null
    for _ in $(seq 150); do kill -0 "$ENDURED_PID" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$ENDURED_PID" 2>/dev/null && { kill -9 "$ENDURED_PID"; RC=1; }
    wait "$ENDURED_PID" 2>/dev/null
  fi
}
on_exit() {
  local rc=$?
  trap - EXIT INT TERM HUP
  cleanup
  [ "$rc" = 0 ] && rc=$RC
  if [ "$rc" != 0 ] || [ "${KEEP_HOME:-0}" = 1 ]; then
    log "kept $HOME_DIR"
  else
    rm -rf --one-file-system "$HOME_DIR"
  fi
  exit "$rc"
}
trap on_exit EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP

setsid "$BIN/endured" --home "$HOME_DIR" --port "$PORT" >>"$HOME_DIR/endured.log" 2>&1 &
ENDURED_PID=$!
for _ in $(seq 100); do [ -s "$HOME_DIR/endpoint" ] && break; sleep 0.1; done
[ -s "$HOME_DIR/endpoint" ] || { log "endured did not start"; exit 1; }

LC=$REPO/examples/lifecycle/base-config
group() {
  printf '{"InstanceGroupName":"%s","InstanceType":"local.c2","InstanceCount":%d,' "$1" "$2"
  printf '"ThreadsPerCore":1,"LifeCycleConfig":{"SourceS3Uri":"%s","OnCreate":"on_create.sh"}}' "$LC"
}
printf '{"ClusterName":"%s","NodeRecovery":"Automatic","InstanceGroups":[%s,%s]}\n' \
  "$NAME" "$(group controller 1)" "$(group worker 4)" >"$HOME_DIR/spec.json"
log "create-cluster $NAME (1 controller + 4 workers)"
CREATED=1
timeout 660 "$BIN/endure" create-cluster --cli-input-json "file://$HOME_DIR/spec.json" --wait \
  --wait-timeout 600 >"$HOME_DIR/create.log" 2>&1 || { log "create-cluster failed"; exit 1; }
# Let Slurm's first sample and a few heartbeats land, so the scrape carries every family.
for _ in $(seq 60); do
  curl -sf "http://127.0.0.1:$PORT/metrics" | grep -q '^slurm_cpus_total' && break
  sleep 1
done
log "scraping"
python3 "$REPO/bench/metrics/scrape.py" "$PORT" "$SCRAPES" "$RENDERS" "$TARGET_MS" \
  "$HOME_DIR/scrape.json" || exit 1
log "Prometheus's lag"
python3 "$REPO/bench/metrics/prometheus_lag.py" "$PORT" "$NAME" "$LAG_ROUNDS" \
  "$HOME_DIR/scrape.json" || exit 1

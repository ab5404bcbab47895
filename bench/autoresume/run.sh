#!/usr/bin/env bash
# Auto-resume against plain Slurm, on the same local cluster in the same run.
#
#   bash bench/autoresume/run.sh            # TRIALS (5) auto-resume trials + the peer rows,
#                                           # then the same trials on hosts over SSH
#   bash bench/autoresume/run.sh --no-hosts # local nodes only
#   bash bench/autoresume/run.sh --smoke    # 1 trial, PEER_WAIT 10 s, local nodes only: a
#                                           # quick end-to-end check
#
# Env: TRIALS (default 5), PEER_WAIT (default 180 s), BENCH_PORT (endured's port, 7400),
#      BENCH_CLUSTER_INDEX (default 1: see below), KEEP_HOME=1 (keep the private ENDURE_HOME
#      even after a clean run).
# Starts its own endured (private ENDURE_HOME under /tmp) and one cluster "bench-ar"
# (1 controller + 4 workers, local.c2; plus BENCH_CLUSTER_INDEX-1 placeholder clusters that
# run nothing), and deletes them and stops endured on exit, whatever happens. The hosts rows
# (hosts.py) follow once the local cluster is deleted: 6 test hosts and a file server built
# on 127.0.58.x / 127.0.57.1, a cluster of 1 controller + 3 workers on them, a worker's
# host's plug pulled per trial; all of it removed again.
# Progress goes to stderr; stdout gets a table and, as its very last line, one JSON object.
# Exit status: 0 every measurement completed (whether or not the target is met), 1 some
# measurement or the cleanup failed, 2 bad usage or no build, 3 the host is not free for it.
set -uo pipefail

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "$0"; }
SMOKE=0
HOST_ROWS=1
for arg in "$@"; do
  case "$arg" in
    --smoke) SMOKE=1; HOST_ROWS=0 ;;
    --no-hosts) HOST_ROWS=0 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument: $arg" >&2; usage >&2; exit 2 ;;
  esac
done
TRIALS=${TRIALS:-5}
IDX=${BENCH_CLUSTER_INDEX:-1}
PEER_WAIT=${PEER_WAIT:-180}
if [ "$SMOKE" = 1 ]; then TRIALS=1; PEER_WAIT=10; fi
case "$TRIALS$PEER_WAIT$IDX" in *[!0-9]*|'') echo "run.sh: TRIALS, PEER_WAIT and BENCH_CLUSTER_INDEX must be whole numbers" >&2; exit 2 ;; esac
[ "$TRIALS" -ge 1 ] || { echo "run.sh: TRIALS must be at least 1" >&2; exit 2; }
[ "$IDX" -ge 1 ] && [ "$IDX" -le 12 ] || { echo "run.sh: BENCH_CLUSTER_INDEX must be from 1 to 12" >&2; exit 2; }

REPO=$(cd "$(dirname "$0")/../.." && pwd)
BIN=$REPO/build/bin
PORT=${BENCH_PORT:-7400}
NAME=bench-ar
TARGET_S=20
WARM_TARGET_S=2.5    # fault -> re-run start, median, with a warm spare swapped in
UNITS=400            # 100 units per rank ...
UNIT_SECONDS=0.2     # ... of 0.2 s: 20 s of work per rank, well past the fault
PROGRESS_UNITS=5     # ~1 s of progress on every rank before the fault
PROGRESS_TIMEOUT=120
RERUN_TIMEOUT=120
EVENTS_TIMEOUT=30
IDLE_TIMEOUT=180
JOB_END_TIMEOUT=60
NO_REPAIR_WAIT=$(( PEER_WAIT < 60 ? PEER_WAIT : 60 ))

for b in endured endure; do
  if [ ! -x "$BIN/$b" ]; then echo "run.sh: no $BIN/$b: build the project first" >&2; exit 2; fi
done
if [ "$(id -u)" != 0 ]; then echo "run.sh: needs root (local nodes are namespaces)" >&2; exit 2; fi
# Our own endured only: never a caller's endpoint or token.
unset ENDURE_ENDPOINT ENDURE_TOKEN

T0=$(date +%s.%N)
log() { printf '[bench %6.1fs] %s\n' "$(python3 -c "import time; print(time.time() - $T0)")" "$*" >&2; }
now() { date +%s.%N; }
# Prints the re-run's figures once the step of run RUN started again after the fault at TF
# (KIND ours|peer), polling every INTERVAL s for at most LIMIT s; fails when it did not.
wait_rerun() {
  local run=$1 tf=$2 kind=$3 limit=$4 interval=$5 deadline figures
  deadline=$(python3 -c "print($tf + $limit)")
  while :; do
    if figures=$(python3 "$PY" rerun "$FSX/$run" "$tf" "$kind"); then echo "$figures"; return 0; fi
    python3 -c "import sys,time; sys.exit(0 if time.time() < $deadline else 1)" || return 1
    sleep "$interval"
  done
}

# ---- preflight: the port, and the addresses a cluster of index 1 takes ----------------
for p in "$PORT" $([ "$HOST_ROWS" = 1 ] && echo $((PORT + 1000))); do
  if ss -Hltn "sport = :$p" 2>/dev/null | grep -q .; then
    echo "run.sh: port $p is in use; set BENCH_PORT to a free one (and BENCH_PORT+1000 for hosts)" >&2
    exit 3
  fi
done
# Every endured numbers its clusters from 1 in its own store (the lowest index no cluster of
# ITS store holds), and the index fixes the node addresses (127.(100+c).g.(s+1)) and the Slurm
# ports (slurmctld 16000+(c-1)*1281, slurmd above it; slurmd binds 0.0.0.0). So the first
# cluster of any endured on this host (the integration tests run one or two at a time, with
# indexes 1 and 2) takes the same ports as the first cluster of ours would, and whichever
# starts second fails ("Unable to bind listen port"). To live beside them, this bench first
# can make BENCH_CLUSTER_INDEX-1 placeholder clusters in its own store, whose lifecycle
# script fails at once (nothing started, no port taken; a Failed cluster keeps its index
# until it is deleted), so that its real cluster gets index BENCH_CLUSTER_INDEX. The
# default, 1, makes none: a benchmark runs alone, and this check refuses a busy host.
PORT_BASE=$(( 16000 + (IDX - 1) * 1281 ))
if ss -Hltn "( sport >= :$PORT_BASE and sport <= :$((PORT_BASE + 1280)) )" 2>/dev/null | grep -q .; then
  echo "run.sh: ports $PORT_BASE-$((PORT_BASE + 1280)) (those of a local cluster of index $IDX)" \
       "are in use, likely by another endured's cluster; set BENCH_CLUSTER_INDEX to a free index" >&2
  ss -Hltnp "( sport >= :$PORT_BASE and sport <= :$((PORT_BASE + 1280)) )" >&2 || true
  exit 3
fi

HOME_DIR=$(mktemp -d /tmp/bench-ar-XXXX)
export ENDURE_HOME=$HOME_DIR
RESULTS=$HOME_DIR/results.jsonl
: >"$RESULTS"
PY=$REPO/bench/autoresume/figures.py  # files, events, statistics, the report
ENDURED_PID=
CLUSTERS=()          # every cluster this run created (placeholders first), to delete
CLEANED=0
CLEANUP_OK=1
FAILED=0

endure() { "$BIN/endure" "$@"; }
# A command on the controller node (where the Slurm client commands are), bounded.
on_head() { timeout 60 "$BIN/endure" exec --cluster-name "$NAME" --node controller-0 -- bash -c "$1"; }

# endured in its own session, so that a Ctrl-C of this script does not reach it before
# it has deleted the cluster.
start_endured() {
  rm -f "$HOME_DIR/endpoint"
  # Nodes on hosts reach endured over TLS only.
  [ "$HOST_ROWS" = 1 ] && echo "{\"AgentTlsPort\": $((PORT + 1000))}" >"$HOME_DIR/config.json"
  setsid "$BIN/endured" --home "$HOME_DIR" --port "$PORT" >>"$HOME_DIR/endured.log" 2>&1 &
  ENDURED_PID=$!
  for _ in $(seq 100); do
    [ -s "$HOME_DIR/endpoint" ] && return 0
    kill -0 "$ENDURED_PID" 2>/dev/null || break
    sleep 0.1
  done
  return 1
}

cleanup() {
  [ "$CLEANED" = 1 ] && return 0
  CLEANED=1
  if [ "${#CLUSTERS[@]}" -gt 0 ] && ! { [ -n "$ENDURED_PID" ] && kill -0 "$ENDURED_PID" 2>/dev/null; }; then
    log "cleanup: endured is gone; starting it again to delete the cluster"
    start_endured || log "cleanup: endured did not start again (see $HOME_DIR/endured.log)"
  fi
  if [ -n "$ENDURED_PID" ] && kill -0 "$ENDURED_PID" 2>/dev/null; then
    local i c
    for (( i = ${#CLUSTERS[@]} - 1; i >= 0; i-- )); do
      c=${CLUSTERS[$i]}
      # Deleted already (the local cluster before the hosts rows, the hosts one by hosts.py).
      timeout 30 "$BIN/endure" describe-cluster --cluster-name "$c" >/dev/null 2>&1 || continue
      log "cleanup: delete-cluster $c"
      if ! timeout 400 "$BIN/endure" delete-cluster --cluster-name "$c" --wait \
           --wait-timeout 360 >>"$HOME_DIR/cleanup.log" 2>&1; then
        CLEANUP_OK=0
        log "cleanup: delete-cluster $c failed (see $HOME_DIR/cleanup.log)"
      fi
    done
    log "cleanup: stop endured (pid $ENDURED_PID)"
    kill "$ENDURED_PID" 2>/dev/null
    for _ in $(seq 150); do kill -0 "$ENDURED_PID" 2>/dev/null || break; sleep 0.1; done
    if kill -0 "$ENDURED_PID" 2>/dev/null; then
      log "cleanup: endured did not stop in 15 s; SIGKILL"
      kill -9 "$ENDURED_PID" 2>/dev/null
      CLEANUP_OK=0
    fi
    wait "$ENDURED_PID" 2>/dev/null
  fi
  # Instances outlive endured: make sure none of ours is left.
  local left
  left=$(pgrep -a -f -- "$HOME_DIR" || true)
  if [ -n "$left" ]; then
    CLEANUP_OK=0
    log "cleanup: processes of $HOME_DIR still run:"
    printf '%s\n' "$left" >&2
  fi
}
on_exit() {
  local rc=$?
  trap - EXIT INT TERM HUP
  cleanup
  if [ "$CLEANUP_OK" != 1 ]; then rc=1; note "cleanup was not clean: see the log above"; fi
  [ "$rc" = 0 ] || note "the run stopped early or a measurement failed (exit status $rc)"
  local keep=0
  if [ "$rc" != 0 ] || [ "${KEEP_HOME:-0}" = 1 ]; then
    keep=1
    log "kept $HOME_DIR (endured.log, cli.log, results.jsonl, events, the cluster's fsx)"
  fi
  # The report comes after everything is stopped, so that its JSON is the very last line.
  if [ -s "$PY" ]; then
    python3 "$PY" report "$RESULTS" "$TRIALS" "$PEER_WAIT" "$TARGET_S" "$SMOKE" "$NO_REPAIR_WAIT" "$WARM_TARGET_S"
  fi
  [ "$keep" = 1 ] || rm -rf --one-file-system "$HOME_DIR" 2>/dev/null || true
  exit "$rc"
}
trap on_exit EXIT
trap 'log "interrupted"; exit 130' INT TERM HUP


note() { python3 -c 'import json,sys; print(json.dumps({"kind":"note","note":sys.argv[1]}))' "$1" >>"$RESULTS"; log "note: $1"; }
events_file() { # AFTER_ID FILE: the cluster's events after AFTER_ID, as JSON
  timeout 30 "$BIN/endure" list-cluster-events --cluster-name "$NAME" \
    --cli-input-json "{\"AfterEventId\": $1, \"MaxResults\": 10000}" >"$2" 2>>"$HOME_DIR/cli.log"
}
mark_events() { events_file 0 "$HOME_DIR/ev-all.json" && python3 "$PY" maxid "$HOME_DIR/ev-all.json"; }

# All 4 workers idle in Slurm (nothing running, nothing drained), within $1 seconds.
wait_workers_idle() {
  local deadline=$(( $(date +%s) + $1 )) out n
  while :; do
    out=$(on_head "sinfo -h -N -o '%n %t'" 2>/dev/null | sort -u)
    n=$(awk '$1 ~ /^worker-[0-3]$/ && $2 == "idle"' <<<"$out" | wc -l)
    [ "$n" -ge 4 ] && return 0
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "timeout: the workers are not all idle after $1 s: $(tr '\n' ' ' <<<"$out")"
      return 1
    fi
    sleep 1
  done
}

job_state() { on_head "squeue -h -j $1 -o '%T %r' 2>/dev/null" 2>/dev/null | head -n 1; }
# The job gone from the queue (or ended), within $2 seconds.
wait_job_gone() {
  local deadline=$(( $(date +%s) + $2 )) st
  while :; do
    st=$(job_state "$1")
    case "$st" in ""|COMPLETED*|CANCELLED*|FAILED*|TIMEOUT*|NODE_FAIL*|PREEMPTED*|OUT_OF_MEMORY*|BOOT_FAIL*|DEADLINE*) return 0 ;; esac
    if [ "$(date +%s)" -ge "$deadline" ]; then log "timeout: job $1 still '$st' after $2 s"; return 1; fi
    sleep 1
  done
}

# Submits RUN's job script (on /fsx) with sbatch ARGS; prints the job id.
submit() {
  local run=$1; shift
  on_head "sbatch --parsable $* /fsx/$run/job.sbatch" 2>>"$HOME_DIR/cli.log" | tr -d '[:space:]' | cut -d';' -f1
}
write_job() { # RUN SRUN_OPTS
  mkdir -p "$FSX/$1"
  cat >"$FSX/$1/job.sbatch" <<EOF
#!/bin/bash
#SBATCH -N4
#SBATCH --job-name=$1
#SBATCH --output=/fsx/$1/job-%j.out
echo "job \$SLURM_JOB_ID restart \${SLURM_RESTART_COUNT:-0} on \$SLURM_JOB_NODELIST"
srun $2 -N4 python3 /fsx/units.py --dir /fsx/$1 --units $UNITS --unit-seconds $UNIT_SECONDS
echo "srun rc=\$?"
EOF
}
wait_progress() { # RUN JOB: every rank started and ~1 s of progress, within PROGRESS_TIMEOUT
  local deadline=$(( $(date +%s) + PROGRESS_TIMEOUT ))
  until python3 "$PY" progress "$FSX/$1" "$2" "$PROGRESS_UNITS"; do
    if [ "$(date +%s)" -ge "$deadline" ]; then
      log "timeout: job $2 made no progress on every rank in $PROGRESS_TIMEOUT s (state: $(job_state "$2"))"
      return 1
    fi
    sleep 0.2
  done
}
inject() { # NODE; prints the fault time (epoch s, taken just before the call)
  local t
  t=$(now)
  if ! timeout 30 "$BIN/endure" debug inject-fault --cluster-name "$NAME" --node "$1" --kind crash \
       >>"$HOME_DIR/cli.log" 2>&1; then
    return 1
  fi
  echo "$t"
}
batch_host() { on_head "squeue -h -j $1 -o %B" 2>/dev/null | tr -d '[:space:]'; }

# ---- endured and the cluster ------------------------------------------------------------
log "ENDURE_HOME=$HOME_DIR, endured on port $PORT, trials=$TRIALS, PEER_WAIT=$PEER_WAIT s$([ "$SMOKE" = 1 ] && echo ' (smoke)')"
if ! start_endured; then
  log "endured did not start:"; tail -n 20 "$HOME_DIR/endured.log" >&2
  exit 1
fi
log "endured (pid $ENDURED_PID) serves $(cat "$HOME_DIR/endpoint")"

python3 "$REPO/bench/autoresume/specs.py" bench "$REPO/examples/lifecycle/base-config" "$NAME" >"$HOME_DIR/spec.json"
# The placeholders (see the top): they take indexes 1 .. IDX-1 of this endured's store.
if [ "$IDX" -gt 1 ]; then
  mkdir -p "$HOME_DIR/hold-lc"
  cp "$REPO/examples/lifecycle/base-config/provisioning_parameters.json" "$HOME_DIR/hold-lc/"
  printf '#!/bin/bash\necho "bench placeholder: holds a cluster index, starts nothing"\nexit 1\n' \
    >"$HOME_DIR/hold-lc/on_create.sh"
  for h in $(seq 1 $((IDX - 1))); do
    python3 "$REPO/bench/autoresume/specs.py" placeholder "$HOME_DIR/hold-lc" "$NAME-hold-$h" >"$HOME_DIR/hold-$h.json"
    CLUSTERS+=("$NAME-hold-$h")
    # It fails by design (exit status 1); it only has to exist, Failed.
    timeout 150 "$BIN/endure" create-cluster --cli-input-json "file://$HOME_DIR/hold-$h.json" --wait \
      --wait-timeout 120 >>"$HOME_DIR/cli.log" 2>&1
    st=$(timeout 30 "$BIN/endure" describe-cluster --cluster-name "$NAME-hold-$h" 2>>"$HOME_DIR/cli.log" \
         | python3 -c 'import json,sys; print(json.load(sys.stdin).get("ClusterStatus",""))' 2>/dev/null)
    if [ "$st" != Failed ]; then
      log "placeholder cluster $NAME-hold-$h is '$st', not Failed (see $HOME_DIR/cli.log)"; exit 1
    fi
  done
  log "placeholder clusters $NAME-hold-1..$((IDX - 1)) hold indexes 1..$((IDX - 1)) (Failed by design; nothing runs)"
fi

log "create-cluster $NAME (1 controller + 4 workers), index $IDX: slurmctld port $PORT_BASE"
tc=$(now)
CLUSTERS+=("$NAME")
if ! timeout 660 "$BIN/endure" create-cluster --cli-input-json "file://$HOME_DIR/spec.json" --wait \
     --wait-timeout 600 >"$HOME_DIR/create.log" 2>&1; then
  log "create-cluster failed:"; tail -n 20 "$HOME_DIR/create.log" >&2
  exit 1
fi
log "cluster InService in $(python3 -c "print('%.1f' % ($(now) - $tc))") s"
timeout 30 "$BIN/endure" describe-cluster --cluster-name "$NAME" >"$HOME_DIR/describe.json" || exit 1
ctld_port=$(python3 "$PY" field "$HOME_DIR/describe.json" SlurmctldPort)
if [ "$ctld_port" != "$PORT_BASE" ]; then
  log "the cluster's slurmctld port is $ctld_port, not $PORT_BASE (index $IDX)"; exit 1
fi
FSX=$HOME_DIR/clusters/$(python3 "$PY" arn-id "$HOME_DIR/describe.json")/fsx
[ -d "$FSX" ] || { log "no shared folder at $FSX"; exit 1; }
cp "$REPO/tests/integration/jobs/units.py" "$FSX/units.py"
if ! wait_workers_idle "$IDLE_TIMEOUT"; then exit 1; fi

# ---- ours: srun --auto-resume=1 ----------------------------------------------------------
node_for_trial() { # worker-0 (the batch host) in trial 4, the others in turn elsewhere
  local i=$1 others=(worker-2 worker-1 worker-3)
  if [ "$i" -eq 4 ]; then echo worker-0; return; fi
  [ "$i" -gt 4 ] && i=$((i - 1))
  echo "${others[$(( (i - 1) % 3 ))]}"
}
# The worker group's warm spares, set and awaited (the cluster InService again).
set_spares() { # N
  timeout 200 "$BIN/endure" update-cluster --cluster-name "$NAME" --instance-group-name worker \
    --warm-spares "$1" --wait --wait-timeout 180 >>"$HOME_DIR/cli.log" 2>&1
}
# The group's spare ready (CurrentWarmSpares 1), within $1 seconds.
wait_spare_ready() {
  local deadline=$(( $(date +%s) + $1 ))
  while [ "$(date +%s)" -lt "$deadline" ]; do
    timeout 30 "$BIN/endure" describe-cluster --cluster-name "$NAME" >"$HOME_DIR/describe-spare.json" 2>/dev/null
    [ "$(python3 "$PY" warm-spares "$HOME_DIR/describe-spare.json" 2>/dev/null)" = 1 ] && return 0
    sleep 0.5
  done
  log "the warm spare was not ready within $1 s"
  return 1
}
MEASURE_OK=1
# TRIALS trials of MODE: cold (a new instance replaces the crashed node) or warm (the group's
# warm spare takes its name).
ours_trials() { # MODE
local mode=$1 trial node figs run job bh mark tf rerun waited ev need evdeadline
for trial in $(seq 1 "$TRIALS"); do
  node=$(node_for_trial "$trial")
  figs=""
  run=ar-$mode-$trial
  if [ "$mode" = warm ] && ! wait_spare_ready "$IDLE_TIMEOUT"; then MEASURE_OK=0; break; fi
  write_job "$run" "--auto-resume=1"
  job=$(submit "$run")
  if ! [[ "$job" =~ ^[0-9]+$ ]]; then log "trial $trial: sbatch failed (see $HOME_DIR/cli.log)"; MEASURE_OK=0; break; fi
  log "$mode trial $trial: job $job ($run), fault: crash $node"
  if ! wait_progress "$run" "$job"; then MEASURE_OK=0; break; fi
  bh=$(batch_host "$job")
  mark=$(mark_events) || mark=0
  if ! tf=$(inject "$node"); then log "trial $trial: inject-fault failed (see $HOME_DIR/cli.log)"; MEASURE_OK=0; break; fi
  log "trial $trial: crashed $node (batch host: ${bh:-?})"
  rerun=$(wait_rerun "$run" "$tf" ours "$RERUN_TIMEOUT" 0.2) || rerun=""
  waited=$(python3 -c "print(round($(now) - $tf, 1))")
  # The events (detect, node back, job ready) are there by the re-run; allow a little more.
  ev=$HOME_DIR/ev-trial-$trial.json
  need="detected_s,node_back_s,job_ready_s"
  [ -z "$rerun" ] && need=""
  evdeadline=$(( $(date +%s) + EVENTS_TIMEOUT ))
  while :; do
    if events_file "$mark" "$ev" && figs=$(python3 "$PY" events "$ev" "$tf" "$node" "$job" "$need"); then break; fi
    if [ "$(date +%s)" -ge "$evdeadline" ]; then log "trial $trial: not every event came in $EVENTS_TIMEOUT s"; break; fi
    sleep 1
  done
  [ -n "${figs:-}" ] || figs='{}'
  python3 "$PY" trial-row "$trial" "$node" "$job" "$bh" "$rerun" "$waited" "$figs" "$mode" >>"$RESULTS"
  if [ -n "$rerun" ]; then
    log "trial $trial: re-run started $(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["fault_to_rerun_s"])' "$rerun") s after the fault; events: $figs"
  else
    log "trial $trial: no re-run within $RERUN_TIMEOUT s (job state: $(job_state "$job")); events: $figs"
    MEASURE_OK=0
  fi
  on_head "scancel $job" >/dev/null 2>&1
  wait_job_gone "$job" "$JOB_END_TIMEOUT" || MEASURE_OK=0
  if ! wait_workers_idle "$IDLE_TIMEOUT"; then MEASURE_OK=0; break; fi
done
}
ours_trials cold
if [ "$MEASURE_OK" = 1 ]; then
  if set_spares 1; then
    ours_trials warm
    set_spares 0 || { note "update-cluster --warm-spares 0 failed (see cli.log)"; MEASURE_OK=0; }
  else
    note "update-cluster --warm-spares 1 failed (see cli.log); the warm rows were skipped"
    MEASURE_OK=0
  fi
fi

# ---- the peer: plain Slurm requeue (endure still repairs the node) ------------------------
# One measured fault under a plain requeueable job: returns 0 when it was measured.
peer_trial() { # KIND RUN WAIT_S
  local kind=$1 run=$2 wait_s=$3 node=worker-2 job bh mark tf deadline restart waited st ev figs
  write_job "$run" ""
  job=$(submit "$run" --requeue --no-kill=off)
  if ! [[ "$job" =~ ^[0-9]+$ ]]; then log "$kind: sbatch failed (see $HOME_DIR/cli.log)"; return 1; fi
  log "$kind: job $job ($run: sbatch --requeue --no-kill=off, srun without --auto-resume), fault: crash $node"
  wait_progress "$run" "$job" || { on_head "scancel $job" >/dev/null 2>&1; return 1; }
  mark=$(mark_events) || mark=0
  tf=$(inject "$node") || { log "$kind: inject-fault failed"; on_head "scancel $job" >/dev/null 2>&1; return 1; }
  log "$kind: crashed $node; waiting up to $wait_s s for the requeued job to start its step again"
  restart=$(wait_rerun "$run" "$tf" peer "$wait_s" 0.5) || restart=""
  waited=$(python3 -c "print(round($(now) - $tf, 3))")
  st=$(job_state "$job")
  ev=$HOME_DIR/ev-$kind.json
  events_file "$mark" "$ev" && figs=$(python3 "$PY" events "$ev" "$tf" "$node" "$job" "")
  [ -n "${figs:-}" ] || figs='{}'
  python3 "$PY" peer-row "$kind" "$node" "$job" "$restart" "$waited" "$wait_s" "$st" "$figs" >>"$RESULTS"
  if [ -n "$restart" ]; then
    log "$kind: the step started again $(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["fault_to_rerun_s"])' "$restart") s after the fault"
  else
    log "$kind: not restarted after $waited s (job: ${st:-gone}); events: $figs"
  fi
  on_head "scancel $job" >/dev/null 2>&1
  wait_job_gone "$job" "$JOB_END_TIMEOUT"
}

if [ "$MEASURE_OK" = 1 ]; then
  if peer_trial peer peer-requeue "$PEER_WAIT"; then
    # The crashed node is being (or has been) replaced: wait for it before the next row.
    wait_workers_idle "$IDLE_TIMEOUT" || MEASURE_OK=0
  else
    MEASURE_OK=0
  fi
else
  note "the auto-resume trials did not all complete; the peer rows were skipped"
fi

# ---- the peer without node repair (last: it leaves a drained node) -----------------------
if [ "$MEASURE_OK" = 1 ]; then
  # update-cluster wants a group count along with --node-recovery: the workers keep their 4.
  if timeout 150 "$BIN/endure" update-cluster --cluster-name "$NAME" --node-recovery None \
       --instance-group-name worker --instance-count 4 --wait --wait-timeout 120 \
       >>"$HOME_DIR/cli.log" 2>&1; then
    timeout 30 "$BIN/endure" describe-cluster --cluster-name "$NAME" >"$HOME_DIR/describe2.json"
    nr=$(python3 "$PY" field "$HOME_DIR/describe2.json" NodeRecovery 2>/dev/null)
    log "peer_no_repair: NodeRecovery is now '${nr:-?}'"
    if [ "$nr" = None ]; then
      peer_trial peer_no_repair peer-norepair "$NO_REPAIR_WAIT" || MEASURE_OK=0
    else
      note "update-cluster --node-recovery None did not show in describe-cluster ('$nr'); the no-repair row was skipped"
      MEASURE_OK=0
    fi
  else
    note "update-cluster --node-recovery None failed (see cli.log); the no-repair row was skipped"
    MEASURE_OK=0
  fi
fi

# ---- hosts over SSH (hosts.py): the local cluster goes first, so that its idle nodes do not
# share the two cores with the hosts' --------------------------------------------------------
if [ "$MEASURE_OK" = 1 ] && [ "$HOST_ROWS" = 1 ]; then
  log "delete-cluster $NAME before the hosts rows"
  if ! timeout 400 "$BIN/endure" delete-cluster --cluster-name "$NAME" --wait --wait-timeout 360 \
       >>"$HOME_DIR/cli.log" 2>&1; then
    note "delete-cluster $NAME failed (see cli.log); the hosts rows were skipped"
    MEASURE_OK=0
  fi
fi
if [ "$MEASURE_OK" = 1 ] && [ "$HOST_ROWS" = 1 ]; then
  CLUSTERS+=(bench-ar-hosts)
  timeout -s TERM 1800 python3 "$REPO/bench/autoresume/hosts.py" "$BIN" \
    "$REPO/examples/lifecycle/base-config" "$REPO/tests/integration/jobs/units.py" \
    "$RESULTS" "$TRIALS" || MEASURE_OK=0
fi

[ "$MEASURE_OK" = 1 ] || FAILED=1
exit "$FAILED"   # on_exit stops everything, then prints the report

#!/usr/bin/env bash
# The main job, one command: a local cluster (1 controller, 4 workers and a warm spare), a
# RedPajama-format sample and its tokenizer, a small Llama trained across the workers under
# srun --auto-resume=1 with an asynchronous checkpoint every step to the cluster's memory
# (TieredStorageConfig: each rank's shard in its node's store and a peer's) and every 10
# steps to /fsx, three faults of different kinds (a crash, a hang, a logged hardware error)
# at random steps on three workers, then the same run without faults, and a recovery
# report: per fault the times to detect, drain, replace or reboot and run again, the steps
# lost and where each rank restored from, the effective training time ratio, the final
# loss, the final weights against the fault-free run's bit for bit, and a loss curve with
# the faults marked.
#
#   bash scripts/demo.sh [--keep]
#
# --keep leaves the cluster and endured running to explore. ENDURE_DEMO_SEED picks the
# faults (default $RANDOM), ENDURE_DEMO_OUT where the report and PNG go (default
# ./demo-out), ENDURE_DEMO_STEPS the run's length, ENDURE_DEMO_PORT endured's port.
# Needs root and a build from scripts/setup.sh. Without --keep leaves nothing running.
set -euo pipefail
t_start=$(date +%s.%N)
keep=0
for arg in "$@"; do
  case $arg in
    --keep) keep=1 ;;
    *) echo "usage: $0 [--keep]" >&2; exit 2 ;;
  esac
done
out=$(realpath -m "${ENDURE_DEMO_OUT:-$PWD/demo-out}")
cd "$(dirname "$0")/.."
bin=$PWD/build/bin
demo=$PWD/scripts/demo
py=/usr/bin/python3  # Debian's, with its matplotlib (a python3 earlier on PATH may lack it)
if [ ! -x "$bin/endured" ] || [ ! -x "$bin/endure-train" ]; then
  echo "demo: no build yet: run scripts/setup.sh first" >&2
  exit 2
fi
seed=${ENDURE_DEMO_SEED:-$RANDOM}
steps=${ENDURE_DEMO_STEPS:-600}
port=${ENDURE_DEMO_PORT:-}
if [ -z "$port" ]; then  # endured's default port, or the next free one
  for port in $(seq 7117 7199); do ss -Hltn "sport = :$port" | grep -q . || break; done
fi
mkdir -p "$out"
rm -f "$out"/*.jsonl "$out"/{faults,events,report}.json "$out"/*.out "$out"/loss.png

# A private home, so the demo never touches a real ~/.endure or its controller. Three faults
# are three resumes of one job; a node judged hung while the 2 cores are busy would be a
# fourth, which the run survives the same.
ENDURE_HOME=$(mktemp -d /tmp/endure-demo-XXXXXX)
export ENDURE_HOME
echo '{"AutoResumeMaxResumes": 10}' >"$ENDURE_HOME/config.json"
endure() { "$bin/endure" "$@"; }
elapsed() { "$py" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(date +%s.%N)"; }

"$bin/endured" --home "$ENDURE_HOME" --port "$port" >"$ENDURE_HOME/endured.log" 2>&1 &
endured_pid=$!
drive_pid=
gone=0
cleanup() {
  [ -n "$drive_pid" ] && kill "$drive_pid" 2>/dev/null
  [ "$keep" = 1 ] && return
  if timeout 120 "$bin/endure" delete-cluster --cluster-name demo --wait >/dev/null 2>&1; then
    gone=1  # the home holds nothing a node uses any more: removed below, once endured stops
  else
    # endured is gone (or stuck): end the nodes it started, each the first process of its
    # pid namespace (killing it ends the node), checked to be this demo's node by its argv.
    for f in "$ENDURE_HOME"/clusters/*/instances/*/host.pid; do
      [ -s "$f" ] || continue
      pid=$(cat "$f")
      if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$(dirname "$f")/boot.json"; then
        kill -9 "$pid" 2>/dev/null || true
      fi
    done
    grep -o "$ENDURE_HOME/clusters/[^ ]*/local" /proc/mounts | xargs -r umount -l 2>/dev/null || true
  fi
  kill "$endured_pid" 2>/dev/null || true
  wait "$endured_pid" 2>/dev/null || true
  [ "$gone" = 1 ] && rm -rf "$ENDURE_HOME"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s "$ENDURE_HOME/endpoint" ] && break; sleep 0.1; done
if [ ! -s "$ENDURE_HOME/endpoint" ]; then
  echo "demo: endured did not start:" >&2
  cat "$ENDURE_HOME/endured.log" >&2
  exit 1
fi
echo "== endured serves $(cat "$ENDURE_HOME/endpoint") with its state in $ENDURE_HOME"
echo "   console: http://127.0.0.1:$port/console/  (token: $ENDURE_HOME/token)"
echo "   fault seed: $seed  (ENDURE_DEMO_SEED=$seed repeats these faults)"

echo "== create-cluster: 1 controller + 4 workers + 1 warm spare"
timeout 300 "$bin/endure" create-cluster --cli-input-json "file://$demo/cluster.json" --wait >/dev/null
for _ in $(seq 150); do  # the spare is ready a moment after the workers
  spares=$(endure describe-cluster --cluster-name demo |
    "$py" -c "import json,sys; print(sum(g.get('CurrentWarmSpares', 0) for g in json.load(sys.stdin)['InstanceGroups']))")
  [ "$spares" -ge 1 ] && break
  sleep 0.2
done
echo "   warm spares ready: $spares"
arn=$(endure describe-cluster --cluster-name demo | "$py" -c "import json,sys; print(json.load(sys.stdin)['ClusterArn'])")
fsx=$ENDURE_HOME/clusters/${arn##*/}/fsx  # every node's /fsx, as this host sees it

echo "== data: a RedPajama-format sample and its SentencePiece tokenizer (endure-data)"
"$bin/endure-data" sample --out "$fsx/sample.jsonl" --bytes 300k --seed 2 >/dev/null
"$bin/endure-data" prepare --input "$fsx/sample.jsonl" --vocab-size 512 --out "$fsx/data" \
  --seed 2 >/dev/null
echo "   $(du -sh "$fsx/sample.jsonl" | cut -f1) of JSONL -> $(ls "$fsx/data" | wc -l) files in /fsx/data"
cp "$demo/train.sbatch" "$fsx/train.sbatch"

# Submits the training job for run $1 from the controller node; prints the job id.
submit() {
  endure exec --cluster-name demo --node controller-0 -- \
    sbatch --parsable --job-name="$1" --output="/fsx/$1-%j.out" /fsx/train.sbatch "$1" "$steps"
}
wait_job() {
  endure exec --cluster-name demo --node controller-0 -- bash -c \
    "for _ in \$(seq 1500); do [ -z \"\$(squeue -h -j $1)\" ] && exit 0; sleep 0.2; done; exit 1" ||
    { echo "demo: job $1 did not end in 5 minutes" >&2; exit 1; }
}

echo "== training: Llama ($steps steps) on 4 workers, srun --auto-resume=1, ZeRO-2,"
echo "   ckpt every step to the cluster's memory (own node + 1 peer), every 10 steps to /fsx"
t_train=$(date +%s.%N)
job=$(submit faulty)
# Rank 0 runs on the batch host; the faults go to the other three workers.
batch_host=
for _ in $(seq 100); do
  batch_host=$(endure exec --cluster-name demo --node controller-0 -- squeue -h -j "$job" -O BatchHost | tr -d ' ')
  [[ $batch_host == worker-* ]] && break
  sleep 0.2
done
targets=$(printf 'worker-%s\n' 0 1 2 3 | grep -vx "$batch_host" | paste -sd,)
echo "   job $job, rank 0 on $batch_host; faults go to $targets at random steps:"
"$py" "$demo/drive.py" --log "$fsx/faulty.jsonl" --stamped "$out/faulty.stamped.jsonl" \
  --faults "$out/faults.json" --seed "$seed" --steps "$steps" --nodes "$targets" \
  --endure "$bin/endure" --job-out "$fsx/faulty-$job.out" &
drive_pid=$!
wait "$drive_pid" || { echo "demo: the fault driver failed; the job's output:" >&2
  cat "$fsx"/faulty-*.out >&2; exit 1; }
drive_pid=
wait_job "$job"
echo "   $(grep 'srun rc' "$fsx/faulty-$job.out"), $(elapsed "$t_train") s"

echo "== the same run without faults, for the bitwise check"
t_ref=$(date +%s.%N)
ref=$(submit reference)
wait_job "$ref"
echo "   job $ref: $(grep 'srun rc' "$fsx/reference-$ref.out"), $(elapsed "$t_ref") s"

endure list-cluster-events --cluster-name demo --max-results 10000 >"$out/events.json"
cp "$fsx/faulty-$job.out" "$fsx/reference-$ref.out" "$fsx"/{faulty,reference}.jsonl "$out/"  # for a look later
echo
report_rc=0
"$py" "$demo/report.py" --stamped "$out/faulty.stamped.jsonl" --faults "$out/faults.json" \
  --events "$out/events.json" --log "$out/faulty.jsonl" --reference "$out/reference.jsonl" \
  --ckpt "$fsx/ckpt-faulty" --reference-ckpt "$fsx/ckpt-reference" --out "$out/report.json" || report_rc=$?
"$py" "$demo/plot.py" --stamped "$out/faulty.stamped.jsonl" --report "$out/report.json" \
  --out "$out/loss.png"
echo "loss curve: $out/loss.png"
echo "report:     $out/report.json"
echo "demo wall time: $(elapsed "$t_start") s (seed $seed)"
if [ "$keep" = 1 ]; then
  echo "== --keep: the cluster and endured (pid $endured_pid) stay up; explore with"
  echo "   export ENDURE_HOME=$ENDURE_HOME; $bin/endure --output table list-cluster-nodes --cluster-name demo"
  echo "   stop them with: ENDURE_HOME=$ENDURE_HOME $bin/endure delete-cluster --cluster-name demo --wait; kill $endured_pid"
fi
exit "$report_rc"

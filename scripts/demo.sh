#!/usr/bin/env bash
# The main job: start endured, create a local cluster (1 controller + 4 workers) from
# examples/cluster/local.json, run a 4-node batch job on it, crash a worker under an
# srun --auto-resume=1 step and watch the step run again in the same job, show the
# cluster and the replaced node, delete it.
# Needs root and a build from scripts/setup.sh. Leaves nothing running.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/build/bin
if [ ! -x "$bin/endured" ]; then
  echo "demo: no build yet: run scripts/setup.sh first" >&2
  exit 2
fi
# A private home, so the demo never touches a real ~/.endure or its controller.
export ENDURE_HOME=${ENDURE_HOME:-$(mktemp -d /tmp/endure-demo-XXXXXX)}
port=${ENDURE_DEMO_PORT:-7117}
endure() { "$bin/endure" "$@"; }

"$bin/endured" --home "$ENDURE_HOME" --port "$port" >"$ENDURE_HOME/endured.log" 2>&1 &
endured_pid=$!
cleanup() {
  if kill -0 "$endured_pid" 2>/dev/null; then
    endure delete-cluster --cluster-name demo --wait >/dev/null 2>&1 || true
    kill "$endured_pid" 2>/dev/null || true
    wait "$endured_pid" 2>/dev/null || true
  fi
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s "$ENDURE_HOME/endpoint" ] && break; sleep 0.1; done
if [ ! -s "$ENDURE_HOME/endpoint" ]; then
  echo "demo: endured did not start:" >&2
  cat "$ENDURE_HOME/endured.log" >&2
  exit 1
fi
echo "== endured serves $(cat "$ENDURE_HOME/endpoint") with its state in $ENDURE_HOME"

echo "== create-cluster (1 controller + 4 workers)"
t0=$(date +%s.%N)
endure create-cluster --cli-input-json file://examples/cluster/local.json --wait
t1=$(date +%s.%N)

echo "== a 4-node batch job, submitted on the controller node"
endure exec --cluster-name demo --node controller-0 -- bash -c '
cat > /fsx/hello.sbatch <<"JOB"
#!/bin/bash
#SBATCH -N4
#SBATCH --output=/fsx/hello-%j.out
echo "job $SLURM_JOB_ID on $SLURM_JOB_NUM_NODES nodes: $SLURM_JOB_NODELIST"
srun -N4 bash -c "echo \"  rank \$SLURM_PROCID on \$(hostname), /fsx holds \$(ls /fsx | wc -l) files\""
JOB
job=$(sbatch --parsable /fsx/hello.sbatch)
echo "submitted batch job $job"
for _ in $(seq 300); do
  state=$(squeue -h -j "$job" -o %T 2>/dev/null || true)
  [ -z "$state" ] && break
  sleep 0.2
done
head -n 1 /fsx/hello-$job.out
tail -n +2 /fsx/hello-$job.out | sort'

echo "== auto-resume: a worker crashes under a running srun --auto-resume=1 step"
endure exec --cluster-name demo --node controller-0 -- bash -c '
cat > /fsx/resume.sbatch <<"JOB"
#!/bin/bash
#SBATCH -N4
#SBATCH --output=/fsx/resume-%j.out
srun --auto-resume=1 -N4 bash -c "echo \"  rank \$SLURM_PROCID on \$(hostname): resume \${ENDURE_AUTO_RESUME_COUNT} \${ENDURE_AUTO_RESUME_REASON}\"; sleep 6"
echo "  srun exited with $?"
JOB
sbatch --parsable /fsx/resume.sbatch > /fsx/resume.job'
job=$(cat "$ENDURE_HOME"/clusters/*/fsx/resume.job)
sleep 3
endure debug inject-fault --cluster-name demo --node worker-2 --kind crash >/dev/null
echo "crashed worker-2 under job $job; endure replaces it and the step runs again in job $job"
endure exec --cluster-name demo --node controller-0 -- bash -c "
for _ in \$(seq 300); do [ -z \"\$(squeue -h -j $job 2>/dev/null)\" ] && break; sleep 0.2; done
grep -v '^  rank' /fsx/resume-$job.out | grep -v '^srun: error: worker-'; grep '^  rank' /fsx/resume-$job.out | sort -k4,4 -s"
endure --output table list-cluster-events --cluster-name demo | grep -E "FaultInjected|NodeUnhealthy|NodeReturnedToService|AutoResume" | tail -n 5

echo "== describe-cluster"
endure --output table describe-cluster --cluster-name demo
echo "== list-cluster-nodes"
endure --output table list-cluster-nodes --cluster-name demo
echo "== describe-cluster-node worker-2 (the replacement)"
endure --output table describe-cluster-node --cluster-name demo --node-id worker-2

echo "== delete-cluster"
endure delete-cluster --cluster-name demo --wait
kill "$endured_pid"
wait "$endured_pid" 2>/dev/null || true
printf 'create-cluster took %.1f s (1 controller + 4 workers, until InService)\n' \
  "$(echo "$t1 - $t0" | bc -l 2>/dev/null || python3 -c "print($t1 - $t0)")"

#!/usr/bin/env bash
# Checkpointless recovery against today's path, on one local cluster (1 controller, 4
# workers, a warm spare; TieredStorageConfig enabled) in one run: endure-train on the four
# workers under srun --auto-resume=1 (ZeRO-2, the demo's model), twice with the same three
# faults at the same steps (the trainer alone killed on its healthy node, a hang, a node
# crash, on three different workers):
#   memory  every step saved to the cluster's memory tier (own node + 1 peer), /fsx every 10
#   disk    today's path: /fsx every 10 steps, no memory tier
# Per fault and path: steps lost (the interrupted try's last step -> the step restored),
# fault -> the job whole again, -> the trainers restored, -> the first new step, the
# restore's time and where each rank read it from.
#   Targets (issue 46): steps lost <= 1 a fault; fault -> first new step after a node crash
#   <= 1.0 s (median over ROUNDS).
#
#   bash bench/checkpointless/faults.sh            # 300 steps a run, ROUNDS=1
#   bash bench/checkpointless/faults.sh --smoke    # 150 steps: checks that it works
# Env: STEPS, ROUNDS (each round both paths, fresh fault steps), SEED (default 7).
# Starts its own endured (private ENDURE_HOME under /tmp) and deletes its cluster and stops
# it on exit. Progress on stderr; a table, and as its very last line one JSON object.
set -euo pipefail
cd "$(dirname "$0")/../.."
steps=${STEPS:-300}
rounds=${ROUNDS:-1}
seed=${SEED:-7}
if [ "${1:-}" = "--smoke" ]; then steps=150 rounds=1; fi
bin=$PWD/build/bin
for p in endured endure endure-train endure-data endure-memstore; do
  [ -x "$bin/$p" ] || { echo "faults.sh: no $bin/$p: run scripts/setup.sh first" >&2; exit 2; }
done
work=$(mktemp -d /tmp/endure-bench-faults-XXXXXX)
export ENDURE_HOME=$work/home
mkdir -p "$ENDURE_HOME"
echo '{"AutoResumeMaxResumes": 10}' >"$ENDURE_HOME/config.json"
for port in $(seq 7300 7399); do ss -Hltn "sport = :$port" | grep -q . || break; done
"$bin/endured" --home "$ENDURE_HOME" --port "$port" >"$ENDURE_HOME/endured.log" 2>&1 &
endured_pid=$!
cleanup() {
  timeout 120 "$bin/endure" delete-cluster --cluster-name bench-cl --wait >/dev/null 2>&1 || true
  kill "$endured_pid" 2>/dev/null || true
  wait "$endured_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 100); do [ -s "$ENDURE_HOME/endpoint" ] && break; sleep 0.1; done
endure() { "$bin/endure" "$@"; }

# The demo's cluster under another name, its lifecycle scripts named by absolute path.
python3 - "$work/cluster.json" "$PWD/examples/lifecycle/base-config" <<'EOF'
import json, sys
spec = json.load(open("scripts/demo/cluster.json"))
spec["ClusterName"] = "bench-cl"
for g in spec["InstanceGroups"]:
    g["LifeCycleConfig"]["SourceS3Uri"] = sys.argv[2]
json.dump(spec, open(sys.argv[1], "w"))
EOF
echo "faults.sh: creating the cluster" >&2
timeout 300 "$bin/endure" create-cluster --cli-input-json "file://$work/cluster.json" --wait >/dev/null
arn=$(endure describe-cluster --cluster-name bench-cl | python3 -c "import json,sys; print(json.load(sys.stdin)['ClusterArn'])")
fsx=$ENDURE_HOME/clusters/${arn##*/}/fsx
"$bin/endure-data" sample --out "$fsx/sample.jsonl" --bytes 300k --seed 2 >/dev/null
"$bin/endure-data" prepare --input "$fsx/sample.jsonl" --vocab-size 512 --out "$fsx/data" --seed 2 >/dev/null

spares_ready() {
  for _ in $(seq 300); do
    n=$(endure describe-cluster --cluster-name bench-cl |
      python3 -c "import json,sys; print(sum(g.get('CurrentWarmSpares', 0) for g in json.load(sys.stdin)['InstanceGroups']))")
    [ "$n" -ge 1 ] && return 0
    sleep 0.2
  done
  echo "faults.sh: no warm spare came back" >&2
  return 1
}

# One run: the job (its step re-run by the script after a failure on healthy nodes, as a
# user's script would), followed and faulted by scripts/demo/drive.py.
run() {  # NAME ROUND CLUSTER-FLAG
  local name=$1-$2 tier=$3
  cat >"$fsx/$name.sbatch" <<EOF
#!/bin/bash
#SBATCH --nodes=4 --ntasks-per-node=1 --output=/fsx/$name-%j.out --open-mode=append
for try in 1 2 3 4 5; do
  srun --auto-resume=1 --nodes=4 --ntasks-per-node=1 /opt/endure/bin/endure-train \\
    --data /fsx/data --model tiny --dim 128 --n-layers 2 --n-heads 4 --n-kv-heads 4 \\
    --seq-len 128 --batch 1 --global-batch 12 --threads 1 --zero 2 --steps $steps \\
    --warmup 20 --lr 1e-3 --min-lr 1e-4 --eval-every 0 --comm-timeout 30 \\
    --ckpt-dir /fsx/ckpt-$name --ckpt-every 10 --keep-last 2 --ckpt-cluster $tier \\
    --log /fsx/$name.jsonl >/dev/null
  rc=\$?; [ \$rc = 0 ] && break; echo "try \$try: rc=\$rc"
done
echo "srun rc=\$rc"  # the job's end, as drive.py reads it
EOF
  spares_ready
  local job
  job=$(endure exec --cluster-name bench-cl --node controller-0 -- sbatch --parsable "/fsx/$name.sbatch")
  echo "faults.sh: $name: job $job" >&2
  python3 scripts/demo/drive.py --log "$fsx/$name.jsonl" --stamped "$work/$name.stamped.jsonl" \
    --faults "$work/$name.faults.json" --seed "$((seed + $2))" --steps "$steps" \
    --nodes worker-1,worker-2,worker-3 --kinds kill,hang,crash --job "$job" --cluster bench-cl \
    --endure "$bin/endure" --job-out "$fsx/$name-$job.out" >&2
  endure exec --cluster-name bench-cl --node controller-0 -- bash -c \
    "for _ in \$(seq 1500); do [ -z \"\$(squeue -h -j $job)\" ] && exit 0; sleep 0.2; done; exit 1"
}

args=()
for round in $(seq "$rounds"); do
  run memory "$round" on
  run disk "$round" off
  args+=("$work/memory-$round" "$work/disk-$round")
done
endure list-cluster-events --cluster-name bench-cl --max-results 10000 >"$work/events.json"
python3 bench/checkpointless/faults_report.py --events "$work/events.json" "${args[@]}"

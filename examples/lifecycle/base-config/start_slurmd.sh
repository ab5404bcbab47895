#!/bin/bash
# Starts slurmd; it registers with slurmctld under this node's Slurm name (the hostname of
# a local node; on a registered host the machine keeps its own name).
set -euo pipefail
mkdir -p /var/spool/slurm/d /var/log/slurm /run/slurm
slurmd -N "${ENDURE_NODE_NAME:-$(hostname)}"
for _ in $(seq 50); do
  if [ -s /run/slurm/slurmd.pid ] && kill -0 "$(cat /run/slurm/slurmd.pid)" 2>/dev/null; then
    echo "start_slurmd: slurmd runs on $(hostname) (partition ${ENDURE_PARTITION})"
    exit 0
  fi
  sleep 0.1
done
echo "start_slurmd: slurmd did not start; its log:" >&2
tail -n 20 /var/log/slurm/slurmd.log >&2 || true
exit 1

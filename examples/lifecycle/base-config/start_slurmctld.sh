#!/bin/bash
# Starts slurmctld on /etc/slurm/slurm.conf (rendered by endured) and waits until it answers.
set -euo pipefail
mkdir -p /var/spool/slurm/ctld /var/log/slurm /run/slurm
slurmctld
for _ in $(seq 150); do
  if scontrol ping 2>/dev/null | grep -q "is UP"; then
    echo "start_slurmctld: slurmctld is up on $(hostname)"
    exit 0
  fi
  sleep 0.2
done
echo "start_slurmctld: slurmctld did not answer within 30 s; its log:" >&2
tail -n 20 /var/log/slurm/slurmctld.log >&2 || true
exit 1

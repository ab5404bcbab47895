#!/bin/bash
# Base lifecycle script, run once on every new instance by endure-agent.
# munge on every node; slurmctld on the controller group; slurmd on worker groups.
# endure-agent sets ENDURE_NODE_ROLE (controller|login|worker), ENDURE_NODE_NAME,
# ENDURE_INSTANCE_GROUP, ENDURE_PARTITION, ENDURE_CONTROLLER_NODE, ENDURE_MUNGE_KEY,
# ENDURE_RESOURCE_CONFIG and ENDURE_PROVISIONING_PARAMETERS (see README).
set -euo pipefail
cd "$(dirname "$0")"
echo "on_create: $(hostname) is a ${ENDURE_NODE_ROLE} node of group ${ENDURE_INSTANCE_GROUP}"

bash ./setup_munge.sh
case "${ENDURE_NODE_ROLE}" in
  controller) bash ./start_slurmctld.sh ;;
  worker) bash ./start_slurmd.sh ;;
  login) echo "on_create: login node: munge only; slurm clients use /etc/slurm/slurm.conf" ;;
  *) echo "on_create: unknown role ${ENDURE_NODE_ROLE}" >&2; exit 1 ;;
esac
echo "on_create: done"

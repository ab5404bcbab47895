#!/bin/bash
# Base lifecycle script, run once on every new instance by endure-agent.
# munge on every node; slurmctld on the controller group; slurmd on worker groups.
# endure-agent sets ENDURE_NODE_ROLE (controller|login|worker), ENDURE_NODE_NAME,
# ENDURE_INSTANCE_GROUP, ENDURE_PARTITION, ENDURE_CONTROLLER_NODE, ENDURE_MUNGE_KEY,
# ENDURE_RESOURCE_CONFIG, ENDURE_PROVISIONING_PARAMETERS and ENDURE_BOOT_SCRIPTS_DIR
# (see README).
set -euo pipefail
cd "$(dirname "$0")"
echo "on_create: $(hostname) is a ${ENDURE_NODE_ROLE} node of group ${ENDURE_INSTANCE_GROUP}"

# The daemons go in the boot scripts folder, which the agent runs at every reboot (what
# enabling a service is on a real machine); this first boot runs them too.
# /fsx first: on registered hosts it is the spec's SharedFileSystem (local nodes have theirs
# from endure at boot, and mount_fsx.sh does nothing there).
install -m 0755 ./mount_fsx.sh "${ENDURE_BOOT_SCRIPTS_DIR}/05-fsx.sh"
install -m 0755 ./setup_munge.sh "${ENDURE_BOOT_SCRIPTS_DIR}/10-munge.sh"
case "${ENDURE_NODE_ROLE}" in
  controller) install -m 0755 ./start_slurmctld.sh "${ENDURE_BOOT_SCRIPTS_DIR}/20-slurmctld.sh" ;;
  worker) install -m 0755 ./start_slurmd.sh "${ENDURE_BOOT_SCRIPTS_DIR}/20-slurmd.sh" ;;
  login) echo "on_create: login node: munge only; slurm clients use /etc/slurm/slurm.conf" ;;
  *) echo "on_create: unknown role ${ENDURE_NODE_ROLE}" >&2; exit 1 ;;
esac
# srun --auto-resume=1 (endure's SPANK plugin), on every node that runs srun or slurmstepd.
if [ -f /opt/endure/lib/auto_resume.so ]; then
  echo "required /opt/endure/lib/auto_resume.so supervisor=/opt/endure/bin/endure-auto-resume" \
    > /etc/slurm/plugstack.conf.d/auto_resume.conf
  echo "on_create: srun --auto-resume enabled"
else
  echo "on_create: /opt/endure/lib/auto_resume.so missing: srun --auto-resume not available" >&2
fi

for script in "${ENDURE_BOOT_SCRIPTS_DIR}"/*; do
  bash "$script"
done
echo "on_create: done"

#!/bin/bash
# Mounts the cluster's shared file system at /fsx, at every boot, before the daemons that
# run jobs start: jobs, checkpoints and auto-resume state live there. On registered hosts
# it is the spec's SharedFileSystem: a folder of a file server, mounted with sshfs and the
# cluster's own key (endured let that key in, for sftp alone). The cloud's lifecycle
# samples mount FSx for Lustre at this point the same way.
set -euo pipefail
if ! grep -q '"SharedFileSystem"' "${ENDURE_RESOURCE_CONFIG}"; then
  echo "mount_fsx: the resource config declares no SharedFileSystem"
  exit 0
fi
read -r dns port user folder key known mountpoint < <(python3 - "${ENDURE_RESOURCE_CONFIG}" <<'PY'
import json, sys
fs = json.load(open(sys.argv[1])).get("SharedFileSystem")
if fs:
    print(fs["DnsName"], fs["Port"], fs["User"], fs["MountName"], fs["IdentityFile"],
          fs["KnownHostsFile"], fs["MountPoint"])
PY
)
mounted() { grep -qE " ${mountpoint} .* - fuse\.sshfs " /proc/self/mountinfo; }
if mounted; then
  echo "mount_fsx: ${mountpoint} is mounted already"
  exit 0
fi
mkdir -p "${mountpoint}"
# Every node sees what another wrote at once: no directory or attribute caching, since a
# job re-run on another node reads the checkpoint its predecessor just wrote. reconnect:
# the file server may restart under a running job.
setsid sshfs -f "${user}@${dns}:${folder}" "${mountpoint}" \
  -o "port=${port},IdentityFile=${key},IdentitiesOnly=yes,UserKnownHostsFile=${known}" \
  -o "GlobalKnownHostsFile=/dev/null,StrictHostKeyChecking=yes,BatchMode=yes" \
  -o "reconnect,ServerAliveInterval=5,ServerAliveCountMax=3" \
  -o "allow_other,dir_cache=no,entry_timeout=0,attr_timeout=0,negative_timeout=0" \
  </dev/null &
sshfs_pid=$!
# Its pid, where endure looks for the /fsx server (to stop it in a drill, to clean up).
echo "${sshfs_pid}" > /opt/endure/fsx.pid
for _ in $(seq 150); do
  if mounted; then
    echo "mount_fsx: ${user}@${dns}:${folder} on ${mountpoint} (sshfs pid ${sshfs_pid})"
    exit 0
  fi
  kill -0 "${sshfs_pid}" 2>/dev/null || break
  sleep 0.1
done
echo "mount_fsx: sshfs did not mount ${user}@${dns}:${folder} on ${mountpoint}" >&2
kill "${sshfs_pid}" 2>/dev/null || true
exit 1

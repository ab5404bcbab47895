#!/bin/bash
# Installs the cluster's munge key and starts munged as the munge user.
set -euo pipefail
install -d -o munge -g munge -m 0700 /etc/munge /var/lib/munge /var/log/munge
install -d -o munge -g munge -m 0755 /run/munge
install -o munge -g munge -m 0400 "${ENDURE_MUNGE_KEY}" /etc/munge/munge.key
runuser -u munge -- /usr/sbin/munged
for _ in $(seq 50); do
  if munge -n | unmunge >/dev/null 2>&1; then
    echo "setup_munge: munged answers"
    exit 0
  fi
  sleep 0.1
done
echo "setup_munge: munged did not answer within 5 s" >&2
exit 1

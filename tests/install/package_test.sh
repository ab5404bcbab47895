#!/usr/bin/env bash
# The Debian package, used as a user would: scripts/package.sh makes it from the built tree,
# dpkg installs it into a scratch root (its dependencies checked against this machine's
# packages), and the endured and endure installed there create a local cluster and delete it.
# Usage: package_test.sh BUILD_DIR SOURCE_DIR   (root; loopback only)
set -euo pipefail
build=$(cd "$1" && pwd)
source=$(cd "$2" && pwd)
scratch=$(mktemp -d /tmp/endure-package-test-XXXXXX)
endured_pid=
cleanup() {
  if [ -n "$endured_pid" ]; then
    kill "$endured_pid" 2>/dev/null || true
    wait "$endured_pid" 2>/dev/null || true
  fi
  rm -rf "$scratch"
}
trap cleanup EXIT
# shellcheck source=tests/install/common.sh
. "$source/tests/install/common.sh"
started=$SECONDS
step() { echo "package_test: [$((SECONDS - started)) s] $*"; }

deb=$(bash "$source/scripts/package.sh" --build "$build" --out "$scratch" --no-build)
step "made $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB)"
dpkg-deb --info "$deb" | grep -E '^ (Depends|Recommends):'

# A dpkg database of its own whose status is this machine's: the package's dependencies are
# checked against what is really installed. Its maintainer scripts see DPKG_ROOT and leave
# this machine's systemd alone.
root=$scratch/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
cp /var/lib/dpkg/status "$root/var/lib/dpkg/status"
touch "$root/var/lib/dpkg/available"
dpkg --root="$root" --force-script-chrootless -i "$deb" >"$scratch/dpkg.log" 2>&1 ||
  { cat "$scratch/dpkg.log" >&2; exit 1; }
dpkg --root="$root" -s endure | grep -q '^Status: install ok installed'
step "installed into $root"
for f in usr/bin/endure usr/bin/endured usr/bin/endure-train usr/bin/endure-data \
  usr/bin/endure-agent usr/lib/endure/node/bin/endure-agent usr/lib/endure/node/lib/auto_resume.so \
  usr/include/endure/checkpoint_c.h usr/lib/systemd/system/endured.service \
  usr/lib/systemd/system/endure-agent.service usr/share/bash-completion/completions/endure; do
  [ -e "$root/$f" ] || { echo "package_test: $f is not installed" >&2; exit 1; }
done
grep -q "^ExecStart=/usr/bin/endured --home /var/lib/endure" "$root/usr/lib/systemd/system/endured.service"
# Debian's python3 imports the installed package, and it loads the installed library.
site=$root/usr/lib/python3/dist-packages
lib=$(find "$root/usr/lib" -name libendure.so.0 | head -n 1)
[ -n "$lib" ] || { echo "package_test: no libendure.so.0 installed" >&2; exit 1; }
PYTHONPATH=$site ENDURE_LIBRARY=$lib /usr/bin/python3 -c '
import sys, endure, endure.checkpoint, endure._lib
assert endure.__file__.startswith(sys.argv[1]), endure.__file__
endure._lib.lib()' "$site"
step "/usr/bin/python3 imports the installed endure and loads $(basename "$lib")"
# Both units as systemd reads them, their programs named where this root holds them.
if command -v systemd-analyze >/dev/null; then
  mkdir -p "$scratch/units"
  sed "s|=/usr/bin/|=$root/usr/bin/|" "$root/usr/lib/systemd/system/endured.service" \
    >"$scratch/units/endured.service"
  sed "s|=/opt/endure/bin/|=$root/usr/lib/endure/node/bin/|" \
    "$root/usr/lib/systemd/system/endure-agent.service" >"$scratch/units/endure-agent.service"
  systemd-analyze verify "$scratch/units/endured.service" "$scratch/units/endure-agent.service"
  step "systemd-analyze verify: both units valid"
fi

# The installed endured on a private home and port, and the installed CLI.
home=$scratch/home
port=$(free_port)
"$root/usr/bin/endured" --home "$home" --port "$port" >"$scratch/endured.log" 2>&1 &
endured_pid=$!
wait_for_endpoint "$home" "$endured_pid" "$scratch/endured.log"
step "endured serving on port $port"
export ENDURE_HOME=$home
endure=$root/usr/bin/endure
name=pkgtest$$
cat >"$scratch/cluster.json" <<JSON
{
  "ClusterName": "$name",
  "InstanceGroups": [
    {"InstanceGroupName": "controller", "InstanceType": "local.c2", "InstanceCount": 1,
     "LifeCycleConfig": {"SourceS3Uri": "root/usr/share/endure/examples/lifecycle/base-config",
                         "OnCreate": "on_create.sh"}, "ThreadsPerCore": 1},
    {"InstanceGroupName": "worker", "InstanceType": "local.c2", "InstanceCount": 1,
     "LifeCycleConfig": {"SourceS3Uri": "root/usr/share/endure/examples/lifecycle/base-config",
                         "OnCreate": "on_create.sh"}, "ThreadsPerCore": 1}
  ]
}
JSON
fail() {
  echo "package_test: $*" >&2
  "$endure" delete-cluster --cluster-name "$name" --wait --wait-timeout 120 >/dev/null 2>&1 || true
  tail -n 30 "$scratch/endured.log" >&2
  exit 1
}
"$endure" create-cluster --cli-input-json "file://$scratch/cluster.json" --wait --wait-timeout 180 \
  >/dev/null || fail "create-cluster failed"
step "cluster $name InService"
"$endure" list-cluster-nodes --cluster-name "$name" --output table
# Slurm runs on the nodes the installed software made.
"$endure" exec --cluster-name "$name" --node controller-0 -- sinfo -h -o '%D %t' | tee "$scratch/sinfo"
grep -q 'idle' "$scratch/sinfo" || fail "Slurm shows no idle node"
"$endure" delete-cluster --cluster-name "$name" --wait --wait-timeout 120 >/dev/null ||
  fail "delete-cluster failed"
"$endure" list-clusters | grep -q "\"$name\"" && fail "$name still listed after delete-cluster"
step "cluster $name deleted"
kill "$endured_pid"
wait "$endured_pid" || true
endured_pid=
step "ok"

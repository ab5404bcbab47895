#!/usr/bin/env bash
# Installs every Debian package endure needs and builds it into build/.
# Idempotent; run as root on a fresh Debian 12 machine.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake pkg-config git lintian
  clang libclang-rt-14-dev llvm
  libcpp-httplib-dev nlohmann-json3-dev libcli11-dev libspdlog-dev libfmt-dev
  libsqlite3-dev sqlite3 libssl-dev zlib1g-dev libbrotli-dev
  libgtest-dev googletest
  slurm-wlm slurm-client munge libslurm-dev
  util-linux procps iproute2 python3
  python3-torch
  libfuse3-dev fuse3
  libxxhash-dev
  libopenblas-dev libsentencepiece-dev sentencepiece libzstd-dev zstd
  libgloo-dev
  libcurl4-openssl-dev
  openssh-client openssh-server sshfs openssl
  prometheus chromium chromium-driver python3-selenium python3-matplotlib fonts-dejavu-core
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # Packages with a daemon (sshd, munged, slurmctld) must not start it: endure's tests start
  # their own, on loopback. policy-rc.d says so to the packages' scripts while they install.
  guard=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    guard=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$guard"
    chmod 755 "$guard"
  fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  [ -z "$guard" ] || rm -f "$guard"
fi

# From npm, at the versions each package-lock.json pins, again only when the lock changed:
# the S3-compatible server the S3 tests start (tools/s3rver: s3rver, which checks SigV4
# signatures), and the cloud's JavaScript SDK the real-client tests drive endured with
# (tests/sdk: @aws-sdk/client-sagemaker). node and npm from Debian where the machine has none.
if ! command -v npm >/dev/null 2>&1; then
  echo "setup: installing nodejs npm"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
for folder in tools/s3rver tests/sdk; do
  if ! cmp -s "$folder/package-lock.json" "$folder/node_modules/.endure-installed-lock"; then
    (cd "$folder" && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
      cp package-lock.json node_modules/.endure-installed-lock)
  fi
done

# The aws CLI and boto3 that tests/integration/aws_clients_test.cpp drive endured with must
# know the cluster actions (aws-cli 1.45 / botocore 1.43 or newer; Debian 12's awscli
# predates them). PyPI is out of reach, so nothing is installed: say which one the tests use.
aws_cli=""
for c in "$(command -v aws || true)" /root/.pyenv/shims/aws; do
  if [ -n "$c" ] && [ -x "$c" ] &&
    "$c" sagemaker create-cluster --generate-cli-skeleton input >/dev/null 2>&1; then
    aws_cli="$c" && break
  fi
done
echo "setup: aws CLI for the real-client tests: ${aws_cli:-none new enough (its and boto3's tests skip; the JavaScript SDK's run)}"

cmake -S . -B build -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build build -j"$(nproc)"
# The CLI and the trainer's programs on the PATH, as the README types them: links in
# /usr/local/bin to this build (so they follow every rebuild), and endure's bash completion.
# (`cmake --install build` or the package of scripts/package.sh install copies instead.)
for program in endure endure-train endure-data; do
  ln -sfn "$PWD/build/bin/$program" "/usr/local/bin/$program"
done
# `import endure` for Debian's python3 (the one with python3-torch, not a pyenv python3 on
# the PATH): a .pth in its site folder naming this tree's python/, so the package follows
# the tree as the links above follow the build, and finds build/libendure.so beside it; and
# the node software's copy (build/lib, a local node's /opt/endure/lib), for a node whose
# view of the file system hides this tree. A folder that is not there is passed over.
site=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
mkdir -p "$site"
printf '%s\n' "$PWD/python" /opt/endure/lib/python >"$site/endure.pth"
/usr/bin/python3 -c 'import endure._lib; endure._lib.lib()'
mkdir -p /etc/bash_completion.d
ln -sfn "$PWD/build/share/bash-completion/endure" /etc/bash_completion.d/endure
echo "setup: built build/bin/endure, build/bin/endured, build/bin/endure-agent," \
  "build/bin/endure-auto-resume, build/lib/auto_resume.so, build/bin/endure-data and" \
  "build/bin/endure-train; endure, endure-train and endure-data are on the PATH" \
  "(/usr/local/bin); /usr/bin/python3 imports endure ($site/endure.pth)"

#!/usr/bin/env bash
# Runs every test through CTest: unit tests, then integration tests on real Slurm
# (endured, namespace nodes, slurmctld/slurmd/munged, all started and stopped by the
# tests themselves), and the unit tests and fuzz targets under sanitizers. Needs root and
# a build from scripts/setup.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f build/CMakeCache.txt ]; then
  echo "test: no build/ yet: run scripts/setup.sh first" >&2
  exit 2
fi
cmake --build build -j"$(nproc)" >/dev/null
# The clang tree under ASan+UBSan whose unit tests and fuzz targets CTest runs too,
# unoptimized: it builds in about 60 % of an optimized build's time.
SANITIZE_BUILD_TYPE=Debug bash scripts/sanitize.sh address build
cd build
exec ctest --output-on-failure --timeout 900

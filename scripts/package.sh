#!/usr/bin/env bash
# Makes endure's Debian package from the build tree (scripts/setup.sh makes it) with CPack,
# and prints its path: it brings the tree up to date, then CPack installs it as cmake
# --install does, under /usr, strips the programs and packs them with the units and
# maintainer scripts (cmake/package.cmake).
#   scripts/package.sh [--build DIR] [--out DIR] [--no-build] [--lintian]
# --no-build packs the tree as it is (the package test: the tree CTest runs from is built).
# --lintian also runs Debian's lintian on the package and fails on any error it reports.
set -euo pipefail
cd "$(dirname "$0")/.."
build=build
out=build/package
lint=0
make=1
while (($#)); do
  case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --lintian) lint=1; shift ;;
    --no-build) make=0; shift ;;
    *) echo "package: unknown argument $1 (usage: package.sh [--build DIR] [--out DIR]" \
         "[--no-build] [--lintian])" >&2
       exit 2 ;;
  esac
done
if [ ! -f "$build/CPackConfig.cmake" ]; then
  echo "package: $build is not a configured build tree: run scripts/setup.sh first" >&2
  exit 2
fi
((make == 0)) || cmake --build "$build" -j"$(nproc)" >/dev/null
mkdir -p "$out"
out=$(cd "$out" && pwd)
# CPack's own staging folder, kept out of the build tree's way and removed after.
staging=$(mktemp -d /tmp/endure-cpack-XXXXXX)
trap 'rm -rf "$staging"' EXIT
cpack --config "$build/CPackConfig.cmake" -G DEB -B "$staging" >"$staging.log" 2>&1 ||
  { cat "$staging.log" >&2; rm -f "$staging.log"; exit 1; }
rm -f "$staging.log"
deb=$(find "$staging" -maxdepth 1 -name '*.deb' | head -n1)
[ -n "$deb" ] || { echo "package: cpack made no .deb" >&2; exit 1; }
mv "$deb" "$out/"
deb=$out/$(basename "$deb")
if ((lint)); then
  # Errors fail the package; warnings and notes are printed for the record.
  lintian --fail-on error --tag-display-limit 0 "$deb" >&2
fi
echo "$deb"

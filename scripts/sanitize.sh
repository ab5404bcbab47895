#!/usr/bin/env bash
# The tests under sanitizers, built with clang beside the main build.
#
#   scripts/sanitize.sh address [build|run|all]   # ASan+UBSan: the unit tests and the fuzz
#                                                 # targets, in build-fuzz/ (scripts/fuzz.sh's)
#   scripts/sanitize.sh thread [build|run|all]    # TSan: the tests of the threaded parts, in
#                                                 # build-tsan/
#
# scripts/test.sh builds the address build and CTest runs it (the test unit_tests_asan). A
# report of either sanitizer fails the run. "run" without a build exits 77 (CTest: skipped).
# Env: SANITIZE_BUILD overrides the folder, SANITIZE_BUILD_TYPE the CMake build type
# (default RelWithDebInfo; scripts/test.sh builds Debug: unoptimized, it compiles in about
# 60 % of the time, and a sanitizer reports the same faults).
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: sanitize.sh address|thread [build|run|all]}
step=${2:-all}
case "$kind" in
  address) build=${SANITIZE_BUILD:-build-fuzz} ;;
  thread) build=${SANITIZE_BUILD:-build-tsan} ;;
  *) echo "sanitize.sh: the kind must be address or thread, not '$kind'" >&2; exit 2 ;;
esac
case "$step" in build | run | all) ;; *)
  echo "sanitize.sh: the step must be build, run or all, not '$step'" >&2; exit 2 ;;
esac

type=${SANITIZE_BUILD_TYPE:-RelWithDebInfo}
if [ "$step" != run ]; then
  command -v clang++ >/dev/null || { echo "sanitize.sh: needs clang (scripts/setup.sh installs it)" >&2; exit 2; }
  if [ "$kind" = address ]; then
    # One instrumented tree serves the unit tests and the fuzz targets: the libraries are
    # compiled once for both.
    CC=clang CXX=clang++ cmake -S . -B "$build" -DENDURE_FUZZ=ON -DCMAKE_BUILD_TYPE="$type" >/dev/null
    targets=(unit_tests)
    for f in fuzz/*_fuzz.cpp; do targets+=("fuzz_$(basename "$f" _fuzz.cpp)"); done
  else
    CC=clang CXX=clang++ cmake -S . -B "$build" -DENDURE_SANITIZE=thread -DCMAKE_BUILD_TYPE="$type" >/dev/null
    targets=(unit_tests comm_tests dp_tests zero_tests)
  fi
  cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null
fi
[ "$step" = build ] && exit 0

if [ ! -x "$build/bin/unit_tests" ]; then
  echo "sanitize.sh: no $kind build in $build/: run scripts/sanitize.sh $kind build" >&2
  exit 77
fi
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=1
export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1
# Left out of both: the SIGKILL tests count how many steps a forked writer commits between
# random kills, which a sanitizer's slowdown (and TSan's start in each child) makes too few
# to count; what they check is crash safety, which the main build's run checks.
if [ "$kind" = address ]; then
  exec "$build/bin/unit_tests" --gtest_brief=1 --gtest_filter='-*SigkillAtRandomPoints*'
fi
# The threaded parts: the checkpoint engine (copy, persist and restore threads), the agent's
# checks, endured's managers and store (the unit tests), and the collectives, data-parallel
# and sharded optimizer ranks.
status=0
for t in unit_tests comm_tests dp_tests zero_tests; do
  "$build/bin/$t" --gtest_brief=1 --gtest_filter='-*SigkillAtRandomPoints*' || status=1
done
exit $status

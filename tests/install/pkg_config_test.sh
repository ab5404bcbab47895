#!/usr/bin/env bash
# The checkpoint API as another project uses it: cmake --install of the built tree into a
# scratch prefix, then a C program built with nothing but `pkg-config --cflags --libs endure`
# saves, loads and verifies checkpoints through the installed header and libendure.so (and a
# C++ file that includes the C++ header compiles against the same flags).
# Usage: pkg_config_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1
source=$2
scratch=$(mktemp -d /tmp/endure-pkg-config-XXXXXX)
trap 'rm -rf "$scratch"' EXIT
prefix=$scratch/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(find "$prefix" -name endure.pc -printf '%h\n' | head -n1)
[ -n "$pc" ] || { echo "pkg_config_test: no endure.pc under $prefix" >&2; exit 1; }
export PKG_CONFIG_PATH=$pc
flags=$(pkg-config --cflags --libs endure)
libdir=$(pkg-config --variable=libdir endure)
echo "pkg-config --cflags --libs endure: $flags"
# shellcheck disable=SC2086  # flags are words
cc -std=gnu11 -Wall -Werror -o "$scratch/checkpoint_c" "$source/tests/unit/train/ckpt/checkpoint_c_test.c" \
  $flags -Wl,-rpath,"$libdir"
# It runs against the installed library, not the build tree's.
linked=$(ldd "$scratch/checkpoint_c" | awk '$1 == "libendure.so.0" {print $3}')
[ "$(readlink -f "$linked")" = "$(readlink -f "$libdir/libendure.so.0")" ] ||
  { ldd "$scratch/checkpoint_c" >&2; echo "pkg_config_test: not linked to $libdir" >&2; exit 1; }
"$scratch/checkpoint_c"
printf '#include <endure/checkpoint.h>\n#include <endure/checkpoint_c.h>\nint main() { return 0; }\n' \
  >"$scratch/cxx.cpp"
# shellcheck disable=SC2086
c++ -std=c++20 -Wall -Werror -o "$scratch/cxx" "$scratch/cxx.cpp" $flags
echo "pkg_config_test: ok"

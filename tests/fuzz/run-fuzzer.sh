#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Runs one libFuzzer target from its committed seed corpus for make check:
#   run-fuzzer.sh NAME CORPUS RUNS RSS_MB [FUZZER OPTION...]
# In make check the exploration is repeatable: a fixed seed and a fixed
# number of inputs, so every machine tries the same inputs and a green run
# means the same everywhere (a slow machine stops at the time bound, on a
# prefix of the same inputs). SLIMLINK_FUZZ_SECONDS=N explores instead: a
# random seed for N seconds. Any crash, sanitizer report, leak, timeout or
# memory blow-up fails the test and prints its reproducer. New inputs go to a
# scratch directory, never into the source tree.
name=$1 corpus=$2 runs=$3 rss=$4
shift 4
fuzzer="${abs_top_builddir:-.}/tests/fuzz/$name-fuzzer"
corpus="${abs_top_srcdir:-.}/tests/fuzz/$corpus"
if [ ! -x "$fuzzer" ]; then
  echo "SKIP: $name-fuzzer not built: configure found no clang++ that links -fsanitize=fuzzer (install the Debian packages 'clang libclang-rt-14-dev')"
  exit 77
fi
case ${SLIMLINK_FUZZ_SECONDS:-} in
  '') explore="-seed=1 -runs=$runs -max_total_time=120" ;;
  *[!0-9]*) echo "SLIMLINK_FUZZ_SECONDS='$SLIMLINK_FUZZ_SECONDS': expected a whole number of seconds (1 or more)"; exit 99 ;;
  *) explore="-max_total_time=$SLIMLINK_FUZZ_SECONDS" ;;
esac
work=$(mktemp -d "${TMPDIR:-/tmp}/$name-fuzz.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT
# shellcheck disable=SC2086 # $explore is a list of options
"$fuzzer" $explore -rss_limit_mb="$rss" -print_final_stats=1 "$@" \
  -artifact_prefix="$work/" "$work" "$corpus"
status=$?
if [ $status -ne 0 ]; then
  for f in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
    [ -f "$f" ] || continue
    echo "reproducer $f:"; od -A d -t x1 "$f" | head -40
  done
  echo "FAIL: $name-fuzzer exited with $status"
  exit 1
fi

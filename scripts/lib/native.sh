# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Shared by scripts/build-ucx, scripts/build-mpich and scripts/ucx-gtest
# (sourced after scripts/lib/setup.sh): where native builds work, how their
# inputs are keyed, and how a stage is timed and logged.

# Build trees of UCX and MPICH (large; outside git, reused between runs).
slim_native_work=${SLIMLINK_NATIVE_WORK:-$slim_root/.deps-build}

# slim_native_ucx_tree UCX_VERSION: the build tree build-ucx uses for it, one
# of its own when SLIMLINK_UCX_GTEST=1 (the gtest suite takes long to
# rebuild, so a build without it must not replace that tree). scripts/check
# builds its native UCX that way, and scripts/ucx-gtest runs the suite from
# the same tree.
slim_native_ucx_tree() {
    if [ "${SLIMLINK_UCX_GTEST:-0}" = 1 ]; then
        echo "$slim_native_work/$1-gtest"
    else
        echo "$slim_native_work/$1"
    fi
}

# slim_gtest_make_arg UCX_TREE: the make argument that builds UCX's gtest
# suite without -Werror (its 1.13 sources trip GCC 12's use-after-free
# warning): the suite's own flags, as configure set them, plus -Wno-error.
# Only test/gtest reads GTEST_CXXFLAGS; UCX's configure resets CXXFLAGS, and
# overriding those would change how the rest of UCX is built.
slim_gtest_make_arg() {
    local configured
    configured=$(sed -n 's/^GTEST_CXXFLAGS = *//p' "$1/test/gtest/Makefile")
    printf 'GTEST_CXXFLAGS=%s -Wno-error' "$configured"
}

# slim_native_key WORDS...: a digest of everything a native UCX build depends
# on: the given words (versions, flags) and the transport's sources and build
# files. A change to any of them means a rebuild.
slim_native_key() {
    {
        printf '%s\n' "$@"
        cat "$slim_root"/ucx-module/*.c "$slim_root"/ucx-module/*.h \
            "$slim_root"/ucx-module/intree/* \
            "$slim_root"/src/runtime/slim_core.h "$slim_root"/src/runtime/slim_config.h \
            "$slim_root"/src/include/slimlink.h
    } | sha256sum | cut -c1-16
}

# slim_native_lists_slim PREFIX: PREFIX's own ucx_info lists slim, with
# nothing preloaded.
slim_native_lists_slim() {
    [ -x "$1/bin/ucx_info" ] \
        && env -u LD_PRELOAD -u LD_LIBRARY_PATH -u UCX_MODULES "$1/bin/ucx_info" -d 2>/dev/null \
           | grep -q '^# *Transport: slim$'
}

# slim_native_stage NAME LOG COMMAND...: runs COMMAND with its output appended
# to LOG, prints how long it took, and on failure the log's tail.
slim_native_stage() {
    local name=$1 log=$2 t0=$SECONDS
    shift 2
    slim_say "$name"
    printf '==> %s\n' "$name" >>"$log"
    if ! "$@" >>"$log" 2>&1; then
        tail -n 40 "$log" >&2
        slim_die "$name failed after $((SECONDS - t0)) s (full log: $log)"
    fi
    slim_say "$name: $((SECONDS - t0)) s"
}

# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Shared setup for scripts/demo and scripts/check (sourced, not executed):
# dependencies, autotools, an out-of-tree configure in ./build, and the build.
#
# Environment:
#   SLIMLINK_CONFIGURE_FLAGS  extra configure flags (e.g. --enable-asan)
#   SLIMLINK_JOBS             parallel make jobs (default 2)

slim_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
slim_build=$slim_root/build
slim_prefix=$slim_root/install
slim_jobs=${SLIMLINK_JOBS:-2}
slim_ucx_src=

slim_say() { printf '==> %s\n' "$*" >&2; }
slim_die() { printf 'error: %s\n' "$*" >&2; exit 1; }

# Installs Debian packages and fetches the matching UCX sources; the last line
# install-deps prints is the UCX source directory.
slim_install_deps() {
    slim_say "checking dependencies (scripts/install-deps)"
    local out
    out=$("$slim_root/scripts/install-deps") || slim_die "scripts/install-deps failed"
    printf '%s\n' "$out" | sed '$d' >&2
    slim_ucx_src=$(printf '%s\n' "$out" | tail -n 1)
    [ -f "$slim_ucx_src/src/uct/base/uct_iface.h" ] \
        || slim_die "scripts/install-deps did not provide the UCX sources (got '$slim_ucx_src')"
}

# autoreconf when configure is missing or older than its inputs. Changes to
# Makefile.am and the local.mk fragments are picked up by make itself.
slim_autoreconf() {
    local need=0 f
    [ -x "$slim_root/configure" ] || need=1
    for f in "$slim_root/configure.ac" "$slim_root"/m4/slim_*.m4; do
        [ "$f" -nt "$slim_root/configure" ] && need=1
    done
    if [ $need = 1 ]; then
        slim_say "autoreconf -fi"
        (cd "$slim_root" && autoreconf -fi) || slim_die "autoreconf failed"
    fi
}

# Configures ./build out of tree; again only when the flags changed.
slim_configure() {
    [ -f "$slim_root/config.status" ] \
        && slim_die "the source tree is configured in place; run 'make distclean' in $slim_root first"
    # shellcheck disable=SC2206 # word splitting of the extra flags is intended
    local flags=(--prefix="$slim_prefix" --with-ucx-src="$slim_ucx_src" ${SLIMLINK_CONFIGURE_FLAGS:-})
    local stamp=$slim_build/.slimlink-configure-flags
    mkdir -p "$slim_build"
    if [ -f "$slim_build/Makefile" ] && [ -f "$stamp" ] \
       && [ "$(cat "$stamp")" = "${flags[*]}" ]; then
        return 0
    fi
    slim_say "configure ${flags[*]}"
    (cd "$slim_build" && "$slim_root/configure" "${flags[@]}") || slim_die "configure failed (see build/config.log)"
    printf '%s' "${flags[*]}" > "$stamp"
}

slim_make() {
    slim_say "make -j$slim_jobs $*"
    make -C "$slim_build" -j"$slim_jobs" "$@"
}

# Everything up to a configured build tree.
slim_setup() {
    slim_install_deps
    slim_autoreconf
    slim_configure
}

# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=bash
# Sourced by the tests/mpi/*.test scripts: locates the build, sets the
# environment every MPI test runs under, and runs ranks through the stall
# harness.
#
# `make check` exports SLIMLINK_RUN, SLIMLINK_MODULE_PATH, LD_LIBRARY_PATH,
# MPIEXEC, OMPI_MPIEXEC, abs_top_builddir and abs_top_srcdir. To run a test by
# hand from the top build directory, export at least SLIMLINK_RUN and MPIEXEC.
#
# Exit codes follow automake: 0 pass, 1 fail, 77 skip (a prerequisite is
# absent), 99 hard error (the test could not be set up).
#
# Knobs:
#   SLIMLINK_TEST_TIMEOUT   seconds before a run counts as stalled (per run;
#                           each test has its own default)
#   SLIMLINK_TEST_UCX_TLS   UCX_TLS for the ranks (default slim,self). Only for
#                           developing the tests themselves: with any other
#                           value the slim-counter checks fail, as they must.
#   SLIMLINK_TEST_INNER     the transport slim wraps (UCX_SLIM_INNER; unset:
#                           the module's default, tcp). The *-posix.test
#                           scripts set it to posix and run the tcp test.
#   SLIMLINK_TEST_BED       a tc rate (e.g. 10gbit): run_mpich starts the ranks
#                           on two hosts of scripts/two-host-bed, one rank
#                           per host in turn, over a wire shaped to that
#                           rate; needs root (tests skip without it)

set -u

test_name=$(basename "$0" .test)
srcdir_mpi=$(cd "$(dirname "$0")" && pwd)
: "${abs_top_srcdir:=$(cd "$srcdir_mpi/../.." && pwd)}"
: "${abs_top_builddir:=$(pwd)}"
builddir_mpi=$abs_top_builddir/tests/mpi
harness=$srcdir_mpi/run-with-timeout

hard_error() {
  echo "$test_name: ERROR: $*" >&2
  exit 99
}
skip() {
  echo "$test_name: SKIP: $*"
  exit 77
}

[ -n "${SLIMLINK_RUN:-}" ] \
  || hard_error "SLIMLINK_RUN is not set: run through 'make check', or export SLIMLINK_RUN=/path/to/slimlink-run"
[ -n "${MPIEXEC:-}" ] \
  || hard_error "MPIEXEC is not set: run through 'make check', or export MPIEXEC=mpiexec.mpich"
[ -x "$harness" ] || hard_error "$harness is missing or not executable"

# SLIMLINK_TEST_DIRECT=1: start ranks without slimlink-run, for an MPICH or a
# UCX with slim built in, which needs nothing loaded (scripts/check does this
# on the MPICH that scripts/build-mpich makes).
# The node service is still started for each job (direct-run).
if [ "${SLIMLINK_TEST_DIRECT:-0}" = 1 ]; then
  SLIMLINK_RUN=$srcdir_mpi/direct-run
  unset LD_PRELOAD
fi

# The node service (slimlinkd) that drives the emulated port: each test has
# its own, in a private runtime folder, so that no two tests share a port's
# accounting. slimlink-run starts it (SLIMLINKD, exported by `make check`);
# ranks started without slimlink-run get it from direct-run.
XDG_RUNTIME_DIR=$builddir_mpi/.run-$test_name
rm -rf "$XDG_RUNTIME_DIR" && mkdir -p -m 0700 "$XDG_RUNTIME_DIR" \
  || hard_error "cannot create $XDG_RUNTIME_DIR"
export XDG_RUNTIME_DIR
: "${SLIMLINKD:=$abs_top_builddir/src/tools/slimlinkd}"
export SLIMLINKD SLIMLINK_SERVICE_GRACE=${SLIMLINK_SERVICE_GRACE:-2s}

# Every byte between ranks crosses the `slim` transport: no shared memory in
# MPICH (NOLOCAL) and no UCX transport but slim for remote peers.
export UCX_TLS=${SLIMLINK_TEST_UCX_TLS:-slim,self}
export MPIR_CVAR_NOLOCAL=1
if [ -n "${SLIMLINK_TEST_INNER:-}" ]; then
  export UCX_SLIM_INNER=$SLIMLINK_TEST_INNER
fi
# Open MPI refuses to run as root without these (CI runs as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

# Serialise MPI tests under `make -j check`: on a small machine concurrent
# busy-polling ranks would turn into timeouts.
if command -v flock >/dev/null 2>&1; then
  exec 9>"$builddir_mpi/.mpi-test.lock" || hard_error "cannot create $builddir_mpi/.mpi-test.lock"
  flock 9
fi

# require_program NAME: the test binary, built by `make check`.
require_program() {
  [ -x "$builddir_mpi/$1" ] \
    || hard_error "$builddir_mpi/$1 is not built (run 'make check', which builds it)"
}

# run_ranks TIMEOUT_S PROGRAM MPIEXEC_AND_ARGS... -- PROGRAM_ARGS...
# Runs `$SLIMLINK_RUN <mpiexec and its args> $builddir_mpi/PROGRAM <args>`
# under the stall harness, printing the command first.
run_ranks() {
  local timeout_s=$1 program=$2 launcher=()
  shift 2
  while [ $# -gt 0 ] && [ "$1" != -- ]; do launcher+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  echo "+ UCX_TLS=$UCX_TLS${UCX_SLIM_INNER:+ UCX_SLIM_INNER=$UCX_SLIM_INNER} MPIR_CVAR_NOLOCAL=$MPIR_CVAR_NOLOCAL $SLIMLINK_RUN ${launcher[*]} $builddir_mpi/$program $*"
  "$harness" -t "$timeout_s" -p "$program" -- \
    "$SLIMLINK_RUN" "${launcher[@]}" "$builddir_mpi/$program" "$@"
}

# The two-host test bed, when SLIMLINK_TEST_BED asks for it: a bed of this
# test's own, removed however the test ends.
bed=$abs_top_srcdir/scripts/two-host-bed
bed_name=t$$
if [ -n "${SLIMLINK_TEST_BED:-}" ]; then
  # The bed's two hosts are joined by a shaped Ethernet link.
  case ${UCX_SLIM_INNER:-tcp} in
    tcp) ;;
    *) skip "SLIMLINK_TEST_BED carries tcp between its hosts, not $UCX_SLIM_INNER" ;;
  esac
  [ "$(id -u)" = 0 ] || skip "SLIMLINK_TEST_BED needs root (network namespaces, veth, tc)"
  [ -x "$bed" ] || hard_error "$bed is missing or not executable"
  bed_name=${bed_name:0:8}
  trap '"$bed" down --name "$bed_name" >/dev/null 2>&1 || true' EXIT
  # Root alone may not be enough (a container without the capabilities).
  bed_rc=0
  bed_why=$("$bed" up --name "$bed_name" --rate "$SLIMLINK_TEST_BED" 2>&1 >/dev/null) || bed_rc=$?
  "$bed" down --name "$bed_name" >/dev/null 2>&1 || true
  [ $bed_rc -ne 77 ] || skip "the two-host bed cannot be built here: ${bed_why#*SKIP: }"
  [ $bed_rc -eq 0 ] || hard_error "scripts/two-host-bed up failed ($bed_rc): $bed_why"
fi

# run_bed TIMEOUT_S NRANKS PROGRAM [ARGS...]: one rank per host in turn on
# the two-host bed; each rank starts through slimlink-run on its host, which
# starts that host's node service.
run_bed() {
  local timeout_s=$1 nranks=$2 program=$3
  shift 3
  echo "+ UCX_TLS=$UCX_TLS $bed mpiexec --name $bed_name --rate $SLIMLINK_TEST_BED -- -n $nranks $SLIMLINK_RUN $builddir_mpi/$program $*"
  "$harness" -t "$timeout_s" -p "$program" -- \
    "$bed" mpiexec --name "$bed_name" --rate "$SLIMLINK_TEST_BED" -- \
    -n "$nranks" "$SLIMLINK_RUN" "$builddir_mpi/$program" "$@"
}

# run_mpich TIMEOUT_S NRANKS PROGRAM [ARGS...]
run_mpich() {
  local timeout_s=$1 nranks=$2 program=$3
  if [ -n "${SLIMLINK_TEST_BED:-}" ]; then
    run_bed "$@"
    return
  fi
  shift 3
  # MPIEXEC may carry arguments: split it on purpose.
  # shellcheck disable=SC2086
  run_ranks "$timeout_s" "$program" $MPIEXEC -n "$nranks" -- "$@"
}

# run_ompi TIMEOUT_S NRANKS PROGRAM [ARGS...]
# Open MPI's pml ucx only accepts RDMA transports by default: the two
# opal_common_ucx options let it use whatever UCX_TLS selects. Local ranks
# inherit mpiexec's environment; -x also forwards the variables to ranks on
# other nodes (LD_PRELOAD is set by slimlink-run).
run_ompi() {
  local timeout_s=$1 nranks=$2 program=$3 fwd=(-x UCX_TLS -x LD_PRELOAD)
  shift 3
  for v in LD_LIBRARY_PATH SLIMLINK_MODULE_PATH; do
    [ -n "${!v:-}" ] && fwd+=(-x "$v")
  done
  # UCX_SLIM_* configure the transport: forward whatever is set.
  for v in $(compgen -e | grep '^UCX_SLIM_' || true); do fwd+=(-x "$v"); done
  # OMPI_MPIEXEC may carry arguments: split it on purpose.
  # shellcheck disable=SC2086
  run_ranks "$timeout_s" "$program" $OMPI_MPIEXEC --oversubscribe \
    --allow-run-as-root --mca pml ucx --mca osc ucx \
    --mca opal_common_ucx_tls any --mca opal_common_ucx_devices any \
    "${fwd[@]}" -n "$nranks" -- "$@"
}

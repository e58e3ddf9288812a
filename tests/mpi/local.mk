# SPDX-License-Identifier: BSD-3-Clause
# tests/mpi — MPI tests run by `make check` (included by the top Makefile.am).
#
# Every test is a script that starts real MPI ranks through slimlink-run with
# UCX_TLS=slim,self and MPIR_CVAR_NOLOCAL=1 (so all traffic crosses `slim`),
# under the stall harness tests/mpi/run-with-timeout. The programs are linked
# without libtool wrapper scripts (-no-install) so that the harness and gdb
# see the real binaries.

mpi_test_mpich_cflags = $(AM_CFLAGS) $(MPICH_CFLAGS)
mpi_test_ompi_cflags = $(AM_CFLAGS) $(OMPI_CFLAGS)

check_PROGRAMS += tests/mpi/p2p tests/mpi/collectives tests/mpi/finalize tests/mpi/rma

tests_mpi_p2p_SOURCES = tests/mpi/p2p.c tests/mpi/mpi_test_util.h
tests_mpi_p2p_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_p2p_LDADD = src/libslimlink.la $(MPICH_LIBS)
tests_mpi_p2p_LDFLAGS = -no-install

tests_mpi_collectives_SOURCES = tests/mpi/collectives.c tests/mpi/mpi_test_util.h
tests_mpi_collectives_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_collectives_LDADD = src/libslimlink.la $(MPICH_LIBS)
tests_mpi_collectives_LDFLAGS = -no-install

tests_mpi_rma_SOURCES = tests/mpi/rma.c tests/mpi/mpi_test_util.h
tests_mpi_rma_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_rma_LDADD = src/libslimlink.la $(MPICH_LIBS)
tests_mpi_rma_LDFLAGS = -no-install

tests_mpi_finalize_SOURCES = tests/mpi/finalize.c
tests_mpi_finalize_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_finalize_LDADD = $(MPICH_LIBS)
tests_mpi_finalize_LDFLAGS = -no-install

# The same sources built against Open MPI (smoke tests, pml ucx).
if HAVE_OPENMPI
check_PROGRAMS += tests/mpi/p2p-ompi tests/mpi/collectives-ompi

tests_mpi_p2p_ompi_SOURCES = tests/mpi/p2p.c tests/mpi/mpi_test_util.h
tests_mpi_p2p_ompi_CFLAGS = $(mpi_test_ompi_cflags)
tests_mpi_p2p_ompi_LDADD = src/libslimlink.la $(OMPI_LIBS)
tests_mpi_p2p_ompi_LDFLAGS = -no-install

tests_mpi_collectives_ompi_SOURCES = tests/mpi/collectives.c tests/mpi/mpi_test_util.h
tests_mpi_collectives_ompi_CFLAGS = $(mpi_test_ompi_cflags)
tests_mpi_collectives_ompi_LDADD = src/libslimlink.la $(OMPI_LIBS)
tests_mpi_collectives_ompi_LDFLAGS = -no-install
endif

# Listed even without Open MPI: those two then report SKIP (exit 77).
TESTS += \
	tests/mpi/ucx-module.test \
	tests/mpi/p2p.test \
	tests/mpi/collectives.test \
	tests/mpi/rma.test \
	tests/mpi/finalize.test \
	tests/mpi/p2p-ompi.test \
	tests/mpi/collectives-ompi.test

EXTRA_DIST += \
	tests/mpi/ucx-module.test \
	tests/mpi/p2p.test \
	tests/mpi/collectives.test \
	tests/mpi/rma.test \
	tests/mpi/finalize.test \
	tests/mpi/p2p-ompi.test \
	tests/mpi/collectives-ompi.test \
	tests/mpi/mpi-test-lib.sh \
	tests/mpi/run-with-timeout \
	tests/mpi/finalize-hang-stats

# Lock that serialises the MPI tests under `make -j check`.
CLEANFILES += tests/mpi/.mpi-test.lock
# Each MPI test's private XDG_RUNTIME_DIR (mpi-test-lib.sh): the node
# service's socket folder and the lock files it and slimlink-run leave.
EXTRA_DIST += tests/mpi/direct-run
clean-local: clean-mpi-run-dirs
clean-mpi-run-dirs:
	-rm -rf tests/mpi/.run-*
.PHONY: clean-mpi-run-dirs

# Lossy packing end to end (slim_mark*, slim_quantize, slim_packing_get).
check_PROGRAMS += tests/mpi/packing

tests_mpi_packing_SOURCES = tests/mpi/packing.c tests/mpi/mpi_test_util.h
tests_mpi_packing_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_packing_LDADD = src/libslimlink.la $(MPICH_LIBS)
tests_mpi_packing_LDFLAGS = -no-install

TESTS += \
	tests/mpi/packing.test \
	tests/mpi/packing-multirail.test

EXTRA_DIST += \
	tests/mpi/packing.test \
	tests/mpi/packing-multirail.test

# end to end: slimlink-cg with packing, the live loop, the JSON report
# (validated against the installed schema) and its traces replayed.
TESTS += tests/mpi/end-to-end.test
EXTRA_DIST += tests/mpi/end-to-end.test tests/tools/validate-json-lines

# The same programs and checks with slim wrapping UCX's posix shared memory
# instead of tcp: each script sets SLIMLINK_TEST_INNER=posix (honoured by
# mpi-test-lib.sh) and runs the tcp test.
mpi_posix_tests = \
	tests/mpi/p2p-posix.test \
	tests/mpi/collectives-posix.test \
	tests/mpi/packing-posix.test \
	tests/mpi/end-to-end-posix.test
TESTS += $(mpi_posix_tests)
EXTRA_DIST += $(mpi_posix_tests)

# The default live loop on a solver loop saves, hits, replays to
# its live savings, and its send path never wakes the drain per operation.
TESTS += tests/mpi/live-loop.test
EXTRA_DIST += tests/mpi/live-loop.test

# A bandwidth stream's data keeps the link busy in the model on
# both sides (the inner transport's progress marks activity).
TESTS += tests/mpi/stream-busy.test
EXTRA_DIST += tests/mpi/stream-busy.test

# Slim built into UCX (SKIP unless SLIMLINK_UCX names such a UCX;
# scripts/check builds one and sets it with CI=true).
TESTS += tests/mpi/native-ucx.test
EXTRA_DIST += tests/mpi/native-ucx.test

# A rank crashes: survivors' reports, the node report's missing rank, and the
# link restored to full width (exec backend with a logging stand-in).
check_PROGRAMS += tests/mpi/crash

tests_mpi_crash_SOURCES = tests/mpi/crash.c
tests_mpi_crash_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_crash_LDADD = $(MPICH_LIBS)
tests_mpi_crash_LDFLAGS = -no-install

TESTS += tests/mpi/crash.test
EXTRA_DIST += tests/mpi/crash.test

# A survivor of a killed rank, blocked on it: slim's linger threads cost it
# nothing beside its own spinning.
check_PROGRAMS += tests/mpi/crash-survivor

tests_mpi_crash_survivor_SOURCES = tests/mpi/crash-survivor.c
tests_mpi_crash_survivor_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_crash_survivor_LDADD = $(MPICH_LIBS)
tests_mpi_crash_survivor_LDFLAGS = -no-install

TESTS += tests/mpi/crash-survivor.test
EXTRA_DIST += tests/mpi/crash-survivor.test

# Memory freed or reallocated while marked loses its marks.
check_PROGRAMS += tests/mpi/freed-mark
tests_mpi_freed_mark_SOURCES = tests/mpi/freed-mark.c tests/mpi/mpi_test_util.h
tests_mpi_freed_mark_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_freed_mark_LDADD = src/libslimlink.la $(MPICH_LIBS)
tests_mpi_freed_mark_LDFLAGS = -no-install
# ... and says so when it cannot be (libslimlink dlopen()ed after libc).
check_PROGRAMS += tests/mpi/free-probe
tests_mpi_free_probe_SOURCES = tests/mpi/free-probe.c
tests_mpi_free_probe_LDADD = -ldl
tests_mpi_free_probe_LDFLAGS = -no-install
TESTS += tests/mpi/freed-mark.test
EXTRA_DIST += tests/mpi/freed-mark.test

# Marked values arrive quantized whatever the fragment edges.
check_PROGRAMS += tests/mpi/packing-edges
tests_mpi_packing_edges_SOURCES = tests/mpi/packing-edges.c tests/mpi/mpi_test_util.h
tests_mpi_packing_edges_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_packing_edges_LDADD = src/libslimlink.la $(MPICH_LIBS)
tests_mpi_packing_edges_LDFLAGS = -no-install
TESTS += tests/mpi/packing-edges.test
EXTRA_DIST += tests/mpi/packing-edges.test

# Marks on the calling thread's stack are refused.
check_PROGRAMS += tests/mpi/stack-mark
tests_mpi_stack_mark_SOURCES = tests/mpi/stack-mark.c tests/mpi/mpi_test_util.h
tests_mpi_stack_mark_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_stack_mark_LDADD = src/libslimlink.la $(MPICH_LIBS) -lpthread
tests_mpi_stack_mark_LDFLAGS = -no-install
TESTS += tests/mpi/stack-mark.test
EXTRA_DIST += tests/mpi/stack-mark.test

# Traces without a report are complete; missing directories and
# planted symbolic links are refused and said.
TESTS += tests/mpi/trace-files.test
EXTRA_DIST += tests/mpi/trace-files.test
# ... and ranks killed by a signal after idling lose nothing of their traces.
check_PROGRAMS += tests/mpi/trace-tail
tests_mpi_trace_tail_SOURCES = tests/mpi/trace-tail.c
tests_mpi_trace_tail_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_trace_tail_LDADD = $(MPICH_LIBS)
tests_mpi_trace_tail_LDFLAGS = -no-install

# FIFOs planted as a trace or the report, or given as the policy file, are
# refused at once instead of hanging the job.
TESTS += tests/mpi/planted-fifo.test
EXTRA_DIST += tests/mpi/planted-fifo.test

# A hanging UCX_SLIM_LINK_EXEC command costs the job at most its
# timeout, leaves nothing running and is reported as it is.
TESTS += tests/mpi/exec-hang.test
EXTRA_DIST += tests/mpi/exec-hang.test

# One node service (slimlinkd) per port, started by slimlink-run,
# drives the port for the node's ranks and writes the node report.
TESTS += tests/mpi/node-service.test
EXTRA_DIST += tests/mpi/node-service.test

# Two "hosts" in network namespaces joined by a shaped veth
# (scripts/two-host-bed); skips without root.
TESTS += tests/mpi/two-host.test
EXTRA_DIST += tests/mpi/two-host.test

# Settings made in slim's iface configuration (by name, as UCP passes on
# UCT settings and UCX's own tests shrink socket buffers) reach the inner
# transport; its own variables still do.
check_PROGRAMS += tests/mpi/inner-config
tests_mpi_inner_config_SOURCES = tests/mpi/inner-config.c
tests_mpi_inner_config_CFLAGS = $(AM_CFLAGS) $(UCX_CFLAGS)
tests_mpi_inner_config_LDADD = $(UCX_LIBS)
tests_mpi_inner_config_LDFLAGS = -no-install
TESTS += tests/mpi/inner-config.test
EXTRA_DIST += tests/mpi/inner-config.test

# Waits seen from below MPI (UCX_SLIM_CPU=on) against what the program
# measured, and UCX_SLIM_WAIT=yield: every message arrives, CPU time drops.
check_PROGRAMS += tests/mpi/waits
tests_mpi_waits_SOURCES = tests/mpi/waits.c
tests_mpi_waits_CFLAGS = $(mpi_test_mpich_cflags)
tests_mpi_waits_LDADD = $(MPICH_LIBS)
tests_mpi_waits_LDFLAGS = -no-install
TESTS += tests/mpi/waits.test
EXTRA_DIST += tests/mpi/waits.test
TESTS += tests/mpi/cpu-live.test
EXTRA_DIST += tests/mpi/cpu-live.test

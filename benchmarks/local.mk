# SPDX-License-Identifier: BSD-3-Clause
# benchmarks (included by the top Makefile.am). See benchmarks/README.md.
#
#   benchmarks/programs/  the benchmark programs' sources, one program each,
#                         and the headers they share (bench_options.h: every
#                         program's command line; bench_stats.h; mini_app.h)
#   benchmarks/drivers/   the commands a user runs, Python 3, on one helper
#                         (bench_env.py); they build what they need and run it
#
# The programs are built into benchmarks/ of the build tree under the names
# below. Installed: slimlink-cg only (scripts/demo runs it); the others are
# development tools run from the build tree.

BENCH_CXX_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(SPDLOG_CFLAGS) \
	$(CLI11_CFLAGS)

# slimlink-osu-like: MPI latency and bandwidth per message size, OSU's
# shape; benchmarks/drivers/compare-slim runs it.
noinst_PROGRAMS += benchmarks/slimlink-osu-like
benchmarks_slimlink_osu_like_SOURCES = benchmarks/programs/osu_like.c benchmarks/programs/bench_options.h
benchmarks_slimlink_osu_like_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_slimlink_osu_like_LDADD = $(MPICH_LIBS)

# predictor-bench: per-event cost of the pattern predictor and of one ADGT
# run (src/predict/), against the targets; run it with
# benchmarks/drivers/run-predictor-bench.
noinst_PROGRAMS += benchmarks/predictor-bench
benchmarks_predictor_bench_SOURCES = benchmarks/programs/predictor_bench.cpp benchmarks/programs/bench_options.h
benchmarks_predictor_bench_CPPFLAGS = $(BENCH_CXX_CPPFLAGS)
benchmarks_predictor_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# controller-bench: cost of the link Controller + emulated backend per
# traffic event (median ns).
noinst_PROGRAMS += benchmarks/controller-bench
benchmarks_controller_bench_SOURCES = benchmarks/programs/controller_bench.cpp benchmarks/programs/bench_options.h
benchmarks_controller_bench_CPPFLAGS = $(BENCH_CXX_CPPFLAGS)
benchmarks_controller_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# service-bench: slimlinkd's publish cost per record on the rank's side,
# its reaction to deadlines and nudges, and its death detection.
noinst_PROGRAMS += benchmarks/service-bench
benchmarks_service_bench_SOURCES = benchmarks/programs/service_bench.cpp benchmarks/programs/bench_options.h
benchmarks_service_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src $(SPDLOG_CFLAGS) $(CLI11_CFLAGS)
benchmarks_service_bench_LDADD = src/libslimservice.la src/libslimcore.la $(SPDLOG_LIBS)

# replay-bench: events/s of the replay driver (src/predict/replay.h) on a
# 10^7-event trace, oracle and SPPS.
noinst_PROGRAMS += benchmarks/replay-bench
benchmarks_replay_bench_SOURCES = benchmarks/programs/replay_bench.cpp benchmarks/programs/bench_options.h
benchmarks_replay_bench_CPPFLAGS = $(BENCH_CXX_CPPFLAGS)
benchmarks_replay_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# codec-bench: GB/s of the lossy float64 codec (src/pack/codec.h), scalar and
# AVX2, against memcpy in the same run; run it with
# benchmarks/drivers/run-codec-bench.
noinst_PROGRAMS += benchmarks/codec-bench
benchmarks_codec_bench_SOURCES = benchmarks/programs/codec_bench.cpp benchmarks/programs/bench_options.h \
	benchmarks/programs/bench_stats.h
benchmarks_codec_bench_CPPFLAGS = $(BENCH_CXX_CPPFLAGS)
benchmarks_codec_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# slimlink-cg: conjugate gradients on a 2-D Poisson problem (1-D slabs, one
# halo row to each neighbour, two reductions per iteration: Alya's CG shape),
# solved at full precision and with the halo sends marked for lossy packing;
# prints the iterations, residuals and the packed answer's error. Installed:
# scripts/demo runs it.
bin_PROGRAMS += benchmarks/slimlink-cg
benchmarks_slimlink_cg_SOURCES = benchmarks/programs/cg.c benchmarks/programs/bench_options.h \
	benchmarks/programs/mini_app.h
benchmarks_slimlink_cg_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_slimlink_cg_LDADD = src/libslimlink.la $(MPICH_LIBS) -lm

# slimlink-fft: a distributed 3-D FFT (slabs, all-to-all transposes: GROMACS
# PME's shape) in a small MD loop of Gaussian charges, run at full precision
# and with both transposes' sends marked for lossy packing; prints the
# FFT's self-checks, the times and the packed potential's error.
noinst_PROGRAMS += benchmarks/slimlink-fft
benchmarks_slimlink_fft_SOURCES = benchmarks/programs/fft3d.c benchmarks/programs/bench_options.h \
	benchmarks/programs/mini_app.h
benchmarks_slimlink_fft_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_slimlink_fft_LDADD = src/libslimlink.la $(MPICH_LIBS) -lm

# packed-bw: 2-rank bandwidth of the same buffer unmarked and marked (keep 4),
# interleaved in one run, with the received data checked against
# slim_quantize. Run with benchmarks/drivers/run-packing-bench.
noinst_PROGRAMS += benchmarks/packed-bw
benchmarks_packed_bw_SOURCES = benchmarks/programs/packed_bw.c benchmarks/programs/bench_options.h
benchmarks_packed_bw_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_packed_bw_LDADD = src/libslimlink.la $(MPICH_LIBS) -lm

# slimlink-patterns: solver loops, transposes, irregular traffic and a phase
# change, for the predictor corpus (benchmarks/drivers/run-predictor-table)
# and the MPI tests.
noinst_PROGRAMS += benchmarks/slimlink-patterns
benchmarks_slimlink_patterns_SOURCES = benchmarks/programs/patterns.c benchmarks/programs/bench_options.h
benchmarks_slimlink_patterns_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_slimlink_patterns_LDADD = $(MPICH_LIBS)

# mark-bench: 10^6 marks and unmarks (target <= 1 s), and the send path's
# lookup of unmarked data with 1 and with 10^6 regions marked.
noinst_PROGRAMS += benchmarks/mark-bench
benchmarks_mark_bench_SOURCES = benchmarks/programs/mark_bench.cpp benchmarks/programs/bench_options.h \
	benchmarks/programs/bench_stats.h
benchmarks_mark_bench_CPPFLAGS = $(BENCH_CXX_CPPFLAGS)
benchmarks_mark_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# record-bench: ns per message the send path's recording costs (the calls of
# a 64 KiB rendezvous sender, through the module's interface), with memory
# evicted between messages as the kernel's copy does.
noinst_PROGRAMS += benchmarks/record-bench
benchmarks_record_bench_SOURCES = benchmarks/programs/record_bench.cpp benchmarks/programs/bench_options.h \
	benchmarks/programs/bench_stats.h
benchmarks_record_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(CLI11_CFLAGS)
benchmarks_record_bench_LDADD = src/libslimlink.la src/libslimcore.la

# The drivers, and the helper they share.
EXTRA_DIST += \
	benchmarks/README.md \
	benchmarks/drivers/bench_env.py \
	benchmarks/drivers/compare-slim \
	benchmarks/drivers/compare-uct-perftest \
	benchmarks/drivers/compare-wall \
	benchmarks/drivers/run-codec-bench \
	benchmarks/drivers/run-e2e-bench \
	benchmarks/drivers/run-packing-bench \
	benchmarks/drivers/run-predictor-bench \
	benchmarks/drivers/run-predictor-table \
	benchmarks/drivers/run-penalty-check \
	benchmarks/drivers/run-cpu-table \
	benchmarks/drivers/run-report-merge

# Every driver compiles, answers --help with its options, and one cheap one
# prints a table with numbers.
TESTS += tests/tools/bench-drivers.test
EXTRA_DIST += tests/tools/bench-drivers.test

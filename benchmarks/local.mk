# SPDX-License-Identifier: BSD-3-Clause
# benchmarks — point-to-point latency/bandwidth, slim vs its inner transport
# (included by the top Makefile.am). See benchmarks/README.md.

# Not installed: benchmarks run from the build tree (compare-slim finds it).
noinst_PROGRAMS += benchmarks/slimlink-osu-like
benchmarks_slimlink_osu_like_SOURCES = benchmarks/osu_like.c
benchmarks_slimlink_osu_like_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_slimlink_osu_like_LDADD = $(MPICH_LIBS)

EXTRA_DIST += \
	benchmarks/README.md \
	benchmarks/bench_env.py \
	benchmarks/compare-slim \
	benchmarks/compare-wall \
	benchmarks/compare-uct-perftest

# predictor-bench: per-event cost of the pattern predictor and of one ADGT
# run (src/predict/), against the targets; run it with
# benchmarks/run-predictor-bench. Not installed: a development tool.
noinst_PROGRAMS += benchmarks/predictor-bench
benchmarks_predictor_bench_SOURCES = benchmarks/predictor_bench.cpp benchmarks/bench_cli.h
benchmarks_predictor_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(SPDLOG_CFLAGS) \
	$(CLI11_CFLAGS)
benchmarks_predictor_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)
EXTRA_DIST += benchmarks/run-predictor-bench

# controller-bench: cost of the link Controller + emulated backend per
# traffic event (median ns). Not installed: a development tool.
noinst_PROGRAMS += benchmarks/controller-bench
benchmarks_controller_bench_SOURCES = benchmarks/controller_bench.cpp benchmarks/bench_cli.h
benchmarks_controller_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(SPDLOG_CFLAGS) \
	$(CLI11_CFLAGS)
benchmarks_controller_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# service-bench: slimlinkd's publish cost per record on the rank's side,
# its reaction to deadlines and nudges, and its death detection.
# Not installed: a development tool.
noinst_PROGRAMS += benchmarks/service-bench
benchmarks_service_bench_SOURCES = benchmarks/bench_service.cpp benchmarks/bench_cli.h
benchmarks_service_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src $(SPDLOG_CFLAGS) $(CLI11_CFLAGS)
benchmarks_service_bench_LDADD = src/libslimservice.la src/libslimcore.la $(SPDLOG_LIBS)

# replay-bench: events/s of the replay driver (src/predict/replay.h) on a
# 10^7-event trace, oracle and SPPS. Not installed: a development tool.
noinst_PROGRAMS += benchmarks/replay-bench
benchmarks_replay_bench_SOURCES = benchmarks/replay_bench.cpp benchmarks/bench_cli.h
benchmarks_replay_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(SPDLOG_CFLAGS) \
	$(CLI11_CFLAGS)
benchmarks_replay_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# codec-bench: GB/s of the lossy float64 codec (src/pack/codec.h), scalar and
# AVX2, against memcpy in the same run; run it with benchmarks/run-codec-bench.
# Not installed: a development tool.
noinst_PROGRAMS += benchmarks/codec-bench
benchmarks_codec_bench_SOURCES = benchmarks/codec_bench.cpp benchmarks/bench_cli.h benchmarks/bench_stats.h
benchmarks_codec_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(SPDLOG_CFLAGS) \
	$(CLI11_CFLAGS)
benchmarks_codec_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)
EXTRA_DIST += benchmarks/run-codec-bench

# slimlink-cg: conjugate gradients on a 2-D Poisson problem (1-D slabs, one
# halo row to each neighbour, two reductions per iteration: Alya's CG shape),
# solved at full precision and with the halo sends marked for lossy packing;
# prints the iterations, residuals and the packed answer's error. Installed:
# scripts/demo runs it.
bin_PROGRAMS += benchmarks/slimlink-cg
benchmarks_slimlink_cg_SOURCES = benchmarks/cg.c benchmarks/bench_options.h benchmarks/mini_app.h
benchmarks_slimlink_cg_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_slimlink_cg_LDADD = src/libslimlink.la $(MPICH_LIBS) -lm

# slimlink-fft: a distributed 3-D FFT (slabs, all-to-all transposes: GROMACS
# PME's shape) in a small MD loop of Gaussian charges, run at full precision
# and with both transposes' sends marked for lossy packing; prints the
# FFT's self-checks, the times and the packed potential's error. Not
# installed.
noinst_PROGRAMS += benchmarks/slimlink-fft
benchmarks_slimlink_fft_SOURCES = benchmarks/fft3d.c benchmarks/bench_options.h benchmarks/mini_app.h
benchmarks_slimlink_fft_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_slimlink_fft_LDADD = src/libslimlink.la $(MPICH_LIBS) -lm

# packed-bw: 2-rank bandwidth of the same buffer unmarked and marked (keep 4),
# interleaved in one run, with the received data checked against
# slim_quantize. Run with benchmarks/run-packing-bench. Not installed.
noinst_PROGRAMS += benchmarks/packed-bw
benchmarks_packed_bw_SOURCES = benchmarks/packed_bw.c benchmarks/bench_options.h
benchmarks_packed_bw_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_packed_bw_LDADD = src/libslimlink.la $(MPICH_LIBS) -lm
EXTRA_DIST += benchmarks/run-packing-bench
EXTRA_DIST += benchmarks/run-e2e-bench

# slimlink-patterns: solver loops, transposes, irregular traffic and a phase
# change, for the predictor corpus (benchmarks/run-predictor-table). Not
# installed.
noinst_PROGRAMS += benchmarks/slimlink-patterns
benchmarks_slimlink_patterns_SOURCES = benchmarks/patterns.c
benchmarks_slimlink_patterns_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_slimlink_patterns_LDADD = $(MPICH_LIBS)
EXTRA_DIST += benchmarks/run-predictor-table

# mark-bench: 10^6 marks and unmarks (target <= 1 s), and the send path's
# lookup of unmarked data with 1 and with 10^6 regions marked.
# Not installed: a development tool.
noinst_PROGRAMS += benchmarks/mark-bench
benchmarks_mark_bench_SOURCES = benchmarks/mark_bench.cpp benchmarks/bench_cli.h benchmarks/bench_stats.h
benchmarks_mark_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(SPDLOG_CFLAGS) \
	$(CLI11_CFLAGS)
benchmarks_mark_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# record-bench: ns per message the send path's recording costs (the calls of
# a 64 KiB rendezvous sender, through the module's interface), with memory
# evicted between messages as the kernel's copy does.
# Not installed: a development tool.
noinst_PROGRAMS += benchmarks/record-bench
benchmarks_record_bench_SOURCES = benchmarks/record_bench.cpp benchmarks/bench_cli.h benchmarks/bench_stats.h
benchmarks_record_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(CLI11_CFLAGS)
benchmarks_record_bench_LDADD = src/libslimlink.la src/libslimcore.la

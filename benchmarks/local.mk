# benchmarks — point-to-point latency/bandwidth, slim vs its inner transport
# (included by the top Makefile.am). See benchmarks/README.md.

bin_PROGRAMS += benchmarks/slimlink-osu-like
benchmarks_slimlink_osu_like_SOURCES = benchmarks/osu_like.c
benchmarks_slimlink_osu_like_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_slimlink_osu_like_LDADD = $(MPICH_LIBS)

EXTRA_DIST += \
	benchmarks/README.md \
	benchmarks/compare-slim-tcp

# predictor-bench: per-event cost of the pattern predictor and of one ADGT
# run (src/predict/), against the targets; run it with
# benchmarks/run-predictor-bench. Not installed: a development tool.
noinst_PROGRAMS += benchmarks/predictor-bench
benchmarks_predictor_bench_SOURCES = benchmarks/predictor_bench.cpp
benchmarks_predictor_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(SPDLOG_CFLAGS)
benchmarks_predictor_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)
EXTRA_DIST += benchmarks/run-predictor-bench

# controller-bench: cost of the link Controller + emulated backend per
# traffic event (median ns). Not installed: a development tool.
noinst_PROGRAMS += benchmarks/controller-bench
benchmarks_controller_bench_SOURCES = benchmarks/controller_bench.cpp
benchmarks_controller_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(SPDLOG_CFLAGS)
benchmarks_controller_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# replay-bench: events/s of the replay driver (src/link/replay.h) on a
# 10^7-event trace, oracle and SPPS. Not installed: a development tool.
noinst_PROGRAMS += benchmarks/replay-bench
benchmarks_replay_bench_SOURCES = benchmarks/replay_bench.cpp
benchmarks_replay_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(SPDLOG_CFLAGS)
benchmarks_replay_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# codec-bench: GB/s of the lossy float64 codec (src/pack/codec.h), scalar and
# AVX2, against memcpy in the same run; run it with benchmarks/run-codec-bench.
# Not installed: a development tool.
noinst_PROGRAMS += benchmarks/codec-bench
benchmarks_codec_bench_SOURCES = benchmarks/codec_bench.cpp
benchmarks_codec_bench_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(SPDLOG_CFLAGS)
benchmarks_codec_bench_LDADD = src/libslimcore.la $(SPDLOG_LIBS)
EXTRA_DIST += benchmarks/run-codec-bench

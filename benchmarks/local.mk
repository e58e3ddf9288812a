# benchmarks — point-to-point latency/bandwidth, slim vs its inner transport
# (included by the top Makefile.am). See benchmarks/README.md.

bin_PROGRAMS += benchmarks/slimlink-osu-like
benchmarks_slimlink_osu_like_SOURCES = benchmarks/osu_like.c
benchmarks_slimlink_osu_like_CFLAGS = $(AM_CFLAGS) $(MPICH_CFLAGS)
benchmarks_slimlink_osu_like_LDADD = $(MPICH_LIBS)

EXTRA_DIST += \
	benchmarks/README.md \
	benchmarks/compare-slim-tcp

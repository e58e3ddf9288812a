# SPDX-License-Identifier: BSD-3-Clause
# src/tools — command-line tools other than the demo (included by the top
# Makefile.am).

# slim-replay: the pattern predictor over an event trace (README.md, "Event
# traces and slim-replay").
bin_PROGRAMS += src/tools/slim-replay
src_tools_slim_replay_SOURCES = src/tools/slim_replay.cpp
src_tools_slim_replay_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src -I$(srcdir)/src/runtime $(SPDLOG_CFLAGS) \
	$(NLOHMANN_JSON_CFLAGS) $(CLI11_CFLAGS)
src_tools_slim_replay_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# Its command-line tests; the traces they replay are in tests/data/.
TESTS += tests/replay/slim-replay.test
EXTRA_DIST += \
	tests/replay/slim-replay.test \
	tests/data/replay-alya-fig5.3.trace \
	tests/data/replay-bad-negative-duration.trace \
	tests/data/replay-bad-negative.trace \
	tests/data/replay-bad-not-a-number.trace \
	tests/data/replay-bad-overflow.trace \
	tests/data/replay-bad-packed.trace \
	tests/data/replay-bad-too-few-fields.trace \
	tests/data/replay-bad-too-many-fields.trace \
	tests/data/replay-bad-unsorted.trace \
	tests/data/replay-periodic.trace

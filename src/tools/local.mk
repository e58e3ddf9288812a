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

# slim-plot: figures of slim-replay's results and of JSON reports
# (README.md, "Figures: slim-plot"). Made like slimlink-run, so that it carries the
# version and sits next to slim-replay in the build tree, where it looks
# for it first. It runs under the Python that has matplotlib: Debian's
# (python3-matplotlib), not the first python3 in PATH, which may be a
# pyenv or virtualenv one without it; `make SLIM_PLOT_INTERPRETER=...` to change.
SLIM_PLOT_INTERPRETER = /usr/bin/python3
bin_SCRIPTS += src/tools/slim-plot
EXTRA_DIST += src/tools/slim-plot.py
CLEANFILES += src/tools/slim-plot
src/tools/slim-plot: $(srcdir)/src/tools/slim-plot.py Makefile
	$(AM_V_GEN)$(MKDIR_P) src/tools && rm -f $@ $@.tmp && \
	$(SED) -e '1s|^#!.*|#!$(SLIM_PLOT_INTERPRETER)|' -e 's|@PACKAGE_VERSION[@]|$(PACKAGE_VERSION)|g' \
		$(srcdir)/src/tools/slim-plot.py > $@.tmp && \
	chmod +x $@.tmp && chmod a-w $@.tmp && mv -f $@.tmp $@

TESTS += tests/replay/slim-plot.test
EXTRA_DIST += \
	tests/replay/slim-plot.test \
	tests/data/report-cg-2ranks.json \
	tests/data/report-two-nodes.json \
	tests/data/README.md

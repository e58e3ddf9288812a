# SPDX-License-Identifier: BSD-3-Clause
# src/tools — command-line tools other than the demo (included by the top
# Makefile.am).

# slim-replay: the pattern predictor over an event trace (slim-replay(1)).
bin_PROGRAMS += src/tools/slim-replay
src_tools_slim_replay_SOURCES = src/tools/slim_replay.cpp src/tools/cli_common.h \
	src/tools/replay_options.h src/tools/replay_options.cpp \
	src/tools/help_formatter.h src/tools/help_formatter.cpp \
	src/tools/replay_report.h src/tools/replay_report.cpp \
	src/tools/trace_input.h src/tools/trace_input.cpp
src_tools_slim_replay_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src $(NLOHMANN_JSON_CFLAGS) $(CLI11_CFLAGS)
src_tools_slim_replay_LDADD = src/libslimcore.la $(SPDLOG_LIBS)

# Its OTF2 archive reader (--events ARCHIVE/traces.otf2). Compiled into
# slim-replay and the unit tests only, not into the core library: the
# preloaded libslimlink must not depend on OTF2.
src_tools_slim_replay_SOURCES += src/tools/otf2_trace.h src/tools/otf2_trace.cpp \
	src/tools/isolated_call.h src/tools/isolated_call.cpp
src_tools_slim_replay_CPPFLAGS += $(OTF2_CFLAGS)
src_tools_slim_replay_LDADD += $(OTF2_LIBS)
tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_otf2_trace.cpp tests/unit/test_isolated_call.cpp \
	src/tools/otf2_trace.cpp src/tools/isolated_call.cpp \
	tests/replay/otf2_sample.h tests/replay/otf2_sample.cpp
tests_unit_slim_unit_tests_CPPFLAGS += $(OTF2_CFLAGS)
tests_unit_slim_unit_tests_LDADD += $(OTF2_LIBS)

# Writes the sample OTF2 archive slim-replay.test replays (built for check
# only; the archive is written into the test's temporary directory).
check_PROGRAMS += tests/replay/write-otf2-sample
tests_replay_write_otf2_sample_SOURCES = \
	tests/replay/write_otf2_sample.cpp \
	tests/replay/otf2_sample.h tests/replay/otf2_sample.cpp
tests_replay_write_otf2_sample_CPPFLAGS = $(AM_CPPFLAGS) $(OTF2_CFLAGS)
tests_replay_write_otf2_sample_LDADD = $(OTF2_LIBS)

# Its command-line tests; the traces they replay are in tests/data/.
TESTS += tests/replay/slim-replay.test tests/replay/slim-replay-cpu.test
EXTRA_DIST += \
	tests/replay/slim-replay.test \
	tests/replay/slim-replay-cpu.test \
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

# slimlinkd: the node service that owns a link port (src/service/;
# src/link/service_protocol.h says what crosses its socket).
bin_PROGRAMS += src/tools/slimlinkd
src_tools_slimlinkd_SOURCES = src/tools/slimlinkd.cpp src/tools/cli_common.h
src_tools_slimlinkd_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src $(SPDLOG_CFLAGS) $(NLOHMANN_JSON_CFLAGS) \
	$(CLI11_CFLAGS)
src_tools_slimlinkd_LDADD = src/libslimservice.la src/libslimcore.la $(SPDLOG_LIBS)

# Its command-line tests, driven by a small client that attaches, publishes
# a scripted demand and leaves (or is killed).
check_PROGRAMS += tests/service/service-probe
tests_service_service_probe_SOURCES = tests/service/service_probe.cpp
tests_service_service_probe_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src $(SPDLOG_CFLAGS) $(CLI11_CFLAGS)
tests_service_service_probe_LDADD = src/libslimcore.la $(SPDLOG_LIBS)
TESTS += tests/service/slimlinkd.test
EXTRA_DIST += tests/service/slimlinkd.test
# Hostile clients (a job key of another user, a flood of queued records,
# idle connections), for tests/service/slimlinkd-hostile.test.
check_PROGRAMS += tests/service/service-hostile
tests_service_service_hostile_SOURCES = tests/service/service_hostile.cpp
tests_service_service_hostile_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src $(SPDLOG_CFLAGS)
tests_service_service_hostile_LDADD = src/libslimcore.la $(SPDLOG_LIBS)
TESTS += tests/service/slimlinkd-hostile.test
EXTRA_DIST += tests/service/slimlinkd-hostile.test
# A rank asking slimlinkd for its cores low, then leaving or killed, for
# tests/service/slimlinkd-cpu.test (a fake cpufreq tree).
check_PROGRAMS += tests/service/cpu-probe
tests_service_cpu_probe_SOURCES = tests/service/cpu_probe.cpp
tests_service_cpu_probe_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src $(SPDLOG_CFLAGS) $(CLI11_CFLAGS) \
	$(NLOHMANN_JSON_CFLAGS)
tests_service_cpu_probe_LDADD = src/libslimcore.la $(SPDLOG_LIBS)
TESTS += tests/service/slimlinkd-cpu.test
EXTRA_DIST += tests/service/slimlinkd-cpu.test
# The cores' state file: an exec service SIGKILLed with a core low, restored
# by the next service whatever its --cpu; a cpufreq file under --cpu off.
TESTS += tests/service/slimlinkd-cpu-state.test
EXTRA_DIST += tests/service/slimlinkd-cpu-state.test
# --link ethtool refused on interfaces without EEE (lo, a virtio NIC), and
# an EEE state file left for an interface that is gone.
TESTS += tests/service/slimlinkd-ethtool.test
EXTRA_DIST += tests/service/slimlinkd-ethtool.test

# slimlink-run's start lock, --status, inherited descriptors and --log-file
# against what another user can plant.
TESTS += tests/service/launcher-security.test
EXTRA_DIST += tests/service/launcher-security.test

# A one-rank probe of node reports (a silent client of another job).
check_PROGRAMS += tests/service/report-probe
tests_service_report_probe_SOURCES = tests/service/report_probe.cpp
tests_service_report_probe_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src $(SPDLOG_CFLAGS) $(CLI11_CFLAGS) \
	$(NLOHMANN_JSON_CFLAGS)
tests_service_report_probe_LDADD = src/libslimcore.la $(SPDLOG_LIBS)
TESTS += tests/service/slimlinkd-reports.test
EXTRA_DIST += tests/service/slimlinkd-reports.test

# slim-plot: figures of slim-replay's results and of JSON reports
# (slim-plot(1)). Made like slimlink-run, so that it carries the
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
	tests/data/README.md \
	tests/replay/bad-reports

# slimlink-report: a job's node reports merged into one record
# (slimlink.job.v1, src/tools/job.schema.json), and its summary line
# (slimlink-report(1)). The merge is compiled into the unit tests too.
bin_PROGRAMS += src/tools/slimlink-report
src_tools_slimlink_report_SOURCES = src/tools/slimlink_report.cpp src/tools/cli_common.h \
	src/tools/help_formatter.h src/tools/help_formatter.cpp \
	src/tools/job_report.h src/tools/job_report.cpp
src_tools_slimlink_report_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src $(SPDLOG_CFLAGS) $(NLOHMANN_JSON_CFLAGS) \
	$(CLI11_CFLAGS)
src_tools_slimlink_report_LDADD = src/libslimcore.la $(SPDLOG_LIBS)
tests_unit_slim_unit_tests_SOURCES += tests/unit/test_job_report.cpp src/tools/job_report.cpp
dist_pkgdata_DATA += src/tools/job.schema.json
TESTS += tests/tools/slimlink-report.test
EXTRA_DIST += tests/tools/slimlink-report.test tests/data/golden-job-two-nodes.json \
	tests/data/golden-job-two-hosts.json tests/data/report-two-hosts.json

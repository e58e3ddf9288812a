# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz — libFuzzer targets, built straight from the sources they need
# with clang++ -fsanitize=fuzzer,address (configure: HAVE_CLANG_FUZZER).
# Each *-fuzz.test runs one target through run-fuzzer.sh (a repeatable
# exploration from the committed corpus) and skips (77) when clang's fuzzer
# runtime is not available.
TESTS += tests/fuzz/frame-fuzz.test
EXTRA_DIST += \
	tests/fuzz/run-fuzzer.sh \
	tests/fuzz/frame-fuzz.test \
	tests/fuzz/frame_fuzzer.cpp \
	tests/fuzz/corpus
TESTS += tests/fuzz/service-fuzz.test
EXTRA_DIST += \
	tests/fuzz/service-fuzz.test \
	tests/fuzz/service_fuzzer.cpp \
	tests/fuzz/service-corpus

if HAVE_CLANG_FUZZER
frame_fuzzer_sources = \
	$(srcdir)/tests/fuzz/frame_fuzzer.cpp \
	$(srcdir)/src/pack/frame.cpp \
	$(srcdir)/src/pack/expand_notice.cpp \
	$(srcdir)/src/pack/codec.cpp
frame_fuzzer_headers = \
	$(srcdir)/src/pack/frame.h \
	$(srcdir)/src/pack/expand_notice.h \
	$(srcdir)/src/pack/wire_bytes.h \
	$(srcdir)/src/pack/codec.h \
	$(srcdir)/src/pack/region_registry.h

check_SCRIPTS += tests/fuzz/frame-fuzzer
CLEANFILES += tests/fuzz/frame-fuzzer
tests/fuzz/frame-fuzzer: $(frame_fuzzer_sources) $(frame_fuzzer_headers)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_GEN)$(CLANGXX) -std=c++17 -g -O1 -Wall -Wextra \
		-fsanitize=fuzzer,address -fno-omit-frame-pointer \
		-I$(srcdir)/src -o $@ $(frame_fuzzer_sources)
endif

if HAVE_CLANG_FUZZER
service_fuzzer_sources = \
	$(srcdir)/tests/fuzz/service_fuzzer.cpp \
	$(srcdir)/src/service/port_service.cpp \
	$(srcdir)/src/service/demand_merge.cpp \
	$(srcdir)/src/service/port_driver.cpp \
	$(srcdir)/src/service/job_reports.cpp \
	$(srcdir)/src/service/state_file.cpp \
	$(srcdir)/src/service/cpu_controller.cpp \
	$(srcdir)/src/service/cpu_backend.cpp \
	$(srcdir)/src/service/cpu_backend_emulated.cpp \
	$(srcdir)/src/service/cpu_backend_cpufreq.cpp \
	$(srcdir)/src/service/cpu_backend_exec.cpp \
	$(srcdir)/src/service/site_command.cpp \
	$(srcdir)/src/link/service_io.cpp \
	$(srcdir)/src/link/backend.cpp \
	$(srcdir)/src/link/backend_emulated.cpp \
	$(srcdir)/src/predict/link_model.cpp \
	$(srcdir)/src/predict/cpu_model.cpp \
	$(srcdir)/src/trace/trace.cpp \
	$(srcdir)/src/base/error.cpp \
	$(srcdir)/src/base/log.cpp \
	$(srcdir)/src/base/output_file.cpp \
	$(srcdir)/src/base/parse.cpp
service_fuzzer_headers = \
	$(srcdir)/src/service/port_service.h \
	$(srcdir)/src/service/port_service_state.h \
	$(srcdir)/src/service/state_file.h \
	$(srcdir)/src/service/cpu_backend.h \
	$(srcdir)/src/service/cpu_controller.h \
	$(srcdir)/src/service/site_command.h \
	$(srcdir)/src/link/service_io.h \
	$(srcdir)/src/link/service_protocol.h \
	$(srcdir)/src/link/backend.h \
	$(srcdir)/src/predict/link_model.h \
	$(srcdir)/src/predict/cpu_model.h \
	$(srcdir)/src/trace/trace.h \
	$(srcdir)/src/base/output_file.h

check_SCRIPTS += tests/fuzz/service-fuzzer
CLEANFILES += tests/fuzz/service-fuzzer
tests/fuzz/service-fuzzer: $(service_fuzzer_sources) $(service_fuzzer_headers)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_GEN)$(CLANGXX) -std=c++17 -g -O1 -Wall -Wextra \
		-fsanitize=fuzzer,address -fno-omit-frame-pointer \
		-I. -I$(srcdir)/src $(SPDLOG_CFLAGS) -o $@ $(service_fuzzer_sources) \
		$(SPDLOG_LIBS) -lpthread
endif

# The trace readers: slim-replay's text trace reader and its OTF2 reader,
# both fed files from other machines and other people.
TESTS += tests/fuzz/trace-fuzz.test tests/fuzz/otf2-fuzz.test
EXTRA_DIST += \
	tests/fuzz/trace-fuzz.test \
	tests/fuzz/trace_fuzzer.cpp \
	tests/fuzz/trace-corpus \
	tests/fuzz/otf2-fuzz.test \
	tests/fuzz/otf2_fuzzer.cpp \
	tests/fuzz/otf2-lsan.supp \
	tests/fuzz/otf2-corpus

if HAVE_CLANG_FUZZER
trace_fuzzer_sources = \
	$(srcdir)/tests/fuzz/trace_fuzzer.cpp \
	$(srcdir)/src/trace/trace.cpp \
	$(srcdir)/src/base/output_file.cpp
trace_fuzzer_headers = \
	$(srcdir)/src/trace/trace.h \
	$(srcdir)/src/predict/types.h \
	$(srcdir)/src/base/output_file.h
otf2_fuzzer_sources = \
	$(srcdir)/tests/fuzz/otf2_fuzzer.cpp \
	$(srcdir)/src/trace/trace.cpp \
	$(srcdir)/src/base/output_file.cpp \
	$(srcdir)/src/tools/otf2_trace.cpp \
	$(srcdir)/src/tools/isolated_call.cpp \
	$(srcdir)/tests/replay/otf2_sample.cpp
otf2_fuzzer_headers = $(trace_fuzzer_headers) \
	$(srcdir)/src/tools/otf2_trace.h \
	$(srcdir)/src/tools/isolated_call.h \
	$(srcdir)/tests/replay/otf2_sample.h

check_SCRIPTS += tests/fuzz/trace-fuzzer tests/fuzz/otf2-fuzzer
CLEANFILES += tests/fuzz/trace-fuzzer tests/fuzz/otf2-fuzzer
tests/fuzz/trace-fuzzer: $(trace_fuzzer_sources) $(trace_fuzzer_headers)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_GEN)$(CLANGXX) -std=c++17 -g -O1 -Wall -Wextra \
		-fsanitize=fuzzer,address -fno-omit-frame-pointer \
		-I$(srcdir)/src -o $@ $(trace_fuzzer_sources)
tests/fuzz/otf2-fuzzer: $(otf2_fuzzer_sources) $(otf2_fuzzer_headers)
	@$(MKDIR_P) tests/fuzz
	$(AM_V_GEN)$(CLANGXX) -std=c++17 -g -O1 -Wall -Wextra \
		-fsanitize=fuzzer,address -fno-omit-frame-pointer \
		-I$(srcdir)/src $(OTF2_CFLAGS) -o $@ $(otf2_fuzzer_sources) $(OTF2_LIBS)
endif

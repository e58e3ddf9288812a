# SPDX-License-Identifier: BSD-3-Clause
# tests/fuzz — libFuzzer targets, built straight from the sources they need
# with clang++ -fsanitize=fuzzer,address (configure: HAVE_CLANG_FUZZER).
# frame-fuzz.test runs the frame fuzzer for a bounded time and skips (77)
# when clang's fuzzer runtime is not available.
TESTS += tests/fuzz/frame-fuzz.test
EXTRA_DIST += \
	tests/fuzz/frame-fuzz.test \
	tests/fuzz/frame_fuzzer.cpp \
	tests/fuzz/corpus

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

# SPDX-License-Identifier: BSD-3-Clause
# src/trace — event traces on disk: the live loop writes them, slim-replay
# and the benchmarks read them. The file I/O that src/predict must not do.
src_libslimcore_la_SOURCES += \
	src/trace/trace.h src/trace/trace.cpp

tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_trace.cpp

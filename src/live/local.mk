# SPDX-License-Identifier: BSD-3-Clause
# src/live — the live loop: slim's traffic -> events -> predictor -> link
# controller -> backend, and the per-rank event trace.
src_libslimcore_la_SOURCES += \
	src/live/live_loop.h src/live/live_loop.cpp \
	src/live/live_cpu.h src/live/live_cpu.cpp \
	src/live/live_drain.h src/live/live_drain.cpp src/live/op_ring.h \
	src/live/op_log.h src/live/op_log.cpp \
	src/live/record_clock.h src/live/record_clock.cpp

tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_live_loop.cpp \
	tests/unit/test_live_cpu.cpp \
	tests/unit/test_waits.cpp

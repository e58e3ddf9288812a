# SPDX-License-Identifier: BSD-3-Clause
# src/predict — the pattern predictor (thesis chapter 5), pure C++. Built into
# the core convenience library so the runtime (and the unit tests) can use it.
src_libslimcore_la_SOURCES += \
	src/predict/types.h \
	src/predict/gram_former.h src/predict/gram_former.cpp \
	src/predict/pattern_predictor.h src/predict/pattern_predictor.cpp \
	src/predict/power_mode_control.h src/predict/power_mode_control.cpp \
	src/predict/threshold_tuner.h src/predict/threshold_tuner.cpp \
	src/predict/predictor.h src/predict/predictor.cpp \
	src/predict/context_predictor.h src/predict/context_predictor.cpp \
	src/predict/trace.h src/predict/trace.cpp

tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_gram_former.cpp \
	tests/unit/test_pattern_predictor.cpp \
	tests/unit/test_power_mode_control.cpp \
	tests/unit/test_predictor.cpp \
	tests/unit/test_threshold_tuner.cpp \
	tests/unit/test_trace.cpp

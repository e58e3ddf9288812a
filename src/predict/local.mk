# SPDX-License-Identifier: BSD-3-Clause
# src/predict — the pure decision library: what decides the link width.
# The pattern and context predictors, the link model, the gap policies
# behind one interface (gap_policy.h) and their registry by name
# (policy_registry.h), the replay driver and the adaptive policy. No I/O,
# no threads, no clock reads, no logging: time and events are inputs. The
# live loop (src/live) and slim-replay (src/tools) both drive it.
src_libslimcore_la_SOURCES += \
	src/predict/types.h \
	src/predict/gram_former.h src/predict/gram_former.cpp \
	src/predict/pattern_predictor.h src/predict/pattern_predictor.cpp \
	src/predict/power_mode_control.h src/predict/power_mode_control.cpp \
	src/predict/threshold_tuner.h src/predict/threshold_tuner.cpp \
	src/predict/predictor.h src/predict/predictor.cpp \
	src/predict/context_predictor.h src/predict/context_predictor.cpp \
	src/predict/link_model.h src/predict/link_model.cpp \
	src/predict/link_profile.h src/predict/link_profile.cpp \
	src/predict/gap_policy.h src/predict/gap_policy.cpp \
	src/predict/policy_registry.h src/predict/policy_registry.cpp \
	src/predict/replay.h src/predict/replay.cpp \
	src/predict/adaptive_policy.h src/predict/adaptive_policy.cpp \
	src/predict/cpu_model.h src/predict/cpu_model.cpp \
	src/predict/cpu_policy.h src/predict/cpu_policy.cpp

tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_gram_former.cpp \
	tests/unit/test_pattern_predictor.cpp \
	tests/unit/test_power_mode_control.cpp \
	tests/unit/test_predictor.cpp \
	tests/unit/test_threshold_tuner.cpp \
	tests/unit/test_link_model.cpp \
	tests/unit/test_policy_registry.cpp \
	tests/unit/test_replay.cpp \
	tests/unit/test_adaptive_policy.cpp \
	tests/unit/test_cpu_model.cpp \
	tests/unit/test_cpu_policy.cpp \
	tests/unit/test_cpu_policy_live.cpp

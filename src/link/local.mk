# SPDX-License-Identifier: BSD-3-Clause
# src/link — the link-width model, the controller, the emulated port a rank
# drives, and the rank's side of the node service (client, wire protocol).
src_libslimcore_la_SOURCES += \
	src/link/link_model.h src/link/link_model.cpp \
	src/link/replay.h src/link/replay.cpp

tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_link_model.cpp \
	tests/unit/test_replay.cpp

# The controller and the backends a rank drives: the emulated port, and the
# tee beside the node service's client. The real backends are the
# service's (src/service/local.mk).
src_libslimcore_la_SOURCES += \
	src/link/backend.h src/link/backend.cpp \
	src/link/backend_emulated.cpp \
	src/link/controller.h src/link/controller.cpp \
	src/link/tee_backend.h
tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_controller.cpp

# The default policy: candidates replayed in shadow, the best followed (issue 11).
src_libslimcore_la_SOURCES += \
	src/link/adaptive_policy.h src/link/adaptive_policy.cpp
tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_adaptive_policy.cpp

# The rank's side of slimlinkd: the wire protocol, the socket plumbing both
# sides use, the client and its ServiceBackend.
src_libslimcore_la_SOURCES += \
	src/link/service_protocol.h \
	src/link/service_io.h src/link/service_io.cpp \
	src/link/service_client.h src/link/service_client.cpp
tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_service_client.cpp

# SPDX-License-Identifier: BSD-3-Clause
# src/link — the controller, the emulated port a rank drives, and the rank's
# side of the node service (client, wire protocol). The link model it drives
# is in src/predict; the node service itself in src/service.

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

# The rank's side of slimlinkd: the wire protocol, the socket plumbing both
# sides use, the client and its ServiceBackend.
src_libslimcore_la_SOURCES += \
	src/link/service_protocol.h \
	src/link/service_io.h src/link/service_io.cpp \
	src/link/service_client.h src/link/service_client.cpp
tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_service_client.cpp

# SPDX-License-Identifier: BSD-3-Clause
# src/link — the link controller, backends and the node service (the link
# model it drives is in src/predict).
# PortMap (thesis §4.5.4): which port a UCX device drives, with hwloc.
src_libslimcore_la_SOURCES += \
	src/link/port_map.h src/link/port_map.cpp
src_libslimcore_la_CPPFLAGS += $(HWLOC_CFLAGS)
src_libslimcore_la_LIBADD += $(HWLOC_LIBS) -lrt -lpthread
tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_port_map.cpp

# Controller and backends (one file per backend, registered in backend.cpp).
# libibmad/libibumad are optional (HAVE_IBMAD); empty when not found.
src_libslimcore_la_SOURCES += \
	src/link/backend.h src/link/backend.cpp \
	src/link/backend_emulated.cpp \
	src/link/backend_exec.cpp \
	src/link/backend_ibmad.h src/link/backend_ibmad.cpp \
	src/link/controller.h src/link/controller.cpp \
	src/link/tee_backend.h
src_libslimcore_la_CPPFLAGS += $(IBMAD_CFLAGS)
src_libslimcore_la_LIBADD += $(IBMAD_LIBS)
tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_controller.cpp
tests_unit_slim_unit_tests_CPPFLAGS += $(IBMAD_CFLAGS)
tests_unit_slim_unit_tests_LDADD += $(IBMAD_LIBS)

# The node service's decisions (issue 13): pure, driven on a manual clock in tests.
src_libslimcore_la_SOURCES += src/link/port_service.h src/link/port_service.cpp src/link/service_protocol.h
tests_unit_slim_unit_tests_SOURCES += tests/unit/test_port_service.cpp
tests_unit_slim_unit_tests_SOURCES += tests/unit/test_port_service_reports.cpp

# slimlinkd (issue 13): the rank's client and ServiceBackend, and the
# service's socket loop around the PortService.
src_libslimcore_la_SOURCES += \
	src/link/service_io.h src/link/service_io.cpp \
	src/link/service_client.h src/link/service_client.cpp \
	src/link/service_server.h src/link/service_server.cpp
tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_service_client.cpp

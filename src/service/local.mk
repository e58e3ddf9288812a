# SPDX-License-Identifier: BSD-3-Clause
# src/service — what only the node service slimlinkd runs: the port service
# (merge of the ranks' demand, job reports, the port's state file), its
# socket server, and the backends that drive a real port. A convenience
# library of its own, linked into slimlinkd and the unit tests only: the
# library ranks preload (libslimlink.so) carries none of it, nor libibmad.
noinst_LTLIBRARIES += src/libslimservice.la
src_libslimservice_la_SOURCES = \
	src/service/backend_registry.h src/service/backend_registry.cpp \
	src/service/backend_exec.cpp \
	src/service/backend_ibmad.h src/service/backend_ibmad.cpp \
	src/service/backend_ethtool.h src/service/backend_ethtool.cpp \
	src/service/eee_netlink.cpp \
	src/service/port_service.h src/service/port_service.cpp \
	src/service/port_service_state.h \
	src/service/demand_merge.cpp \
	src/service/port_driver.cpp \
	src/service/job_reports.cpp \
	src/service/state_file.h src/service/state_file.cpp \
	src/service/service_server.h src/service/service_server.cpp \
	src/service/socket_folder.h src/service/socket_folder.cpp \
	src/service/log_throttle.h src/service/log_throttle.cpp \
	src/service/site_command.h src/service/site_command.cpp \
	src/service/cpu_backend.h src/service/cpu_backend.cpp \
	src/service/cpu_backend_emulated.cpp \
	src/service/cpu_backend_cpufreq.cpp \
	src/service/cpu_backend_exec.cpp \
	src/service/cpu_controller.h src/service/cpu_controller.cpp
src_libslimservice_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src $(SPDLOG_CFLAGS) $(IBMAD_CFLAGS) \
	$(LIBMNL_CFLAGS)
# libibmad/libibumad (HAVE_IBMAD) and libmnl (HAVE_LIBMNL) are optional;
# empty when not found.
src_libslimservice_la_LIBADD = $(IBMAD_LIBS) $(LIBMNL_LIBS)

tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_port_service.cpp \
	tests/unit/test_port_service_reports.cpp \
	tests/unit/test_backend_ethtool.cpp \
	tests/unit/test_cpu_controller.cpp \
	tests/unit/test_cpu_service.cpp
tests_unit_slim_unit_tests_CPPFLAGS += $(IBMAD_CFLAGS) $(LIBMNL_CFLAGS)

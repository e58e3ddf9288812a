# SPDX-License-Identifier: BSD-3-Clause
# The `slim` UCT transport (C, UCX style). Installed as lib/ucx/libuct_slim.so
# next to where a UCX built with slim in its module list would look for it;
# with Debian's UCX it is loaded by slimlink-run through LD_PRELOAD and
# registers itself from an ELF constructor.
ucxmoddir = $(libdir)/ucx
ucxmod_LTLIBRARIES = ucx-module/libuct_slim.la

ucx_module_libuct_slim_la_SOURCES = \
	ucx-module/slim.h \
	ucx-module/slim_component.c \
	ucx-module/slim_md.c \
	ucx-module/slim_iface.c \
	ucx-module/slim_ep.c \
	ucx-module/slim_frame.c \
	ucx-module/slim_put.c \
	ucx-module/slim_progress.c \
	ucx-module/slim_wait.c

# UCX's internal headers come first so that their `#include "config.h"` finds
# the installed build's configuration (ucx-config/config.h), never ours.
ucx_module_libuct_slim_la_CPPFLAGS = \
	$(UCX_INTERNAL_CPPFLAGS) $(UCX_CFLAGS) \
	-I$(srcdir)/src/include -I$(srcdir)/src/runtime
# UCX's headers use GNU C and leave many parameters unused in inline stubs.
ucx_module_libuct_slim_la_CFLAGS = $(AM_CFLAGS) -std=gnu11 \
	-Wno-unused-parameter -Wno-missing-field-initializers
ucx_module_libuct_slim_la_LIBADD = src/libslimlink.la $(UCX_LIBS) -lpthread
ucx_module_libuct_slim_la_LDFLAGS = -module -avoid-version -shared \
	-Wl,--no-undefined

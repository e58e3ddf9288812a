# SPDX-License-Identifier: BSD-3-Clause
# src/plot — PNG figures without new dependencies: an RGB image, a PNG
# writer (stored deflate blocks), a canvas with a built-in bitmap font,
# minimal charts, and the figures of slim-replay --plot (README.md, "Event
# traces and slim-replay"). Included after src/tools/local.mk: it appends to
# slim-replay's LDADD.
noinst_LTLIBRARIES += src/plot/libslimplot.la
src_plot_libslimplot_la_SOURCES = \
	src/plot/image.h \
	src/plot/png_writer.h src/plot/png_writer.cpp \
	src/plot/font.h src/plot/font.cpp \
	src/plot/canvas.h src/plot/canvas.cpp \
	src/plot/chart.h src/plot/chart.cpp \
	src/plot/replay_figures.h src/plot/replay_figures.cpp
src_plot_libslimplot_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(srcdir)/src

src_tools_slim_replay_LDADD += src/plot/libslimplot.la

tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_plot.cpp
tests_unit_slim_unit_tests_LDADD += src/plot/libslimplot.la

# SPDX-License-Identifier: BSD-3-Clause
# src/base — small utilities every layer may use (included by the top
# Makefile.am): output files that refuse symbolic links and other users'
# files (issue 16).
src_libslimcore_la_SOURCES += \
	src/base/output_file.h src/base/output_file.cpp

tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_output_file.cpp

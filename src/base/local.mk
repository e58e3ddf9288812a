# SPDX-License-Identifier: BSD-3-Clause
# src/base — what every layer may use and that uses none of them, as UCX's
# ucs sits under uct and ucp (included by the top Makefile.am): the logger,
# value parsing with uniform messages, NoDestructor, output files that
# refuse symbolic links and other users' files, and the small helpers
# (hashing steps, power-of-two sizes). Nothing here includes
# src/{pack,predict,link,live,runtime}; tests/tools/layers.test checks it.
src_libslimcore_la_SOURCES += \
	src/base/error.h src/base/error.cpp \
	src/base/hash.h \
	src/base/log.h src/base/log.cpp \
	src/base/no_destructor.h \
	src/base/output_file.h src/base/output_file.cpp \
	src/base/parse.h src/base/parse.cpp \
	src/base/power_of_two.h

tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_base_helpers.cpp \
	tests/unit/test_error.cpp \
	tests/unit/test_output_file.cpp

# SPDX-License-Identifier: BSD-3-Clause
# src/pack and src/precision — lossy packing of marked float64 buffers.
src_libslimcore_la_SOURCES += \
	src/pack/codec.h src/pack/codec.cpp \
	src/pack/region_registry.h src/pack/region_registry.cpp \
	src/pack/region_node.h src/pack/region_node_pool.h \
	src/pack/region_writer_index.h src/pack/chunk_filter.h \
	src/pack/grace_period.h src/pack/label_table.h src/pack/label_table.cpp \
	src/precision/precision_rules.h src/precision/precision_rules.cpp

tests_unit_slim_unit_tests_SOURCES += \
	tests/unit/test_codec.cpp \
	tests/unit/test_region_registry.cpp \
	tests/unit/test_precision_rules.cpp

# The packing frame (wire format in frame.h).
src_libslimcore_la_SOURCES += src/pack/frame.h src/pack/frame.cpp src/pack/wire_bytes.h
tests_unit_slim_unit_tests_SOURCES += tests/unit/test_frame.cpp

# Packed puts and their expand notices (format in expand_notice.h).
src_libslimcore_la_SOURCES += src/pack/expand_notice.h src/pack/expand_notice.cpp
tests_unit_slim_unit_tests_SOURCES += tests/unit/test_expand_notice.cpp

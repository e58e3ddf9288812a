// SPDX-License-Identifier: BSD-3-Clause
#include "slim_core.h"
#include "slimlink.h"
#include "slimlink_config.h"
#include "traffic_monitor.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <set>
#include <string>

TEST_CASE("every operation kind has a distinct short name")
{
    std::set<std::string> names;
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        const char *name = slim_op_name(static_cast<slim_op_t>(op));
        REQUIRE(name != nullptr);
        names.insert(name);
    }
    CHECK(names.size() == SLIM_OP_COUNT);
    CHECK(std::string(slim_op_name(SLIM_OP_AM_SHORT)) == "am_short");
    CHECK(std::string(slim_op_name(SLIM_OP_ATOMIC)) == "atomic");
}

TEST_CASE("an out-of-range operation kind has no name")
{
    CHECK(slim_op_name(SLIM_OP_COUNT) == nullptr);
    CHECK(slim_op_name(static_cast<slim_op_t>(-1)) == nullptr);
}

TEST_CASE("every status has a text, unknown ones too")
{
    for (const slim_status_t s :
         {SLIM_OK, SLIM_ERR_INVALID, SLIM_ERR_CONFIG, SLIM_ERR_NO_MEMORY, SLIM_ERR_INTERNAL}) {
        CHECK(std::strlen(slim_status_string(s)) > 0);
    }
    CHECK(std::string(slim_status_string(static_cast<slim_status_t>(42))) == "unknown status");
}

TEST_CASE("the version matches the header and the package")
{
    CHECK(std::string(slim_version()) ==
          std::to_string(SLIMLINK_VERSION_MAJOR) + "." + std::to_string(SLIMLINK_VERSION_MINOR));
    CHECK(std::string(slim_version()) == PACKAGE_VERSION);
}

TEST_CASE("traffic_get rejects a NULL output")
{
    CHECK(slim_traffic_get(nullptr) == SLIM_ERR_INVALID);
}

TEST_CASE("recorded operations show up in the process traffic snapshot")
{
    slim_traffic_t before{};
    REQUIRE(slim_traffic_get(&before) == SLIM_OK);
    slim::process_traffic().record(SLIM_OP_GET, SLIM_DIR_RECV, 512);
    slim::process_traffic().record(SLIM_OP_COUNT, SLIM_DIR_RECV, 512);  // ignored
    slim_traffic_t after{};
    REQUIRE(slim_traffic_get(&after) == SLIM_OK);
    CHECK(after.op[SLIM_OP_GET][SLIM_DIR_RECV].count ==
          before.op[SLIM_OP_GET][SLIM_DIR_RECV].count + 1);
    CHECK(after.op[SLIM_OP_GET][SLIM_DIR_RECV].bytes ==
          before.op[SLIM_OP_GET][SLIM_DIR_RECV].bytes + 512);
}

// ------------------------------------------------------------ lossy packing marks
// Argument checks come before the Engine exists; the marking paths use this
// process's Engine (initialized by the first mark). Marking by label under a
// chosen UCX_SLIM_POLICY runs in child processes (test_engine.cpp).

namespace {
alignas(8) double c_api_buffer[512];
}  // namespace

TEST_CASE("marking calls reject NULL pointers, empty ranges and wrapping ranges")
{
    CHECK(slim_mark(nullptr, 64, "halo") == SLIM_ERR_INVALID);
    CHECK(slim_mark(c_api_buffer, 0, "halo") == SLIM_ERR_INVALID);
    CHECK(slim_mark(c_api_buffer, 64, nullptr) == SLIM_ERR_INVALID);
    CHECK(slim_mark(c_api_buffer, SIZE_MAX, "halo") == SLIM_ERR_INVALID);
    CHECK(slim_mark_precision(nullptr, 64, 4, SLIM_ROUND_TRUNCATE) == SLIM_ERR_INVALID);
    CHECK(slim_mark_precision(c_api_buffer, 0, 4, SLIM_ROUND_TRUNCATE) == SLIM_ERR_INVALID);
    CHECK(slim_mark_precision(c_api_buffer, SIZE_MAX, 4, SLIM_ROUND_NEAREST) == SLIM_ERR_INVALID);
    CHECK(slim_unmark(nullptr) == SLIM_ERR_INVALID);
}

TEST_CASE("slim_mark rejects labels the policy grammar cannot name")
{
    for (const char *label : {"", "*", "ha lo", "halo;fft=keep:2", "a=b"}) {
        CAPTURE(label);
        CHECK(slim_mark(c_api_buffer, 64, label) == SLIM_ERR_INVALID);
    }
}

TEST_CASE("slim_mark_precision accepts keep 2..7 in both modes and nothing else")
{
    for (const int bad : {-1, 0, 1, 8, 9}) {
        CAPTURE(bad);
        CHECK(slim_mark_precision(c_api_buffer, 64, bad, SLIM_ROUND_TRUNCATE) == SLIM_ERR_INVALID);
    }
    CHECK(slim_mark_precision(c_api_buffer, 64, 4, static_cast<slim_round_t>(2)) ==
          SLIM_ERR_INVALID);
    CHECK(slim_mark_precision(c_api_buffer, 64, 4, static_cast<slim_round_t>(-1)) ==
          SLIM_ERR_INVALID);
    for (int keep = 2; keep <= 7; ++keep) {
        for (const slim_round_t mode : {SLIM_ROUND_TRUNCATE, SLIM_ROUND_NEAREST}) {
            CAPTURE(keep, mode);
            REQUIRE(slim_mark_precision(c_api_buffer, 64, keep, mode) == SLIM_OK);
            CHECK(slim_unmark(c_api_buffer) == SLIM_OK);
        }
    }
}

TEST_CASE("slim_unmark removes a mark once and rejects pointers where none starts")
{
    REQUIRE(slim_mark_precision(c_api_buffer + 8, 64 * sizeof(double), 3, SLIM_ROUND_NEAREST) ==
            SLIM_OK);
    CHECK(slim_unmark(c_api_buffer + 9) == SLIM_ERR_INVALID);  // inside, not the start
    CHECK(slim_unmark(c_api_buffer) == SLIM_ERR_INVALID);      // never marked
    CHECK(slim_unmark(c_api_buffer + 8) == SLIM_OK);
    CHECK(slim_unmark(c_api_buffer + 8) == SLIM_ERR_INVALID);  // already removed
}

TEST_CASE("a mark over part of another leaves a remainder that can be unmarked")
{
    REQUIRE(slim_mark_precision(c_api_buffer, 256 * sizeof(double), 4, SLIM_ROUND_TRUNCATE) ==
            SLIM_OK);
    REQUIRE(slim_mark_precision(c_api_buffer + 64, 64 * sizeof(double), 6, SLIM_ROUND_NEAREST) ==
            SLIM_OK);
    CHECK(slim_unmark(c_api_buffer) == SLIM_OK);        // the left part
    CHECK(slim_unmark(c_api_buffer + 64) == SLIM_OK);   // the new mark
    CHECK(slim_unmark(c_api_buffer + 128) == SLIM_OK);  // the right remainder
    CHECK(slim_unmark(c_api_buffer) == SLIM_ERR_INVALID);
}

TEST_CASE("regions: balanced, nested and unbalanced use returns codes, never aborts")
{
    CHECK(slim_region_end() == SLIM_ERR_INVALID);  // unbalanced
    CHECK(slim_region_begin(nullptr) == SLIM_ERR_INVALID);
    CHECK(slim_region_begin("bad label") == SLIM_ERR_INVALID);
    CHECK(slim_region_begin("halo") == SLIM_OK);
    CHECK(slim_region_begin("inner") == SLIM_OK);  // nested
    CHECK(slim_region_end() == SLIM_OK);
    CHECK(slim_region_end() == SLIM_OK);
    CHECK(slim_region_end() == SLIM_ERR_INVALID);  // one too many
}

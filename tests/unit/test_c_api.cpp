#include "slim_core.h"
#include "slimlink.h"
#include "slimlink_config.h"

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
    for (const slim_status_t s : {SLIM_OK, SLIM_ERR_INVALID, SLIM_ERR_CONFIG, SLIM_ERR_NO_MEMORY,
                                  SLIM_ERR_INTERNAL}) {
        CHECK(std::strlen(slim_status_string(s)) > 0);
    }
    CHECK(std::string(slim_status_string(static_cast<slim_status_t>(42))) == "unknown status");
}

TEST_CASE("the version matches the header and the package")
{
    CHECK(std::string(slim_version()) == std::to_string(SLIMLINK_VERSION_MAJOR) + "." +
                                                 std::to_string(SLIMLINK_VERSION_MINOR));
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
    slim_core_record(SLIM_OP_GET, SLIM_DIR_RECV, 512);
    slim_core_record(SLIM_OP_COUNT, SLIM_DIR_RECV, 512); // ignored
    slim_traffic_t after{};
    REQUIRE(slim_traffic_get(&after) == SLIM_OK);
    CHECK(after.op[SLIM_OP_GET][SLIM_DIR_RECV].count ==
          before.op[SLIM_OP_GET][SLIM_DIR_RECV].count + 1);
    CHECK(after.op[SLIM_OP_GET][SLIM_DIR_RECV].bytes ==
          before.op[SLIM_OP_GET][SLIM_DIR_RECV].bytes + 512);
}

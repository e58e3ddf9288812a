// SPDX-License-Identifier: BSD-3-Clause
// slimlink's one exception type and the count of errors it swallowed.
#include "base/error.h"
#include "base/parse.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <type_traits>

TEST_CASE("configuration errors are slim errors, and slim errors runtime errors")
{
    STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, slim::Error>);
    STATIC_REQUIRE(std::is_base_of_v<slim::Error, slim::ConfigError>);
    try {
        throw slim::ConfigError("UCX_SLIM_X='y': accepted values are z");
    } catch (const slim::Error& e) {
        CHECK(std::string(e.what()) == "UCX_SLIM_X='y': accepted values are z");
    }
}

TEST_CASE("every swallowed error is counted")
{
    const std::uint64_t before = slim::swallowed_errors();
    slim::note_swallowed("a test", std::runtime_error("known"));
    slim::note_swallowed("a test", "detail", slim::Error("with a detail"));
    slim::note_swallowed("a test");
    slim::count_swallowed();
    CHECK(slim::swallowed_errors() == before + 4);
}

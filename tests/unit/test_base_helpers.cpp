// SPDX-License-Identifier: BSD-3-Clause
// The small helpers of src/base: power-of-two sizes, hash mixing steps
// (pinned bit for bit: table layouts depend on them), trimming.
#include "base/hash.h"
#include "base/parse.h"
#include "base/power_of_two.h"

#include <catch2/catch.hpp>

#include <cstdint>

TEST_CASE("power_of_two_at_least rounds up to the next power of two")
{
    CHECK(slim::power_of_two_at_least(0) == 1);
    CHECK(slim::power_of_two_at_least(1) == 1);
    CHECK(slim::power_of_two_at_least(2) == 2);
    CHECK(slim::power_of_two_at_least(3) == 4);
    CHECK(slim::power_of_two_at_least(4096) == 4096);
    CHECK(slim::power_of_two_at_least(4097) == 8192);
    CHECK(slim::power_of_two_at_least(std::size_t{1} << 63) == std::size_t{1} << 63);
}

TEST_CASE("hash_combine and splitmix64_mix give the values tables were laid out with")
{
    CHECK(slim::hash_combine(0, 0) == 0x9e3779b97f4a7c15ull);
    CHECK(slim::hash_combine(0x243f6a8885a308d3ull, 42) == 0x931e9cf58cd67be0ull);
    CHECK(slim::hash_combine(~0ull, ~0ull) == 0x21c8864680b5842cull);
    CHECK(slim::splitmix64_mix(0) == 0);
    CHECK(slim::splitmix64_mix(1) == 0x5692161d100b05e5ull);
    CHECK(slim::splitmix64_mix(0x123456789abcdef0ull) == 0x9629f58e8ec5b906ull);
}

TEST_CASE("trim drops leading and trailing blanks only")
{
    using slim::parse::trim;
    CHECK(trim("") == "");
    CHECK(trim(" \t\r\n") == "");
    CHECK(trim("  a b \t\n") == "a b");
    CHECK(trim("x") == "x");
    SECTION("with its own set of blanks")
    {
        CHECK(trim(" L=12\n ", " \t") == "L=12\n");
        CHECK(trim("\t \t", " \t") == "");
    }
}

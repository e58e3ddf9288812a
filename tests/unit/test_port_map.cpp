// SPDX-License-Identifier: BSD-3-Clause
// PortMap (thesis §4.5.4): which port a UCX device drives.
#include "link/port_map.h"

#include <catch2/catch.hpp>

using slim::link::PortMap;
using slim::link::PortMapError;

TEST_CASE("port map: a tcp netdev has no IB port, an unknown device is an error", "[port_map]")
{
    const PortMap map;
    SECTION("lo")
    {
        const auto info = map.resolve("lo");
        CHECK_FALSE(info.is_ib);
        CHECK(info.port == 0);
        CHECK_THAT(info.no_ib_reason, Catch::Matchers::StartsWith("no IB port"));
        CHECK(info.local_cores >= 1);
        CHECK(info.local_pus >= info.local_cores);
    }
    SECTION("unknown device")
    {
        CHECK_THROWS_AS(map.resolve("nosuchdev0"), PortMapError);
        CHECK_THROWS_WITH(map.resolve("nosuchdev0"), Catch::Matchers::Contains("unknown device 'nosuchdev0'"));
        CHECK_THROWS_AS(map.resolve("nosuchhca_9:1"), PortMapError);
        CHECK_THROWS_WITH(map.resolve("nosuchhca_9:1"), Catch::Matchers::Contains("unknown device 'nosuchhca_9:1'"));
    }
}

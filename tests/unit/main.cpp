// SPDX-License-Identifier: BSD-3-Clause
// Catch2 v2 main for slim-unit-tests.
//
// Engine tests need a fresh process each (the Engine is built once per
// process, and exits run the report hook), so the binary re-executes itself
// with SLIM_UNIT_CHILD=<scenario>; see test_engine.cpp.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <ucs/type/status.h>

#include <cstdlib>

int slim_unit_child_main(const char *scenario);

int main(int argc, char *argv[])
{
    // In a rank UCX has loaded libucs before slimlink parses UCX_SLIM_* with
    // it (src/runtime/slim_config.h); here a call keeps the linker from
    // dropping it as unneeded.
    if (ucs_status_string(UCS_OK) == nullptr) {
        return 1;
    }
    if (const char *scenario = std::getenv("SLIM_UNIT_CHILD")) {
        return slim_unit_child_main(scenario);
    }
    return Catch::Session().run(argc, argv);
}

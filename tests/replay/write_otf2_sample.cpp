// SPDX-License-Identifier: BSD-3-Clause
// write-otf2-sample DIR: writes tests/replay/otf2_sample.h's archive into DIR
// (DIR/traces.otf2 is the anchor file) for tests/replay/slim-replay.test.
#include "otf2_sample.h"

#include <cstdio>
#include <exception>

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: write-otf2-sample DIR\n");
        return 2;
    }
    try {
        slim::test::write_otf2_sample(argv[1]);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "write-otf2-sample: %s\n", e.what());
        return 1;
    }
    return 0;
}

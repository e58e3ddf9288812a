// SPDX-License-Identifier: BSD-3-Clause
// write-otf2-sample DIR [--hostile-names]: writes tests/replay/otf2_sample.h's
// archive into DIR (DIR/traces.otf2 is the anchor file) for
// tests/replay/slim-replay.test and slim-plot.test; --hostile-names writes
// its variant with terminal escape sequences in names.
#include "otf2_sample.h"

#include <cstdio>
#include <cstring>
#include <exception>

int main(int argc, char **argv)
{
    const bool hostile = argc == 3 && std::strcmp(argv[2], "--hostile-names") == 0;
    if (argc != 2 && !hostile) {
        std::fprintf(stderr, "usage: write-otf2-sample DIR [--hostile-names]\n");
        return 2;
    }
    try {
        slim::test::write_otf2_sample(argv[1], hostile);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "write-otf2-sample: %s\n", e.what());
        return 1;
    }
    return 0;
}

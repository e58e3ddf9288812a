/* SPDX-License-Identifier: BSD-3-Clause */
// The files of tests/data/ and the golden-file convention the unit tests
// share: a test compares what it made with a file there, or, under
// SLIM_WRITE_GOLDEN=1 (after a deliberate change), writes it there instead.
#ifndef SLIM_TESTS_GOLDEN_FILE_H
#define SLIM_TESTS_GOLDEN_FILE_H

#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

namespace slim_test {

// tests/data/`name` in the source tree (abs_top_srcdir, as make check sets
// it, else the tree configure ran in).
inline std::string data_path(const std::string& name)
{
    const char *srcdir = std::getenv("abs_top_srcdir");
    return std::string(srcdir != nullptr ? srcdir : SLIM_TEST_SRCDIR) + "/tests/data/" + name;
}

// The golden file at `path` to compare `fresh` with; or, under
// SLIM_WRITE_GOLDEN=1, `fresh` written there and nothing to compare.
inline std::optional<std::string> golden_or_write(const std::string& path, const std::string& fresh)
{
    if (const char *write = std::getenv("SLIM_WRITE_GOLDEN"); write && std::string(write) == "1") {
        std::ofstream(path) << fresh;
        WARN("wrote " << path);
        return std::nullopt;
    }
    std::ifstream in(path);
    INFO("golden file " << path);
    REQUIRE(in.good());
    std::stringstream golden;
    golden << in.rdbuf();
    return golden.str();
}

}  // namespace slim_test

#endif

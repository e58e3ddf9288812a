// SPDX-License-Identifier: BSD-3-Clause
// run_isolated (src/tools/isolated_call.h): work in a child process, its
// answer back, and every way the child can fail to answer said as such.
#include "tools/isolated_call.h"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <sys/resource.h>
#include <unistd.h>

using Catch::Matchers::Equals;
using slim::tools::IsolatedCallFailed;
using slim::tools::run_isolated;

namespace {

std::string failure_of(const std::function<std::string()>& work)
{
    try {
        run_isolated(work);
    } catch (const IsolatedCallFailed& e) {
        return e.what();
    }
    return "(answered)";
}

}  // namespace

TEST_CASE("run_isolated returns what the child's work returned", "[isolated]")
{
    const pid_t parent = ::getpid();
    SECTION("a short answer, computed in another process")
    {
        CHECK(run_isolated([parent] {
                  return std::string(::getpid() != parent ? "child" : "same");
              }) == "child");
    }
    SECTION("an empty answer")
    {
        CHECK(run_isolated([] { return std::string(); }).empty());
    }
    SECTION("an answer larger than a pipe holds, byte for byte")
    {
        std::string big(5 << 20, '\0');
        for (std::size_t i = 0; i < big.size(); ++i)
            big[i] = static_cast<char>(i * 131 % 251);
        CHECK(run_isolated([&big] { return big; }) == big);
    }
    SECTION("a limit the work sets stays in the child")
    {
        rlimit before{};
        REQUIRE(::getrlimit(RLIMIT_NOFILE, &before) == 0);
        run_isolated([] {
            const rlimit low{16, 16};
            ::setrlimit(RLIMIT_NOFILE, &low);
            return std::string();
        });
        rlimit after{};
        REQUIRE(::getrlimit(RLIMIT_NOFILE, &after) == 0);
        CHECK(after.rlim_cur == before.rlim_cur);
    }
}

TEST_CASE("run_isolated says why a child did not answer", "[isolated]")
{
    SECTION("killed by a signal, as a crashing library would be")
    {
        CHECK_THAT(failure_of([] {
                       std::raise(SIGSEGV);
                       return std::string("unreachable");
                   }),
                   Equals("killed by signal 11 (Segmentation fault)"));
    }
    SECTION("an exit of its own with a status")
    {
        CHECK_THAT(failure_of([] {
                       std::_Exit(3);
                       return std::string("unreachable");
                   }),
                   Equals("exited with status 3"));
    }
    SECTION("an exception escaping the work ends the child, not the caller's code")
    {
        CHECK_THAT(failure_of([]() -> std::string { throw std::runtime_error("lost"); }),
                   Equals("killed by signal 6 (Aborted)"));
    }
}

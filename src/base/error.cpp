// SPDX-License-Identifier: BSD-3-Clause
#include "base/error.h"

#include "base/log.h"

#include <atomic>

namespace slim {

namespace {

std::atomic<std::uint64_t> g_swallowed{0};

// The count after this one, and whether this one is logged: the first ten,
// then one in a thousand, so that a repeating failure cannot flood the log.
bool count_and_sample(std::uint64_t& n) noexcept
{
    n = g_swallowed.fetch_add(1, std::memory_order_relaxed) + 1;
    return n <= 10 || n % 1000 == 0;
}

}  // namespace

void note_swallowed(const char *where, const std::exception& error) noexcept
{
    std::uint64_t n = 0;
    if (count_and_sample(n)) {
        logger().error("{}: {} (swallowed error {}, counted in the report)", where, error.what(),
                       n);
    }
}

void note_swallowed(const char *where, const std::string& detail,
                    const std::exception& error) noexcept
{
    std::uint64_t n = 0;
    if (count_and_sample(n)) {
        logger().error("{} ({}): {} (swallowed error {}, counted in the report)", where, detail,
                       error.what(), n);
    }
}

void note_swallowed(const char *where) noexcept
{
    std::uint64_t n = 0;
    if (count_and_sample(n)) {
        logger().error(
                "{}: an exception of unknown type (swallowed error {}, counted in the report)",
                where, n);
    }
}

void count_swallowed() noexcept { g_swallowed.fetch_add(1, std::memory_order_relaxed); }

std::uint64_t swallowed_errors() noexcept { return g_swallowed.load(std::memory_order_relaxed); }

}  // namespace slim

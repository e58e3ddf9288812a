/* SPDX-License-Identifier: BSD-3-Clause */
// Sizes of tables and rings indexed with a mask.
#ifndef SLIM_BASE_POWER_OF_TWO_H
#define SLIM_BASE_POWER_OF_TWO_H

#include <cstddef>

namespace slim {

// The smallest power of two >= n (1 for 0). For setup, not per event: n must
// not exceed the largest power of two a size_t holds.
constexpr std::size_t power_of_two_at_least(std::size_t n) noexcept
{
    std::size_t p = 1;
    while (p < n) {
        p <<= 1;
    }
    return p;
}

}  // namespace slim

#endif

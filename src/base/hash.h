/* SPDX-License-Identifier: BSD-3-Clause */
// 64-bit hash mixing steps. Their results decide where entries land in the
// predictors' tables, and so what is predicted: they must stay bit for bit
// as they are (tests/unit/test_base_helpers.cpp pins them).
#ifndef SLIM_BASE_HASH_H
#define SLIM_BASE_HASH_H

#include <cstdint>

namespace slim {

// Folds `value` into `hash`: boost::hash_combine's step with the 64-bit
// golden-ratio constant. Order-sensitive, cheap, and weak in the low bits:
// finish with a multiply or splitmix64_mix before masking.
constexpr std::uint64_t hash_combine(std::uint64_t hash, std::uint64_t value) noexcept
{
    return hash ^ (value + 0x9e37'79b9'7f4a'7c15ull + (hash << 6) + (hash >> 2));
}

// The splitmix64 finalizer: every input bit reaches every output bit, so
// the low bits of the result can index a table.
constexpr std::uint64_t splitmix64_mix(std::uint64_t x) noexcept
{
    x ^= x >> 30;
    x *= 0xbf58'476d'1ce4'e5b9ull;
    x ^= x >> 27;
    x *= 0x94d0'49bb'1331'11ebull;
    return x ^ (x >> 31);
}

}  // namespace slim

#endif

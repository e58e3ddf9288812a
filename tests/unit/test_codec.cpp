// SPDX-License-Identifier: BSD-3-Clause
// The lossy float64 codec (src/pack/codec.h; thesis §4.3.1, §4.5). Expected
// bits come from an independent reference written here with plain integer
// arithmetic on the kept part (compare-based rounding), never from the codec.
#include "base/error.h"
#include "pack/codec.h"

#include <catch2/catch.hpp>

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using slim::pack::Precision;
using slim::pack::Rounding;

namespace {

constexpr std::uint64_t kExponent = 0x7FF0000000000000ULL;
constexpr std::uint64_t kMantissa = 0x000FFFFFFFFFFFFFULL;

std::uint64_t bits(double d)
{
    std::uint64_t u;
    std::memcpy(&u, &d, 8);
    return u;
}

double from_bits(std::uint64_t u)
{
    double d;
    std::memcpy(&d, &u, 8);
    return d;
}

bool is_nan_bits(std::uint64_t u) { return (u & ~(1ULL << 63)) > kExponent; }
bool is_inf_bits(std::uint64_t u) { return (u & ~(1ULL << 63)) == kExponent; }

// Independent reference: the decoded 64-bit pattern for `u` at keep/mode.
std::uint64_t expected_bits(std::uint64_t u, int keep, Rounding mode)
{
    const int drop           = 64 - 8 * keep;
    std::uint64_t kept       = u >> drop;  // keep*8 bits
    const std::uint64_t rest = u & ((1ULL << drop) - 1);
    const std::uint64_t half = 1ULL << (drop - 1);
    if (is_nan_bits(u)) {
        if ((kept & (kMantissa >> drop)) == 0) kept |= 1ULL << (51 - drop);  // quiet bit
        return kept << drop;
    }
    if (mode == Rounding::nearest_even && !is_inf_bits(u)) {
        if (rest > half || (rest == half && (kept & 1))) kept += 1;
        const std::uint64_t exponent_field = (kept << drop) & kExponent;
        if (exponent_field == kExponent)  // carried into Inf: saturate
            kept = ((u & (1ULL << 63)) | 0x7FEFFFFFFFFFFFFFULL) >> drop;
    }
    return kept << drop;
}

std::uint64_t codec_bits(std::uint64_t u, int keep, Rounding mode)
{
    return bits(slim::pack::round_trip(from_bits(u), Precision{keep, mode}));
}

std::string describe(std::uint64_t u, int keep, Rounding mode)
{
    char buf[96];
    std::snprintf(buf, sizeof buf, "input 0x%016llx keep %d %s", static_cast<unsigned long long>(u),
                  keep, mode == Rounding::truncate ? "truncate" : "nearest_even");
    return buf;
}

const Rounding kModes[] = {Rounding::truncate, Rounding::nearest_even};

// Random patterns biased towards the interesting classes.
std::uint64_t random_pattern(std::mt19937_64& rng)
{
    const std::uint64_t r    = rng();
    const std::uint64_t sign = rng() & (1ULL << 63);
    switch (rng() % 10) {
    case 0: return sign | kExponent | (r & 0xFFFFFF);               // NaN/Inf, low payload
    case 1: return sign | kExponent | (r & kMantissa);              // NaN
    case 2: return sign | (r & kMantissa);                          // denormal or 0
    case 3: return sign | 0x7FE0000000000000ULL | (r & kMantissa);  // near DBL_MAX
    case 4: return sign | (r & 0x7FFFFFFFFF000000ULL) | 0x800000;   // ties at keep 5
    case 5: return (r & ~0xFFFFFFFFULL) | 0x80000000ULL;            // ties at keep 4
    case 6: return r | 0xFFFFFFFFFFULL;                             // carries
    default: return r;
    }
}

}  // namespace

TEST_CASE("packed size is keep bytes per value", "[codec]")
{
    CHECK(slim::pack::packed_size(0, 4) == 0);
    CHECK(slim::pack::packed_size(1, 2) == 2);
    CHECK(slim::pack::packed_size(1000, 3) == 3000);
    CHECK(slim::pack::packed_size(7, 7) == 49);
}

TEST_CASE("the packed layout is the high bytes of each value, little-endian, back to back",
          "[codec]")
{
    const double values[2] = {from_bits(0x0102030405060708ULL), from_bits(0x1112131415161718ULL)};
    std::uint8_t out[6]    = {};
    slim::pack::encode_scalar(values, 2, Precision{3, Rounding::truncate}, out);
    const std::uint8_t want[6] = {0x03, 0x02, 0x01, 0x13, 0x12, 0x11};
    CHECK(std::memcmp(out, want, 6) == 0);
    double back[2];
    slim::pack::decode_scalar(out, 2, 3, back);
    CHECK(bits(back[0]) == 0x0102030000000000ULL);
    CHECK(bits(back[1]) == 0x1112130000000000ULL);
}

TEST_CASE("hand-picked values give the expected bits at every keep and mode", "[codec]")
{
    for (int keep = slim::pack::kMinKeep; keep <= slim::pack::kMaxKeep; ++keep) {
        const int drop          = 64 - 8 * keep;
        const std::uint64_t low = (1ULL << drop) - 1;
        for (const Rounding mode : kModes) {
            const bool round = mode == Rounding::nearest_even;
            INFO("keep " << keep << (round ? " nearest_even" : " truncate"));

            SECTION("1.0 is exact") { CHECK(codec_bits(bits(1.0), keep, mode) == bits(1.0)); }
            SECTION("1/3 (0x3FD5555555555555) drops 0x55.. and rounds down")
            {
                CHECK(codec_bits(0x3FD5555555555555ULL, keep, mode) ==
                      (0x3FD5555555555555ULL & ~low));
            }
            SECTION("-0.0 stays -0.0")
            {
                CHECK(codec_bits(0x8000000000000000ULL, keep, mode) == 0x8000000000000000ULL);
            }
            SECTION("the smallest denormal becomes +0")
            {
                CHECK(codec_bits(0x1ULL, keep, mode) == 0);
                CHECK(codec_bits(0x8000000000000001ULL, keep, mode) == 0x8000000000000000ULL);
            }
            SECTION("a denormal with high bits keeps them")
            {
                CHECK(codec_bits(0x000F000000000001ULL, keep, mode) == 0x000F000000000000ULL);
            }
            SECTION("the largest denormal rounds up to the smallest normal")
            {
                CHECK(codec_bits(0x000FFFFFFFFFFFFFULL, keep, mode) ==
                      (round ? 0x0010000000000000ULL : 0x000FFFFFFFFFFFFFULL & ~low));
            }
            SECTION("just below 1.0 (0x3FEFFFFFFFFFFFFF) carries into the exponent under rounding")
            {
                CHECK(codec_bits(0x3FEFFFFFFFFFFFFFULL, keep, mode) ==
                      (round ? 0x3FF0000000000000ULL : 0x3FEFFFFFFFFFFFFFULL & ~low));
            }
            SECTION("DBL_MAX saturates at the largest finite value at this precision")
            {
                CHECK(codec_bits(bits(DBL_MAX), keep, mode) == (0x7FEFFFFFFFFFFFFFULL & ~low));
                CHECK(codec_bits(bits(-DBL_MAX), keep, mode) == (0xFFEFFFFFFFFFFFFFULL & ~low));
                CHECK(std::isfinite(slim::pack::round_trip(DBL_MAX, Precision{keep, mode})));
            }
            SECTION("ties go to the even kept LSB")
            {
                const std::uint64_t half = 1ULL << (drop - 1);
                const std::uint64_t even = 0x3FF0000000000000ULL;  // kept LSB 0
                const std::uint64_t odd  = even | (1ULL << drop);  // kept LSB 1
                CHECK(codec_bits(even | half, keep, mode) == even);
                CHECK(codec_bits(odd | half, keep, mode) == (round ? even + (2ULL << drop) : odd));
                CHECK(codec_bits(even | (half + 1), keep, mode) == (round ? odd : even));
            }
            SECTION("a NaN whose payload is only in the dropped bytes stays NaN (quiet bit set)")
            {
                const std::uint64_t u = 0x7FF0000000000001ULL;
                CHECK(codec_bits(u, keep, mode) == 0x7FF8000000000000ULL);
                CHECK(codec_bits(u | (1ULL << 63), keep, mode) == 0xFFF8000000000000ULL);
                CHECK(std::isnan(slim::pack::round_trip(from_bits(u), Precision{keep, mode})));
            }
            SECTION("quiet and signalling NaNs keep their kept bits and are never rounded")
            {
                CHECK(codec_bits(0x7FF8000000000000ULL, keep, mode) == 0x7FF8000000000000ULL);
                CHECK(codec_bits(0x7FF4000000000000ULL, keep, mode) == 0x7FF4000000000000ULL);
                // Rounding this one up would carry through the sign bit.
                CHECK(codec_bits(0x7FFFFFFFFFFFFFFFULL, keep, mode) ==
                      (0x7FFFFFFFFFFFFFFFULL & ~low));
                CHECK(codec_bits(0xFFF7FFFFFFFFFFFFULL, keep, mode) ==
                      (0xFFF7FFFFFFFFFFFFULL & ~low));
            }
            SECTION("+-Inf stay +-Inf")
            {
                CHECK(codec_bits(0x7FF0000000000000ULL, keep, mode) == 0x7FF0000000000000ULL);
                CHECK(codec_bits(0xFFF0000000000000ULL, keep, mode) == 0xFFF0000000000000ULL);
            }
        }
    }
}

TEST_CASE("the codec agrees with the integer reference on random bit patterns", "[codec]")
{
    std::mt19937_64 rng(12345);
    for (int i = 0; i < 200000; ++i) {
        const std::uint64_t u = random_pattern(rng);
        for (int keep = slim::pack::kMinKeep; keep <= slim::pack::kMaxKeep; ++keep)
            for (const Rounding mode : kModes) {
                const std::uint64_t got  = codec_bits(u, keep, mode);
                const std::uint64_t want = expected_bits(u, keep, mode);
                if (got != want)
                    FAIL(describe(u, keep, mode)
                         << ": got 0x" << std::hex << got << ", want 0x" << want);
                if (is_nan_bits(u) != is_nan_bits(got) || is_inf_bits(u) != is_inf_bits(got) ||
                    (u >> 63) != (got >> 63))
                    FAIL(describe(u, keep, mode) << ": class or sign changed");
            }
    }
    SUCCEED("200000 patterns x 6 keeps x 2 modes");
}

TEST_CASE("the SIMD path is bit-identical to the scalar path, tails included", "[codec]")
{
    if (!slim::pack::simd_available()) {
        WARN("no AVX2 on this CPU: the SIMD path is the scalar path");
        return;
    }
    std::mt19937_64 rng(777);
    // One odd-sized buffer plus every small length (tails of every size), at
    // an offset of one double so loads are misaligned.
    std::vector<std::size_t> lengths = {100003};
    for (std::size_t n = 0; n <= 40; ++n)
        lengths.push_back(n);
    constexpr std::size_t kGuard = 64;
    for (const std::size_t n : lengths) {
        std::vector<double> src(n + 1);
        for (std::size_t i = 0; i < n + 1; ++i)
            src[i] = from_bits(random_pattern(rng));
        for (int keep = slim::pack::kMinKeep; keep <= slim::pack::kMaxKeep; ++keep)
            for (const Rounding mode : kModes) {
                INFO(n << " values, keep " << keep
                       << (mode == Rounding::truncate ? " truncate" : " nearest_even"));
                const std::size_t size = slim::pack::packed_size(n, keep);
                std::vector<std::uint8_t> scalar(size + kGuard, 0xA5),
                        simd(size + kGuard + 1, 0xA5);
                slim::pack::encode_scalar(src.data() + 1, n, Precision{keep, mode}, scalar.data());
                slim::pack::encode_simd(src.data() + 1, n, Precision{keep, mode}, simd.data() + 1);
                REQUIRE(std::memcmp(scalar.data(), simd.data() + 1, size) == 0);
                for (std::size_t g = 0; g < kGuard; ++g)
                    REQUIRE(simd[1 + size + g] == 0xA5);  // nothing written past the end

                std::vector<double> back_scalar(n + kGuard / 8), back_simd(n + kGuard / 8, 42.0);
                slim::pack::decode_scalar(scalar.data(), n, keep, back_scalar.data());
                slim::pack::decode_simd(simd.data() + 1, n, keep, back_simd.data());
                REQUIRE(std::memcmp(back_scalar.data(), back_simd.data(), n * 8) == 0);
                for (std::size_t g = n; g < back_simd.size(); ++g)
                    REQUIRE(bits(back_simd[g]) == bits(42.0));
            }
    }
}

TEST_CASE("decode of encode is round_trip, value by value", "[codec]")
{
    std::mt19937_64 rng(99);
    constexpr std::size_t n = 10007;
    std::vector<double> src(n), back(n);
    for (auto& d : src)
        d = from_bits(random_pattern(rng));
    for (int keep = slim::pack::kMinKeep; keep <= 8; ++keep)
        for (const Rounding mode : kModes) {
            INFO("keep " << keep);
            std::vector<std::uint8_t> packed(slim::pack::packed_size(n, keep));
            slim::pack::encode(src.data(), n, Precision{keep, mode}, packed.data());
            slim::pack::decode(packed.data(), n, keep, back.data());
            for (std::size_t i = 0; i < n; ++i)
                if (bits(back[i]) != bits(slim::pack::round_trip(src[i], Precision{keep, mode})))
                    FAIL(describe(bits(src[i]), keep, mode) << " (encode/decode)");
            slim::pack::encode_scalar(src.data(), n, Precision{keep, mode}, packed.data());
            slim::pack::decode_scalar(packed.data(), n, keep, back.data());
            for (std::size_t i = 0; i < n; ++i)
                if (bits(back[i]) != bits(slim::pack::round_trip(src[i], Precision{keep, mode})))
                    FAIL(describe(bits(src[i]), keep, mode) << " (scalar encode/decode)");
        }
}

TEST_CASE("keep 8 copies and other keeps are rejected", "[codec]")
{
    const double x = 1.0 / 3.0;
    CHECK(bits(slim::pack::round_trip(x, Precision{8, Rounding::nearest_even})) == bits(x));
    std::uint8_t out[8];
    CHECK_THROWS_AS(slim::pack::encode(&x, 1, Precision{1, Rounding::truncate}, out), slim::Error);
    CHECK_THROWS_AS(slim::pack::encode(&x, 1, Precision{9, Rounding::truncate}, out), slim::Error);
}

TEST_CASE("relative error stays within the bound for finite normal values", "[codec]")
{
    std::mt19937_64 rng(2024);
    constexpr std::size_t n = 1000000;
    std::vector<double> src(n), back(n);
    for (int keep = slim::pack::kMinKeep; keep <= slim::pack::kMaxKeep; ++keep) {
        const int drop = 64 - 8 * keep;
        // Values above the largest one at this precision saturate to it: the
        // error is then a truncation's, so they are left out of the round bound.
        const double max_at_precision = from_bits(0x7FEFFFFFFFFFFFFFULL & ~((1ULL << drop) - 1));
        for (auto& d : src) {
            const std::uint64_t exponent = 1 + rng() % 0x7FE;  // 1..0x7FE: normal
            d = from_bits((rng() & (1ULL << 63)) | (exponent << 52) | (rng() & kMantissa));
        }
        for (const Rounding mode : kModes) {
            const bool round   = mode == Rounding::nearest_even;
            const double bound = std::ldexp(1.0, -(8 * keep - (round ? 11 : 12)));
            INFO("keep " << keep << (round ? " nearest_even" : " truncate") << ", bound " << bound);
            std::vector<std::uint8_t> packed(slim::pack::packed_size(n, keep));
            slim::pack::encode(src.data(), n, Precision{keep, mode}, packed.data());
            slim::pack::decode(packed.data(), n, keep, back.data());
            double worst        = 0;
            std::size_t checked = 0;
            for (std::size_t i = 0; i < n; ++i) {
                const double x = src[i], q = back[i];
                if (!std::isnormal(q) || std::fabs(x) > max_at_precision) continue;
                const double rel = std::fabs(x - q) / std::fabs(x);
                if (rel > worst) worst = rel;
                ++checked;
            }
            INFO("worst " << worst << " over " << checked << " values");
            CHECK(checked > n - n / 100);
            CHECK(worst <= bound);
            CHECK(worst > bound / 4);  // the bound is close to tight, not vacuous
        }
    }
}

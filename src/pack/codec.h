/* SPDX-License-Identifier: BSD-3-Clause */
// Lossy packing of IEEE-754 binary64 values (thesis §4.3.1, §4.5): each
// double keeps its `keep` most significant bytes (sign, exponent and the top
// 8*keep - 12 stored mantissa bits); the receiver pads the rest. Pure.
#pragma once

#include <cstddef>
#include <cstdint>

namespace slim::pack {

enum class Rounding {
    truncate,      // drop the low bytes
    nearest_even,  // round to nearest, ties to even; carries into the exponent
};

struct Precision {
    int keep_bytes = 8;  // 2..7 packs; 8 means "not packed"
    Rounding mode  = Rounding::truncate;
};

constexpr int kMinKeep = 2;
constexpr int kMaxKeep = 7;

// Bytes that n packed doubles occupy.
constexpr std::size_t packed_size(std::size_t n, int keep_bytes)
{
    return n * static_cast<std::size_t>(keep_bytes);
}

// Rules that always hold (both modes, every keep):
// - the sign is kept; NaN stays NaN (never becomes Inf); +-Inf stays +-Inf;
// - a finite value stays finite: rounding saturates at the largest value
//   representable at that precision;
// - denormals and -0 behave as the bit arithmetic says.
// Relative error (finite, normal): truncate <= 2^-(8k-12), round <= 2^-(8k-11).

// Encodes n doubles from `src` into `dst` (packed_size(n, keep) bytes).
// Uses the SIMD path when the CPU has it; bit-identical to the scalar path.
void encode(const double *src, std::size_t n, Precision precision, std::uint8_t *dst);
// Decodes n packed doubles into `dst`, zero-filling the dropped bytes.
void decode(const std::uint8_t *src, std::size_t n, int keep_bytes, double *dst);

// The same, forced to one implementation (tests and benchmarks).
void encode_scalar(const double *src, std::size_t n, Precision precision, std::uint8_t *dst);
void decode_scalar(const std::uint8_t *src, std::size_t n, int keep_bytes, double *dst);
void encode_simd(const double *src, std::size_t n, Precision precision, std::uint8_t *dst);
void decode_simd(const std::uint8_t *src, std::size_t n, int keep_bytes, double *dst);
bool simd_available();  // AVX2, detected at run time

// One value through encode -> decode (what the receiver will see).
double round_trip(double value, Precision precision);

}  // namespace slim::pack

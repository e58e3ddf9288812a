// SPDX-License-Identifier: BSD-3-Clause
// Lossy float64 packing (thesis §4.3.1, §4.5). The scalar path is the
// reference; the AVX2 path computes the same 64-bit words four at a time and
// compacts their kept bytes with a byte shuffle, so the two are bit-identical
// by construction (tests/unit/test_codec.cpp checks it on random patterns).
//
// Every value is first turned into a 64-bit word whose `keep` high bytes are
// what is stored (the low bytes are then ignored):
//   NaN      -> unchanged (never rounded); if its kept mantissa bits would all
//               be zero (it would read back as Inf), the top mantissa bit —
//               the quiet bit — is set;
//   +-Inf    -> unchanged;
//   finite   -> truncate: unchanged; nearest_even: + (half - 1 + kept LSB),
//               and when the carry reaches the all-ones exponent the word
//               saturates to sign | 0x7FEFFFFFFFFFFFFF (largest finite value
//               at this precision once the low bytes are dropped).
// Denormals and -0 need no case of their own.
#include "pack/codec.h"

#include "base/error.h"

#include <cstring>
#include <stdexcept>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define SLIM_CODEC_X86 1
#else
#define SLIM_CODEC_X86 0
#endif

namespace slim::pack {

namespace {

constexpr std::uint64_t kSign      = 0x8000000000000000ULL;
constexpr std::uint64_t kAbs       = 0x7FFFFFFFFFFFFFFFULL;
constexpr std::uint64_t kExponent  = 0x7FF0000000000000ULL;
constexpr std::uint64_t kMantissa  = 0x000FFFFFFFFFFFFFULL;
constexpr std::uint64_t kQuiet     = 0x0008000000000000ULL;
constexpr std::uint64_t kMaxFinite = 0x7FEFFFFFFFFFFFFFULL;

template <int Keep>
constexpr int kDropBits = 8 * (8 - Keep);
template <int Keep>
constexpr std::uint64_t kLowMask = (std::uint64_t{1} << kDropBits<Keep>)-1;

// The word whose high `Keep` bytes are stored (see the table at the top).
template <int Keep, bool Round>
inline std::uint64_t quantize(std::uint64_t u)
{
    constexpr int s             = kDropBits<Keep>;
    constexpr std::uint64_t low = kLowMask<Keep>;
    const std::uint64_t abs     = u & kAbs;
    if (abs > kExponent) {  // NaN
        if ((u & kMantissa & ~low) == 0) u |= kQuiet;
        return u;
    }
    if (!Round || abs == kExponent) return u;
    const std::uint64_t r = u + ((low >> 1) + ((u >> s) & 1));
    if ((r & kExponent) == kExponent) return (u & kSign) | kMaxFinite;
    return r;
}

// Little-endian: the high bytes of the word are its last `Keep` bytes in
// memory, which is exactly the packed layout.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the packed layout is defined on the little-endian representation");

// Whole 8-byte loads and stores where they stay inside the buffer (the extra
// bytes are shifted out, or overwritten by the next value): byte-wise copies
// of 3, 5 or 6 bytes into a word cost a store-forwarding stall each (decode
// ran at 1.4 GB/s that way). The last values go byte-wise.
template <int Keep, bool Round>
void encode_scalar_t(const double *src, std::size_t n, std::uint8_t *dst)
{
    constexpr int s = kDropBits<Keep>;
    std::size_t i   = 0;
    for (; (i + 1) * Keep + (8 - Keep) <= n * Keep; ++i) {
        std::uint64_t u;
        std::memcpy(&u, src + i, 8);
        const std::uint64_t w = quantize<Keep, Round>(u) >> s;
        std::memcpy(dst + i * Keep, &w, 8);
    }
    for (; i < n; ++i) {
        std::uint64_t u;
        std::memcpy(&u, src + i, 8);
        const std::uint64_t w = quantize<Keep, Round>(u);
        unsigned char bytes[8];
        std::memcpy(bytes, &w, 8);
        std::memcpy(dst + i * Keep, bytes + (8 - Keep), Keep);
    }
}

template <int Keep>
void decode_scalar_t(const std::uint8_t *src, std::size_t n, double *dst)
{
    constexpr int s = kDropBits<Keep>;
    std::size_t i   = 0;
    for (; (i + 1) * Keep + (8 - Keep) <= n * Keep; ++i) {
        std::uint64_t w;
        std::memcpy(&w, src + i * Keep, 8);
        w <<= s;
        std::memcpy(dst + i, &w, 8);
    }
    for (; i < n; ++i) {
        unsigned char bytes[8] = {};
        std::memcpy(bytes + (8 - Keep), src + i * Keep, Keep);
        std::memcpy(dst + i, bytes, 8);
    }
}

void check_keep(int keep)
{
    if (keep < kMinKeep || keep > 8) throw Error("slim::pack: keep_bytes must be 2..8");
}

// Dispatches a runtime (keep, mode) to a template instance; keep = 8 is a copy.
template <template <int, bool> class Op, typename... Args>
void with_keep_mode(int keep, Rounding mode, Args... args)
{
    const bool round = mode == Rounding::nearest_even;
    switch (keep) {
    case 2: return round ? Op<2, true>::run(args...) : Op<2, false>::run(args...);
    case 3: return round ? Op<3, true>::run(args...) : Op<3, false>::run(args...);
    case 4: return round ? Op<4, true>::run(args...) : Op<4, false>::run(args...);
    case 5: return round ? Op<5, true>::run(args...) : Op<5, false>::run(args...);
    case 6: return round ? Op<6, true>::run(args...) : Op<6, false>::run(args...);
    case 7: return round ? Op<7, true>::run(args...) : Op<7, false>::run(args...);
    default: break;
    }
}

template <int Keep, bool Round>
struct EncodeScalar {
    static void run(const double *src, std::size_t n, std::uint8_t *dst)
    {
        encode_scalar_t<Keep, Round>(src, n, dst);
    }
};

template <int Keep, bool>
struct DecodeScalar {
    static void run(const std::uint8_t *src, std::size_t n, double *dst)
    {
        decode_scalar_t<Keep>(src, n, dst);
    }
};

#if SLIM_CODEC_X86

// Per 128-bit lane (two doubles): output byte o < 2*Keep takes byte
// (8 - Keep) + o % Keep of double o / Keep; the rest are zeroed.
template <int Keep>
__attribute__((target("avx2"))) inline __m256i encode_shuffle_mask()
{
    alignas(32) std::int8_t m[32];
    for (int lane = 0; lane < 2; ++lane)
        for (int o = 0; o < 16; ++o)
            m[lane * 16 + o] =
                    o < 2 * Keep ? static_cast<std::int8_t>((o / Keep) * 8 + (8 - Keep) + o % Keep)
                                 : static_cast<std::int8_t>(-128);
    return _mm256_load_si256(reinterpret_cast<const __m256i *>(m));
}

// The inverse, per lane: byte b of double j comes from packed byte
// j * Keep + b - (8 - Keep), or is zero when b < 8 - Keep.
template <int Keep>
__attribute__((target("avx2"))) inline __m256i decode_shuffle_mask()
{
    alignas(32) std::int8_t m[32];
    for (int lane = 0; lane < 2; ++lane)
        for (int o = 0; o < 16; ++o) {
            const int j = o / 8, b = o % 8;
            m[lane * 16 + o] = b < 8 - Keep ? static_cast<std::int8_t>(-128)
                                            : static_cast<std::int8_t>(j * Keep + b - (8 - Keep));
        }
    return _mm256_load_si256(reinterpret_cast<const __m256i *>(m));
}

template <int Keep, bool Round>
__attribute__((target("avx2"))) inline __m256i quantize4(__m256i u)
{
    constexpr int s        = kDropBits<Keep>;
    const __m256i exponent = _mm256_set1_epi64x(static_cast<long long>(kExponent));
    const __m256i abs      = _mm256_and_si256(u, _mm256_set1_epi64x(static_cast<long long>(kAbs)));
    // abs < 2^63, so the signed compares are exact.
    const __m256i is_nan = _mm256_cmpgt_epi64(abs, exponent);
    __m256i r            = u;
    if (Round) {
        const __m256i lsb = _mm256_and_si256(_mm256_srli_epi64(u, s), _mm256_set1_epi64x(1));
        const __m256i add = _mm256_add_epi64(
                lsb, _mm256_set1_epi64x(static_cast<long long>(kLowMask<Keep> >> 1)));
        r                      = _mm256_add_epi64(u, _mm256_andnot_si256(is_nan, add));
        const __m256i finite   = _mm256_cmpgt_epi64(exponent, abs);
        const __m256i overflow = _mm256_and_si256(
                finite, _mm256_cmpeq_epi64(_mm256_and_si256(r, exponent), exponent));
        const __m256i saturated = _mm256_or_si256(
                _mm256_and_si256(u, _mm256_set1_epi64x(static_cast<long long>(kSign))),
                _mm256_set1_epi64x(static_cast<long long>(kMaxFinite)));
        r = _mm256_blendv_epi8(r, saturated, overflow);
    }
    const __m256i kept_mantissa =
            _mm256_set1_epi64x(static_cast<long long>(kMantissa & ~kLowMask<Keep>));
    const __m256i would_be_inf = _mm256_and_si256(
            is_nan, _mm256_cmpeq_epi64(_mm256_and_si256(r, kept_mantissa), _mm256_setzero_si256()));
    return _mm256_or_si256(
            r, _mm256_and_si256(would_be_inf, _mm256_set1_epi64x(static_cast<long long>(kQuiet))));
}

// For even Keep, 2*Keep bytes per lane is a whole number of dwords, so one
// cross-lane dword permute makes the 4*Keep packed bytes contiguous.
template <int Keep>
__attribute__((target("avx2"))) inline __m256i compact_permutation()
{
    constexpr int d = Keep / 2;  // dwords per lane (even Keep)
    alignas(32) std::int32_t p[8];
    for (int i = 0; i < 8; ++i)
        p[i] = i < d ? i : (i < 2 * d ? 4 + (i - d) : 0);
    return _mm256_load_si256(reinterpret_cast<const __m256i *>(p));
}

// Four doubles' shuffled bytes -> 4*Keep bytes at dst; writes stay inside
// [dst, dst + 32) (bytes past 4*Keep are scratch the next group overwrites).
template <int Keep>
__attribute__((target("avx2"))) inline void store_packed4(__m256i packed, __m256i perm,
                                                          std::uint8_t *dst)
{
    if (Keep % 2 == 0) {
        const __m256i v = _mm256_permutevar8x32_epi32(packed, perm);
        if (Keep <= 4)
            _mm_storeu_si128(reinterpret_cast<__m128i *>(dst), _mm256_castsi256_si128(v));
        else
            _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst), v);
    } else {
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst), _mm256_castsi256_si128(packed));
        _mm_storeu_si128(reinterpret_cast<__m128i *>(dst + 2 * Keep),
                         _mm256_extracti128_si256(packed, 1));
    }
}

template <int Keep, bool Round>
__attribute__((target("avx2"))) void encode_avx2_t(const double *src, std::size_t n,
                                                   std::uint8_t *dst)
{
    const __m256i mask = encode_shuffle_mask<Keep>();
    const __m256i perm = compact_permutation<Keep>();
    std::size_t i      = 0;
    // Each group of four may write 32 bytes from dst + i*Keep.
    const std::size_t total = n * Keep;
    for (; i + 4 <= n && i * Keep + 32 <= total; i += 4) {
        const __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + i));
        const __m256i w = quantize4<Keep, Round>(u);
        store_packed4<Keep>(_mm256_shuffle_epi8(w, mask), perm, dst + i * Keep);
    }
    // GCC 12 emits no vzeroupper before a tail call: with the upper halves
    // left dirty every later SSE instruction in the process — UCX, MPI, the
    // application — pays a transition. slimlink-cg's stencil took 145 us
    // instead of 25 us per iteration after a packed halo exchange.
    _mm256_zeroupper();
    encode_scalar_t<Keep, Round>(src + i, n - i, dst + i * Keep);
}

template <int Keep>
__attribute__((target("avx2"))) void decode_avx2_t(const std::uint8_t *src, std::size_t n,
                                                   double *dst)
{
    const __m256i mask = decode_shuffle_mask<Keep>();
    std::size_t i      = 0;
    // Each group of four reads 16 bytes at src + i*Keep and at + 2*Keep,
    // i.e. inside [src + i*Keep, src + i*Keep + 32).
    const std::size_t total = n * Keep;
    for (; i + 4 <= n && i * Keep + 32 <= total; i += 4) {
        const std::uint8_t *p = src + i * Keep;
        const __m128i lo      = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
        const __m128i hi      = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p + 2 * Keep));
        const __m256i v       = _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
        _mm256_storeu_si256(reinterpret_cast<__m256i *>(dst + i), _mm256_shuffle_epi8(v, mask));
    }
    _mm256_zeroupper();  // see encode_avx2_t
    decode_scalar_t<Keep>(src + i * Keep, n - i, dst + i);
}

template <int Keep, bool Round>
struct EncodeSimd {
    static void run(const double *src, std::size_t n, std::uint8_t *dst)
    {
        encode_avx2_t<Keep, Round>(src, n, dst);
    }
};

template <int Keep, bool>
struct DecodeSimd {
    static void run(const std::uint8_t *src, std::size_t n, double *dst)
    {
        decode_avx2_t<Keep>(src, n, dst);
    }
};

bool detect_avx2()
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

#endif  // SLIM_CODEC_X86

}  // namespace

bool simd_available()
{
#if SLIM_CODEC_X86
    static const bool available = detect_avx2();
    return available;
#else
    return false;
#endif
}

void encode_scalar(const double *src, std::size_t n, Precision precision, std::uint8_t *dst)
{
    check_keep(precision.keep_bytes);
    if (n == 0) return;
    if (precision.keep_bytes == 8) {
        std::memcpy(dst, src, n * sizeof(double));
        return;
    }
    with_keep_mode<EncodeScalar>(precision.keep_bytes, precision.mode, src, n, dst);
}

void decode_scalar(const std::uint8_t *src, std::size_t n, int keep_bytes, double *dst)
{
    check_keep(keep_bytes);
    if (n == 0) return;
    if (keep_bytes == 8) {
        std::memcpy(dst, src, n * sizeof(double));
        return;
    }
    with_keep_mode<DecodeScalar>(keep_bytes, Rounding::truncate, src, n, dst);
}

// Without AVX2 the "SIMD" entry points run the scalar code, so callers
// (tests, benchmarks) never fault on an older CPU.
void encode_simd(const double *src, std::size_t n, Precision precision, std::uint8_t *dst)
{
#if SLIM_CODEC_X86
    check_keep(precision.keep_bytes);
    if (n == 0) return;
    if (precision.keep_bytes == 8 || !simd_available())
        return encode_scalar(src, n, precision, dst);
    with_keep_mode<EncodeSimd>(precision.keep_bytes, precision.mode, src, n, dst);
#else
    encode_scalar(src, n, precision, dst);
#endif
}

void decode_simd(const std::uint8_t *src, std::size_t n, int keep_bytes, double *dst)
{
#if SLIM_CODEC_X86
    check_keep(keep_bytes);
    if (n == 0) return;
    if (keep_bytes == 8 || !simd_available()) return decode_scalar(src, n, keep_bytes, dst);
    with_keep_mode<DecodeSimd>(keep_bytes, Rounding::truncate, src, n, dst);
#else
    decode_scalar(src, n, keep_bytes, dst);
#endif
}

void encode(const double *src, std::size_t n, Precision precision, std::uint8_t *dst)
{
    if (simd_available())
        encode_simd(src, n, precision, dst);
    else
        encode_scalar(src, n, precision, dst);
}

void decode(const std::uint8_t *src, std::size_t n, int keep_bytes, double *dst)
{
    if (simd_available())
        decode_simd(src, n, keep_bytes, dst);
    else
        decode_scalar(src, n, keep_bytes, dst);
}

double round_trip(double value, Precision precision)
{
    std::uint8_t packed[8];
    double out;
    encode_scalar(&value, 1, precision, packed);
    decode_scalar(packed, 1, precision.keep_bytes, &out);
    return out;
}

}  // namespace slim::pack

// SPDX-License-Identifier: BSD-3-Clause
// codec-bench: throughput of the lossy float64 codec (src/pack/codec.h)
// against memcpy of the same buffer, in the same run. Run it with
// benchmarks/run-codec-bench; see benchmarks/README.md.
//
// Throughput is GB/s (10^9 B) of unpacked doubles — what encode reads and
// decode writes — so a ratio of 1.0 means "as fast as copying the doubles".
// Every repetition times memcpy and every variant once, interleaved, so load
// on the shared machine hits them alike; the medians are reported.
#include "bench_options.h"
#include "bench_stats.h"
#include "pack/codec.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

using slim::pack::Precision;
using slim::pack::Rounding;
using Clock = std::chrono::steady_clock;

struct Options {
    std::size_t mib = 8;
    int reps        = 21;
    bool strict     = false;
};

struct Variant {
    std::string name;  // e.g. "encode keep=4 nearest_even simd"
    int keep;
    bool encode;
    bool simd;
    Rounding mode;
    std::vector<double> seconds;
};

template <typename F>
double time_once(F&& f)
{
    const auto t0 = Clock::now();
    f();
    return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char **argv)
{
    Options opt;
    CLI::App app("Throughput of the lossy float64 codec against memcpy, medians of "
                 "interleaved repetitions.",
                 "codec-bench");
    bench::add_integer(app, "--mib", opt.mib, 1, 1 << 20, "buffer of N MiB of doubles");
    bench::add_integer(app, "--reps", opt.reps, 1, 1000000, "repetitions; medians are reported");
    app.add_flag("--strict", opt.strict, "exit 3 when the target is missed");
    if (const int status = bench::parse(app, argc, argv); status >= 0) {
        return status;
    }
    const std::size_t n = opt.mib * 1024 * 1024 / sizeof(double);
    const double bytes  = static_cast<double>(n * sizeof(double));

    // Values like a solver's: normal doubles of mixed sign and magnitude.
    std::vector<double> src(n), copy(n), back(n);
    std::mt19937_64 rng(42);
    std::normal_distribution<double> dist(0.0, 1e3);
    for (auto& d : src)
        d = dist(rng);
    std::vector<std::uint8_t> packed(slim::pack::packed_size(n, 8));

    std::vector<Variant> variants;
    for (const int keep : {3, 4, 5, 6})
        for (const bool simd : {false, true}) {
            for (const Rounding mode : {Rounding::truncate, Rounding::nearest_even})
                variants.push_back(
                        {std::string("encode keep=") + std::to_string(keep) +
                                 (mode == Rounding::truncate ? " truncate " : " round    ") +
                                 (simd ? "simd" : "scalar"),
                         keep,
                         true,
                         simd,
                         mode,
                         {}});
            variants.push_back({std::string("decode keep=") + std::to_string(keep) + "          " +
                                        (simd ? "simd" : "scalar"),
                                keep,
                                false,
                                simd,
                                Rounding::truncate,
                                {}});
        }

    // Decode inputs per keep, prepared once (decode does not depend on mode).
    std::vector<std::vector<std::uint8_t>> encoded(9);
    for (const int keep : {3, 4, 5, 6}) {
        encoded[keep].resize(slim::pack::packed_size(n, keep));
        slim::pack::encode_scalar(src.data(), n, Precision{keep, Rounding::nearest_even},
                                  encoded[keep].data());
    }

    std::vector<double> memcpy_seconds;
    // One untimed warm-up pass, then the timed ones.
    for (int rep = -1; rep < opt.reps; ++rep) {
        const double t =
                time_once([&] { std::memcpy(copy.data(), src.data(), n * sizeof(double)); });
        if (rep >= 0) memcpy_seconds.push_back(t);
        for (auto& v : variants) {
            const Precision p{v.keep, v.mode};
            double s;
            if (v.encode)
                s = time_once([&] {
                    (v.simd ? slim::pack::encode_simd : slim::pack::encode_scalar)(src.data(), n, p,
                                                                                   packed.data());
                });
            else
                s = time_once([&] {
                    (v.simd ? slim::pack::decode_simd : slim::pack::decode_scalar)(
                            encoded[v.keep].data(), n, v.keep, back.data());
                });
            if (rep >= 0) v.seconds.push_back(s);
        }
    }

    const double memcpy_gbs = bytes / bench::median(memcpy_seconds) / 1e9;
    std::printf("# buffer %zu MiB (%zu doubles), %d reps, medians; GB/s of unpacked doubles\n",
                opt.mib, n, opt.reps);
    std::printf("# AVX2 %s\n",
                slim::pack::simd_available() ? "available" : "NOT available (simd = scalar)");
    std::printf("%-38s %8.2f GB/s  1.00x\n", "memcpy", memcpy_gbs);
    bool met = true;
    std::string failures;
    for (const auto& v : variants) {
        const double gbs   = bytes / bench::median(v.seconds) / 1e9;
        const double ratio = gbs / memcpy_gbs;
        std::printf("%-38s %8.2f GB/s  %.2fx\n", v.name.c_str(), gbs, ratio);
        if (v.keep == 4 && v.simd && ratio < 1.0) {
            met = false;
            failures += " [" + v.name + "]";
        }
    }
    std::printf("target: keep=4 SIMD encode (both modes) and decode >= 1.0x memcpy: %s%s\n",
                met ? "met" : "MISSED", failures.c_str());
    return (!met && opt.strict) ? 3 : 0;
}

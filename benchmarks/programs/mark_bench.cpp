// SPDX-License-Identifier: BSD-3-Clause
// mark-bench: what marking costs at scale (each mark used to copy
// the whole region list, so 10^5 marks took 87 s).
//
//   marks     — N slim_mark-equivalent calls on N disjoint 64-byte slices of
//               one array, in address order and then in a shuffled order,
//               each followed by N unmarks; target: N = 10^6 marks and
//               unmarks in <= 1 s in total, per order;
//   lookup    — the send path's lookup (find) of 32 unmarked bytes with 1
//               region marked (the baseline, same run) and with N marked:
//               in a buffer of its own (the usual unmarked send: the chunk
//               filter answers, ratio ~1) and in the gaps between marked
//               slices (the worst case: an O(log N) walk).
//
// Prints medians of --rounds rounds. Usage: mark-bench [--marks N] [--rounds R]
#include "bench_options.h"
#include "bench_stats.h"
#include "pack/region_registry.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <random>
#include <vector>

namespace {

using slim::pack::MarkedRun;
using slim::pack::Precision;
using slim::pack::RegionRegistry;
using SteadyClock = std::chrono::steady_clock;

constexpr std::size_t kSlice = 64;

double seconds_since(SteadyClock::time_point start)
{
    return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// Marks then unmarks every slice in `order`; returns seconds.
double mark_unmark(const std::vector<unsigned char>& arena, const std::vector<std::size_t>& order)
{
    RegionRegistry registry;
    Precision keep4;
    keep4.keep_bytes = 4;
    const auto start = SteadyClock::now();
    for (const std::size_t i : order) {
        if (!registry.mark(arena.data() + i * kSlice, kSlice, keep4, "bench")) {
            std::fprintf(stderr, "mark-bench: mark %zu failed\n", i);
            std::exit(1);
        }
    }
    for (const std::size_t i : order) {
        if (!registry.unmark(arena.data() + i * kSlice)) {
            std::fprintf(stderr, "mark-bench: unmark %zu failed\n", i);
            std::exit(1);
        }
    }
    const double took = seconds_since(start);
    if (registry.size() != 0) {
        std::fprintf(stderr, "mark-bench: %zu regions left after unmarking\n", registry.size());
        std::exit(1);
    }
    return took;
}

// ns per lookup of an unmarked buffer, with `marks` slices marked: in the
// gaps between marked halves (`in_gaps`: the worst case, which walks the
// list) or in a separate unmarked buffer (the usual unmarked send).
double lookup_ns(const std::vector<unsigned char>& arena, std::size_t marks, bool in_gaps)
{
    static std::vector<unsigned char> elsewhere(1 << 20);
    RegionRegistry registry;
    Precision keep4;
    keep4.keep_bytes = 4;
    for (std::size_t i = 0; i < marks; ++i) {
        registry.mark(arena.data() + i * kSlice, kSlice / 2, keep4);
    }
    // Lookups spread over the marked area, each in an unmarked gap.
    constexpr std::size_t kLookups = 200000;
    std::mt19937_64 rng(7);
    std::vector<const unsigned char *> at(4096);
    for (auto& p : at) {
        p = in_gaps ? arena.data() + (rng() % marks) * kSlice + kSlice / 2
                    : elsewhere.data() + rng() % (elsewhere.size() - kSlice);
    }
    MarkedRun runs[4];
    std::size_t found = 0;
    const auto start  = SteadyClock::now();
    for (std::size_t i = 0; i < kLookups; ++i) {
        found += registry.find(at[i % at.size()], kSlice / 2, runs, 4);
    }
    const double ns = seconds_since(start) * 1e9 / kLookups;
    if (found != 0) {
        std::fprintf(stderr, "mark-bench: an unmarked lookup found %zu runs\n", found);
        std::exit(1);
    }
    return ns;
}

}  // namespace

int main(int argc, char **argv)
{
    std::size_t marks = 1000000;
    int rounds        = 3;
    CLI::App app("Cost of marking at scale: N marks and unmarks, and the send path's lookup "
                 "with 1 and with N regions marked.",
                 "mark-bench");
    bench::add_integer(app, "--marks", marks, 1, 1'000'000'000, "marks (64-byte slices)");
    bench::add_integer(app, "--rounds", rounds, 1, 1'000'000, "rounds; medians are reported");
    if (const int status = bench::parse(app, argc, argv); status >= 0) {
        return status;
    }
    std::vector<unsigned char> arena(marks * kSlice);
    std::vector<std::size_t> ordered(marks);
    std::iota(ordered.begin(), ordered.end(), 0);
    std::vector<std::size_t> shuffled = ordered;
    std::shuffle(shuffled.begin(), shuffled.end(), std::mt19937_64(42));

    std::vector<double> in_order, random_order, one, many, gap_one, gap_many;
    for (int r = 0; r < rounds; ++r) {
        in_order.push_back(mark_unmark(arena, ordered));
        random_order.push_back(mark_unmark(arena, shuffled));
        one.push_back(lookup_ns(arena, 1, false));
        many.push_back(lookup_ns(arena, marks, false));
        gap_one.push_back(lookup_ns(arena, 1, true));
        gap_many.push_back(lookup_ns(arena, marks, true));
    }
    const double t_in = bench::median(in_order), t_rand = bench::median(random_order);
    const double l_one = bench::median(one), l_many = bench::median(many);
    std::printf("mark-bench: %zu marks + %zu unmarks, median of %d rounds\n", marks, marks, rounds);
    std::printf("  %-40s %8.3f s   target <= 1 s: %s\n", "address order", t_in,
                t_in <= 1.0 ? "met" : "MISSED");
    std::printf("  %-40s %8.3f s   target <= 1 s: %s\n", "shuffled order", t_rand,
                t_rand <= 1.0 ? "met" : "MISSED");
    const double g_one = bench::median(gap_one), g_many = bench::median(gap_many);
    std::printf("  %-40s %8.1f ns\n", "unrelated unmarked lookup, 1 marked", l_one);
    std::printf("  %-40s %8.1f ns   ratio %.2f\n", "unrelated unmarked lookup, all marked", l_many,
                l_many / l_one);
    std::printf("  %-40s %8.1f ns\n", "lookup between marks, 1 marked", g_one);
    std::printf("  %-40s %8.1f ns   ratio %.2f (O(log N) walk)\n",
                "lookup between marks, all marked", g_many, g_many / g_one);
    return 0;
}

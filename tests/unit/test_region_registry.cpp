// SPDX-License-Identifier: BSD-3-Clause
// The sender-side region registry: marking, overlap replacement, clipped
// lookups, and lock-free readers racing a writer.
#include "pack/region_registry.h"

#include "pack/chunk_filter.h"
#include "pack/label_table.h"

#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <thread>
#include <string>
#include <vector>

using slim::pack::MarkedRun;
using slim::pack::Precision;
using slim::pack::RegionRegistry;
using slim::pack::Rounding;

namespace {

// Addresses are never dereferenced: one static arena gives real pointers.
alignas(64) std::array<unsigned char, 1 << 16> arena{};

const void *at(std::size_t offset) { return arena.data() + offset; }
std::uintptr_t addr(std::size_t offset) { return reinterpret_cast<std::uintptr_t>(at(offset)); }

Precision keep(int k, Rounding mode = Rounding::truncate)
{
    Precision p;
    p.keep_bytes = k;
    p.mode       = mode;
    return p;
}

std::vector<MarkedRun> find_all(const RegionRegistry& registry, std::size_t offset,
                                std::size_t bytes)
{
    std::vector<MarkedRun> runs(64);
    const std::size_t n = registry.find(at(offset), bytes, runs.data(), runs.size());
    REQUIRE(n <= runs.size());
    runs.resize(n);
    return runs;
}

}  // namespace

TEST_CASE("a new registry is empty and finds nothing", "[registry]")
{
    const RegionRegistry registry;
    CHECK(registry.size() == 0);
    MarkedRun run;
    CHECK(registry.find(at(0), 1024, &run, 1) == 0);
}

TEST_CASE("a marked region is found with its precision and base, and unmarked", "[registry]")
{
    RegionRegistry registry;
    REQUIRE(registry.mark(at(64), 800, keep(4, Rounding::nearest_even)));
    CHECK(registry.size() == 1);

    const auto runs = find_all(registry, 0, 4096);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].begin == addr(64));
    CHECK(runs[0].end == addr(864));
    CHECK(runs[0].region_base == addr(64));
    CHECK(runs[0].precision.keep_bytes == 4);
    CHECK(runs[0].precision.mode == Rounding::nearest_even);

    CHECK(registry.unmark(at(64)));
    CHECK(registry.size() == 0);
    CHECK(find_all(registry, 0, 4096).empty());
}

TEST_CASE("mark rejects null, empty, wrapping ranges and keep outside 2..7", "[registry]")
{
    RegionRegistry registry;
    CHECK_FALSE(registry.mark(nullptr, 8, keep(4)));
    CHECK_FALSE(registry.mark(at(0), 0, keep(4)));
    CHECK_FALSE(registry.mark(at(0), SIZE_MAX, keep(4)));
    CHECK_FALSE(registry.mark(at(0), 8, keep(1)));
    CHECK_FALSE(registry.mark(at(0), 8, keep(8)));
    CHECK(registry.size() == 0);
}

TEST_CASE("unmark removes only the region that starts at the pointer", "[registry]")
{
    RegionRegistry registry;
    REQUIRE(registry.mark(at(0), 100, keep(3)));
    REQUIRE(registry.mark(at(200), 100, keep(5)));
    CHECK_FALSE(registry.unmark(at(8)));    // inside, not at the start
    CHECK_FALSE(registry.unmark(at(150)));  // not marked at all
    CHECK_FALSE(registry.unmark(nullptr));
    CHECK(registry.size() == 2);
    CHECK(registry.unmark(at(200)));
    const auto runs = find_all(registry, 0, 1000);
    REQUIRE(runs.size() == 1);
    CHECK(runs[0].begin == addr(0));
    CHECK_FALSE(registry.unmark(at(200)));
}

TEST_CASE("runs are clipped to the queried range and come in address order", "[registry]")
{
    RegionRegistry registry;
    REQUIRE(registry.mark(at(300), 100, keep(6)));
    REQUIRE(registry.mark(at(0), 100, keep(2)));
    REQUIRE(registry.mark(at(150), 100, keep(4)));

    const auto runs = find_all(registry, 50, 300);  // [50, 350)
    REQUIRE(runs.size() == 3);
    CHECK(runs[0].begin == addr(50));
    CHECK(runs[0].end == addr(100));
    CHECK(runs[0].region_base == addr(0));  // clipping keeps the element base
    CHECK(runs[1].begin == addr(150));
    CHECK(runs[1].end == addr(250));
    CHECK(runs[2].begin == addr(300));
    CHECK(runs[2].end == addr(350));
    CHECK(runs[2].region_base == addr(300));

    SECTION("a range touching a region's end or start does not overlap it")
    {
        CHECK(find_all(registry, 100, 50).empty());  // [100, 150)
        CHECK(find_all(registry, 250, 50).empty());  // [250, 300)
    }
    SECTION("a query inside one region returns that region clipped on both sides")
    {
        const auto inner = find_all(registry, 160, 10);
        REQUIRE(inner.size() == 1);
        CHECK(inner[0].begin == addr(160));
        CHECK(inner[0].end == addr(170));
        CHECK(inner[0].region_base == addr(150));
    }
    SECTION("the count says when more runs overlap than fit, and stops there")
    {
        MarkedRun one;
        CHECK(registry.find(at(0), 1000, &one, 1) == 2);
        CHECK(one.begin == addr(0));
        CHECK(registry.find(at(0), 1000, nullptr, 0) == 1);
        std::array<MarkedRun, 3> three{};
        CHECK(registry.find(at(0), 1000, three.data(), three.size()) == 3);
    }
}

TEST_CASE("marking over a region replaces the overlap; remainders keep their original base",
          "[registry]")
{
    RegionRegistry registry;
    REQUIRE(registry.mark(at(0), 800, keep(3)));

    SECTION("a new region in the middle splits the old one in two")
    {
        REQUIRE(registry.mark(at(100), 200, keep(5, Rounding::nearest_even)));
        CHECK(registry.size() == 3);
        const auto runs = find_all(registry, 0, 800);
        REQUIRE(runs.size() == 3);
        CHECK(runs[0].begin == addr(0));
        CHECK(runs[0].end == addr(100));
        CHECK(runs[0].region_base == addr(0));
        CHECK(runs[0].precision.keep_bytes == 3);
        CHECK(runs[1].begin == addr(100));
        CHECK(runs[1].end == addr(300));
        CHECK(runs[1].region_base == addr(100));
        CHECK(runs[1].precision.keep_bytes == 5);
        CHECK(runs[2].begin == addr(300));
        CHECK(runs[2].end == addr(800));
        CHECK(runs[2].region_base == addr(0));  // not 300: elements stay aligned to 0
        CHECK(runs[2].precision.keep_bytes == 3);

        // The remainders are regions of their own and can be unmarked.
        CHECK(registry.unmark(at(300)));
        CHECK(registry.unmark(at(100)));
        CHECK(registry.size() == 1);
    }
    SECTION("a new region over the start trims the old one from the left")
    {
        REQUIRE(registry.mark(at(4), 100, keep(7)));
        const auto runs = find_all(registry, 0, 800);
        REQUIRE(runs.size() == 3);
        CHECK(runs[0].end == addr(4));
        CHECK(runs[1].region_base == addr(4));
        CHECK(runs[2].begin == addr(104));
        CHECK(runs[2].region_base == addr(0));
    }
    SECTION("a new region covering several old ones replaces them all")
    {
        REQUIRE(registry.mark(at(1000), 100, keep(2)));
        REQUIRE(registry.mark(at(500), 550, keep(6)));
        const auto runs = find_all(registry, 0, 2000);
        REQUIRE(runs.size() == 3);
        CHECK(runs[0].begin == addr(0));
        CHECK(runs[0].end == addr(500));
        CHECK(runs[1].begin == addr(500));
        CHECK(runs[1].end == addr(1050));
        CHECK(runs[1].precision.keep_bytes == 6);
        CHECK(runs[2].begin == addr(1050));
        CHECK(runs[2].end == addr(1100));
        CHECK(runs[2].region_base == addr(1000));
    }
    SECTION("marking the same range again replaces it")
    {
        REQUIRE(registry.mark(at(0), 800, keep(6)));
        const auto runs = find_all(registry, 0, 800);
        REQUIRE(runs.size() == 1);
        CHECK(runs[0].precision.keep_bytes == 6);
    }
}

TEST_CASE("lookups among thousands of regions find exactly the overlapping ones", "[registry]")
{
    RegionRegistry registry;
    constexpr std::size_t count = 4000;  // 16-byte regions every 16 bytes, every other one
    for (std::size_t i = 0; i < count; i += 2) {
        REQUIRE(registry.mark(at(i * 16), 16, keep(static_cast<int>(2 + i % 6))));
    }
    CHECK(registry.size() == count / 2);
    for (std::size_t i = 0; i + 8 < count; i += 97) {
        const auto runs         = find_all(registry, i * 16 + 3, 8 * 16);  // spans 8 or 9 slots
        const std::size_t first = i % 2 == 0 ? i : i + 1;
        REQUIRE(runs.size() == (i % 2 == 0 ? 5U : 4U));
        CHECK(runs.front().region_base == addr(first * 16));
        for (std::size_t r = 1; r < runs.size(); ++r) {
            CHECK(runs[r].begin == runs[r - 1].region_base + 32);
        }
    }
}

TEST_CASE("concurrent readers always see consistent runs while a writer marks and unmarks",
          "[registry]")
{
    RegionRegistry registry;
    // A fixed region that is never touched, and a churned area next to it.
    REQUIRE(registry.mark(at(0), 64, keep(4)));

    std::atomic<bool> stop{false};
    std::atomic<std::size_t> bad{0};
    std::atomic<std::size_t> lookups{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 4; ++t) {
        readers.emplace_back([&] {
            std::array<MarkedRun, 16> runs{};
            while (!stop.load(std::memory_order_relaxed)) {
                const std::size_t n     = registry.find(at(0), 4096, runs.data(), runs.size());
                const std::size_t shown = n < runs.size() ? n : runs.size();
                bool ok = n >= 1 && runs[0].begin == addr(0) && runs[0].end == addr(64) &&
                          runs[0].precision.keep_bytes == 4;
                for (std::size_t i = 0; i < shown; ++i) {
                    const MarkedRun& r = runs[i];
                    // Each run lies inside a region the writer marks: 64-byte
                    // aligned, at most 128 bytes, in order, not overlapping.
                    ok = ok && r.begin < r.end && r.region_base <= r.begin &&
                         r.end - r.region_base <= 128 && (r.region_base - addr(0)) % 64 == 0 &&
                         r.precision.keep_bytes >= 2 && r.precision.keep_bytes <= 7 &&
                         (i == 0 || runs[i - 1].end <= r.begin);
                }
                if (!ok) {
                    bad.fetch_add(1);
                }
                lookups.fetch_add(1, std::memory_order_relaxed);
            }
        });
    }

    std::size_t writes = 0;
    for (int round = 0; round < 2000; ++round) {
        const std::size_t slot = 1 + static_cast<std::size_t>(round) % 30;
        if (registry.mark(at(slot * 64), 128, keep(2 + round % 6))) {
            ++writes;
        }
        if (round % 3 == 0) {
            registry.unmark(at(slot * 64));
        }
    }
    // Let the readers run past the last write too.
    while (lookups.load() < 1000) {
        std::this_thread::yield();
    }
    stop = true;
    for (std::thread& t : readers) {
        t.join();
    }
    CHECK(writes == 2000);
    CHECK(bad.load() == 0);
    CHECK(lookups.load() >= 1000);
}

TEST_CASE("release drops every mark inside freed memory and cuts regions reaching outside it",
          "[registry]")
{
    RegionRegistry registry;
    REQUIRE(registry.mark(at(0), 100, keep(4), "left"));
    REQUIRE(registry.mark(at(200), 100, keep(5), "inside"));
    REQUIRE(registry.mark(at(400), 100, keep(6), "right"));
    std::string label;
    // Frees [50, 450): cuts "left" and "right", drops "inside".
    CHECK(registry.release(at(50), 400, &label) == 3);
    CHECK(label == "left");
    const auto runs = find_all(registry, 0, 1000);
    REQUIRE(runs.size() == 2);
    CHECK(runs[0].begin == addr(0));
    CHECK(runs[0].end == addr(50));
    CHECK(runs[1].begin == addr(450));
    CHECK(runs[1].end == addr(500));
    CHECK(runs[1].region_base == addr(400));  // element boundaries kept
    CHECK(runs[1].precision.keep_bytes == 6);
    CHECK(registry.release(at(50), 400, &label) == 0);
    CHECK(registry.size() == 2);
}

TEST_CASE("the chunk filter never hides a region, however wide or close", "[registry]")
{
    RegionRegistry registry;
    // Wider than the filter counts per chunk (64 x 64 KiB): counted as wide.
    std::vector<unsigned char> big(8 << 20);
    REQUIRE(registry.mark(big.data() + 3, big.size() - 6, keep(3)));
    MarkedRun run;
    CHECK(registry.find(big.data() + big.size() / 2, 16, &run, 1) == 1);
    CHECK(registry.find(big.data(), 3, &run, 1) == 0);
    // A small region in a chunk of its own, and a lookup of its last byte.
    REQUIRE(registry.mark(at(70000), 8, keep(2)));
    CHECK(registry.find(at(70007), 1, &run, 1) == 1);
    REQUIRE(registry.unmark(big.data() + 3));
    CHECK(registry.find(big.data() + big.size() / 2, 16, &run, 1) == 0);
    CHECK(registry.find(at(70000), 64, &run, 1) == 1);
    REQUIRE(registry.unmark(at(70000)));
    CHECK(registry.find(at(70000), 64, &run, 1) == 0);
    CHECK(registry.size() == 0);
}

namespace {

// Random marks (some over marked memory), releases and unmarks on `span`
// bytes, checked against a byte map of the precision each byte must have.
void check_against_model(std::size_t span, int steps, std::size_t max_len, std::uint64_t seed)
{
    std::vector<unsigned char> memory(span);
    const auto at_off = [&](std::size_t o) { return memory.data() + o; };
    std::vector<int> model(span, 0);
    std::vector<std::size_t> starts;  // where marks began (for unmark)
    RegionRegistry registry;
    std::uint64_t state = seed;
    auto next           = [&state] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<std::size_t>(state >> 33);
    };
    for (int step = 0; step < steps; ++step) {
        const std::size_t begin = next() % span;
        const std::size_t len   = 1 + next() % max_len;
        const std::size_t end   = std::min(span, begin + len);
        const std::size_t what  = next() % 8;
        if (what < 5) {
            const int k = 2 + static_cast<int>(next() % 6);
            REQUIRE(registry.mark(at_off(begin), end - begin, keep(k)));
            std::fill(model.begin() + static_cast<std::ptrdiff_t>(begin),
                      model.begin() + static_cast<std::ptrdiff_t>(end), k);
            starts.push_back(begin);
        } else if (what < 7 && !starts.empty()) {
            // Unmark where some mark began: succeeds only if a region still
            // starts there, and then removes exactly that region.
            const std::size_t b = starts[next() % starts.size()];
            MarkedRun first;
            const std::size_t n = registry.find(at_off(b), span - b, &first, 1);
            if (registry.unmark(at_off(b))) {
                // The region starting at b is gone: it was the first run
                // from b, which a query at b clips to its own end.
                REQUIRE(n >= 1);
                REQUIRE(first.begin == reinterpret_cast<std::uintptr_t>(at_off(b)));
                const std::size_t e = first.end - reinterpret_cast<std::uintptr_t>(memory.data());
                std::fill(model.begin() + static_cast<std::ptrdiff_t>(b),
                          model.begin() + static_cast<std::ptrdiff_t>(e), 0);
            }
        } else {
            registry.release(at_off(begin), end - begin);
            std::fill(model.begin() + static_cast<std::ptrdiff_t>(begin),
                      model.begin() + static_cast<std::ptrdiff_t>(end), 0);
        }
    }
    std::vector<int> seen(span, 0);
    std::vector<MarkedRun> runs(span);
    const std::size_t n = registry.find(at_off(0), span, runs.data(), runs.size());
    REQUIRE(n <= runs.size());
    const auto base = reinterpret_cast<std::uintptr_t>(memory.data());
    for (std::size_t i = 0; i < n; ++i) {
        if (i > 0) {
            REQUIRE(runs[i - 1].end <= runs[i].begin);
        }
        for (std::uintptr_t a = runs[i].begin; a < runs[i].end; ++a) {
            seen[a - base] = runs[i].precision.keep_bytes;
        }
    }
    CHECK(seen == model);
    CHECK(registry.size() == n);  // every region lies inside the span
}

}  // namespace

TEST_CASE("marks and unmarks in random order leave exactly what a reference model says",
          "[registry]")
{
    SECTION("a few regions, much overlap") { check_against_model(4096, 3000, 200, 12345); }
    SECTION("thousands of regions (the writer's index splits and empties buckets)")
    {
        check_against_model(1 << 20, 60000, 64, 777);
    }
}

TEST_CASE("the chunk filter never hides a counted region, and forgets an uncounted one",
          "[registry]")
{
    using slim::pack::ChunkFilter;
    constexpr std::uintptr_t chunk = std::uintptr_t{1} << ChunkFilter::kChunkShift;
    const std::uintptr_t base      = 1000 * chunk;
    ChunkFilter filter;
    CHECK_FALSE(filter.maybe_marked(base, base + 64));

    filter.count(base + 10, base + chunk + 10, true);  // touches two chunks
    CHECK(filter.maybe_marked(base, base + 1));
    CHECK(filter.maybe_marked(base + chunk, base + chunk + 1));
    CHECK(filter.maybe_marked(base - chunk, base + 1));  // reaches into it
    filter.count(base + 10, base + chunk + 10, false);
    CHECK_FALSE(filter.maybe_marked(base, base + 2 * chunk));

    SECTION("a region wider than the filter tracks turns it off until it is gone")
    {
        const std::uintptr_t wide_end = base + (ChunkFilter::kMaxChunks + 1) * chunk;
        filter.count(base, wide_end, true);
        CHECK(filter.maybe_marked(base + 500 * chunk, base + 500 * chunk + 8));
        filter.count(base, wide_end, false);
        CHECK_FALSE(filter.maybe_marked(base + 500 * chunk, base + 500 * chunk + 8));
    }
    SECTION("a lookup wider than the filter tracks is always a maybe")
    {
        CHECK(filter.maybe_marked(base, base + (ChunkFilter::kMaxChunks + 1) * chunk));
    }
}

TEST_CASE("labels are interned once, and the empty label is id 0", "[registry]")
{
    slim::pack::LabelTable labels;
    CHECK(labels.intern("") == 0);
    CHECK(labels.text(0).empty());
    const auto halo = labels.intern("halo");
    CHECK(halo != 0);
    CHECK(labels.intern("fft") != halo);
    CHECK(labels.intern(std::string("halo")) == halo);
    CHECK(labels.text(halo) == "halo");
}

// SPDX-License-Identifier: BSD-3-Clause
// Algorithm 1 (thesis §5.2.2): events separated by idle time at or below the
// grouping threshold form one gram; the gram table interns grams by their
// event ids.
#include "predict/gram_former.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <vector>

using slim::predict::EventId;
using slim::predict::GramFormer;
using slim::predict::GramId;
using slim::predict::GramTable;
using slim::predict::kNoGram;
using slim::predict::TimeNs;

namespace {

constexpr TimeNs kGt    = 20'000;
constexpr TimeNs kShort = 2'000;
constexpr TimeNs kLong  = 500'000;

std::vector<EventId> ids_of(const GramTable& table, GramId gram)
{
    return {table.events(gram), table.events(gram) + table.stored(gram)};
}

std::uint64_t hash_of(const std::vector<EventId>& ids)
{
    std::uint64_t h = slim::predict::kSequenceSeed;
    for (const EventId id : ids) {
        h = slim::predict::hash_append(h, id);
    }
    return h;
}

}  // namespace

TEST_CASE("gram former splits on idle time above the grouping threshold", "[predict]")
{
    // Figure 5.2 (Alya): three MPI_Sendrecv (41) close together, then two
    // isolated MPI_Allreduce (10).
    GramTable table(64, 16);
    GramFormer former(table);
    CHECK_FALSE(former.on_event(41, std::nullopt, kGt));
    CHECK_FALSE(former.on_event(41, kShort, kGt));
    CHECK_FALSE(former.on_event(41, kShort, kGt));
    CHECK(former.current().length == 3);

    const auto first = former.on_event(10, kLong, kGt);
    REQUIRE(first);
    CHECK(ids_of(table, first->gram) == std::vector<EventId>{41, 41, 41});
    CHECK(first->idle_after == kLong);
    CHECK(first->events == 3);

    const auto second = former.on_event(10, kLong + 1, kGt);
    REQUIRE(second);
    CHECK(ids_of(table, second->gram) == std::vector<EventId>{10});
    CHECK(second->idle_after == kLong + 1);

    const auto third = former.on_event(41, kLong, kGt);
    REQUIRE(third);
    CHECK(third->gram == second->gram);  // the same gram, whatever the idle time
    CHECK(former.current().length == 1);
    CHECK(former.current().events[0] == 41);
}

TEST_CASE("an idle interval exactly at the grouping threshold stays inside the gram", "[predict]")
{
    // Algorithm 1, line 1: a new gram needs previousIdleTime > GT.
    GramTable table(64, 16);
    GramFormer former(table);
    former.on_event(1, std::nullopt, kGt);
    CHECK_FALSE(former.on_event(2, kGt, kGt));
    CHECK(former.current().length == 2);
    CHECK(former.on_event(3, kGt + 1, kGt));
}

TEST_CASE("the first event of a run never completes a gram, however long the idle before it",
          "[predict]")
{
    GramTable table(64, 16);
    GramFormer former(table);
    CHECK_FALSE(former.on_event(7, kLong, kGt));
    former.clear();
    CHECK_FALSE(former.on_event(7, kLong, kGt));
    CHECK(former.current().length == 1);
}

TEST_CASE("a gram longer than max_gram_events is known by its first events and its length",
          "[predict]")
{
    GramTable table(64, 4);
    GramFormer former(table);
    // The events of one gram, then the first event of the next, completing it.
    auto gram_of = [&](const std::vector<EventId>& ids) {
        former.clear();
        for (std::size_t i = 0; i < ids.size(); ++i) {
            former.on_event(ids[i], i ? std::optional<TimeNs>(kShort) : std::nullopt, kGt);
        }
        const auto done = former.on_event(99, kLong, kGt);
        REQUIRE(done);
        return done->gram;
    };
    const GramId six   = gram_of({1, 2, 3, 4, 5, 6});
    const GramId seven = gram_of({1, 2, 3, 4, 5, 6, 7});
    const GramId six_b = gram_of({1, 2, 3, 4, 8, 9});
    CHECK(table.length(six) == 6);
    CHECK(table.stored(six) == 4);
    CHECK(six != seven);  // same first four, different length
    CHECK(six == six_b);  // same first four, same length
}

TEST_CASE("a full gram table hands out kNoGram, and released grams make room again", "[predict]")
{
    GramTable table(4, 8);
    std::vector<GramId> ids;
    for (EventId e = 0; e < 4; ++e) {
        const std::vector<EventId> seq{e, e + 100};
        ids.push_back(table.intern(hash_of(seq), seq.data(), seq.size(), 2));
        REQUIRE(ids.back() != kNoGram);
    }
    const std::vector<EventId> extra{7, 7, 7};
    CHECK(table.intern(hash_of(extra), extra.data(), extra.size(), 3) == kNoGram);
    CHECK_FALSE(slim::predict::same_gram(kNoGram, kNoGram));

    // A second reference keeps gram 0 alive through one release.
    table.acquire(ids[0]);
    table.release(ids[0]);
    CHECK(table.live() == 4);
    table.release(ids[0]);
    CHECK(table.live() == 3);
    const GramId reused = table.intern(hash_of(extra), extra.data(), extra.size(), 3);
    REQUIRE(reused != kNoGram);
    CHECK(ids_of(table, reused) == extra);
    // The others are still found, with their events intact.
    for (EventId e = 1; e < 4; ++e) {
        const std::vector<EventId> seq{e, e + 100};
        const GramId again = table.intern(hash_of(seq), seq.data(), seq.size(), 2);
        CHECK(again == ids[e]);
        CHECK(ids_of(table, again) == seq);
    }
}

TEST_CASE("the gram table survives long churn: lookups, erasures and compaction agree with a model",
          "[predict]")
{
    // Random sequences of 1..12 ids interned and released at random, checked
    // against std::map: this exercises the index's backward-shift deletion
    // and the arena compaction many times over.
    GramTable table(64, 12);
    std::mt19937 rng(12345);
    std::map<std::vector<EventId>, std::pair<GramId, int>> model;  // ids -> (gram, refs)
    std::vector<std::vector<EventId>> alive;
    std::size_t full = 0;
    for (int round = 0; round < 200'000; ++round) {
        if (alive.empty() || rng() % 2 == 0) {
            std::vector<EventId> seq(1 + rng() % 12);
            for (EventId& id : seq) {
                id = static_cast<EventId>(rng() % 3);  // few ids: many equal sequences
            }
            const GramId g = table.intern(hash_of(seq), seq.data(), seq.size(),
                                          static_cast<std::uint32_t>(seq.size()));
            if (g == kNoGram) {
                ++full;
                REQUIRE(model.count(seq) == 0);
                continue;
            }
            auto it = model.find(seq);
            if (it == model.end()) {
                model[seq] = {g, 1};
            } else {
                REQUIRE(it->second.first == g);
                ++it->second.second;
            }
            alive.push_back(seq);
            REQUIRE(ids_of(table, g) == seq);
        } else {
            const std::size_t pick = rng() % alive.size();
            auto it                = model.find(alive[pick]);
            table.release(it->second.first);
            if (--it->second.second == 0) {
                model.erase(it);
            }
            alive[pick] = alive.back();
            alive.pop_back();
        }
        REQUIRE(table.live() == model.size());
    }
    for (const auto& [seq, gram_refs] : model) {
        CHECK(ids_of(table, gram_refs.first) == seq);
    }
    CHECK(full > 0);  // the table did fill up on the way
}

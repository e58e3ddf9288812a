// SPDX-License-Identifier: BSD-3-Clause
// PPA (thesis §5.2.3, Algorithms 2 and 3), replayed on the worked example of
// Figure 5.3 and on cases the example does not cover.
#include "predict/pattern_predictor.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

using slim::predict::Activation;
using slim::predict::EventId;
using slim::predict::GramFormer;
using slim::predict::GramTable;
using slim::predict::PatternListChange;
using slim::predict::PatternPredictor;
using slim::predict::PatternPredictorConfig;
using slim::predict::TimeNs;

namespace {

constexpr TimeNs kGt    = 20'000;
constexpr TimeNs kShort = 2'000;
constexpr TimeNs kLong  = 500'000;

// Algorithm 1 around a PatternPredictor, without Algorithm 4: once the PPA
// switches prediction on it stays on (enough for the example).
struct Ppc {
    explicit Ppc(PatternPredictorConfig config = {})
        : table(256, 16), former(table), ppa(table, config)
    {
        ppa.set_observer([this](const PatternListChange& c) {
            if (c.kind == PatternListChange::Kind::removed) {
                removed.push_back(ppa.pattern_string(c.entry));
                return;
            }
            std::string row = std::to_string(c.event) + " " + ppa.pattern_string(c.entry) +
                              " f=" + std::to_string(ppa.frequency(c.entry)) + " pos";
            for (const std::uint64_t p : ppa.positions(c.entry)) {
                row += " " + std::to_string(p);
            }
            row += " calls=" + std::to_string(ppa.event_count(c.entry));
            insertions.push_back(row);
        });
    }

    // One event: `starts_gram` when the idle before it is long.
    void event(EventId id, bool starts_gram)
    {
        const std::optional<TimeNs> idle =
                first ? std::nullopt : std::optional<TimeNs>(starts_gram ? kLong : kShort);
        first = false;
        if (auto done = former.on_event(id, idle, kGt)) {
            ppa.add_gram(*done);
        }
        if (auto a = ppa.on_event(active)) {
            active     = true;
            activation = *a;
        }
    }

    std::string array() const
    {
        std::string s;
        for (std::uint64_t p = 0; p < ppa.grams(); ++p) {
            s += (p ? "," : "") + ppa.gram_string(ppa.gram_at(p));
        }
        return "[" + s + "]";
    }

    std::string current() const
    {
        std::string s;
        for (std::size_t i = 0; i < former.current().stored; ++i) {
            s += (i ? "-" : "") + std::to_string(former.current().events[i]);
        }
        return s;
    }

    GramTable table;
    GramFormer former;
    PatternPredictor ppa;
    bool first  = true;
    bool active = false;
    std::optional<Activation> activation;
    std::vector<std::string> insertions;
    std::vector<std::string> removed;
};

// The Alya stream of Figures 5.2 and 5.3: 41-41-41, 10, 10, ...
// (41 = MPI_Sendrecv, 10 = MPI_Allreduce).
struct AlyaEvent {
    EventId id;
    bool starts_gram;
};
AlyaEvent alya(int n)  // n: 1-based event number
{
    const int k = (n - 1) % 5;
    return {k < 3 ? 41u : 10u, n > 1 && k != 1 && k != 2};
}

}  // namespace

TEST_CASE("Figure 5.3: the PPA execution table and the pattern list insertions are reproduced",
          "[predict]")
{
    Ppc ppc;

    // Panel (b), one row per event: size of the gram array, current gram,
    // whether the PPA ran (every action but "Not enough grams"), prediction.
    struct Row {
        int event;
        std::size_t grams;
        const char *current;
        bool ppa_ran;
        bool prediction;
    };
    // Row 13 of the thesis shows the current gram as "41-41"; event 13 is the
    // third MPI_Sendrecv in a row, so it is 41-41-41 (a typo in the table:
    // the array column of the same row agrees with three).
    const Row rows[] = {
            {1, 0, "41", false, false},       {2, 0, "41-41", false, false},
            {3, 0, "41-41-41", false, false}, {4, 1, "10", false, false},
            {5, 2, "10", false, false},       {6, 3, "41", false, false},
            {7, 3, "41-41", false, false},    {8, 3, "41-41-41", false, false},
            {9, 4, "10", true, false},        {10, 5, "10", true, false},
            {11, 6, "41", true, false},       {12, 6, "41-41", true, false},
            {13, 6, "41-41-41", true, false}, {14, 7, "10", true, false},
            {15, 8, "10", true, false},       {16, 9, "41", true, false},
            {17, 9, "41-41", true, false},    {18, 9, "41-41-41", false, false},
            {19, 10, "10", false, false},     {20, 11, "10", false, false},
            {21, 12, "41", true, true},
    };
    std::uint64_t invocations = 0;
    for (const Row& row : rows) {
        CAPTURE(row.event);
        const AlyaEvent e = alya(row.event);
        ppc.event(e.id, e.starts_gram);
        CHECK(ppc.ppa.grams() == row.grams);
        CHECK(ppc.current() == row.current);
        CHECK((ppc.ppa.ppa_invocations() > invocations) == row.ppa_ran);
        CHECK(ppc.active == row.prediction);
        invocations = ppc.ppa.ppa_invocations();
    }
    CHECK(ppc.array() == "[41-41-41,10,10,41-41-41,10,10,41-41-41,10,10,41-41-41,10,10]");

    // Panel (c): event, pattern, frequency, positions, number of MPI calls.
    CHECK(ppc.insertions == std::vector<std::string>{
                                    "9 41-41-41_10 f=1 pos 0 calls=4",
                                    "11 10_10 f=1 pos 1 calls=2",
                                    "13 10_41-41-41 f=1 pos 2 calls=4",
                                    "15 41-41-41_10 f=2 pos 0 3 calls=4",
                                    "17 41-41-41_10_10 f=1 pos 3 calls=5",
                                    "17 41-41-41_10_10 f=2 pos 3 6 calls=5",
                                    "21 41-41-41_10_10 f=3 pos 3 6 9 calls=5",
                            });
    CHECK(ppc.removed.empty());

    // Panel (d): 41-41-41_10_10 predicted from position 12, i.e. the gram in
    // progress (position 12) is the pattern's first gram; idle intervals are
    // the latest t1, t2, t3.
    REQUIRE(ppc.activation);
    CHECK(ppc.ppa.pattern_string(ppc.activation->entry) == "41-41-41_10_10");
    CHECK(ppc.activation->size == 3);
    CHECK(ppc.activation->index == 0);
    CHECK_FALSE(ppc.activation->reactivated);
    CHECK(ppc.activation->idles[0] == kLong);
    CHECK(ppc.ppa.was_used(ppc.activation->entry));
    CHECK(ppc.ppa.max_pattern_size() == 3);  // line 24: maxPatternSize = patSize
}

TEST_CASE("a pattern of single-event grams is found after three back-to-back occurrences",
          "[predict]")
{
    // FFT-like: two all-to-alls and an allreduce per iteration, each alone.
    Ppc ppc;
    const EventId iteration[] = {70, 70, 10};
    int n                     = 0;
    while (!ppc.active && n < 100) {
        ppc.event(iteration[n % 3], true);
        ++n;
    }
    REQUIRE(ppc.active);
    CHECK(ppc.ppa.pattern_string(ppc.activation->entry) == "70_70_10");
    // Three occurrences need nine completed grams, i.e. a tenth event.
    CHECK(n <= 16);
    // The gram in progress is where the pattern says it is.
    const EventId next_expected = iteration[(n - 1) % 3];
    CHECK(ppc.table.events(ppc.activation->grams[ppc.activation->index])[0] == next_expected);
}

TEST_CASE("a previously used pattern is reactivated when it is seen once more", "[predict]")
{
    Ppc ppc;
    const EventId iteration[] = {41, 10, 10};
    int n                     = 0;
    for (; n < 30; ++n) {
        ppc.event(iteration[n % 3], true);
    }
    REQUIRE(ppc.active);
    const std::string used = ppc.ppa.pattern_string(ppc.activation->entry);

    // Algorithm 4 would report a mismatch here: noise, then the pattern again.
    ppc.active = false;
    ppc.activation.reset();
    ppc.ppa.prediction_ended();
    for (const EventId noise : {5u, 6u, 7u}) {
        ppc.event(noise, true);
    }
    ppc.event(iteration[n++ % 3], true);
    const std::uint64_t clean_from = ppc.ppa.grams();  // the gram in progress is clean
    while (!ppc.active && n < 100) {
        ppc.event(iteration[n++ % 3], true);
    }
    REQUIRE(ppc.active);
    CHECK(ppc.activation->reactivated);
    CHECK(ppc.ppa.pattern_string(ppc.activation->entry) == used);
    // Three new back-to-back occurrences would take nine complete grams.
    CHECK(ppc.ppa.grams() - clean_from < 9);
}

TEST_CASE("a grown pattern that recurs neither earlier nor back to back is removed", "[predict]")
{
    // A B is known (seen at 0), then A B C: the tri-gram A_B_C never occurred
    // before and is not followed by itself.
    Ppc ppc;
    for (const EventId id : {1u, 2u, 3u, 4u, 1u, 2u, 5u, 6u, 7u, 8u, 9u, 10u, 11u, 12u, 13u, 14u}) {
        ppc.event(id, true);
    }
    CHECK_FALSE(ppc.active);
    CHECK(std::find(ppc.removed.begin(), ppc.removed.end(), "1_2_5") != ppc.removed.end());
    CHECK(ppc.ppa.current_pattern_size() == 2);
}

TEST_CASE("the pattern list stays within its capacity and keeps finding patterns", "[predict]")
{
    PatternPredictorConfig config;
    config.pattern_capacity = 16;
    config.gram_capacity    = 256;
    config.max_pattern_size = 8;
    Ppc ppc(config);
    // Pseudo-random grams fill the list many times over...
    std::uint32_t x = 1;
    for (int n = 0; n < 5000; ++n) {
        x = x * 1103515245u + 12345u;
        ppc.event(100 + (x >> 16) % 50, true);
        REQUIRE(ppc.ppa.patterns() <= 16);
    }
    CHECK_FALSE(ppc.removed.empty());
    // ...and a regular pattern is still found afterwards.
    for (int n = 0; n < 60 && !ppc.active; ++n) {
        ppc.event(n % 2 ? 10 : 41, true);
    }
    CHECK(ppc.active);
}

TEST_CASE("memory of the pattern predictor does not depend on the events it saw", "[predict]")
{
    Ppc ppc;
    const std::size_t before = ppc.ppa.memory_bytes();
    std::uint32_t x          = 7;
    for (int n = 0; n < 20000; ++n) {
        x = x * 1103515245u + 12345u;
        ppc.event((x >> 16) % 7, (x >> 8) % 3 != 0);
    }
    CHECK(ppc.ppa.memory_bytes() == before);
}

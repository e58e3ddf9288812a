// SPDX-License-Identifier: BSD-3-Clause
// Algorithm 4 (thesis §5.2.4): the Power Mode Control Component.
#include "predict/power_mode_control.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using slim::predict::EventId;
using slim::predict::GramId;
using slim::predict::GramTable;
using slim::predict::idle_equal;
using slim::predict::LowPowerRequest;
using slim::predict::PartialGram;
using slim::predict::PmccConfig;
using slim::predict::PowerModeControl;
using slim::predict::predicted_idle;
using slim::predict::TimeNs;

namespace {

GramId intern(GramTable& table, const std::vector<EventId>& ids)
{
    std::uint64_t h = slim::predict::kSequenceSeed;
    for (const EventId id : ids) {
        h = slim::predict::hash_append(h, id);
    }
    return table.intern(h, ids.data(), ids.size(), static_cast<std::uint32_t>(ids.size()));
}

// The Alya pattern 41-41-41_10_10 with t1 = 1 ms, t2 = 200 us, t3 = 2 ms.
struct Alya {
    Alya() : table(16, 8), pmcc(table, PmccConfig{})
    {
        const GramId a = intern(table, {41, 41, 41});
        const GramId b = intern(table, {10});
        grams          = {a, b, b};
    }

    // Starts following the pattern with `first` as the gram in progress.
    void start(std::size_t index, std::vector<EventId> first, TimeNs end)
    {
        partial      = first;
        const auto r = pmcc.activate(grams.data(), idles.data(), grams.size(), index,
                                     PartialGram{partial.data(), partial.size(),
                                                 static_cast<std::uint32_t>(partial.size())},
                                     end);
        REQUIRE_FALSE(r.mismatch);
    }

    GramTable table;
    PowerModeControl pmcc;
    std::vector<GramId> grams;
    std::vector<TimeNs> idles{1'000'000, 200'000, 2'000'000};
    std::vector<EventId> partial;
};

}  // namespace

TEST_CASE("Algorithm 4 takes the displacement share and the reactivation time off the idle time",
          "[predict]")
{
    // idle 1 ms, displacement 5 %, T_react 10 us: 1000 - (50 + 10) = 940 us.
    CHECK(predicted_idle(1'000'000, 0.05, 10'000) == 940'000);
    CHECK(predicted_idle(1'000'000, 0.0, 0) == 1'000'000);
    CHECK(predicted_idle(1'000'000, 1.0, 0) == 0);
    CHECK(predicted_idle(10'000, 0.05, 10'000) == -500);
}

TEST_CASE("a gram that reaches its predicted length and matches asks for low power from its end",
          "[predict]")
{
    Alya alya;
    alya.start(0, {41}, 100);
    CHECK(alya.pmcc.active());

    auto r = alya.pmcc.on_event(41, false, 0, 200);
    CHECK_FALSE(r.mismatch);
    CHECK_FALSE(r.low_power);  // 2 of 3 events: not complete yet

    r = alya.pmcc.on_event(41, false, 0, 300);
    CHECK_FALSE(r.mismatch);
    REQUIRE(r.low_power);
    CHECK(r.low_power->from_ns == 300);
    CHECK(r.low_power->until_ns == 300 + 940'000);
    CHECK(alya.pmcc.index() == 1);

    // 10 after the long idle: complete at once; t2 = 200 us -> 180 us.
    r = alya.pmcc.on_event(10, true, 1'000'000, 1'000'400);
    CHECK_FALSE(r.mismatch);
    REQUIRE(r.low_power);
    CHECK(r.low_power->from_ns == 1'000'400);
    CHECK(r.low_power->until_ns == 1'000'400 + 180'000);
    CHECK(alya.pmcc.index() == 2);
}

TEST_CASE("no low power is asked for when the predicted idle time is not positive", "[predict]")
{
    Alya alya;
    alya.idles[1] = 10'000;  // 10 us - (0.5 us + 10 us) < 0
    alya.start(1, {10}, 500);
    CHECK(alya.pmcc.active());
    CHECK(alya.pmcc.index() == 2);  // the gram in progress matched already
    const auto r = alya.pmcc.on_event(10, true, 10'000, 600);
    CHECK_FALSE(r.mismatch);
    REQUIRE(r.low_power);  // t3 = 2 ms
}

TEST_CASE("a misprediction switches the prediction off", "[predict]")
{
    Alya alya;
    SECTION("a different event in the gram")
    {
        alya.start(0, {41}, 100);
        CHECK(alya.pmcc.on_event(10, false, 0, 200).mismatch);
    }
    SECTION("a different event starting the gram")
    {
        alya.start(1, {10}, 100);
        CHECK(alya.pmcc.on_event(41, true, 200'000, 200'200).mismatch);
    }
    SECTION("the gram ends before its predicted length")
    {
        alya.start(0, {41}, 100);
        CHECK(alya.pmcc.on_event(10, true, 1'000'000, 1'000'100).mismatch);
    }
    SECTION("the gram goes on past its predicted length")
    {
        alya.start(1, {10}, 100);
        CHECK(alya.pmcc.on_event(10, false, 2'000, 2'200).mismatch);
    }
    CHECK_FALSE(alya.pmcc.active());
    // Off is off: later events are ignored.
    CHECK_FALSE(alya.pmcc.on_event(41, true, 1'000'000, 3'000'000).mismatch);
}

TEST_CASE("activation checks the events already in the gram in progress", "[predict]")
{
    Alya alya;
    std::vector<EventId> wrong{41, 10};
    const auto r = alya.pmcc.activate(alya.grams.data(), alya.idles.data(), 3, 0,
                                      PartialGram{wrong.data(), wrong.size(), 2}, 100);
    CHECK(r.mismatch);
    CHECK_FALSE(alya.pmcc.active());

    // Complete already: the request is made at once, from the end given.
    std::vector<EventId> whole{41, 41, 41};
    const auto done = alya.pmcc.activate(alya.grams.data(), alya.idles.data(), 3, 0,
                                         PartialGram{whole.data(), whole.size(), 3}, 700);
    CHECK_FALSE(done.mismatch);
    REQUIRE(done.low_power);
    CHECK(done.low_power->from_ns == 700);
}

TEST_CASE("the idle intervals of the predicted pattern follow their latest values", "[predict]")
{
    Alya alya;
    alya.start(1, {10}, 0);                                             // gram 1 done, t2 requested
    REQUIRE(alya.pmcc.on_event(10, true, 210'000, 210'100).low_power);  // t2 seen: 210 us
    REQUIRE(alya.pmcc.on_event(41, true, 1'500'000, 2'000'000).low_power == std::nullopt);
    CHECK(alya.pmcc.idle(2) == 1'500'000);  // t3 was 2 ms, now 1.5 ms
    CHECK(alya.pmcc.idle(1) == 210'000);
    alya.pmcc.on_event(41, false, 1'000, 2'002'000);
    alya.pmcc.on_event(41, false, 1'000, 2'004'000);  // t1 requested
    alya.pmcc.on_event(10, true, 1'000'000, 3'004'000);
    // Gram 2 again: the request uses t3 = 1.5 ms, not the 2 ms of activation.
    const auto t3 = alya.pmcc.on_event(10, true, 200'000, 3'204'100);
    REQUIRE(t3.low_power);
    CHECK(t3.low_power->until_ns - t3.low_power->from_ns == 1'500'000 - 75'000 - 10'000);
    CHECK_FALSE(alya.pmcc.on_event(41, true, 1'600'000, 4'804'100).mismatch);
    // 210 vs 200 us, 1.5 vs 2 ms, 1 vs 1 ms, 200 vs 210 us, 1.6 vs 1.5 ms:
    // within 10 % four times.
    CHECK(alya.pmcc.idle_matches() == 4);
}

TEST_CASE("idle intervals within the tolerance of each other count as equal", "[predict]")
{
    CHECK(idle_equal(1'000, 1'000, 0.10));
    CHECK(idle_equal(1'000, 1'100, 0.10));
    CHECK(idle_equal(1'100, 1'000, 0.10));
    CHECK_FALSE(idle_equal(1'000, 1'112, 0.10));
    CHECK_FALSE(idle_equal(1'000, 2'000, 0.10));
    CHECK(idle_equal(0, 0, 0.10));
}

// SPDX-License-Identifier: BSD-3-Clause
// The replay driver (src/predict/replay.h) on traces whose results are worked
// out by hand from the link model (default link: 4 lanes of 0.5 W, low
// width 1, tau 10 us, so 2 W at full width, in any transition, and 0.5 W
// low). The periodic trace: 1000 bursts of 100 us, 900 us idle between.
//   always-on: every gap 2 W x 900 us = 1800 uJ, the baseline.
//   oracle:    per gap 2 W x 20 us (down, up) + 0.5 W x 880 us = 480 uJ.
//   timeout:100us: per gap 200 uJ idle at full width + 20 uJ down +
//              0.5 W x 790 us + 20 uJ for the late wake-up = 635 uJ, and
//              each burst after the first waits 10 us.
//   Baseline 2 W x 999.1 ms; bursts 1000 x 200 uJ in every policy.
#include "predict/replay.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using slim::link::LinkConfig;
using slim::link::PolicyKind;
using slim::link::ReplayConfig;
using slim::link::ReplayResult;
using slim::predict::Event;
using slim::predict::EventId;
using slim::predict::TimeNs;

namespace {

std::vector<Event> periodic_trace(std::uint64_t bytes = 0, std::uint64_t packed = 0)
{
    std::vector<Event> events;
    for (TimeNs i = 0; i < 1000; ++i) {
        events.push_back(Event{i * 1'000'000, i * 1'000'000 + 100'000, 1, bytes, packed});
    }
    return events;
}

// Thesis Figure 5.3 (Alya): ids 41 41 41 10 10 repeated, 2 us each, 5 us
// idle between the 41s and 1 ms before each 10 and the next 41.
std::vector<Event> alya_trace(int repeats)
{
    std::vector<Event> events;
    TimeNs t                  = 0;
    const EventId ids[]       = {41, 41, 41, 10, 10};
    const TimeNs idle_after[] = {5'000, 5'000, 1'000'000, 1'000'000, 1'000'000};
    for (int r = 0; r < repeats; ++r) {
        for (int k = 0; k < 5; ++k) {
            events.push_back(Event{t, t + 2'000, ids[k], 0, 0});
            t += 2'000 + idle_after[k];
        }
    }
    return events;
}

ReplayConfig with_policy(PolicyKind kind)
{
    ReplayConfig c;
    c.policy.kind = kind;
    return c;
}

}  // namespace

TEST_CASE("an always-on link saves nothing and costs no time", "[replay]")
{
    const ReplayResult r = slim::link::replay(periodic_trace(), with_policy(PolicyKind::always_on));
    REQUIRE(r.energy_savings_pct);
    CHECK(*r.energy_savings_pct == Approx(0.0).margin(0.1));
    CHECK(*r.time_penalty_pct == 0.0);
    CHECK(r.late_wakeups == 0);
    CHECK(r.original_span_ns == 999'100'000);
    CHECK(r.baseline_joules == Approx(2.0 * 0.9991));
    CHECK(r.time_at_width_ns[4] == 999'100'000);
}

TEST_CASE("the oracle saves 66 % on the periodic trace and is always back in time", "[replay]")
{
    const ReplayResult r = slim::link::replay(periodic_trace(), with_policy(PolicyKind::oracle));
    REQUIRE(r.energy_savings_pct);
    CHECK(*r.energy_savings_pct == Approx(66.0).margin(0.1));
    CHECK(*r.time_penalty_pct == 0.0);
    CHECK(r.late_wakeups == 0);
    CHECK(r.energy_joules == Approx(1000 * 200e-6 + 999 * 480e-6));
    CHECK(r.time_at_width_ns[1] == 999 * 880'000);
    CHECK(r.time_in_transition_ns == 999 * 20'000);
}

TEST_CASE("the oracle leaves gaps shorter than two reactivation times alone", "[replay]")
{
    const std::vector<Event> events = {{0, 1'000, 1, 0, 0}, {20'999, 22'000, 1, 0, 0}};
    const ReplayResult r            = slim::link::replay(events, with_policy(PolicyKind::oracle));
    CHECK(r.transitions == 0);
    CHECK(*r.energy_savings_pct == Approx(0.0).margin(1e-9));
}

TEST_CASE("a 100 us timeout saves 58.2 % and pays a 10 us wake-up per burst", "[replay]")
{
    ReplayConfig c       = with_policy(PolicyKind::timeout);
    c.policy.timeout_ns  = 100'000;
    const ReplayResult r = slim::link::replay(periodic_trace(), c);
    REQUIRE(r.energy_savings_pct);
    CHECK(*r.energy_savings_pct == Approx(58.2).margin(0.1));
    CHECK(*r.time_penalty_pct == Approx(1.0).margin(0.1));
    CHECK(r.late_wakeups == 999);
    CHECK(r.delay_ns == 999 * 10'000);
    CHECK(r.wakeup_delay_ns == r.delay_ns);
    CHECK(r.energy_joules == Approx(1000 * 200e-6 + 999 * 635e-6));

    SECTION("a timeout longer than every gap never goes low")
    {
        c.policy.timeout_ns      = 900'000;
        const ReplayResult never = slim::link::replay(periodic_trace(), c);
        CHECK(never.transitions == 0);
        CHECK(*never.energy_savings_pct == Approx(0.0).margin(1e-9));
    }
}

TEST_CASE("packed bursts need only the lanes their packed bytes fill", "[replay]")
{
    // Bp/B = 0.5 on 4 lanes: width 2 keeps the recorded duration.
    const std::vector<Event> half = periodic_trace(4096, 2048);
    ReplayConfig c                = with_policy(PolicyKind::timeout);
    c.link.low_width              = 2;
    c.policy.timeout_ns           = 100'000;

    SECTION("the required width is 2")
    {
        c.packed = true;
        CHECK(slim::link::Replay(c).required_width(half.front()) == 2);
    }
    SECTION("with --packed the low width 2 carries the bursts: no wake-up, no slowdown")
    {
        c.packed             = true;
        const ReplayResult r = slim::link::replay(half, c);
        CHECK(r.late_wakeups == 0);
        CHECK(r.delay_ns == 0);
        CHECK(r.stretch_ns == 0);
        CHECK(r.replayed_span_ns == r.original_span_ns);
    }
    SECTION("without --packed every burst needs 4 lanes and waits")
    {
        const ReplayResult r = slim::link::replay(half, c);
        CHECK(r.late_wakeups == 999);
        CHECK(r.delay_ns == 999 * 10'000);
    }
    SECTION("events without sizes need the full width even with --packed")
    {
        c.packed = true;
        CHECK(slim::link::Replay(c).required_width(Event{0, 1, 1, 0, 0}) == 4);
        CHECK(slim::link::Replay(c).required_width(Event{0, 1, 1, 4096, 0}) == 4);
    }
}

TEST_CASE("PPS on the Figure 5.3 trace puts the link in low power and saves energy", "[replay]")
{
    ReplayConfig c                 = with_policy(PolicyKind::pps);
    c.policy.predictor.fixed_gt_ns = 20'000;
    slim::link::Replay driver(c);
    std::uint64_t requests = 0;
    for (const Event& e : alya_trace(40)) {
        requests += driver.on_event(e).low_power.has_value();
    }
    const ReplayResult r = driver.result();
    REQUIRE(driver.predictor() != nullptr);
    CHECK(requests == driver.predictor()->stats().predictions);
    CHECK(requests > 0);
    REQUIRE(r.energy_savings_pct);
    CHECK(*r.energy_savings_pct > 0.0);
    CHECK(r.transitions > 0);
}

TEST_CASE("an empty trace has no savings and no penalty rather than NaN", "[replay]")
{
    const ReplayResult r = slim::link::replay({}, with_policy(PolicyKind::oracle));
    CHECK(r.events == 0);
    CHECK_FALSE(r.energy_savings_pct);
    CHECK_FALSE(r.time_penalty_pct);
}

TEST_CASE("at the largest accepted times energy and baseline stay positive and exact", "[replay]")
{
    // Lanes x watts x span: 4 lanes over 2^62 ns and 12 over 2^60 ns both
    // overflow 64-bit lane-nanoseconds, which made the baseline negative.
    constexpr TimeNs max = (TimeNs{1} << 62) - 1;
    SECTION("always-on over nearly 2^62 ns: baseline = energy, 0 % saved")
    {
        const std::vector<Event> events = {Event{0, 1000, 5, 0, 0},
                                           Event{max - 1000, max, 5, 0, 0}};
        const ReplayResult r = slim::link::replay(events, with_policy(PolicyKind::always_on));
        CHECK(r.baseline_joules == Approx(2.0 * static_cast<double>(max) * 1e-9));
        CHECK(r.energy_joules == r.baseline_joules);
        REQUIRE(r.energy_savings_pct);
        CHECK(*r.energy_savings_pct == 0.0);
        REQUIRE(r.time_penalty_pct);
        CHECK(*r.time_penalty_pct == 0.0);
    }
    SECTION("the oracle over nearly 2^62 ns saves almost 75 % (1 of 4 lanes when idle)")
    {
        const std::vector<Event> events = {Event{0, 1000, 5, 0, 0},
                                           Event{max - 1000, max, 5, 0, 0}};
        const ReplayResult r = slim::link::replay(events, with_policy(PolicyKind::oracle));
        CHECK(r.energy_joules > 0.0);
        CHECK(r.energy_joules < r.baseline_joules);
        REQUIRE(r.energy_savings_pct);
        CHECK(*r.energy_savings_pct == Approx(75.0).margin(0.01));
    }
    SECTION("12 lanes of 2 W over 2^60 ns")
    {
        constexpr TimeNs span = TimeNs{1} << 60;
        ReplayConfig c        = with_policy(PolicyKind::always_on);
        c.link.lanes          = 12;
        c.link.lane_watts     = 2.0;
        const ReplayResult r =
                slim::link::replay({Event{0, 1000, 5, 0, 0}, Event{span - 1000, span, 5, 0, 0}}, c);
        CHECK(r.baseline_joules == Approx(12 * 2.0 * static_cast<double>(span) * 1e-9));
        REQUIRE(r.energy_savings_pct);
        CHECK(*r.energy_savings_pct == 0.0);
    }
}

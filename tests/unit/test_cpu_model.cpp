// SPDX-License-Identifier: BSD-3-Clause
// The emulated core: every number below is worked by hand from the model
// (cpu_model.h) with a round table: full 2 GHz at 4 W, low 1 GHz at 1 W,
// tau = 20 us, handle = 10 us. A late wake then costs tau + 10 us x
// (2 / 1 - 1) = 30 us.
#include "base/error.h"
#include "predict/cpu_model.h"

#include <catch2/catch.hpp>

#include <string>
#include <tuple>
#include <vector>

using Catch::Matchers::Contains;
using slim::cpu::account_wait;
using slim::cpu::CpuConfig;
using slim::cpu::CpuPlan;
using slim::cpu::CpuTally;
using slim::cpu::parse_cpu_config;
using slim::cpu::TimeNs;
using slim::cpu::Wait;

namespace {

constexpr TimeNs kUs = 1'000;

CpuConfig round_table() { return parse_cpu_config("f=2,P=4,f_low=1,P_low=1,tau=20us,handle=10us"); }

}  // namespace

TEST_CASE("the core model's defaults are the EPYC 7763 table")
{
    const CpuConfig c;
    CHECK(c.full.ghz == 2.45);
    CHECK(c.low.ghz == 1.5);
    CHECK(c.full.watts == 3.0);
    CHECK(c.low.watts == 1.4);
    CHECK(c.tau_ns == 20 * kUs);
    CHECK(c.handle_ns == 5 * kUs);
    CHECK(slim::cpu::format_cpu_config(c) == "f=2.45,P=3,f_low=1.5,P_low=1.4,tau=20us,handle=5us");
}

TEST_CASE("a cpu spec sets any subset of the table, in any order")
{
    const CpuConfig c = round_table();
    CHECK(c.full.ghz == 2.0);
    CHECK(c.full.watts == 4.0);
    CHECK(c.low.ghz == 1.0);
    CHECK(c.low.watts == 1.0);
    CHECK(c.tau_ns == 20 * kUs);
    CHECK(c.handle_ns == 10 * kUs);
    const CpuConfig d = parse_cpu_config(" tau=1ms , P_low=0");
    CHECK(d.tau_ns == 1'000'000);
    CHECK(d.low.watts == 0.0);
    CHECK(d.full.ghz == 2.45);
    // f_low is checked against f whichever comes first.
    CHECK(parse_cpu_config("f_low=3,f=3.5").low.ghz == 3.0);
    CHECK(parse_cpu_config("").tau_ns == CpuConfig{}.tau_ns);
}

TEST_CASE("a cpu spec refuses unknown keys and values out of range, naming what it accepts")
{
    CHECK_THROWS_WITH(parse_cpu_config("freq=2"),
                      Contains("'freq' is unknown") &&
                              Contains("f, P, f_low, P_low, tau and handle"));
    CHECK_THROWS_WITH(parse_cpu_config("f"), Contains("expected key=value"));
    CHECK_THROWS_WITH(parse_cpu_config("f=2,f=3"), Contains("more than once"));
    CHECK_THROWS_WITH(parse_cpu_config("f=0"),
                      Contains("f='0'") && Contains("greater than 0 and at most 10 (GHz)"));
    CHECK_THROWS_WITH(parse_cpu_config("f=11"), Contains("at most 10"));
    CHECK_THROWS_WITH(parse_cpu_config("P=-1"), Contains("at most 100 (watts per core)"));
    CHECK_THROWS_WITH(parse_cpu_config("f=2,f_low=2.5"), Contains("at most f = 2 (GHz)"));
    CHECK_THROWS_WITH(parse_cpu_config("P=2,P_low=3"), Contains("from 0 to P = 2"));
    // The default low state above a lowered full one.
    CHECK_THROWS_WITH(parse_cpu_config("f=1"),
                      Contains("f_low='1.5'") && Contains("give f_low too"));
    CHECK_THROWS_WITH(parse_cpu_config("P=1"), Contains("P_low='1.4'"));
    CHECK_THROWS_WITH(parse_cpu_config("tau=1s"), Contains("tau='1s'") && Contains("100ms"));
    CHECK_THROWS_WITH(parse_cpu_config("handle=x"), Contains("handle='x'"));
    CHECK_THROWS_AS(parse_cpu_config("tau=-1us"), slim::Error);
}

TEST_CASE("a wait with no plan stays at full")
{
    const CpuTally t = account_wait(round_table(), Wait{0, 100 * kUs}, CpuPlan{});
    CHECK(t.waits == 1);
    CHECK(t.wait_ns == 100 * kUs);
    CHECK(t.low_ns == 0);
    CHECK(t.transitions == 0);
    CHECK(t.penalty_ns == 0);
}

TEST_CASE("an arrival that finds the core low pays tau and the slow handling")
{
    // Down at 50 us, low from 70 us to the arrival at 2 ms.
    CpuPlan plan;
    plan.low_from    = 50 * kUs;
    const CpuTally t = account_wait(round_table(), Wait{0, 2000 * kUs}, plan);
    CHECK(t.low_ns == 1930 * kUs);
    CHECK(t.transitions == 2);
    CHECK(t.transition_ns == 40 * kUs);
    CHECK(t.late_wakes == 1);
    CHECK(t.penalty_ns == 30 * kUs);
}

TEST_CASE("an arrival during the way down pays its rest, the way up and the slow handling")
{
    // Down at 50 us ends at 70 us; the arrival at 60 us waits 10 + 20 + 10 us.
    CpuPlan plan;
    plan.low_from    = 50 * kUs;
    const CpuTally t = account_wait(round_table(), Wait{0, 60 * kUs}, plan);
    CHECK(t.low_ns == 0);
    CHECK(t.transitions == 2);
    CHECK(t.transition_ns == 40 * kUs);
    CHECK(t.late_wakes == 1);
    CHECK(t.penalty_ns == 40 * kUs);
}

TEST_CASE("an arrival during the way up waits for its rest only")
{
    // Low [20, 90] us, up [90, 110] us, the arrival at 100 us waits 10 us.
    CpuPlan plan;
    plan.low_from    = 0;
    plan.low_until   = 90 * kUs;
    const CpuTally t = account_wait(round_table(), Wait{0, 100 * kUs}, plan);
    CHECK(t.low_ns == 70 * kUs);
    CHECK(t.transitions == 2);
    CHECK(t.late_wakes == 1);
    CHECK(t.penalty_ns == 10 * kUs);
}

TEST_CASE(
        "a window that closes before the arrival costs nothing, and a second low period can follow")
{
    // Low [20, 40] us, up [40, 60] us, down again at 100 us, low [120, 300]
    // us, the arrival at 300 us finds it low: 30 us.
    CpuPlan plan;
    plan.low_from    = 0;
    plan.low_until   = 40 * kUs;
    plan.again_at    = 100 * kUs;
    const CpuTally t = account_wait(round_table(), Wait{0, 300 * kUs}, plan);
    CHECK(t.low_ns == 200 * kUs);
    CHECK(t.transitions == 4);
    CHECK(t.transition_ns == 80 * kUs);
    CHECK(t.late_wakes == 1);
    CHECK(t.penalty_ns == 30 * kUs);

    plan.again_at.reset();
    const CpuTally once = account_wait(round_table(), Wait{0, 300 * kUs}, plan);
    CHECK(once.low_ns == 20 * kUs);
    CHECK(once.transitions == 2);
    CHECK(once.penalty_ns == 0);
}

TEST_CASE("the periods away from full are the ones the tallies above count")
{
    using State        = slim::cpu::CorePeriod::State;
    using Period       = std::tuple<TimeNs, TimeNs, State>;
    const auto periods = [](const Wait& wait, const CpuPlan& plan) {
        std::vector<slim::cpu::CorePeriod> got;
        const CpuTally t = account_wait(round_table(), wait, plan, got);
        // The same tally as without the list.
        const CpuTally plain = account_wait(round_table(), wait, plan);
        CHECK(t.low_ns == plain.low_ns);
        CHECK(t.transitions == plain.transitions);
        CHECK(t.penalty_ns == plain.penalty_ns);
        std::vector<Period> out;
        for (const slim::cpu::CorePeriod& p : got) {
            out.emplace_back(p.from_ns / kUs, p.to_ns / kUs, p.state);
        }
        return out;
    };
    CHECK(periods(Wait{0, 100 * kUs}, CpuPlan{}).empty());
    CpuPlan plan;
    plan.low_from = 50 * kUs;
    // The arrival at 2 ms finds it low; up after it.
    CHECK(periods(Wait{0, 2000 * kUs}, plan) == std::vector<Period>{{50, 70, State::down},
                                                                    {70, 2000, State::low},
                                                                    {2000, 2020, State::up}});
    // The arrival at 60 us, on the way down: down to its end, then up.
    CHECK(periods(Wait{0, 60 * kUs}, plan) ==
          std::vector<Period>{{50, 70, State::down}, {70, 90, State::up}});
    plan.low_from  = 0;
    plan.low_until = 40 * kUs;
    plan.again_at  = 100 * kUs;
    CHECK(periods(Wait{0, 300 * kUs}, plan) == std::vector<Period>{{0, 20, State::down},
                                                                   {20, 40, State::low},
                                                                   {40, 60, State::up},
                                                                   {100, 120, State::down},
                                                                   {120, 300, State::low},
                                                                   {300, 320, State::up}});
    CHECK(std::string(slim::cpu::to_string(State::low)) == "low");
}

TEST_CASE("the rank's result: saved energy against always at full, and the penalty")
{
    // 1.48 ms low and one 30 us late wake over a 5 ms rank with 2.14 ms of
    // waits: saved (4 - 1) W x 1.48 ms - 4 W x 30 us = 4.32 mJ of 20 mJ.
    CpuTally t;
    t.waits                      = 3;
    t.wait_ns                    = 2140 * kUs;
    t.low_ns                     = 1480 * kUs;
    t.transitions                = 2;
    t.penalty_ns                 = 30 * kUs;
    const slim::cpu::CpuResult r = slim::cpu::cpu_result(round_table(), t, 5000 * kUs);
    CHECK(r.baseline_joules == Approx(20e-3));
    CHECK(r.wait_joules == Approx(8.56e-3));
    CHECK(r.saved_joules == Approx(4.32e-3));
    CHECK(r.energy_joules == Approx(15.68e-3));
    CHECK(r.transition_joules == Approx(0.16e-3));
    CHECK(*r.saved_pct == Approx(21.6));
    CHECK(*r.saved_of_waits_pct == Approx(100.0 * 4.32 / 8.56));
    CHECK(*r.penalty_pct == Approx(0.6));

    const slim::cpu::CpuResult empty = slim::cpu::cpu_result(round_table(), CpuTally{}, 0);
    CHECK_FALSE(empty.saved_pct);
    CHECK_FALSE(empty.saved_of_waits_pct);
    CHECK_FALSE(empty.penalty_pct);
}

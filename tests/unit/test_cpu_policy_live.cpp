// SPDX-License-Identifier: BSD-3-Clause
// The core's policies planning a wait from its start and accounting it once
// it ended (what a live loop does) against the replay's on_wait(), which
// sees each whole wait: the same plans, so the same tally, for every policy
// that may run live.
#include "base/error.h"
#include "predict/cpu_policy.h"
#include "predict/policy_registry.h"

#include <catch2/catch.hpp>

#include <vector>

using slim::cpu::CpuConfig;
using slim::cpu::CpuPolicy;
using slim::cpu::CpuResult;
using slim::cpu::CpuTally;
using slim::cpu::TimeNs;
using slim::cpu::Wait;
using slim::link::replay_policy;

namespace {

constexpr TimeNs kUs = 1'000;

// A hand-made rank: compute phases of 200-400 us ending in a message (two
// kinds), each followed by a wait of 30 us, 600 us or 1.5 ms, in a pattern
// that repeats with a period of 5 steps (so the predictors have something
// to learn and the adaptive policy switches on the way).
struct Rank {
    std::vector<Wait> waits;
    std::vector<slim::predict::Event> events;
    TimeNs end = 0;
};

Rank hand_made_rank()
{
    Rank r;
    TimeNs t                  = 0;
    const TimeNs compute[5]   = {300 * kUs, 200 * kUs, 400 * kUs, 300 * kUs, 250 * kUs};
    const TimeNs waiting[5]   = {1500 * kUs, 30 * kUs, 600 * kUs, 1500 * kUs, 30 * kUs};
    const std::uint64_t id[5] = {1, 2, 1, 1, 2};
    for (int i = 0; i < 300; ++i) {
        t += compute[i % 5];
        slim::predict::Event e;
        e.start_ns = t - 10 * kUs;
        e.end_ns   = t;
        e.id       = id[i % 5];
        e.bytes    = id[i % 5] == 1 ? 65536 : 8;
        r.events.push_back(e);
        r.waits.push_back({t, t + waiting[i % 5]});
        t += waiting[i % 5];
    }
    r.end = t;
    return r;
}

void check_same(const CpuTally& a, const CpuTally& b)
{
    CHECK(a.waits == b.waits);
    CHECK(a.wait_ns == b.wait_ns);
    CHECK(a.low_ns == b.low_ns);
    CHECK(a.transition_ns == b.transition_ns);
    CHECK(a.transitions == b.transitions);
    CHECK(a.late_wakes == b.late_wakes);
    CHECK(a.penalty_ns == b.penalty_ns);
}

}  // namespace

TEST_CASE("planned from the wait's start and accounted at its end, every live policy tallies as "
          "the replay")
{
    const Rank rank = hand_made_rank();
    const CpuConfig c;
    for (const char *name : {"always-on", "timeout:500us", "timeout:0ns", "pps", "spps", "adaptive",
                             "context:2", "runs:2"}) {
        CAPTURE(name);
        CpuPolicy replayed(replay_policy(name), c);
        const CpuResult r =
                slim::cpu::replay_waits(rank.waits, rank.events, 0, rank.end, c, replayed);

        // What the live loop does: the plan from the start and what came
        // before (the same `busy_start` and `before` as replay_waits), the
        // end only afterwards.
        CpuPolicy live(replay_policy(name), c);
        CpuTally tally;
        TimeNs busy_start = 0;
        std::size_t next  = 0;
        for (const Wait& w : rank.waits) {
            while (next < rank.events.size() && rank.events[next].start_ns < w.start_ns) {
                ++next;
            }
            const slim::predict::Event *before = next > 0 ? &rank.events[next - 1] : nullptr;
            const slim::cpu::CpuPlan plan      = live.plan(w.start_ns, busy_start, before);
            tally += slim::cpu::account_wait(c, w, plan);
            live.account(w);
            busy_start = w.end_ns;
        }
        check_same(tally, r.tally);
        if (replayed.adaptive()) {
            REQUIRE(live.adaptive());
            CHECK(live.adaptive()->in_force().name() == replayed.adaptive()->in_force().name());
            CHECK(live.adaptive()->switches() == replayed.adaptive()->switches());
        }
    }
}

TEST_CASE("the hand-made rank: the live policies lower and the adaptive one switches")
{
    // Not a vacuous equality: the timeout lowers in every long wait and the
    // adaptive policy changes candidate at least once.
    const Rank rank = hand_made_rank();
    const CpuConfig c;
    CpuPolicy timeout(replay_policy("timeout:500us"), c);
    const CpuResult t = slim::cpu::replay_waits(rank.waits, rank.events, 0, rank.end, c, timeout);
    CHECK(t.tally.low_ns > 0);
    CHECK(t.tally.transitions == 2 * 180);  // the 1.5 ms and 600 us waits, down and up
    CpuPolicy adaptive(replay_policy("adaptive"), c);
    slim::cpu::replay_waits(rank.waits, rank.events, 0, rank.end, c, adaptive);
    REQUIRE(adaptive.adaptive());
    CHECK(adaptive.adaptive()->switches() > 0);
}

TEST_CASE("the oracle cannot plan a wait from its start")
{
    CpuPolicy oracle(replay_policy("oracle"), CpuConfig{});
    CHECK_FALSE(CpuPolicy::plans_from_start(replay_policy("oracle")));
    CHECK(CpuPolicy::plans_from_start(replay_policy("adaptive")));
    CHECK_THROWS_AS(oracle.plan(0, 0), slim::Error);
    // A replay still runs it.
    const slim::cpu::CpuPlan p = oracle.on_wait({0, 1'000'000}, 0);
    CHECK(p.low_from);
}

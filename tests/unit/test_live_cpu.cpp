// SPDX-License-Identifier: BSD-3-Clause
// The live loop's CPU side on a manual clock: a wait planned at its start,
// the cores asked low at the plan's time and back to full at the wait's
// end, nothing asked for a wait that ended first; the same through the
// ring and the drain, which replays the plan's time as a deadline.
#include "base/error.h"
#include "live/live_drain.h"
#include "live/live_loop.h"
#include "live/op_log.h"
#include "predict/policy_registry.h"

#include <catch2/catch.hpp>

#include <optional>
#include <utility>
#include <vector>

using slim::live::TimeNs;

namespace {

constexpr TimeNs kUs = 1'000;
constexpr TimeNs kMs = 1'000'000;

// What the loop asked: (low, the loop's time).
using Requests = std::vector<std::pair<bool, TimeNs>>;

slim::live::LiveConfig cpu_loop(const slim::link::Clock& clock, Requests *requests,
                                const char *policy = "timeout:500us")
{
    slim::live::LiveConfig c;
    c.policy        = slim::link::live_policy("off");
    c.backend.clock = clock;
    c.cpu.enabled   = true;
    c.cpu.policy    = slim::link::replay_policy(policy);
    if (requests != nullptr) {
        c.cpu.request = [requests](bool low, TimeNs t) {
            requests->emplace_back(low, t);
            return true;
        };
    }
    return c;
}

// A live loop with its CPU side, fed through a ring and drained on a
// replayed clock, as the recording runs it.
struct DrainedLoop {
    TimeNs replay_now = 0;
    TimeNs wall       = 0;
    Requests asked;
    slim::live::LiveConfig config =
            cpu_loop(slim::live::LiveDrain::replay_clock(replay_now), &asked);
    slim::live::LiveLoop loop{config};
    slim::live::OpLog log{16, 64, config.burst_gap_ns};
    slim::live::SerialOpRing& ring = *log.open_serial();
    slim::live::LiveDrain drain{log, loop, replay_now, [this] { return wall; }};
};

}  // namespace

TEST_CASE("the live loop asks the cores low at the plan's time and full at the wait's end")
{
    TimeNs now = 10 * kMs;
    Requests asked;
    slim::live::LiveLoop loop(cpu_loop([&now] { return now; }, &asked));
    slim::live::Traffic t;
    t.wire_bytes = t.orig_bytes = 64;
    loop.on_traffic(t);

    // A 2 ms wait: low 500 us in, full at its end.
    const TimeNs start = 10 * kMs + 100 * kUs;
    now                = start;
    loop.wait_begin(start);
    REQUIRE(loop.next_deadline());
    CHECK(*loop.next_deadline() <= start + 500 * kUs);
    now = start + 400 * kUs;
    loop.poll();
    CHECK(asked.empty());
    CHECK(loop.cpu_request_deadline() == start + 500 * kUs);
    now = start + 500 * kUs;
    loop.poll();
    REQUIRE(asked.size() == 1);
    CHECK(asked[0] == std::make_pair(true, start + 500 * kUs));
    CHECK_FALSE(loop.cpu_request_deadline());
    CHECK(loop.cpu_asked_low());  // the drain comes back soon for the raise
    now = start + 2 * kMs;
    loop.wait_end(start + 2 * kMs, 0, 0);
    REQUIRE(asked.size() == 2);
    CHECK(asked[1] == std::make_pair(false, start + 2 * kMs));
    CHECK_FALSE(loop.cpu_asked_low());

    // A 300 us wait ends before its deadline: nothing is asked.
    now = start + 3 * kMs;
    loop.on_traffic(t);
    const TimeNs short_start = start + 3 * kMs + 50 * kUs;
    now                      = short_start;
    loop.wait_begin(short_start);
    now = short_start + 300 * kUs;
    loop.poll();
    loop.wait_end(short_start + 300 * kUs, 0, 0);
    CHECK(asked.size() == 2);
    CHECK_FALSE(loop.cpu_request_deadline());

    now                             = 20 * kMs;
    const slim::live::LiveSummary s = loop.summary(true);
    CHECK(asked.size() == 2);  // not low at the end: nothing more
    REQUIRE(s.cpu_live);
    const slim::live::LiveCpuSummary& c = *s.cpu_live;
    CHECK(c.policy == "timeout 500us");
    CHECK(c.requests_enabled);
    CHECK(c.requests_low == 1);
    CHECK(c.requests_full == 1);
    CHECK(c.requests_unsent == 0);
    CHECK(c.waits_lowered == 1);
    // The model of the same plans: low from 500 us + tau to the end, one
    // late wake (the raise comes at the arrival); the oracle lowers both
    // waits (each longer than 2 tau) and is back in time.
    const slim::cpu::CpuConfig core;
    CHECK(c.model.tally.waits == 2);
    CHECK(c.model.tally.low_ns == 2 * kMs - 500 * kUs - core.tau_ns);
    CHECK(c.model.tally.transitions == 2);
    CHECK(c.model.tally.late_wakes == 1);
    CHECK(c.oracle.tally.transitions == 4);
    CHECK(c.oracle.tally.late_wakes == 0);
    CHECK(c.oracle.saved_joules > c.model.saved_joules);
    CHECK(c.model.saved_joules > 0);
}

TEST_CASE("without a service the live loop plans and models the waits and asks nothing")
{
    TimeNs now = 1 * kMs;
    slim::live::LiveLoop loop(cpu_loop([&now] { return now; }, nullptr));
    loop.wait_begin(now);
    CHECK_FALSE(loop.cpu_request_deadline());  // nobody to ask: the drain need not wake
    now = 1 * kMs + 600 * kUs;
    loop.poll();
    CHECK_FALSE(loop.cpu_asked_low());
    loop.wait_end(3 * kMs, 0, 0);
    const slim::live::LiveSummary s = loop.summary(true);
    REQUIRE(s.cpu_live);
    CHECK_FALSE(s.cpu_live->requests_enabled);
    CHECK(s.cpu_live->requests_low == 0);
    CHECK(s.cpu_live->waits_lowered == 1);
    CHECK(s.cpu_live->model.tally.low_ns > 0);
}

TEST_CASE("a run that ends while the cores are low raises them")
{
    TimeNs now = 1 * kMs;
    Requests asked;
    slim::live::LiveLoop loop(cpu_loop([&now] { return now; }, &asked, "timeout:0ns"));
    loop.wait_begin(now);
    loop.poll();
    REQUIRE(asked.size() == 1);
    CHECK(asked[0].first);
    now                             = 2 * kMs;
    const slim::live::LiveSummary s = loop.summary(true);
    REQUIRE(asked.size() == 2);
    CHECK(asked[1] == std::make_pair(false, 2 * kMs));
    // The wait ends there for the counts too: never more waits lowered
    // than waits.
    CHECK(s.waits == 1);
    CHECK(s.wait_ns == 1 * kMs);
    REQUIRE(s.cpu_live);
    CHECK(s.cpu_live->waits_lowered == 1);
}

TEST_CASE("a wait whose end was lost ends where the next begins, for the counts too")
{
    TimeNs now = 1 * kMs;
    Requests asked;
    slim::live::LiveLoop loop(cpu_loop([&now] { return now; }, &asked, "timeout:0ns"));
    loop.wait_begin(now);
    loop.poll();
    // Its end was dropped by a full ring: the next begin is all there is.
    now = 3 * kMs;
    loop.wait_begin(now);
    loop.poll();
    now = 4 * kMs;
    loop.wait_end(now, 0, 0);
    const slim::live::LiveSummary s = loop.summary(true);
    CHECK(s.waits == 2);
    CHECK(s.wait_ns == 3 * kMs);
    REQUIRE(s.cpu_live);
    CHECK(s.cpu_live->waits_lowered == 2);
    CHECK(s.cpu_live->waits_lowered <= s.waits);
    CHECK(s.cpu_live->requests_low == s.cpu_live->requests_full);
}

TEST_CASE("each plan tells yield mode how long into a wait the cores go low, or that they do not")
{
    // UCX_SLIM_WAIT=yield blocks a wait from the latest plan's low time
    // on (slim_wait.c): a timeout plans low that long after the start,
    // always-on never.
    for (const auto& [policy, expected] :
         {std::pair<const char *, std::optional<TimeNs>>{"timeout:200us", 200 * kUs},
          {"timeout:0ns", TimeNs{0}},
          {"always-on", std::nullopt}}) {
        INFO(policy);
        TimeNs now                 = 1 * kMs;
        slim::live::LiveConfig c   = cpu_loop([&now] { return now; }, nullptr, policy);
        int told                   = 0;
        std::optional<TimeNs> last = 12345;
        c.cpu.publish_low_after    = [&](std::optional<TimeNs> after) {
            ++told;
            last = after;
        };
        slim::live::LiveLoop loop(c);
        loop.wait_begin(now);
        CHECK(told == 1);
        CHECK(last == expected);
        loop.wait_end(now + 1 * kMs, 0, 0);
        now += 2 * kMs;
        loop.wait_begin(now);
        CHECK(told == 2);
        CHECK(last == expected);
    }
}

TEST_CASE("the live loop refuses the oracle for the CPU")
{
    TimeNs now = 0;
    CHECK_THROWS_AS(slim::live::LiveLoop(cpu_loop([&now] { return now; }, nullptr, "oracle")),
                    slim::Error);
}

TEST_CASE("through the ring and the drain, the plan's time is replayed between a wait's begin "
          "and end")
{
    DrainedLoop d;
    const auto op = [](TimeNs t) {
        slim::live::OpRecord r;
        r.t_ns       = t;
        r.wire_bytes = r.orig_bytes = 100;
        return r;
    };
    const auto marker = [](slim::live::OpKind kind, TimeNs t) {
        slim::live::OpRecord r;
        r.kind = kind;
        r.t_ns = t;
        return r;
    };
    d.ring.record(op(1 * kMs), d.log.coalesce_ticks());
    d.ring.push_marker(marker(slim::live::OpKind::wait_begin, 1 * kMs + 10 * kUs));
    d.ring.push_marker(marker(slim::live::OpKind::wait_end, 3 * kMs + 10 * kUs));
    d.ring.record(op(3 * kMs + 11 * kUs), d.log.coalesce_ticks());
    // A short one: 200 us.
    d.ring.push_marker(marker(slim::live::OpKind::wait_begin, 3 * kMs + 100 * kUs));
    d.ring.push_marker(marker(slim::live::OpKind::wait_end, 3 * kMs + 300 * kUs));
    d.ring.record(op(3 * kMs + 301 * kUs), d.log.coalesce_ticks());

    d.wall = 5 * kMs;
    d.drain.drain();
    REQUIRE(d.asked.size() == 2);
    CHECK(d.asked[0] == std::make_pair(true, 1 * kMs + 510 * kUs));
    CHECK(d.asked[1] == std::make_pair(false, 3 * kMs + 10 * kUs));
    const slim::live::LiveSummary s = d.drain.with_loop([](auto& l) { return l.summary(true); });
    REQUIRE(s.cpu_live);
    CHECK(s.waits == 2);
    CHECK(s.cpu_live->waits_lowered == 1);
    CHECK(s.cpu_live->requests_low == 1);
    CHECK(s.cpu_live->requests_full == 1);
}

TEST_CASE("a wait's begin reaches the drain while the wait lasts, and the cores go low before "
          "its end is known")
{
    // The module hands the begin over at the wait's first timed round and
    // the end once it ended: the drain acts on the plan between the two.
    DrainedLoop d;
    slim::live::OpRecord op;
    op.t_ns       = 1 * kMs;
    op.wire_bytes = op.orig_bytes = 100;
    d.ring.record(op, d.log.coalesce_ticks());
    slim::live::OpRecord begin;
    begin.kind = slim::live::OpKind::wait_begin;
    begin.t_ns = 1 * kMs + 10 * kUs;
    d.ring.push_marker(begin);

    d.wall = 2 * kMs + 500 * kUs;
    d.drain.drain();
    REQUIRE(d.asked.size() == 1);
    CHECK(d.asked[0] == std::make_pair(true, 1 * kMs + 510 * kUs));

    // The end: 5 us of rounds before the begin's were the wait's too.
    slim::live::OpRecord end;
    end.kind       = slim::live::OpKind::wait_end;
    end.t_ns       = 3 * kMs;
    end.orig_bytes = 5 * kUs;
    d.ring.push_marker(end);
    op.t_ns = 3 * kMs + 1 * kUs;
    d.ring.record(op, d.log.coalesce_ticks());
    d.wall = 5 * kMs;
    d.drain.drain();
    REQUIRE(d.asked.size() == 2);
    CHECK(d.asked[1] == std::make_pair(false, 3 * kMs));
    const slim::live::LiveSummary s = d.drain.with_loop([](auto& l) { return l.summary(true); });
    CHECK(s.waits == 1);
    CHECK(s.wait_ns == 3 * kMs - (1 * kMs + 5 * kUs));
}

// SPDX-License-Identifier: BSD-3-Clause
// Waits, the CPU side: found in fake progress rounds on a manual clock by
// the state machine the transport runs (slim_core.h), carried through an
// interface's ring and the drain to the live loop, its trace ("w" lines)
// and its summary.
#include "live/live_drain.h"
#include "live/live_loop.h"
#include "live/op_log.h"
#include "live/op_ring.h"
#include "slim_core.h"
#include "trace/trace.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

using slim::predict::TimeNs;

namespace {

// Progress rounds as the transport reports them, each `round_ticks` long on
// a manual clock; counts the clock reads the rounds make.
struct FakeRounds {
    slim_core_wait_watch_t watch{};
    std::uint64_t now         = 1'000'000;
    std::uint64_t round_ticks = 100;
    int record                = 1;
    unsigned clock_reads      = 0;
    std::vector<slim_core_wait_t> waits;

    explicit FakeRounds(unsigned threshold) { watch.threshold = threshold; }

    // The start of a round: what ended goes to the core.
    void flush()
    {
        if (watch.closed) {
            waits.push_back(watch.ended);
            watch.closed = 0;
        }
    }
    void idle(unsigned n = 1)
    {
        for (unsigned i = 0; i < n; ++i) {
            flush();
            now += round_ticks;
            if (slim_core_wait_idle(&watch)) {
                ++clock_reads;
                slim_core_wait_timed(&watch, now);
            }
        }
    }
    void busy()
    {
        flush();
        now += round_ticks;
        slim_core_wait_busy(&watch, record);
    }
    // A timed idle round that blocks `ticks` (yield mode).
    void idle_blocking(std::uint64_t ticks)
    {
        idle();
        REQUIRE(watch.timing);
        now += ticks;
        ++clock_reads;
        slim_core_wait_blocked(&watch, now);
    }
};

std::string temp_path(const char *name)
{
    return "/tmp/slim-waits-test-" + std::to_string(::getpid()) + "-" + name;
}

slim::live::LiveConfig loop_config(const slim::link::Clock& clock, const std::string& trace = {})
{
    slim::live::LiveConfig c;
    c.policy        = slim::link::live_policy("timeout");
    c.backend.clock = clock;
    c.trace_path    = trace;
    return c;
}

}  // namespace

TEST_CASE("a run of idle rounds is a wait from its first idle round to its last")
{
    FakeRounds r(4);
    r.busy();
    r.busy();
    const std::uint64_t first_idle = r.now + r.round_ticks;
    r.idle(50);
    const std::uint64_t last_idle = r.now;
    r.busy();  // an arrival
    // Nothing is handed over in the round that ended the wait...
    CHECK(r.waits.empty());
    // ...but at the start of the next one.
    r.busy();
    REQUIRE(r.waits.size() == 1);
    // The first 4 idle rounds read no clock; each one after them does.
    CHECK(r.clock_reads == 46);
    CHECK(r.waits[0].end == last_idle);
    // The untimed rounds took as long as the timed ones: the start is the
    // first idle round's time, exactly so on this steady fake.
    CHECK(r.waits[0].start == first_idle);
    CHECK(r.waits[0].blocked == 0);
    CHECK(r.waits[0].blocks == 0);
}

TEST_CASE("a round in which the rank was preempted does not stretch the wait's start back")
{
    FakeRounds r(64);
    r.busy();
    const std::uint64_t first_idle = r.now + r.round_ticks;
    r.idle(64 + 10);
    r.now += 300'000;  // descheduled for 300 us in one timed round
    r.idle(10);
    r.busy();
    r.busy();
    REQUIRE(r.waits.size() == 1);
    // With that round, the timed rounds' mean is 15,889 ticks, and the
    // start 64 of them back would lie 1 ms before the first idle round, in
    // the work before it.
    CHECK(r.waits[0].start == first_idle);

    // Two such rounds: a round counts at most twice the shortest, so the
    // start lies at most the untimed rounds' own length further back.
    const std::uint64_t second_first_idle = r.now + r.round_ticks;
    r.idle(64 + 10);
    r.now += 300'000;
    r.idle(5);
    r.now += 200'000;
    r.idle(5);
    r.busy();
    r.busy();
    REQUIRE(r.waits.size() == 2);
    CHECK(r.waits[1].start <= second_first_idle);
    CHECK(second_first_idle - r.waits[1].start <= 64 * r.round_ticks);
}

TEST_CASE("idle rounds fewer than the threshold are no wait and read no clock")
{
    FakeRounds r(8);
    for (int i = 0; i < 100; ++i) {
        r.idle(8);  // a ping-pong's gap: never past the threshold
        r.busy();
    }
    CHECK(r.clock_reads == 0);
    CHECK(r.waits.empty());
    CHECK(r.watch.timing == 0);
}

TEST_CASE("a busy round reads no clock, and a wait that blocked counts its blocks")
{
    FakeRounds r(2);
    const std::uint64_t first_idle = r.now + r.round_ticks;
    r.idle(5);
    const unsigned reads = r.clock_reads;
    r.idle_blocking(1'000'000);  // a yield of 1 ms on this clock's ticks
    r.idle_blocking(250'000);
    r.idle(3);
    const std::uint64_t end = r.now;
    r.busy();
    CHECK(r.clock_reads == reads + 1 + 1 + 1 + 1 + 3);
    r.idle();  // the next round hands it over
    REQUIRE(r.waits.size() == 1);
    CHECK(r.waits[0].end == end);
    CHECK(r.waits[0].blocked == 1'250'000);
    CHECK(r.waits[0].blocks == 2);
    // The blocks do not stretch the untimed rounds before them.
    CHECK(r.waits[0].start == first_idle);
}

TEST_CASE("waits watched for yielding only are not handed over")
{
    FakeRounds r(2);
    r.record = 0;
    r.idle(20);
    r.busy();
    r.busy();
    CHECK(r.waits.empty());
    CHECK(r.watch.timing == 0);
}

TEST_CASE("consecutive waits are each handed over once, in order")
{
    FakeRounds r(3);
    std::vector<std::uint64_t> ends;
    for (int i = 0; i < 5; ++i) {
        r.idle(10 + 10 * i);
        ends.push_back(r.now);
        r.busy();
        r.busy();
    }
    REQUIRE(r.waits.size() == 5);
    for (std::size_t i = 0; i < ends.size(); ++i) {
        CHECK(r.waits[i].end == ends[i]);
        if (i > 0) {
            CHECK(r.waits[i].start > r.waits[i - 1].end);
        }
    }
}

TEST_CASE("the live loop counts waits and writes them to the trace as w lines")
{
    TimeNs now             = 5'000'000;
    const std::string path = temp_path("trace");
    {
        slim::live::LiveLoop loop(loop_config([&now] { return now; }, path));
        slim::live::Traffic t;
        t.wire_bytes = t.orig_bytes = 64;
        loop.on_traffic(t);
        loop.wait_begin(5'010'000);
        loop.wait_end(5'410'000, 300'000, 2);
        // A start estimated before the previous wait's end starts there.
        loop.wait_begin(5'400'000);
        loop.wait_end(5'500'000, 0, 0);
        // One that would start before the latest operation starts there.
        now = 5'600'000;
        loop.on_traffic(t);
        loop.wait_begin(5'550'000);
        loop.wait_end(5'700'000, 0, 0);
        // An end without its begin (lost to a full ring) is ignored.
        loop.wait_end(6'000'000, 0, 0);
        // The begin comes at the first timed round; the end says how far
        // the wait reached before it (the rounds that made it timed).
        loop.wait_begin(6'300'000);
        loop.wait_end(6'400'000, 0, 0, 150'000);
        // ... bounded by the previous wait's end all the same.
        loop.wait_begin(6'500'000);
        loop.wait_end(6'600'000, 0, 0, 500'000);
        now                             = 7'000'000;
        const slim::live::LiveSummary s = loop.summary(true);
        CHECK(s.waits == 5);
        CHECK(s.wait_ns == 400'000 + 90'000 + 100'000 + 250'000 + 200'000);
        CHECK(s.wait_blocked_ns == 300'000);
        CHECK(s.wait_blocks == 2);
        CHECK(s.events == 2);
        CHECK(s.trace_error.empty());
    }
    std::ifstream in(path);
    slim::predict::TraceReader reader(in, path);
    std::vector<slim::predict::Event> events;
    while (const auto e = reader.next()) {
        events.push_back(*e);
    }
    CHECK(events.size() == 2);
    const std::vector<slim::predict::Wait> waits = reader.take_waits();
    REQUIRE(waits.size() == 5);
    CHECK(waits[2].start_ns == 5'600'000);
    CHECK(waits[3].start_ns == 6'150'000);
    CHECK(waits[3].end_ns == 6'400'000);
    CHECK(waits[4].start_ns == 6'400'000);
    CHECK(waits[0].start_ns == 5'010'000);
    CHECK(waits[0].end_ns == 5'410'000);
    CHECK(waits[1].start_ns == 5'410'000);
    CHECK(waits[1].end_ns == 5'500'000);
    std::remove(path.c_str());
}

TEST_CASE("waits cross an interface's ring and the drain without touching its operations")
{
    TimeNs replay_now        = 0;
    TimeNs wall              = 0;
    slim::live::LiveConfig c = loop_config(slim::live::LiveDrain::replay_clock(replay_now));
    slim::live::LiveLoop loop(c);
    slim::live::OpLog log(16, 64, c.burst_gap_ns);
    slim::live::SerialOpRing& ring = *log.open_serial();
    slim::live::LiveDrain drain(log, loop, replay_now, [&wall] { return wall; });

    const auto op = [](TimeNs t) {
        slim::live::OpRecord r;
        r.t_ns       = t;
        r.wire_bytes = r.orig_bytes = 100;
        return r;
    };
    const auto marker = [](slim::live::OpKind kind, TimeNs t, std::uint64_t blocked = 0) {
        slim::live::OpRecord r;
        r.kind = kind;
        r.t_ns = t;
        r.peer = static_cast<std::uintptr_t>(blocked);
        return r;
    };
    // A run of three operations, a wait, and an arrival after it.
    ring.record(op(1'000'000), log.coalesce_ticks());
    ring.record(op(1'005'000), log.coalesce_ticks());
    ring.record(op(1'010'000), log.coalesce_ticks());
    ring.push_marker(marker(slim::live::OpKind::wait_begin, 1'011'000));
    ring.push_marker(marker(slim::live::OpKind::wait_end, 3'011'000, 1'500'000));
    ring.record(op(3'012'000), log.coalesce_ticks());
    const auto totals = ring.totals();
    REQUIRE(totals);
    CHECK(totals->ops == 4);  // markers count in no totals

    wall = 5'000'000;
    drain.drain();
    CHECK(drain.stats().records == 4);  // operations only
    const slim::live::LiveSummary s = drain.with_loop([](auto& l) { return l.summary(true); });
    CHECK(s.events == 2);
    CHECK(s.waits == 1);
    CHECK(s.wait_ns == 2'000'000);
    CHECK(s.wait_blocked_ns == 1'500'000);
}

// SPDX-License-Identifier: BSD-3-Clause
// The live loop on a manual clock: bursts from operations, the predictor
// driving the emulated link, and a trace that replays to the same savings.
#include "predict/policy_registry.h"
#include "predict/replay.h"
#include "live/live_loop.h"
#include "live/live_drain.h"
#include "live/op_log.h"
#include "live/op_ring.h"
#include "live/record_clock.h"
#include "trace/trace.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <vector>

using slim::live::LiveConfig;
using slim::live::LiveLoop;
using slim::live::Traffic;
using slim::predict::TimeNs;

namespace {

struct ManualClock {
    TimeNs now = 1'000'000;
    slim::link::Clock clock()
    {
        return [this] { return now; };
    }
};

LiveConfig config_for(ManualClock& clock, const char *policy, const std::string& trace = {})
{
    LiveConfig c;
    c.policy                       = slim::link::live_policy(policy);
    c.backend.clock                = clock.clock();
    c.trace_path                   = trace;
    c.policy.predictor.fixed_gt_ns = 20'000;
    // These cases time the loop's mechanisms on the 5 us gap they were
    // written for; the default (2 tau) is checked on its own below.
    c.burst_gap_ns = 5'000;
    return c;
}

Traffic op(int op_class, std::uint64_t bytes, std::uintptr_t peer)
{
    Traffic t;
    t.op_class   = op_class;
    t.wire_bytes = bytes;
    t.orig_bytes = bytes;
    t.peer       = peer;
    return t;
}

// Time passing while the application busy-polls progress (every 2 us).
void idle(LiveLoop& loop, ManualClock& clock, TimeNs ns)
{
    for (TimeNs t = 0; t < ns; t += 2'000) {
        clock.now += 2'000;
        loop.poll();
    }
}

// One "iteration" of an application: a halo exchange (two operations close
// together), a long compute phase, an allreduce-like burst, another gap.
void iteration(LiveLoop& loop, ManualClock& clock)
{
    loop.on_traffic(op(0, 4096, 1));
    clock.now += 2'000;
    loop.on_traffic(op(0, 4096, 2));
    idle(loop, clock, 400'000);  // compute
    loop.on_traffic(op(1, 8, 3));
    idle(loop, clock, 200'000);
}

// slim-replay's engine over `trace` under `policy` (with PPS's fixed
// threshold, as config_for sets it).
slim::link::ReplayResult replay_trace(const std::string& trace, const char *policy)
{
    slim::link::ReplayConfig rc;
    rc.policy = slim::link::bound_to(slim::link::live_policy(policy), rc.link);
    rc.policy.predictor.fixed_gt_ns = 20'000;
    slim::predict::TraceReader reader(trace);
    slim::link::Replay replay(rc);
    while (auto e = reader.next())
        replay.on_event(*e);
    return replay.result();
}

std::string temp_path(const char *name)
{
    return "/tmp/slim-live-test-" + std::to_string(::getpid()) + "-" + name;
}

}  // namespace

TEST_CASE("operations closer than the burst gap form one event, identified by the first")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, "off"));
    loop.on_traffic(op(0, 100, 7));
    clock.now += 1'000;
    loop.on_traffic(op(2, 50, 8));
    CHECK(loop.burst_open());
    clock.now += 6'000;
    loop.poll();
    CHECK_FALSE(loop.burst_open());
    const auto s = loop.summary(true);
    CHECK(s.events == 1);
    CHECK(s.span_ns == 7'000);  // ends when the gap was noticed
    CHECK(s.predictor == "off");
    CHECK(s.energy_savings_pct.has_value());
    CHECK(*s.energy_savings_pct == Approx(0.0).margin(1e-9));
}

TEST_CASE("a burst is named by its first send, whichever neighbour's message arrived first")
{
    const std::string path = temp_path("send-id.trace");
    ManualClock clock;
    {
        LiveLoop loop(config_for(clock, "off", path));
        Traffic received = op(5, 4096, 2);
        received.send    = false;
        loop.on_traffic(received);
        clock.now += 1'000;
        loop.on_traffic(op(0, 4096, 1));
        clock.now += 10'000;
        loop.poll();
        loop.on_traffic(received);  // a burst of receives only
        clock.now += 10'000;
        loop.poll();
        loop.summary(true);
    }
    std::ifstream in(path);
    std::string line;
    std::vector<std::uint64_t> ids;
    while (std::getline(in, line)) {
        if (line.empty() || line[0] == '#') continue;
        std::istringstream fields(line);
        std::uint64_t start = 0, end = 0, id = 0;
        fields >> start >> end >> id;
        ids.push_back(id);
    }
    std::remove(path.c_str());
    Traffic received = op(5, 4096, 2);
    received.send    = false;
    REQUIRE(ids.size() == 2);
    CHECK(ids[0] == slim::live::event_id(op(0, 4096, 1)));
    CHECK(ids[1] == slim::live::event_id(received));
}

TEST_CASE("the drain thread ends a burst a gap after its last operation, with nobody polling")
{
    // Below MPI nobody calls the transport while the application computes:
    // the drain thread closes the burst on its own schedule, dated a gap
    // after the last operation, not when it happened to look.
    TimeNs replay_now = 0;
    LiveConfig c;
    c.policy                     = slim::link::live_policy("spps");
    c.backend.clock              = slim::live::LiveDrain::replay_clock(replay_now);
    const slim::link::Clock wall = slim::link::steady_clock_ns();
    replay_now                   = wall();
    LiveLoop loop(c);
    slim::live::OpLog log(64, 64, c.burst_gap_ns);
    slim::live::OpRing& ring = log.shared();
    slim::live::LiveDrain drain(log, loop, replay_now, wall);
    drain.start();
    slim::live::OpRecord r;
    r.t_ns       = wall();
    r.wire_bytes = r.orig_bytes = 4096;
    r.peer                      = 1;
    REQUIRE(ring.push(r));
    bool closed = false;
    for (int i = 0; i < 2000 && !closed; ++i) {  // up to 2 s on a loaded machine
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        closed = drain.with_loop(
                [](LiveLoop& l) { return !l.burst_open() && l.summary(false).events == 1; });
    }
    CHECK(closed);
    drain.finish();
    const auto s = drain.with_loop([](LiveLoop& l) { return l.summary(true); });
    CHECK(s.events == 1);
    CHECK(s.span_ns == c.burst_gap_ns + 1);  // the gap, to the nanosecond
    CHECK(drain.stats().records == 1);
}

TEST_CASE("the drain writes the trace to its file within its flush period, with no exit")
{
    // A process killed by a signal never reaches the flush at exit: what
    // its trace file holds then is all there is of its run.
    const std::string path = temp_path("flush.trace");
    std::remove(path.c_str());
    ManualClock unused;
    TimeNs replay_now = 1'000'000;
    LiveConfig c      = config_for(unused, "pps", path);
    c.backend.clock   = slim::live::LiveDrain::replay_clock(replay_now);
    LiveLoop loop(c);
    REQUIRE(loop.trace_error().empty());
    slim::live::OpLog log(16, 64, c.burst_gap_ns);
    TimeNs wall = replay_now;
    const slim::live::DrainOptions options;
    slim::live::LiveDrain drain(
            log, loop, replay_now, [&wall] { return wall; }, options);
    const auto events_in_file = [&path] {
        std::ifstream in(path);
        std::string line;
        int events = 0;
        while (std::getline(in, line)) {
            events += !line.empty() && line[0] != '#';
        }
        return events;
    };
    // Operations 100 us apart: one event each (the burst gap is 5 us).
    const auto operations = [&](int n) {
        for (int i = 0; i < n; ++i) {
            slim::live::OpRecord r;
            r.t_ns       = wall;
            r.wire_bytes = r.orig_bytes = 4096;
            r.peer                      = 1;
            REQUIRE(log.shared().push(r));
            wall += 100'000;
        }
    };
    operations(10);
    wall += 1'000'000;
    drain.drain();
    wall += options.trace_flush_ns;
    drain.drain();  // an idle round, a period later
    CHECK(events_in_file() == 10);
    operations(5);
    wall += options.trace_flush_ns;
    drain.drain();
    CHECK(events_in_file() == 15);
    drain.finish();
    CHECK(drain.with_loop([](LiveLoop& l) { return l.summary(true).trace_events; }) == 15);
    CHECK(events_in_file() == 15);
    std::remove(path.c_str());
}

TEST_CASE("the drain replays recorded operations exactly as a perfectly timed loop would")
{
    // The same iterations twice: once driven directly on a manual clock that
    // polls every 2 us, once recorded into the ring and drained in one go
    // much later. Energy, events and late wake-ups agree.
    ManualClock direct_clock;
    LiveLoop direct(config_for(direct_clock, "pps"));

    TimeNs replay_now = 0;
    LiveConfig c      = config_for(direct_clock, "pps");
    c.backend.clock   = slim::live::LiveDrain::replay_clock(replay_now);
    replay_now        = direct_clock.now;
    LiveLoop drained(c);
    // Two interfaces' serial rings, as the transport records (each folds
    // operations within the burst gap into its totals), and the shared ring.
    slim::live::OpLog log(16, 1024, c.burst_gap_ns);
    slim::live::SerialOpRing& lo   = *log.open_serial();
    slim::live::SerialOpRing& eth0 = *log.open_serial();
    TimeNs wall                    = 0;
    slim::live::LiveDrain drain(log, drained, replay_now, [&wall] { return wall; });

    std::uint64_t ops = 0;
    const auto record = [&](const Traffic& t, slim::live::SerialOpRing *ring) {
        slim::live::OpRecord r;
        r.t_ns       = direct_clock.now;
        r.op_class   = static_cast<std::uint8_t>(t.op_class);
        r.wire_bytes = t.wire_bytes;
        r.orig_bytes = t.orig_bytes;
        r.peer       = t.peer;
        r.send       = t.send;
        if (ring != nullptr) {
            ring->record(r, log.coalesce_ticks());
        } else {
            REQUIRE(log.shared().push(r));
        }
        direct.on_traffic(t);
        ++ops;
    };
    for (int i = 0; i < 40; ++i) {
        Traffic received = op(0, 4096, 1);
        received.send    = false;
        record(received, &lo);
        for (int k = 0; k < 8; ++k) {  // a run: 8 sends 2 us apart
            direct_clock.now += 2'000;
            record(op(0, 4096, 2), &lo);
        }
        direct_clock.now += 1'000;
        record(op(0, 512, 4), &eth0);  // the other interface, in the same burst
        idle(direct, direct_clock, 400'000);
        record(op(1, 8, 3), i % 2 == 0 ? &eth0 : nullptr);
        idle(direct, direct_clock, 200'000);
        if (i == 20) {
            wall = direct_clock.now;  // a drain in the middle of it all
            drain.drain();
        }
    }
    // Most operations were folded, not logged.
    CHECK(lo.pushed() + eth0.pushed() < ops / 2);
    wall = direct_clock.now + 100'000;
    drain.drain();
    CHECK(drain.stats().records == ops);
    CHECK(drain.stats().late == 0);  // every record was there before its time was replayed
    const auto a = direct.summary(true);
    const auto b = drain.with_loop([](LiveLoop& l) { return l.summary(true); });
    REQUIRE(a.energy_savings_pct);
    REQUIRE(b.energy_savings_pct);
    CHECK(*a.energy_savings_pct > 10.0);
    CHECK(b.events == a.events);
    CHECK(b.predictions == a.predictions);
    CHECK(b.late_wakeups == a.late_wakeups);
    // The direct loop notices a gap at its next 2 us poll; the drain at the
    // gap itself: the same to within that poll period per event.
    CHECK(*b.energy_savings_pct == Approx(*a.energy_savings_pct).margin(0.5));
}

TEST_CASE("a record logged after the drain passed its time is taken late and counted")
{
    // A rank descheduled between an operation and its record, longer than
    // the horizon margin: the drain has replayed past the record's time by
    // then, and the loop takes it at a later time than it carries.
    ManualClock clock;
    TimeNs replay_now = clock.now;
    LiveConfig c      = config_for(clock, "pps");
    c.backend.clock   = slim::live::LiveDrain::replay_clock(replay_now);
    LiveLoop loop(c);
    slim::live::OpLog log(16, 64, c.burst_gap_ns);
    TimeNs wall = clock.now;
    slim::live::LiveDrain drain(log, loop, replay_now, [&wall] { return wall; });
    slim::live::OpRecord r;
    r.t_ns       = clock.now + 10'000;
    r.wire_bytes = r.orig_bytes = 4096;
    r.peer                      = 1;
    REQUIRE(log.shared().push(r));
    wall = clock.now + 1'000'000;
    drain.drain();
    CHECK(drain.stats().late == 0);

    // Within the burst gap of the first: on time it would have extended
    // that burst, but the drain has already ended it a gap after the first.
    r.t_ns = clock.now + 12'000;
    REQUIRE(log.shared().push(r));
    wall = clock.now + 2'000'000;
    drain.drain();
    CHECK(drain.stats().records == 2);
    CHECK(drain.stats().late == 1);
    CHECK(drain.with_loop([](LiveLoop& l) { return l.summary(false).events; }) == 2);
}

TEST_CASE("each drain round hands the injecting sender the late wake-up waits it charged")
{
    // UCX_SLIM_INJECT_DELAY: the sender waits out what the model charged,
    // so that the run's measured time can be held against the penalty.
    ManualClock clock;
    TimeNs replay_now = clock.now;
    LiveConfig c      = config_for(clock, "timeout");
    c.backend.clock   = slim::live::LiveDrain::replay_clock(replay_now);
    LiveLoop loop(c);
    slim::live::OpLog log(16, 64, c.burst_gap_ns);
    TimeNs wall = clock.now;
    std::atomic<TimeNs> owed{0};
    slim::live::DrainOptions options;
    options.publish_owed = &owed;
    slim::live::LiveDrain drain(
            log, loop, replay_now, [&wall] { return wall; }, options);
    // One operation every 600 us: the timeout lowers the link in each gap
    // and every operation after the first wakes it late.
    TimeNs t         = clock.now;
    const auto burst = [&](int n) {
        for (int i = 0; i < n; ++i, t += 600'000) {
            slim::live::OpRecord r;
            r.t_ns       = t;
            r.wire_bytes = r.orig_bytes = 4096;
            r.peer                      = 1;
            REQUIRE(log.shared().push(r));
        }
        wall = t;
        drain.drain();
        return drain.with_loop([](LiveLoop& l) { return l.summary(false); });
    };
    const auto first = burst(10);
    CHECK(first.late_wakeups >= 8);
    CHECK(owed.load() == first.wakeup_delay_ns);
    owed.store(0);  // the sender waited them out
    const auto second = burst(10);
    CHECK(second.late_wakeups >= first.late_wakeups + 9);
    CHECK(owed.load() == second.wakeup_delay_ns - first.wakeup_delay_ns);
    CHECK(owed.load() > 0);
}

TEST_CASE("a full ring drops records and counts them, and never blocks")
{
    slim::live::OpRing ring(4);
    slim::live::OpRecord r;
    for (int i = 0; i < 4; ++i) {
        REQUIRE(ring.push(r));
    }
    CHECK_FALSE(ring.push(r));
    CHECK(ring.dropped() == 1);
    slim::live::OpRecord out;
    REQUIRE(ring.pop(out));
    CHECK(ring.push(r));
    int left = 0;
    while (ring.pop(out)) {
        ++left;
    }
    CHECK(left == 4);
}

TEST_CASE("a full serial ring drops records and counts them, and never blocks")
{
    slim::live::SerialOpRing ring(4);
    slim::live::SerialRecord r;
    for (int i = 0; i < 4; ++i) {
        r.op.wire_bytes = static_cast<std::uint32_t>(i);
        REQUIRE(ring.push(r));
    }
    CHECK_FALSE(ring.push(r));
    CHECK(ring.dropped() == 1);
    REQUIRE(ring.peek() != nullptr);
    CHECK(ring.peek()->op.wire_bytes == 0);
    ring.pop();
    r.op.wire_bytes = 4;
    CHECK(ring.push(r));
    std::uint32_t expect = 1;
    while (const slim::live::SerialRecord *out = ring.peek()) {
        CHECK(out->op.wire_bytes == expect++);
        ring.pop();
    }
    CHECK(expect == 5);
    CHECK(ring.pushed() == 5);
}

TEST_CASE("a serial ring hands a producer thread's records to a consumer thread in order")
{
    // One producer, one consumer, a ring much smaller than the stream: every
    // record arrives once and in order, or is counted as dropped.
    slim::live::SerialOpRing ring(256);
    constexpr std::uint32_t kRecords = 200'000;
    std::atomic<bool> done{false};
    std::thread producer([&] {
        slim::live::SerialRecord r;
        for (std::uint32_t i = 0; i < kRecords; ++i) {
            r.op.wire_bytes = i;
            r.op.orig_bytes = ~i;
            ring.push(r);
        }
        done.store(true, std::memory_order_release);
    });
    std::uint64_t received = 0;
    std::int64_t last      = -1;
    bool intact            = true;
    for (;;) {
        const bool finished = done.load(std::memory_order_acquire);
        while (const slim::live::SerialRecord *r = ring.peek()) {
            intact = intact && static_cast<std::int64_t>(r->op.wire_bytes) > last &&
                     r->op.orig_bytes == ~r->op.wire_bytes;
            last = r->op.wire_bytes;
            ring.pop();
            ++received;
        }
        if (finished) {
            break;
        }
    }
    producer.join();
    CHECK(intact);
    CHECK(received + ring.dropped() == kRecords);
    CHECK(received > 0);
}

namespace {

slim::live::OpRecord op_at(TimeNs t, bool send = true, std::uint32_t bytes = 1)
{
    slim::live::OpRecord r;
    r.t_ns       = t;
    r.send       = send;
    r.wire_bytes = r.orig_bytes = bytes;
    return r;
}

// The log's items as "op@t" and "cont@start-end/ops", the latter followed
// by "+began-ended" when operations went in flight or completed in it.
std::vector<std::string> drain_items(slim::live::OpLog& log)
{
    std::vector<std::string> items;
    log.drain([&](const slim::live::LogItem& item) {
        if (item.kind == slim::live::LogItem::Kind::op) {
            items.push_back("op@" + std::to_string(item.op.t_ns));
        } else {
            std::string s = "cont@" + std::to_string(item.start) + "-" + std::to_string(item.end) +
                            "/" + std::to_string(item.ops);
            if (item.began != 0 || item.ended != 0) {
                s += "+" + std::to_string(item.began) + "-" + std::to_string(item.ended);
            }
            items.push_back(s);
        }
    });
    return items;
}

}  // namespace

TEST_CASE("the op log replays every ring's records oldest first, closed rings included")
{
    // A gap of 1 ns: every operation here starts a run of its own.
    slim::live::OpLog log(8, 8, 1);
    slim::live::SerialOpRing *a = log.open_serial();
    slim::live::SerialOpRing *b = log.open_serial();
    a->record(op_at(10), 1);
    a->record(op_at(40), 1);
    b->record(op_at(20), 1);
    REQUIRE(log.shared().push(op_at(30)));
    b->record(op_at(50), 1);
    log.close_serial(a);  // closed with records still in it
    CHECK(log.serial_open() == 1);

    using V = std::vector<std::string>;
    CHECK(drain_items(log) == V{"op@10", "op@20", "op@30", "op@40", "op@50"});
    // `a` is gone now; `b` goes on.
    b->record(op_at(60), 1);
    CHECK(drain_items(log) == V{"op@60"});
    for (int i = 0; i < 9; ++i) {
        b->record(op_at(70 + 2 * i), 1);
    }
    CHECK(log.dropped() == 1);
    log.close_serial(b);
    // The dropped record's operation still arrives, folded into the next.
    const V items = drain_items(log);
    CHECK(items.size() == 9);
    CHECK(items[7] == "op@84");
    CHECK(items[8] == "cont@84-86/1");
    CHECK(log.serial_open() == 0);
    CHECK(log.dropped() == 1);  // kept after the ring is freed
}

TEST_CASE("an interface logs where runs start and its first sends, and folds the rest")
{
    slim::live::OpLog log(8, 64, 20'000);
    slim::live::SerialOpRing& ring = *log.open_serial();
    // A run: a receive, then sends and receives 3 us apart, 10 in all.
    for (int i = 0; i < 10; ++i) {
        ring.record(op_at(100'000 + 3'000 * i, i % 2 == 1, 100), log.coalesce_ticks());
    }
    CHECK(ring.pushed() == 2);  // the run's start and its first send
    using V = std::vector<std::string>;
    // The run is still going on: its latest operations come from the
    // published totals.
    CHECK(drain_items(log) == V{"op@100000", "op@103000", "cont@103000-127000/8"});
    // It goes on, then a gap, and a new run starts with a send.
    ring.record(op_at(130'000, false), log.coalesce_ticks());
    ring.record(op_at(133'000, true), log.coalesce_ticks());
    ring.record(op_at(200'000, true), log.coalesce_ticks());
    CHECK(drain_items(log) == V{"cont@127000-133000/2", "op@200000"});
    const auto totals = ring.totals();
    REQUIRE(totals);
    CHECK(totals->ops == 13);
    CHECK(totals->orig == 10 * 100 + 3);
    CHECK(totals->last_t == 200'000);
}

TEST_CASE("a ring coalescing at a widened gap counts the gaps it hid")
{
    slim::live::OpLog log(8, 64, 20'000);
    slim::live::SerialOpRing& ring = *log.open_serial();
    // Coalescing at 100 us, splitting at the configured 20 us: 30 us and
    // 35 us gaps are folded but counted, 10 us ones are folded only.
    for (const TimeNs t : {100'000, 110'000, 140'000, 150'000, 185'000, 195'000}) {
        ring.record(op_at(t, false), 100'000, log.split_ticks());
    }
    ring.record(op_at(400'000, false), 100'000, log.split_ticks());  // a new run
    CHECK(ring.pushed() == 2);
    std::vector<std::uint64_t> splits;
    log.drain([&](const slim::live::LogItem& item) {
        if (item.kind == slim::live::LogItem::Kind::continuation) {
            splits.push_back(item.splits);
        }
    });
    CHECK(splits == std::vector<std::uint64_t>{2});
}

TEST_CASE("records pushed by several threads all arrive, each once")
{
    slim::live::OpRing ring(1 << 16);
    constexpr int kThreads = 4, kEach = 10'000;
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
        threads.emplace_back([&ring, t] {
            for (int i = 0; i < kEach; ++i) {
                slim::live::OpRecord r;
                r.peer       = static_cast<std::uintptr_t>(t);
                r.wire_bytes = static_cast<std::uint64_t>(i);
                while (!ring.push(r)) {}
            }
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    std::vector<int> next(kThreads, 0);
    slim::live::OpRecord out;
    int total = 0;
    while (ring.pop(out)) {
        // Each producer's records come out in its own order.
        CHECK(out.wire_bytes == static_cast<std::uint64_t>(next[out.peer]++));
        ++total;
    }
    CHECK(total == kThreads * kEach);
}

TEST_CASE("event identity depends on what the wire shows, not on when")
{
    CHECK(slim::live::event_id(op(0, 4096, 1)) == slim::live::event_id(op(0, 5000, 1)));
    CHECK(slim::live::event_id(op(0, 4096, 1)) != slim::live::event_id(op(0, 9000, 1)));
    CHECK(slim::live::event_id(op(0, 4096, 1)) != slim::live::event_id(op(0, 4096, 2)));
    CHECK(slim::live::event_id(op(0, 4096, 1)) != slim::live::event_id(op(1, 4096, 1)));
}

TEST_CASE("a repeating pattern lets the predictor save link energy, and the trace replays to it")
{
    ManualClock clock;
    const std::string trace = temp_path("pattern.trace");
    LiveLoop loop(config_for(clock, "pps", trace));
    for (int i = 0; i < 200; ++i)
        iteration(loop, clock);
    const auto live = loop.summary(true);

    CHECK(live.events == 400);
    CHECK(live.trace_events == 400);
    CHECK(live.trace_error.empty());
    CHECK(live.hits > 0);
    REQUIRE(live.energy_savings_pct.has_value());
    CHECK(*live.energy_savings_pct > 30.0);
    CHECK(*live.time_penalty_pct < 1.0);

    // slim-replay's engine over the trace, same policy: the same savings.
    const auto replayed = replay_trace(trace, "pps");
    REQUIRE(replayed.energy_savings_pct.has_value());
    CHECK(*replayed.energy_savings_pct == Approx(*live.energy_savings_pct).margin(1.0));
    std::remove(trace.c_str());
}

TEST_CASE("SPPS tunes its threshold on live traffic and saves energy")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, "spps"));
    for (int i = 0; i < 400; ++i)
        iteration(loop, clock);
    const auto s = loop.summary(true);
    CHECK(s.gt_ns.has_value());
    CHECK(s.hits > 0);
    REQUIRE(s.energy_savings_pct.has_value());
    CHECK(*s.energy_savings_pct > 10.0);
}

TEST_CASE("late wake-ups cost the live loop the energy slim-replay charges for them")
{
    // The timeout policy wakes late after every long gap. slim-replay
    // delays the traffic by each wait, with the link rising meanwhile; the
    // live loop's traffic went on (the emulated port delays nothing), so it
    // charges the same energy on top: the two agree closely, where they
    // differed by about the penalty.
    ManualClock clock;
    const std::string trace = temp_path("late.trace");
    LiveLoop loop(config_for(clock, "timeout", trace));
    for (int i = 0; i < 200; ++i)
        iteration(loop, clock);
    const auto live = loop.summary(true);
    REQUIRE(live.energy_savings_pct.has_value());
    CHECK(live.late_wakeups > 100);

    const auto replayed = replay_trace(trace, "timeout");
    REQUIRE(replayed.energy_savings_pct.has_value());
    CHECK(replayed.late_wakeups == live.late_wakeups);
    CHECK(*replayed.energy_savings_pct == Approx(*live.energy_savings_pct).margin(0.05));
    std::remove(trace.c_str());
}

TEST_CASE("the timeout baseline lowers the link after the idle timeout")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, "timeout"));
    for (int i = 0; i < 50; ++i)
        iteration(loop, clock);
    const auto s = loop.summary(true);
    REQUIRE(s.energy_savings_pct.has_value());
    CHECK(*s.energy_savings_pct > 10.0);
    CHECK(s.late_wakeups > 0);  // a timeout policy always wakes late
}

TEST_CASE("an unwritable trace path is reported, and the loop goes on")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, "off", "/nonexistent-dir/x.trace"));
    loop.on_traffic(op(0, 8, 1));
    const auto s = loop.summary(true);
    CHECK(s.events == 1);
    CHECK_FALSE(s.trace_error.empty());
}

// Bursts of 200 us of packed traffic (wire 0.5 of the original), 50 us apart.
slim::live::LiveSummary packed_bursts(const char *policy)
{
    ManualClock clock;
    LiveConfig c        = config_for(clock, policy);
    c.policy.timeout_ns = 20'000;
    LiveLoop loop(c);
    for (int i = 0; i < 20; ++i) {
        for (int k = 0; k < 100; ++k) {
            Traffic packed    = op(0, 2048, 1);
            packed.orig_bytes = 4096;  // 2 of 4 lanes
            loop.on_traffic(packed);
            clock.now += 2'000;
        }
        idle(loop, clock, 50'000);
    }
    return loop.summary(true);
}

TEST_CASE("packed bursts wake a low link only to the lanes they fill")
{
    const auto s = packed_bursts("timeout");
    CHECK(s.time_at_width_ns[2] > 0);
    CHECK(s.time_at_width_ns[3] == 0);
    CHECK(s.time_at_width_ns[4] < s.time_at_width_ns[2]);  // only before the first low
    REQUIRE(s.energy_savings_pct.has_value());
    CHECK(*s.energy_savings_pct > 40.0);
}

TEST_CASE("a packed burst after a low-power period that already ended keeps the full width")
{
    // PPS predicts each 300 us gap and wakes the link before the next burst
    // (displacement and t_react): those bursts find it at full width again.
    ManualClock clock;
    LiveLoop loop(config_for(clock, "pps"));
    for (int i = 0; i < 200; ++i) {
        for (int k = 0; k < 50; ++k) {
            Traffic packed    = op(0, 2048, 1);
            packed.orig_bytes = 4096;  // 2 of 4 lanes, were the link low
            loop.on_traffic(packed);
            clock.now += 2'000;
        }
        idle(loop, clock, 300'000);
    }
    const auto s = loop.summary(true);
    REQUIRE(s.predictions > 100);
    CHECK(s.time_at_width_ns[1] > 0);
    CHECK(s.late_wakeups == 0);
    CHECK(s.time_at_width_ns[2] == 0);
}

TEST_CASE("a link at full width is not narrowed for a packed burst")
{
    // A width change takes tau: narrowing for each burst would cost
    // transitions and late wake-ups for the unpacked traffic after it.
    const auto s = packed_bursts("off");
    CHECK(s.time_at_width_ns[2] == 0);
    CHECK(s.transitions == 0);
}

TEST_CASE("unpacked bursts wake a low link to full width")
{
    ManualClock clock;
    LiveConfig c        = config_for(clock, "timeout");
    c.policy.timeout_ns = 20'000;
    LiveLoop loop(c);
    for (int i = 0; i < 20; ++i) {
        for (int k = 0; k < 100; ++k) {
            loop.on_traffic(op(0, 4096, 1));
            clock.now += 2'000;
        }
        idle(loop, clock, 50'000);
    }
    const auto s = loop.summary(true);
    CHECK(s.time_at_width_ns[1] > 0);
    CHECK(s.time_at_width_ns[2] == 0);
    CHECK(s.time_at_width_ns[3] == 0);
    CHECK(s.time_at_width_ns[4] > 10 * s.time_at_width_ns[1]);
}

TEST_CASE("a region holds the width its packing needs until it ends")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, "off"));
    loop.on_traffic(op(0, 8, 1));
    idle(loop, clock, 10'000);
    loop.region_begin(0.5);          // keep 4 of 8: 2 of 4 lanes
    for (int k = 0; k < 100; ++k) {  // the region's traffic, unpacked
        loop.on_traffic(op(0, 4096, 1));
        clock.now += 2'000;
    }
    idle(loop, clock, 20'000);
    loop.region_end();  // back to full width, which takes tau
    idle(loop, clock, 20'000);
    loop.on_traffic(op(0, 4096, 1));
    const auto s = loop.summary(true);
    CHECK(s.time_at_width_ns[2] > 150'000);
    CHECK(s.late_wakeups == 0);  // raised before the traffic came
}

TEST_CASE(
        "the default burst gap is two link transitions, so protocol round trips stay in one event")
{
    LiveConfig c;
    CHECK(c.policy.kind == slim::link::PolicyKind::adaptive);
    CHECK(c.burst_gap_ns == 2 * c.backend.link.tau_ns);
    // A rendezvous split by 12 us round trips: one event at the default gap.
    ManualClock clock;
    c.backend.clock = clock.clock();
    LiveLoop loop(c);
    for (int part = 0; part < 4; ++part) {
        loop.on_traffic(op(0, 8192, 1));
        idle(loop, clock, 12'000);
    }
    idle(loop, clock, 100'000);
    CHECK(loop.summary(true).events == 1);
}

TEST_CASE("the adaptive default saves on live traffic and names the policy it follows")
{
    ManualClock clock;
    LiveConfig c = config_for(clock, "adaptive");
    LiveLoop loop(c);
    for (int i = 0; i < 100; ++i)
        iteration(loop, clock);
    const auto s = loop.summary(true);
    REQUIRE(s.energy_savings_pct);
    CHECK(*s.energy_savings_pct > 30.0);
    CHECK(*s.time_penalty_pct <= 1.0);
    CHECK_FALSE(s.policy_in_force.empty());
    CHECK(s.predictor == "adaptive");
}

TEST_CASE("the record clock's stamps convert to steady-clock time")
{
    using slim::live::RecordClock;
    const RecordClock steady;
    CHECK(steady.source() == RecordClock::Source::steady);
    CHECK(steady.to_ns(12345) == 12345);
    CHECK(steady.ticks_within(20'000) == 20'000);

    RecordClock clock(RecordClock::Source::tsc);
    if (!RecordClock::tsc_usable()) {
        CHECK(clock.source() == RecordClock::Source::steady);
        WARN("this kernel does not keep time with the TSC: only the steady clock is checked");
        return;
    }
    REQUIRE(clock.source() == RecordClock::Source::tsc);
    // The coalescing gap in ticks never exceeds the gap.
    CHECK(clock.to_ns(clock.ticks_within(20'000)) - clock.to_ns(0) <= 20'000);
    // A stamp taken between two steady readings converts to between them,
    // give or take the calibration, now and after time passed.
    for (int round = 0; round < 3; ++round) {
        const TimeNs before       = slim::link::steady_now_ns();
        const std::uint64_t stamp = clock.now();
        const TimeNs after        = slim::link::steady_now_ns();
        clock.recalibrate();
        const TimeNs t = clock.to_ns(stamp);
        CHECK(t >= before - 2'000);
        CHECK(t <= after + 2'000);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
}

namespace {

// The default configuration (adaptive, 20 us gap) on a manual clock.
LiveConfig defaults_on(ManualClock& clock)
{
    LiveConfig c;
    c.backend.clock = clock.clock();
    return c;
}

// A loop in the default configuration fed only through an op log (one
// serial ring) and its drain, whose wall clock the test sets: the live
// runtime's arrangement. Replay time starts at `start`.
struct DrainedLoop {
    DrainedLoop(TimeNs start, std::size_t ring_capacity)
        : replay_now(start), loop(config(replay_now)),
          log(16, ring_capacity, slim::live::kDefaultBurstGapNs), ring(*log.open_serial()),
          drain(log, loop, replay_now, [this] { return wall; })
    {}
    static LiveConfig config(TimeNs& replay_now)
    {
        LiveConfig c;
        c.backend.clock = slim::live::LiveDrain::replay_clock(replay_now);
        return c;
    }

    TimeNs replay_now;
    LiveLoop loop;
    slim::live::OpLog log;
    slim::live::SerialOpRing& ring;
    TimeNs wall = 0;
    slim::live::LiveDrain drain;
};

// Streaming: 64 KiB sent every 30 us (each its own event at a 20 us gap),
// 66 times, then a 1 ms pause; `cycles` times. `wire` below 65536: packed.
void stream(LiveLoop& loop, ManualClock& clock, int cycles, std::uint64_t wire = 65536)
{
    for (int cycle = 0; cycle < cycles; ++cycle) {
        for (int k = 0; k < 66; ++k) {
            Traffic t    = op(0, 65536, 1);
            t.wire_bytes = wire;
            loop.on_traffic(t);
            idle(loop, clock, 30'000);
        }
        idle(loop, clock, 1'000'000);
    }
}

}  // namespace

TEST_CASE("dense traffic widens the burst gap until it thins out, then it narrows back")
{
    ManualClock clock;
    const LiveConfig c = defaults_on(clock);
    LiveLoop loop(c);
    const TimeNs base = c.burst_gap_ns;
    stream(loop, clock, 40);
    const auto dense = loop.summary(false);
    CHECK(dense.widest_burst_gap_ns > base);
    CHECK(dense.burst_gap_ns > base);  // not narrowed by the events it merged
    // Far fewer events than operations: the shadows' work stays small.
    CHECK(dense.events < 40 * 66 / 8);

    // Sparse traffic: an operation every 2 ms. Back to the configured gap.
    for (int k = 0; k < 100; ++k) {
        loop.on_traffic(op(0, 8, 1));
        idle(loop, clock, 2'000'000);
    }
    const auto sparse = loop.summary(true);
    CHECK(sparse.burst_gap_ns == base);
    CHECK(sparse.widest_burst_gap_ns == dense.widest_burst_gap_ns);
}

TEST_CASE("a rendezvous stream of 1 MiB puts merges into few events")
{
    // What a sender of back-to-back 1 MiB messages showed over tcp loopback:
    // a burst of puts every 72 us (median), 46 us of waiting for the socket
    // between them. At
    // the configured gap each is an event (11000 a second), and the
    // drain's shadow replays of them cost 8-13 % of the bandwidth; the 46 us
    // gaps saved 4.8 % of the link's energy.
    ManualClock clock;
    const LiveConfig c = defaults_on(clock);
    LiveLoop loop(c);
    constexpr int kPuts = 2000;
    for (int k = 0; k < kPuts; ++k) {
        loop.on_traffic(op(0, 1 << 20, 1));
        idle(loop, clock, 72'000);
    }
    const auto s = loop.summary(true);
    CHECK(s.widest_burst_gap_ns > c.burst_gap_ns);
    CHECK(s.events < kPuts / 20);
}

TEST_CASE("a dense start does not widen the gap, and a widened gap narrows back at a solver's pace")
{
    // MPI_Init's wire-up comes in events 20-90 us apart; a solver loop's
    // then come 160 and 490 us apart, a mean of about 325 us.
    const auto run = [](int dense_events, std::uint64_t settle = LiveConfig{}.dense_settle_events) {
        ManualClock clock;
        LiveConfig c          = defaults_on(clock);
        c.dense_settle_events = settle;
        LiveLoop loop(c);
        for (int k = 0; k < dense_events; ++k) {
            loop.on_traffic(op(0, 64, 1));
            idle(loop, clock, 45'000);
        }
        for (int k = 0; k < 200; ++k) {
            loop.on_traffic(op(0, 4096, 1));
            idle(loop, clock, k % 2 ? 160'000 : 490'000);
        }
        return loop.summary(true);
    };
    const TimeNs base = LiveConfig{}.burst_gap_ns;
    const auto start  = run(16);
    CHECK(start.widest_burst_gap_ns == base);
    // The same start widens the gap when the loop need not wait for it.
    CHECK(run(16, 0).widest_burst_gap_ns > base);
    const auto phase = run(200);
    CHECK(phase.widest_burst_gap_ns > base);
    CHECK(phase.burst_gap_ns == base);
}

TEST_CASE("producers coalesce at the loop's widened gap, and the loop sees the same bursts")
{
    // Dense traffic fed to a loop directly, and recorded into a serial ring
    // whose producer folds at whatever gap the drain last gave the log,
    // drained every 16 ms. The drained loop must form the same events and
    // widen the gap alike (the gaps the producer hid still count), while
    // the ring logs a fraction of the runs once the first drain widened
    // the log's gap.
    struct Outcome {
        slim::live::LiveSummary direct, drained;
        std::uint64_t ops_after = 0, pushed_after = 0;
        bool widened = false;
    };
    // `groups` groups of `per_group` operations `within` apart, `pause`
    // after each.
    const auto run = [](int groups, int per_group, TimeNs within, TimeNs pause) {
        ManualClock direct_clock;
        LiveLoop direct(defaults_on(direct_clock));
        DrainedLoop d(direct_clock.now, 8192);
        slim::live::OpLog& log         = d.log;
        slim::live::SerialOpRing& ring = d.ring;

        Outcome out;
        TimeNs next_drain = direct_clock.now + 16'000'000;
        std::optional<std::uint64_t> pushed_before;
        std::uint64_t ops = 0, ops_before = 0;
        for (int g = 0; g < groups; ++g) {
            for (int k = 0; k < per_group; ++k) {
                const Traffic t = op(k % 3, 65536, 1);
                ring.record(op_at(direct_clock.now, true, 65536), log.coalesce_ticks(),
                            log.split_ticks());
                direct.on_traffic(t);
                ++ops;
                idle(direct, direct_clock, within);
            }
            idle(direct, direct_clock, pause);
            if (direct_clock.now >= next_drain) {
                d.wall = direct_clock.now;
                d.drain.drain();
                next_drain += 16'000'000;
                if (!pushed_before) {
                    pushed_before = ring.pushed();
                    ops_before    = ops;
                }
            }
        }
        d.wall = direct_clock.now + 1'000'000;
        d.drain.drain();
        out.widened      = log.coalesce_ticks() > log.split_ticks();
        out.ops_after    = ops - ops_before;
        out.pushed_after = ring.pushed() - pushed_before.value_or(0);
        out.direct       = direct.summary(true);
        out.drained      = d.drain.with_loop([](LiveLoop     &l) { return l.summary(true); });
        return out;
    };
    SECTION("a 1 MiB rendezvous stream: a put every 72 us")
    {
        const Outcome o = run(2000, 1, 72'000, 0);
        CHECK(o.widened);
        CHECK(o.pushed_after < 20);
        CHECK(o.drained.widest_burst_gap_ns == o.direct.widest_burst_gap_ns);
        CHECK(o.drained.burst_gap_ns == o.direct.burst_gap_ns);
        CHECK(o.drained.events == Approx(o.direct.events).margin(2));
    }
    SECTION("groups of 8 operations 40 us apart, 600 us between groups")
    {
        // Widened, each group is one event, 920 us after the last: sparse,
        // were it not for the 7 gaps inside it that the configured gap
        // would have split (what keeps the gap widened). The producer hides
        // them; uncounted, the drained loop would narrow and flap.
        const Outcome o = run(300, 8, 40'000, 600'000);
        CHECK(o.widened);
        CHECK(o.pushed_after * 4 < o.ops_after);
        CHECK(o.direct.widest_burst_gap_ns > 20'000);
        CHECK(o.drained.widest_burst_gap_ns == o.direct.widest_burst_gap_ns);
        CHECK(o.drained.burst_gap_ns == o.direct.burst_gap_ns);
        CHECK(o.drained.events == Approx(o.direct.events).margin(2));
    }
}

TEST_CASE("a run that packs keeps the configured burst gap under dense traffic")
{
    // Packed bursts wake a low link to the lanes the same event id needed
    // last time; bursts merged by a wider gap differ from one time to the
    // next, and the trace would no longer replay to what the loop did.
    ManualClock clock;
    const LiveConfig c = defaults_on(clock);
    LiveLoop loop(c);
    stream(loop, clock, 20, 32768);  // packed to half
    const auto s = loop.summary(true);
    CHECK(s.widest_burst_gap_ns == c.burst_gap_ns);
    CHECK(s.events > 20 * 66 / 2);
}

TEST_CASE("every operation of interfaces recording while the log drains is handed over once")
{
    // Two interfaces' threads record (small rings: many records dropped,
    // runs of every length), a third pushes region-like records, and the
    // drain runs all the while. Dropped records lose a burst's name, never
    // an operation: the operations handed over sum to those recorded.
    slim::live::OpLog log(64, 256, 20'000,
                          slim::live::RecordClock(slim::live::RecordClock::Source::tsc));
    slim::live::SerialOpRing *rings[2] = {log.open_serial(), log.open_serial()};
    constexpr int kOps                 = 100'000;
    std::atomic<bool> done{false};
    std::uint64_t ops = 0, shared_ops = 0;
    std::thread consumer([&] {
        const auto take = [&] {
            ops += log.drain([&](const slim::live::LogItem& it) {
                          if (it.kind == slim::live::LogItem::Kind::op && it.op.t_ns == 1) {
                              ++shared_ops;
                          }
                      }).ops;
        };
        while (!done.load()) {
            take();
        }
        take();
    });
    std::vector<std::thread> producers;
    for (int p = 0; p < 2; ++p) {
        producers.emplace_back([&log, &rings, p] {
            for (int i = 0; i < kOps; ++i) {
                slim::live::OpRecord op;
                op.t_ns       = static_cast<TimeNs>(log.clock().now());
                op.send       = (i + p) % 3 == 0;
                op.wire_bytes = op.orig_bytes = 100;
                // Every 50th operation starts a run of its own.
                rings[p]->record(op, i % 50 == 0 ? 0 : log.coalesce_ticks());
            }
        });
    }
    producers.emplace_back([&log] {
        for (int i = 0; i < 1000; ++i) {
            slim::live::OpRecord r;
            r.t_ns = 1;
            log.shared().push(r);
        }
    });
    for (auto& t : producers) {
        t.join();
    }
    log.close_serial(rings[0]);
    log.close_serial(rings[1]);
    done = true;
    consumer.join();
    CHECK(ops - shared_ops == 2u * kOps);
    CHECK(shared_ops + log.shared().dropped() == 1000);
    CHECK(log.serial_open() == 0);
}

TEST_CASE("an operation in flight keeps its interface's run going until it completes")
{
    slim::live::OpLog log(8, 64, 20'000);
    slim::live::SerialOpRing& ring = *log.open_serial();
    // A 1 MiB put in flight, a receive 300 us later while it still is,
    // its completion at 500 us, and a send 30 us after that.
    ring.record(op_at(100'000, true, 1 << 20), log.coalesce_ticks(), log.split_ticks(), true);
    ring.record(op_at(400'000, false, 8), log.coalesce_ticks(), log.split_ticks());
    CHECK(ring.pushed() == 1);  // no new run while the put is in flight
    ring.end_in_flight(500'000);
    CHECK(ring.pushed() == 1);  // a completion never writes a slot
    auto totals = ring.totals();
    REQUIRE(totals);
    CHECK(totals->began == 1);
    CHECK(totals->ended == 1);
    CHECK(totals->last_t == 500'000);
    CHECK(totals->splits == 0);  // the 300 us gap was busy, not a split
    ring.record(op_at(530'000, true), log.coalesce_ticks(), log.split_ticks());
    CHECK(ring.pushed() == 2);  // idle 30 us after the completion: a new run
    // A completion nothing began changes nothing.
    ring.end_in_flight(600'000);
    totals = ring.totals();
    REQUIRE(totals);
    CHECK(totals->ended == 1);
    CHECK(totals->last_t == 530'000);

    using V = std::vector<std::string>;
    // The put's record; the receive, the put going in flight and its
    // completion, folded; the new run.
    CHECK(drain_items(log) == V{"op@100000", "cont@100000-500000/1+1-1", "op@530000"});
}

TEST_CASE("a transfer in flight is one burst until its completion, on the drained loop")
{
    // A put issued at t0 whose completion comes 400 us later, drained
    // while it is in flight and again after: one event lasting until the
    // completion plus the burst gap. Recorded as done at once, the same
    // put is a 20 us event and 380 us of idle link under its data.
    const auto run = [](bool in_flight) {
        const TimeNs t0 = 1'000'000;
        DrainedLoop d(t0, 64);
        d.ring.record(op_at(t0, true, 1 << 20), d.log.coalesce_ticks(), d.log.split_ticks(),
                      in_flight);
        d.wall = t0 + 300'000;
        d.drain.drain();
        const bool open_mid = d.drain.with_loop([](LiveLoop& l) { return l.burst_open(); });
        d.ring.end_in_flight(t0 + 400'000);
        d.wall = t0 + 2'000'000;
        d.drain.drain();
        const std::uint64_t left = d.drain.with_loop([](LiveLoop& l) { return l.in_flight(); });
        const auto s             = d.drain.with_loop([](LiveLoop            &l) { return l.summary(true); });
        return std::make_tuple(open_mid, left, s);
    };
    SECTION("in flight")
    {
        const auto [open_mid, left, s] = run(true);
        CHECK(open_mid);
        CHECK(left == 0);
        CHECK(s.events == 1);
        CHECK(s.span_ns > 400'000);
        CHECK(s.span_ns <= 400'000 + slim::live::kDefaultBurstGapNs + 1);
    }
    SECTION("done at once")
    {
        const auto [open_mid, left, s] = run(false);
        CHECK_FALSE(open_mid);
        CHECK(s.events == 1);
        CHECK(s.span_ns <= slim::live::kDefaultBurstGapNs + 1);
    }
}

TEST_CASE("an operation in flight holds its run no longer than the in-flight hold")
{
    // A put whose completion never comes (or waits for a peer that
    // computes): the run and the burst end the hold after their last
    // operation, and the next operation starts a run of its own.
    const TimeNs hold = slim::live::kInFlightHoldNs;
    slim::live::OpLog log(8, 64, 20'000);
    slim::live::SerialOpRing& ring = *log.open_serial();
    ring.record(op_at(100'000, true, 1 << 20), log.coalesce_ticks(), log.split_ticks(), true,
                log.hold_ticks());
    ring.record(op_at(100'000 + hold, false), log.coalesce_ticks(), log.split_ticks(), false,
                log.hold_ticks());
    CHECK(ring.pushed() == 1);  // within the hold: the same run
    ring.record(op_at(200'001 + 2 * hold, true), log.coalesce_ticks(), log.split_ticks(), false,
                log.hold_ticks());
    CHECK(ring.pushed() == 2);  // past it: a new run, though still in flight

    ManualClock clock;
    LiveLoop loop(defaults_on(clock));
    loop.continue_burst(clock.now, 1 << 20, 1 << 20, 0, 1, 0);  // a put goes in flight
    idle(loop, clock, hold / 2);
    CHECK(loop.burst_open());
    idle(loop, clock, hold / 2 + 4'000);
    CHECK_FALSE(loop.burst_open());
    CHECK(loop.in_flight() == 1);
    const auto s = loop.summary(true);
    CHECK(s.events == 1);
    CHECK(s.span_ns > hold);
    CHECK(s.span_ns <= hold + 4'000);
}

namespace {

// One operation of a trace shape: when, which way, how many bytes.
struct ShapeOp {
    TimeNs t;
    bool send;
    std::uint32_t bytes;
};

// What `ring` publishes and the records it pushed, as text.
std::string ring_state(slim::live::SerialOpRing& ring)
{
    std::ostringstream s;
    s << "pushed " << ring.pushed();
    if (const auto t = ring.totals()) {
        s << " ops " << t->ops << " orig " << t->orig << " wire " << t->wire << " last "
          << t->last_t << " splits " << t->splits << " began " << t->began << " ended " << t->ended;
    }
    return s.str();
}

slim::live::OpBatch batch_of(const std::vector<slim::live::OpRecord>& ops, TimeNs t,
                             std::uint64_t began = 0, std::uint64_t ended = 0)
{
    slim::live::OpBatch b;
    for (const auto& r : ops) {
        if (b.ops == 0) {
            b.first = r;
        }
        if (r.send && !b.has_send) {
            b.first_send = r;
            b.has_send   = true;
        }
        b.ops += 1;
        b.orig += r.orig_bytes;
        b.wire += r.wire_bytes;
    }
    b.first.t_ns = t;
    b.began      = began;
    b.ended      = ended;
    return b;
}

// The shape's operations fed to a drained loop one by one at their own
// times (`round_ns` 0), or handed over in tallies stamped at the first
// polling round after them, rounds every `round_ns`: what the module
// does. Drained every 4 ms as the drain thread does.
slim::live::LiveSummary drained_summary(const std::vector<ShapeOp>& shape, TimeNs round_ns)
{
    const TimeNs start = 1'000'000;
    DrainedLoop d(start, 4096);
    TimeNs next_drain = start + 4'000'000;
    std::vector<slim::live::OpRecord> pending;
    TimeNs stamp         = 0;
    const auto hand_over = [&] {
        if (!pending.empty()) {
            d.ring.record_batch(batch_of(pending, stamp), d.log.coalesce_ticks(),
                                d.log.split_ticks());
            pending.clear();
        }
    };
    const auto drain_until = [&](TimeNs t) {
        while (next_drain <= t) {
            d.wall = next_drain;
            d.drain.drain();
            next_drain += 4'000'000;
        }
    };
    for (const ShapeOp& o : shape) {
        const TimeNs t = start + o.t;
        if (round_ns == 0) {
            drain_until(t);
            d.ring.record(op_at(t, o.send, o.bytes), d.log.coalesce_ticks(), d.log.split_ticks());
            continue;
        }
        const TimeNs round = (t / round_ns + 1) * round_ns;
        if (!pending.empty() && round != stamp) {
            hand_over();
        }
        drain_until(round);
        stamp = round;
        pending.push_back(op_at(t, o.send, o.bytes));
    }
    hand_over();
    d.wall = next_drain + 10'000'000;
    d.drain.drain();
    return d.drain.with_loop([](LiveLoop& l) { return l.summary(true); });
}

// A solver's iterations: a halo exchange with two neighbours (send,
// send, two receives within 10 us), 300 us of compute, an allreduce of
// three 8 B steps 3 us apart, 150 us of compute.
std::vector<ShapeOp> solver_shape(int iterations)
{
    std::vector<ShapeOp> ops;
    TimeNs t = 0;
    for (int i = 0; i < iterations; ++i) {
        ops.push_back({t, true, 4096});
        ops.push_back({t + 800, true, 4096});
        ops.push_back({t + 6'000, false, 4096});
        ops.push_back({t + 9'500, false, 4096});
        t += 9'500 + 300'000;
        for (int k = 0; k < 3; ++k) {
            ops.push_back({t + 3'000 * k, true, 8});
            ops.push_back({t + 3'000 * k + 1'200, false, 8});
        }
        t += 6'000 + 1'200 + 150'000;
    }
    return ops;
}

// A rendezvous stream: 64 KiB every 20 us for 2 ms, then 1 ms of quiet.
std::vector<ShapeOp> stream_shape(int cycles)
{
    std::vector<ShapeOp> ops;
    TimeNs t = 0;
    for (int c = 0; c < cycles; ++c) {
        for (int k = 0; k < 100; ++k) {
            ops.push_back({t, true, 65536});
            ops.push_back({t + 2'000, false, 64});
            t += 20'000;
        }
        t += 1'000'000;
    }
    return ops;
}

}  // namespace

TEST_CASE("a batch records as its operations would, one by one at the batch's time")
{
    using slim::live::OpRecord;
    slim::live::OpLog log(8, 64, 20'000);
    auto& one       = *log.open_serial();
    auto& many      = *log.open_serial();
    const auto same = [&] { CHECK(ring_state(one) == ring_state(many)); };

    SECTION("a new run that starts with a receive and has a send later")
    {
        const std::vector<OpRecord> ops{op_at(0, false, 8), op_at(0, false, 16),
                                        op_at(0, true, 100), op_at(0, true, 200)};
        for (OpRecord r : ops) {
            r.t_ns = 50'000;
            one.record(r, 20'000, 20'000);
        }
        many.record_batch(batch_of(ops, 50'000), 20'000, 20'000);
        same();
        CHECK(many.pushed() == 2);  // the run's start and its first send
        // The same run goes on: nothing pushed, the totals move.
        const std::vector<OpRecord> more{op_at(0, true, 1), op_at(0, false, 2)};
        for (OpRecord r : more) {
            r.t_ns = 60'000;
            one.record(r, 20'000, 20'000);
        }
        many.record_batch(batch_of(more, 60'000), 20'000, 20'000);
        same();
        CHECK(many.pushed() == 2);
    }
    SECTION("a zero-copy operation in flight, and its completion in a later batch")
    {
        OpRecord put = op_at(100'000, true, 1 << 20);
        one.record(put, 20'000, 20'000, true);
        many.record_batch(batch_of({put}, 100'000, 1), 20'000, 20'000);
        same();
        one.end_in_flight(400'000);
        many.record_batch(batch_of({}, 400'000, 0, 1), 20'000, 20'000);
        same();
        // A completion nothing began is ignored by both.
        one.end_in_flight(500'000);
        many.record_batch(batch_of({}, 500'000, 0, 1), 20'000, 20'000);
        same();
    }
    SECTION("a batch after a gap longer than the split gap but within the coalescing gap")
    {
        one.record(op_at(10'000, true), 40'000, 20'000);
        many.record_batch(batch_of({op_at(0, true)}, 10'000), 40'000, 20'000);
        one.record(op_at(40'000, true), 40'000, 20'000);
        many.record_batch(batch_of({op_at(0, true)}, 40'000), 40'000, 20'000);
        same();
        CHECK(many.totals()->splits == 1);
    }
}

TEST_CASE("tallies handed over per polling round form the bursts per-operation stamps form")
{
    // The module stamps a tally at the first polling round after its
    // operations: the link model keeps a round's resolution. Rounds of
    // 1 us (a rank polling tcp) and 5 us (a slow round) must give the
    // same events, the same savings within a point and a span within
    // the resolution.
    for (const auto& [name, shape] :
         {std::pair{"solver", solver_shape(200)}, std::pair{"stream", stream_shape(20)}}) {
        const auto exact = drained_summary(shape, 0);
        for (const TimeNs round : {TimeNs{1'000}, TimeNs{5'000}}) {
            INFO(name << ", rounds every " << round << " ns");
            const auto tallied = drained_summary(shape, round);
            CHECK(tallied.events == exact.events);
            REQUIRE(exact.energy_savings_pct);
            REQUIRE(tallied.energy_savings_pct);
            CHECK(*tallied.energy_savings_pct == Approx(*exact.energy_savings_pct).margin(1.0));
            CHECK(tallied.span_ns == Approx(exact.span_ns).margin(2 * round));
            CHECK(tallied.late_wakeups <= exact.late_wakeups + exact.late_wakeups / 10 + 1);
        }
    }
}

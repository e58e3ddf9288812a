// The live loop on a manual clock: bursts from operations, the predictor
// driving the emulated link, and a trace that replays to the same savings.
#include "link/replay.h"
#include "live/live_loop.h"
#include "predict/trace.h"

#include <catch2/catch.hpp>

#include <cstdio>
#include <string>
#include <unistd.h>
#include <vector>

using slim::live::LiveConfig;
using slim::live::LiveLoop;
using slim::live::PredictorKind;
using slim::live::Traffic;
using slim::predict::TimeNs;

namespace {

struct ManualClock {
    TimeNs now = 1'000'000;
    slim::link::Clock clock() { return [this] { return now; }; }
};

LiveConfig config_for(ManualClock& clock, PredictorKind kind, const std::string& trace = {})
{
    LiveConfig c;
    c.kind                  = kind;
    c.backend.clock         = clock.clock();
    c.safety_handlers       = false;
    c.trace_path            = trace;
    c.predictor.fixed_gt_ns = 20'000;
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
    idle(loop, clock, 400'000);   // compute
    loop.on_traffic(op(1, 8, 3));
    idle(loop, clock, 200'000);
}

std::string temp_path(const char* name)
{
    return "/tmp/slim-live-test-" + std::to_string(::getpid()) + "-" + name;
}

} // namespace

TEST_CASE("operations closer than the burst gap form one event, identified by the first")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, PredictorKind::off));
    loop.on_traffic(op(0, 100, 7));
    clock.now += 1'000;
    loop.on_traffic(op(2, 50, 8));
    CHECK(loop.burst_open());
    clock.now += 6'000;
    loop.poll();
    CHECK_FALSE(loop.burst_open());
    const auto s = loop.summary(true);
    CHECK(s.events == 1);
    CHECK(s.span_ns == 7'000);   // ends when the gap was noticed
    CHECK(s.predictor == "off");
    CHECK(s.energy_savings_pct.has_value());
    CHECK(*s.energy_savings_pct == Approx(0.0).margin(1e-9));
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
    LiveLoop loop(config_for(clock, PredictorKind::pps, trace));
    for (int i = 0; i < 200; ++i) iteration(loop, clock);
    const auto live = loop.summary(true);

    CHECK(live.events == 400);
    CHECK(live.trace_events == 400);
    CHECK(live.trace_error.empty());
    CHECK(live.hits > 0);
    REQUIRE(live.energy_savings_pct.has_value());
    CHECK(*live.energy_savings_pct > 30.0);
    CHECK(*live.time_penalty_pct < 1.0);

    // slim-replay's engine over the trace, same policy: the same savings.
    slim::link::ReplayConfig rc;
    rc.policy.kind                  = slim::link::PolicyKind::predictor;
    rc.policy.predictor.policy      = slim::predict::Policy::pps;
    rc.policy.predictor.fixed_gt_ns = 20'000;
    rc.policy.predictor.t_react_ns  = rc.link.tau_ns;
    slim::predict::TraceReader reader(trace);
    slim::link::Replay replay(rc);
    while (auto e = reader.next()) replay.on_event(*e);
    const auto replayed = replay.result();
    REQUIRE(replayed.energy_savings_pct.has_value());
    CHECK(*replayed.energy_savings_pct == Approx(*live.energy_savings_pct).margin(1.0));
    std::remove(trace.c_str());
}

TEST_CASE("SPPS tunes its threshold on live traffic and saves energy")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, PredictorKind::spps));
    for (int i = 0; i < 400; ++i) iteration(loop, clock);
    const auto s = loop.summary(true);
    CHECK(s.gt_ns.has_value());
    CHECK(s.hits > 0);
    REQUIRE(s.energy_savings_pct.has_value());
    CHECK(*s.energy_savings_pct > 10.0);
}

TEST_CASE("the timeout baseline lowers the link after the idle timeout")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, PredictorKind::timeout));
    for (int i = 0; i < 50; ++i) iteration(loop, clock);
    const auto s = loop.summary(true);
    REQUIRE(s.energy_savings_pct.has_value());
    CHECK(*s.energy_savings_pct > 10.0);
    CHECK(s.late_wakeups > 0);   // a timeout policy always wakes late
}

TEST_CASE("an unwritable trace path is reported, and the loop goes on")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, PredictorKind::off, "/nonexistent-dir/x.trace"));
    loop.on_traffic(op(0, 8, 1));
    const auto s = loop.summary(true);
    CHECK(s.events == 1);
    CHECK_FALSE(s.trace_error.empty());
}

TEST_CASE("bursts that carry packed data run on fewer lanes, from the id's last ratio")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, PredictorKind::off));
    // Bursts of 200 us (a width change takes tau = 10 us: shorter bursts
    // could not use the narrower width).
    for (int i = 0; i < 20; ++i) {
        for (int k = 0; k < 100; ++k) {
            Traffic packed = op(0, 2048, 1);
            packed.orig_bytes = 4096;   // wire 0.5 of the original: 2 of 4 lanes
            loop.on_traffic(packed);
            clock.now += 2'000;
        }
        idle(loop, clock, 50'000);
    }
    const auto s = loop.summary(true);
    CHECK(s.time_at_width_ns[2] > 0);
    CHECK(s.time_at_width_ns[1] == 0);
    REQUIRE(s.energy_savings_pct.has_value());
    CHECK(*s.energy_savings_pct > 10.0);
}

TEST_CASE("unpacked bursts keep the full width")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, PredictorKind::off));
    for (int i = 0; i < 20; ++i) {
        for (int k = 0; k < 100; ++k) {
            loop.on_traffic(op(0, 4096, 1));
            clock.now += 2'000;
        }
        idle(loop, clock, 50'000);
    }
    const auto s = loop.summary(true);
    CHECK(s.time_at_width_ns[2] == 0);
    CHECK(*s.energy_savings_pct == Approx(0.0).margin(1e-9));
}

TEST_CASE("a region holds the width its packing needs until it ends")
{
    ManualClock clock;
    LiveLoop loop(config_for(clock, PredictorKind::off));
    loop.on_traffic(op(0, 8, 1));
    idle(loop, clock, 10'000);
    loop.region_begin(0.5);            // keep 4 of 8: 2 of 4 lanes
    for (int k = 0; k < 100; ++k) {   // the region's traffic, unpacked
        loop.on_traffic(op(0, 4096, 1));
        clock.now += 2'000;
    }
    idle(loop, clock, 20'000);
    loop.region_end();                 // back to full width, which takes tau
    idle(loop, clock, 20'000);
    loop.on_traffic(op(0, 4096, 1));
    const auto s = loop.summary(true);
    CHECK(s.time_at_width_ns[2] > 150'000);
    CHECK(s.late_wakeups == 0);        // raised before the traffic came
}

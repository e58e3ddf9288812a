// SPDX-License-Identifier: BSD-3-Clause
// The gap policies' registry and their one interpreter of decisions.
#include "base/error.h"
#include "live/live_loop.h"
#include "predict/gap_policy.h"
#include "predict/policy_registry.h"
#include "predict/adaptive_policy.h"
#include "predict/replay.h"

#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>
#include <vector>

using slim::link::GapPolicy;
using slim::link::PolicyKind;
using slim::link::PolicySpec;
using slim::predict::Event;
using slim::predict::TimeNs;

namespace {

// Bursts of 10 us with `gap` of idle between them.
std::vector<Event> periodic(std::size_t n, TimeNs gap)
{
    std::vector<Event> events;
    TimeNs t = 1'000'000;
    for (std::size_t i = 0; i < n; ++i) {
        Event e;
        e.start_ns = t;
        e.end_ns   = t + 10'000;
        e.id       = static_cast<slim::predict::EventId>(i % 2);
        events.push_back(e);
        t = e.end_ns + gap;
    }
    return events;
}

}  // namespace

TEST_CASE("the live names are the registry's, the default first, in any case", "[registry]")
{
    const std::vector<std::string> expected = {"adaptive", "spps", "pps", "timeout", "off"};
    CHECK(slim::link::live_policy_names() == expected);
    for (const std::string& name : expected) {
        CHECK(slim::link::live_policy(name).registry_name == name);
    }
    CHECK(slim::link::default_live_policy().kind == PolicyKind::adaptive);
    CHECK(slim::link::live_policy("SPPS").kind == PolicyKind::spps);
    CHECK(slim::link::live_policy("off").kind == PolicyKind::always_on);
    // What needs the future or a parameter is a replay's alone.
    for (const char *name : {"oracle", "always-on", "context:2", "timeout:100us", "nothing"}) {
        CAPTURE(name);
        CHECK_THROWS_AS(slim::link::live_policy(name), slim::Error);
    }
}

TEST_CASE("a replay's names take their parameters", "[registry]")
{
    const PolicySpec timeout = slim::link::replay_policy("timeout:250us");
    CHECK(timeout.kind == PolicyKind::timeout);
    CHECK(timeout.timeout_ns == 250'000);
    CHECK(timeout.registry_name == "timeout");
    const PolicySpec context = slim::link::replay_policy("context:3");
    CHECK(context.kind == PolicyKind::context);
    CHECK(context.context.depth == 3);
    CHECK(context.context.key == slim::predict::ContextKey::events);
    CHECK(context.registry_name == "context:3");
    CHECK(slim::link::replay_policy("runs:1").context.key == slim::predict::ContextKey::runs);
    CHECK(slim::link::replay_policy("always-on").kind == PolicyKind::always_on);
    CHECK(slim::link::replay_policy("oracle").kind == PolicyKind::oracle);
    for (const char *name :
         {"off", "timeout", "context:9", "context:", "runs:x", "timeout:2s", "PPS"}) {
        CAPTURE(name);
        CHECK_THROWS(slim::link::replay_policy(name));
    }
}

TEST_CASE("a timeout policy asks for its timeout after every event, and never a window",
          "[registry]")
{
    PolicySpec spec = slim::link::live_policy("timeout");
    spec.timeout_ns = 30'000;
    GapPolicy policy(spec, {}, false);
    for (const Event& e : periodic(20, 200'000)) {
        const auto& d = policy.on_event(e);
        REQUIRE(d.timeout_ns);
        CHECK(*d.timeout_ns == 30'000);
        CHECK_FALSE(d.low_power);
        CHECK_FALSE(d.hit);
    }
}

TEST_CASE("a context policy falls back to its timeout where it foresees no window, "
          "and goes low again after a window the gap outlasts",
          "[registry]")
{
    PolicySpec spec          = slim::link::replay_policy("context:1");
    spec.fallback_timeout_ns = 50'000;
    spec.after_ns            = 40'000;
    GapPolicy policy(slim::link::bound_to(spec, {}), {}, false);
    bool fell_back = false, windowed = false;
    for (const Event& e : periodic(40, 300'000)) {
        const auto& d = policy.on_event(e);
        REQUIRE(d.timeout_ns);
        if (d.low_power) {
            windowed = true;
            CHECK(*d.timeout_ns == d.low_power->until_ns - d.low_power->from_ns + 40'000);
        } else {
            fell_back = true;
            CHECK(*d.timeout_ns == 50'000);
        }
    }
    CHECK(fell_back);
    CHECK(windowed);
    CHECK(policy.context() != nullptr);
    CHECK(spec.name() == "context 1 + timeout 50us, again 40us after");
}

TEST_CASE("the replay carries out a policy's decisions: a timeout saves what a timeout saves",
          "[registry]")
{
    // The adaptive policy with a single timeout candidate decides as that
    // timeout does, through the same interpreter.
    const std::vector<Event> events = periodic(200, 300'000);
    slim::link::ReplayConfig plain;
    plain.policy          = slim::link::replay_policy("timeout:50us");
    const auto by_timeout = slim::link::replay(events, plain);
    slim::link::AdaptiveConfig only;
    only.candidates = {plain.policy};
    only.initial    = 0;
    slim::link::AdaptivePolicy adaptive(only);
    slim::link::Replay follow(plain);
    for (const Event& e : events) {
        const auto decision = adaptive.on_event(e);
        REQUIRE(decision.timeout_ns);
        CHECK(*decision.timeout_ns == 50'000);
        follow.on_event(e);
    }
    REQUIRE(by_timeout.energy_savings_pct);
    CHECK(*follow.result().energy_savings_pct == Approx(*by_timeout.energy_savings_pct));
    CHECK(*by_timeout.energy_savings_pct > 50.0);
}

TEST_CASE("the live loop refuses the oracle, which needs the next event's time", "[registry]")
{
    slim::live::LiveConfig c;
    c.policy = slim::link::replay_policy("oracle");
    CHECK_THROWS_AS(slim::live::LiveLoop(c), slim::Error);
}

// SPDX-License-Identifier: BSD-3-Clause
// replay-bench: how fast the replay driver (src/predict/replay.h) runs, in
// events per second, on a synthetic 10^7-event trace under the oracle and
// under SPPS (the predictor included), and under the adaptive default (every
// candidate replayed in shadow: the live loop's prediction work per event,
// off the send path, target <= 1 us/event). The trace -- the periodic pattern of
// tests/data/replay-periodic.trace with ids cycling 41 41 41 10 10 so the
// predictor has patterns to find -- is generated in memory, a chunk at a
// time, before each chunk is timed; trace parsing is not measured (the
// reader has its own cost).
//
// Usage: replay-bench [--events N] [--policy oracle|spps|adaptive|all]
// Exit status: 0; 2 on a usage error.
#include "bench_options.h"
#include "predict/policy_registry.h"
#include "predict/replay.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using slim::link::Replay;
using slim::link::ReplayConfig;
using slim::link::ReplayResult;
using slim::predict::Event;
using slim::predict::EventId;
using slim::predict::TimeNs;
using Clock = std::chrono::steady_clock;

constexpr std::size_t chunk_events = 1 << 16;

struct Run {
    double seconds = 0;
    ReplayResult result;
};

Run run(const ReplayConfig& config, std::uint64_t events)
{
    static const EventId ids[]       = {41, 41, 41, 10, 10};
    static const TimeNs idle_after[] = {5'000, 5'000, 900'000, 900'000, 900'000};
    Replay driver(config);
    std::vector<Event> chunk(chunk_events);
    TimeNs t = 0;
    Clock::duration timed{};
    for (std::uint64_t done = 0; done < events;) {
        const std::size_t n =
                static_cast<std::size_t>(std::min<std::uint64_t>(chunk_events, events - done));
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint64_t k = (done + i) % 5;
            chunk[i]              = Event{t, t + 100'000, ids[k], 0, 0};
            t += 100'000 + idle_after[k];
        }
        const auto begin = Clock::now();
        for (std::size_t i = 0; i < n; ++i) {
            driver.on_event(chunk[i]);
        }
        timed += Clock::now() - begin;
        done += n;
    }
    Run r;
    r.result  = driver.result();
    r.seconds = std::chrono::duration<double>(timed).count();
    return r;
}

}  // namespace

int main(int argc, char **argv)
{
    std::uint64_t events = 10'000'000;
    std::string policy   = "all";
    CLI::App app("Events per second of the replay driver on a synthetic periodic trace.",
                 "replay-bench");
    bench::add_integer(app, "--events", events, 1, 1'000'000'000'000, "trace length in events");
    app.add_option("--policy", policy, "the policy to replay, or all (default all)")
            ->type_name("POLICY")
            ->check(CLI::IsMember({"oracle", "spps", "adaptive", "all"}))
            ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    if (const int status = bench::parse(app, argc, argv); status >= 0) {
        return status;
    }
    std::printf("# replay-bench: %llu events, default link (L=4, P=0.5, low=1, tau=10us)\n",
                static_cast<unsigned long long>(events));
    for (const char *name : {"oracle", "spps", "adaptive"}) {
        if (policy != "all" && policy != name) {
            continue;
        }
        ReplayConfig c;
        c.policy    = slim::link::bound_to(slim::link::replay_policy(name), c.link);
        const Run r = run(c, events);
        std::printf("replay %-8s %12.0f events/s %8.1f ns/event  savings %.1f %%\n", name,
                    static_cast<double>(events) / r.seconds,
                    r.seconds * 1e9 / static_cast<double>(events),
                    r.result.energy_savings_pct.value_or(0.0));
    }
    return 0;
}

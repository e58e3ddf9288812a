// SPDX-License-Identifier: BSD-3-Clause
// slim-replay: replays an event trace (src/trace/trace.h) through the link
// model under a gap policy of the registry (src/predict/policy_registry.h)
// -- always-on, a timeout, an oracle, the pattern predictor, the context
// predictor or the adaptive policy the runtime uses -- and prints what the
// predictor predicted and what the link saved and cost; with --cpu, also
// the CPU side: the trace's waits on an emulated core (src/predict/
// cpu_policy.h). See slim-replay(1).
// Figures of its results are drawn by slim-plot (src/tools/slim-plot.py),
// which runs it. Its options: replay_options.h; its output: replay_report.h.
//
// Exit status: 0 done, 2 bad command line or bad trace, 1 anything else
// (e.g. standard output could not be written).
#include "base/error.h"
#include "predict/cpu_policy.h"
#include "predict/replay.h"
#include "tools/replay_options.h"
#include "tools/replay_report.h"
#include "tools/trace_input.h"
#include "trace/trace.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <ios>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using slim::link::Replay;
using slim::link::ReplayConfig;
using slim::link::ReplayResult;
using slim::predict::TraceError;
using slim::predict::TraceReader;
using slim::tools::TraceInput;
using Options = slim::tools::ReplayOptions;

constexpr const char *program = slim::tools::replay_program;
constexpr int exit_failure    = 1;
constexpr int exit_usage      = 2;

class ConfigRefused : public slim::Error {
public:
    using slim::Error::Error;
};

// `timeline_first`: the 0-based index of the first event --timeline records.
Replay make_replay(const Options& o, std::uint64_t timeline_first)
{
    ReplayConfig c         = slim::tools::replay_config(o);
    c.timeline_first_event = timeline_first;
    c.timeline_events      = o.timeline_events;
    try {
        return Replay(c);
    } catch (const std::exception& e) {
        throw ConfigRefused(std::string("the predictor refused the configuration: ") + e.what());
    }
}

// The trace's span, first start to last end of its events and waits.
struct Span {
    std::optional<slim::predict::TimeNs> first, last;
    void add(slim::predict::TimeNs start, slim::predict::TimeNs end)
    {
        first = first ? std::min(*first, start) : start;
        last  = last ? std::max(*last, end) : end;
    }
};

using Events = std::vector<slim::predict::Event>;
using Waits  = std::vector<slim::predict::Wait>;

slim::cpu::CpuResult replay_cpu(const Waits& waits, const Events& events, const Span& span,
                                const slim::cpu::CpuConfig& core, slim::cpu::CpuPolicy& policy,
                                std::vector<slim::cpu::CpuPlan> *plans = nullptr)
{
    return slim::cpu::replay_waits(waits, events, *span.first, *span.last, core, policy, plans);
}

// --cpu with --timeline (replay_report.h, CpuTimeline): the waits that overlap
// the link's window and the core under `plans` (one per wait), in replayed
// time. The link replay moved event k by D_k, the delay added up to it;
// its timeline holds event k's end as replayed (its burst's end, or the
// window's opening for the event before the window), so D_k is that minus
// the recorded end. A wait moves with the last event that started before
// it; waits before the window are skipped.
slim::tools::CpuTimeline cpu_timeline(const slim::cpu::CpuConfig& core, const Waits& waits,
                                      const std::vector<slim::cpu::CpuPlan>& plans,
                                      const Events& events, const slim::link::WidthTimeline& t,
                                      std::uint64_t first)
{
    using slim::predict::TimeNs;
    slim::tools::CpuTimeline out;
    if (t.bursts.empty() || t.widths.empty()) {
        return out;
    }
    const TimeNs open        = t.widths.front().at_ns;
    const TimeNs close       = t.bursts.back().end_ns;
    const std::uint64_t last = first + t.bursts.size();  // one past the window's last event
    std::vector<slim::cpu::CorePeriod> periods;
    std::size_t next = 0;  // the first event not started before the wait
    for (std::size_t i = 0; i < waits.size() && i < plans.size(); ++i) {
        const slim::predict::Wait& w = waits[i];
        while (next < events.size() && events[next].start_ns < w.start_ns) {
            ++next;
        }
        TimeNs delay = 0;
        if (next > 0) {
            const std::uint64_t k = next - 1;
            if (k + 1 < first) {
                continue;
            }
            if (k >= last) {
                break;
            }
            delay = (k + 1 == first ? open : t.bursts[k - first].end_ns) - events[k].end_ns;
        } else if (first > 0) {
            continue;
        }
        const TimeNs start = w.start_ns + delay;
        const TimeNs end   = w.end_ns + delay;
        if (start >= close || end < open) {
            continue;
        }
        out.waits.push_back({start, end});
        periods.clear();
        slim::cpu::account_wait(core, w, plans[i], periods);
        for (slim::cpu::CorePeriod p : periods) {
            p.from_ns += delay;
            p.to_ns += delay;
            out.core.push_back(p);
        }
    }
    return out;
}

// --cpu: the waits under the asked policy, the oracle and the baseline;
// with --timeline, the waits in the link's window and the core over them.
slim::tools::CpuReplay cpu_side(const Options& o, const Waits& waits, const Events& events,
                                Span span, const Replay& driver)
{
    slim::tools::CpuReplay c;
    c.waits = waits.size();
    if (waits.empty()) {
        return c;
    }
    span.add(waits.front().start_ns, waits.back().end_ns);
    const slim::cpu::CpuConfig& core = *o.cpu;
    std::optional<slim::cpu::CpuPolicy> policy;
    try {
        policy.emplace(o.cpu_policy, core);
    } catch (const std::exception& e) {
        throw ConfigRefused(std::string("--cpu-policy: the predictor refused the configuration: ") +
                            e.what());
    }
    const bool timeline = o.timeline_events > 0;
    std::vector<slim::cpu::CpuPlan> plans;
    c.result = replay_cpu(waits, events, span, core, *policy, timeline ? &plans : nullptr);
    if (timeline) {
        c.timeline = cpu_timeline(core, waits, plans, events, driver.timeline(),
                                  driver.config().timeline_first_event);
    }
    if (const slim::cpu::CpuAdaptivePolicy *a = policy->adaptive()) {
        c.in_force = a->in_force().name();
        c.switches = a->switches();
    }
    slim::cpu::CpuPolicy oracle(slim::link::replay_policy("oracle"), core);
    c.oracle = replay_cpu(waits, events, span, core, oracle);
    slim::cpu::CpuPolicy baseline(slim::link::replay_policy("timeout:500us"), core);
    c.baseline = replay_cpu(waits, events, span, core, baseline);
    return c;
}

int run(const Options& o)
{
    TraceInput input(o.events, o.location, o.timeline_events > 0);
    std::uint64_t timeline_first = 0;
    if (o.timeline_events > 0) {
        TraceReader& counter = input.open();
        std::uint64_t events = 0;
        while (counter.next()) {
            ++events;
        }
        timeline_first = events - std::min(events, o.timeline_events);
    }
    Replay driver       = make_replay(o, timeline_first);
    TraceReader& trace  = input.open();
    std::uint64_t index = 0;
    Span span;
    // --cpu: the events key the CPU predictors' contexts (40 bytes each).
    Events events;
    while (const auto event = trace.next()) {
        span.add(event->start_ns, event->end_ns);
        if (o.cpu) {
            events.push_back(*event);
        }
        bool prediction_active = false;
        try {
            prediction_active = driver.on_event(*event).prediction_active;
        } catch (const std::exception& e) {
            // The reader already enforces the predictor's and the model's
            // input rules, so this is a bug: say where, exit 1.
            throw slim::Error(trace.name() + ":" + std::to_string(trace.line()) +
                              ": the replay failed on this event: " + e.what());
        }
        ++index;
        if (o.dump_events) {
            slim::tools::dump_event(index, event->id, prediction_active);
        }
    }
    ReplayResult result = driver.result();
    std::optional<slim::tools::CpuReplay> cpu;
    if (o.cpu) {
        cpu = cpu_side(o, trace.take_waits(), events, span, driver);
        if (cpu->waits == 0) {
            std::fprintf(stderr,
                         "%s: --cpu: %s has no wait lines ('w t_start_ns t_end_ns'): no "
                         "CPU side to replay\n",
                         program, trace.name().c_str());
        }
    }
    const slim::tools::CpuReplay *const c = cpu ? &*cpu : nullptr;
    const std::string summary = o.json ? slim::tools::json_summary(o, driver, result, trace, c)
                                       : slim::tools::text_summary(o, driver, result, trace, c);
    std::fputs(summary.c_str(), stdout);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "%s: writing to standard output failed\n", program);
        return exit_failure;
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    Options options;
    try {
        options = slim::tools::parse_replay_options(argc, argv);
    } catch (const std::exception& e) {  // UsageError, slim::ConfigError
        std::fprintf(stderr, "%s: %s\nTry '%s --help'.\n", program, e.what(), program);
        return exit_usage;
    }
    if (!options.help.empty()) {
        std::fputs(options.help.c_str(), stdout);
        return 0;
    }
    // std::cin (--events -) synchronised with stdio reads a character at a
    // time: 5x slower on a 10^7-line trace. Nothing here reads stdin with stdio.
    std::ios::sync_with_stdio(false);
    try {
        return run(options);
    } catch (const TraceError& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return exit_usage;
    } catch (const ConfigRefused& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return exit_usage;
    } catch (const std::exception& e) {
        std::fflush(stdout);
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return exit_failure;
    }
}

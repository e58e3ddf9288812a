// SPDX-License-Identifier: BSD-3-Clause
// The emulated core (cpu_model.h; slim-replay(1), CPU MODEL).
#include "predict/cpu_model.h"

#include "base/error.h"
#include "base/parse.h"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <string_view>

namespace slim::cpu {

namespace {

constexpr double kJoulesPerWattNs = 1e-9;
constexpr double kMaxGhz          = 10.0;
constexpr double kMaxWatts        = 100.0;
constexpr std::chrono::nanoseconds kMaxTau{100'000'000};       // 100 ms
constexpr std::chrono::nanoseconds kMaxHandle{1'000'000'000};  // 1 s

[[noreturn]] void reject(std::string_view key, std::string_view value, std::string_view accepted)
{
    throw Error(parse::bad_value(key, value, accepted));
}

// A number in (0, max], or [0, max] when zero_ok; `accepted` names the range.
double positive(const char *key, const std::string& value, double max, bool zero_ok,
                const std::string& accepted)
{
    double v = 0.0;
    try {
        v = parse::real(key, value, 0.0, max);
    } catch (const ConfigError&) {
        reject(key, value, accepted);
    }
    if (v <= 0.0 && !zero_ok) {
        reject(key, value, accepted);
    }
    return v;
}

}  // namespace

CpuConfig parse_cpu_config(const std::string& text)
{
    CpuConfig c;
    constexpr std::string_view keys[] = {"f", "P", "f_low", "P_low", "tau", "handle"};
    bool seen[std::size(keys)]        = {};
    std::string values[std::size(keys)];
    for (const parse::SpecItem& item : parse::spec_items(text)) {
        if (!item.has_value) {
            throw Error("cpu config item '" + std::string(item.item) +
                        "': expected key=value with a key f, P, f_low, P_low, tau or handle");
        }
        const std::string_view key = item.key;
        const auto index           = static_cast<std::size_t>(
                std::find(std::begin(keys), std::end(keys), key) - std::begin(keys));
        if (index == std::size(keys)) {
            throw Error("cpu config key '" + std::string(key) +
                        "' is unknown: accepted keys are f, P, f_low, P_low, tau and handle");
        }
        if (seen[index]) {
            throw Error("cpu config key '" + std::string(key) + "' is given more than once");
        }
        seen[index]   = true;
        values[index] = std::string(item.value);
    }
    // The full state first: the low state's ranges depend on it, whichever
    // order the keys came in.
    if (seen[0]) {
        c.full.ghz = positive("f", values[0], kMaxGhz, false,
                              "numbers greater than 0 and at most 10 (GHz)");
    }
    if (seen[1]) {
        c.full.watts = positive("P", values[1], kMaxWatts, false,
                                "numbers greater than 0 and at most 100 (watts per core)");
    }
    if (seen[2]) {
        c.low.ghz = positive("f_low", values[2], c.full.ghz, false,
                             "numbers greater than 0 and at most f = " +
                                     parse::format_real(c.full.ghz) + " (GHz)");
    }
    if (seen[3]) {
        c.low.watts = positive("P_low", values[3], c.full.watts, true,
                               "numbers from 0 to P = " + parse::format_real(c.full.watts) +
                                       " (watts per core)");
    }
    if (seen[4]) {
        c.tau_ns = parse::duration("tau", values[4], std::chrono::nanoseconds{0}, kMaxTau).count();
    }
    if (seen[5]) {
        c.handle_ns = parse::duration("handle", values[5], std::chrono::nanoseconds{0}, kMaxHandle)
                              .count();
    }
    // A full state given alone may fall below the default low one.
    if (c.low.ghz > c.full.ghz) {
        reject("f_low", parse::format_real(c.low.ghz),
               "at most f = " + parse::format_real(c.full.ghz) + " (give f_low too)");
    }
    if (c.low.watts > c.full.watts) {
        reject("P_low", parse::format_real(c.low.watts),
               "at most P = " + parse::format_real(c.full.watts) + " (give P_low too)");
    }
    return c;
}

std::string format_cpu_config(const CpuConfig& c)
{
    return "f=" + parse::format_real(c.full.ghz) + ",P=" + parse::format_real(c.full.watts) +
           ",f_low=" + parse::format_real(c.low.ghz) + ",P_low=" + parse::format_real(c.low.watts) +
           ",tau=" + parse::format_duration(std::chrono::nanoseconds{c.tau_ns}) +
           ",handle=" + parse::format_duration(std::chrono::nanoseconds{c.handle_ns});
}

CpuTally& CpuTally::operator+=(const CpuTally& o)
{
    waits += o.waits;
    wait_ns += o.wait_ns;
    low_ns += o.low_ns;
    transition_ns += o.transition_ns;
    transitions += o.transitions;
    late_wakes += o.late_wakes;
    penalty_ns += o.penalty_ns;
    return *this;
}

namespace {

// The handling of an arrival at the low frequency: `handle` of full-speed
// work takes f_full / f_low times as long.
TimeNs slow_handling(const CpuConfig& c)
{
    const double slowdown = c.full.ghz / c.low.ghz - 1.0;
    return static_cast<TimeNs>(static_cast<double>(c.handle_ns) * slowdown + 0.5);
}

// Where the periods of account_wait() go: nowhere (the live loop and the
// replay's sums), or into a list (slim-replay --timeline). A template
// argument, so the sums pay nothing for the list.
struct NoPeriods {
    void operator()(TimeNs, TimeNs, CorePeriod::State) const noexcept {}
};

struct PeriodList {
    std::vector<CorePeriod>& periods;
    void operator()(TimeNs from, TimeNs to, CorePeriod::State state) const
    {
        periods.push_back({from, to, state});
    }
};

// One low period from `from` (at full then) up to `until` (none: the
// arrival) in a wait ending at `end`. Returns when the core is back at full
// inside the wait, or none when the arrival came first.
template <typename Periods>
std::optional<TimeNs> low_period(const CpuConfig& c, TimeNs from, std::optional<TimeNs> until,
                                 TimeNs end, CpuTally& t, const Periods& periods)
{
    using State           = CorePeriod::State;
    const TimeNs tau      = c.tau_ns;
    const TimeNs down_end = from + tau;
    ++t.transitions;
    if (end < down_end) {
        // Still going down: finish, come back up, handle slowly.
        ++t.transitions;
        ++t.late_wakes;
        t.transition_ns += (down_end - from) + tau;
        t.penalty_ns += (down_end - end) + tau + slow_handling(c);
        periods(from, down_end, State::down);
        periods(down_end, down_end + tau, State::up);
        return std::nullopt;
    }
    t.transition_ns += tau;
    periods(from, down_end, State::down);
    // A raise asked during the way down starts when it ends.
    const TimeNs up_start = until ? std::max(*until, down_end) : end;
    if (up_start >= end) {
        t.low_ns += end - down_end;
        ++t.transitions;
        ++t.late_wakes;
        t.transition_ns += tau;
        t.penalty_ns += tau + slow_handling(c);
        periods(down_end, end, State::low);
        periods(end, end + tau, State::up);
        return std::nullopt;
    }
    t.low_ns += up_start - down_end;
    ++t.transitions;
    t.transition_ns += tau;
    const TimeNs up_end = up_start + tau;
    periods(down_end, up_start, State::low);
    periods(up_start, up_end, State::up);
    if (up_end > end) {
        ++t.late_wakes;
        t.penalty_ns += up_end - end;
        return std::nullopt;
    }
    return up_end;
}

template <typename Periods>
CpuTally account_wait_with(const CpuConfig& c, const Wait& wait, const CpuPlan& plan,
                           const Periods& periods)
{
    CpuTally t;
    t.waits                       = 1;
    t.wait_ns                     = wait.end_ns - wait.start_ns;
    std::optional<TimeNs> full_at = wait.start_ns;
    if (plan.low_from) {
        const TimeNs from = std::max(*plan.low_from, wait.start_ns);
        const bool opens  = from < wait.end_ns && (!plan.low_until || *plan.low_until > from);
        if (opens) {
            full_at = low_period(c, from, plan.low_until, wait.end_ns, t, periods);
        }
    }
    if (plan.again_at && full_at) {
        const TimeNs from = std::max(*plan.again_at, *full_at);
        if (from < wait.end_ns) {
            low_period(c, from, std::nullopt, wait.end_ns, t, periods);
        }
    }
    return t;
}

}  // namespace

CpuTally account_wait(const CpuConfig& c, const Wait& wait, const CpuPlan& plan)
{
    return account_wait_with(c, wait, plan, NoPeriods{});
}

CpuTally account_wait(const CpuConfig& c, const Wait& wait, const CpuPlan& plan,
                      std::vector<CorePeriod>& periods)
{
    return account_wait_with(c, wait, plan, PeriodList{periods});
}

const char *to_string(CorePeriod::State s) noexcept
{
    switch (s) {
    case CorePeriod::State::down: return "down";
    case CorePeriod::State::low: return "low";
    case CorePeriod::State::up: return "up";
    }
    return "?";
}

double saved_joules(const CpuConfig& c, const CpuTally& t)
{
    return ((c.full.watts - c.low.watts) * static_cast<double>(t.low_ns) -
            c.full.watts * static_cast<double>(t.penalty_ns)) *
           kJoulesPerWattNs;
}

TimeNs wake_penalty_ns(const CpuConfig& c) { return c.tau_ns + slow_handling(c); }

CpuResult cpu_result(const CpuConfig& c, const CpuTally& t, TimeNs span_ns)
{
    CpuResult r;
    r.tally             = t;
    r.span_ns           = span_ns;
    r.baseline_joules   = c.full.watts * static_cast<double>(span_ns) * kJoulesPerWattNs;
    r.wait_joules       = c.full.watts * static_cast<double>(t.wait_ns) * kJoulesPerWattNs;
    r.saved_joules      = saved_joules(c, t);
    r.energy_joules     = r.baseline_joules - r.saved_joules;
    r.transition_joules = c.full.watts * static_cast<double>(t.transitions) *
                          static_cast<double>(c.tau_ns) * kJoulesPerWattNs;
    if (r.baseline_joules > 0) {
        r.saved_pct = 100.0 * r.saved_joules / r.baseline_joules;
    }
    if (r.wait_joules > 0) {
        r.saved_of_waits_pct = 100.0 * r.saved_joules / r.wait_joules;
    }
    if (span_ns > 0) {
        r.penalty_pct = 100.0 * static_cast<double>(t.penalty_ns) / static_cast<double>(span_ns);
    }
    return r;
}

}  // namespace slim::cpu

// SPDX-License-Identifier: BSD-3-Clause
#include "tools/replay_report.h"

#include "base/parse.h"
#include "predict/adaptive_policy.h"
#include "predict/link_profile.h"
#include "predict/predictor.h"

#include <nlohmann/json.hpp>

#include <array>
#include <charconv>
#include <cstdio>
#include <optional>
#include <utility>

namespace slim::tools {

namespace {

using slim::link::LinkConfig;
using slim::link::PolicyKind;
using slim::link::PolicySpec;
using slim::link::Replay;
using slim::link::ReplayConfig;
using slim::link::ReplayResult;
using slim::predict::Predictor;
using slim::predict::PredictorConfig;
using slim::predict::PredictorStats;
using slim::predict::TimeNs;
using slim::predict::TraceReader;
using Options = ReplayOptions;

std::optional<double> ratio(double num, double den)
{
    if (den <= 0) {
        return std::nullopt;
    }
    return num / den;
}

// "20us", "1.25ms": a readable duration for the text summary.
std::string human_duration(TimeNs ns)
{
    std::array<char, 48> buf{};
    if (ns < 1000) {
        std::snprintf(buf.data(), buf.size(), "%lldns", static_cast<long long>(ns));
    } else if (ns < 1'000'000) {
        std::snprintf(buf.data(), buf.size(), "%.4gus", static_cast<double>(ns) / 1e3);
    } else if (ns < 1'000'000'000) {
        std::snprintf(buf.data(), buf.size(), "%.4gms", static_cast<double>(ns) / 1e6);
    } else {
        std::snprintf(buf.data(), buf.size(), "%.4gs", static_cast<double>(ns) / 1e9);
    }
    return buf.data();
}

// Widths worth listing: the full and the low width, and any other the link
// spent time at (a packed burst's width), widest first; an EEE port's LPI is
// width 0.
template <typename F>
void for_each_width(const Options& o, const ReplayResult& r, F&& f)
{
    for (unsigned w = slim::link::kMaxLanes + 1; w-- > 0;) {
        if (w == o.link.lanes || w == o.link.low_width || r.time_at_width_ns[w] > 0) {
            f(w, r.time_at_width_ns[w]);
        }
    }
}

std::string percent(std::optional<double> v)
{
    if (!v) {
        return "n/a";
    }
    std::array<char, 32> b{};
    std::snprintf(b.data(), b.size(), "%.1f %%", *v);
    return b.data();
}

// "L=4, P=0.5 W/lane, low=1, tau=10us, packed"; with lowP, ", low width
// at 0.43 of full power" after tau; a preset's name first ("ib-hdr: ...").
// An EEE port: "eee-10gbase-t: EEE, P=1 W, Tw=4.48us, Ts=2.88us, LPI at 0.1
// of active power".
std::string link_text(const Options& o)
{
    const std::string name = o.link.profile.empty() ? std::string() : o.link.profile + ": ";
    if (o.link.kind == slim::link::LinkKind::eee) {
        return name + "EEE, P=" + slim::parse::format_real(o.link.lane_watts) +
               " W, Tw=" + human_duration(o.link.tau_ns) +
               ", Ts=" + human_duration(o.link.sleep_ns.value_or(o.link.tau_ns)) + ", LPI at " +
               slim::parse::format_real(o.link.low_power_fraction.value_or(0.0)) +
               " of active power" + (o.packed ? ", packed" : "");
    }
    std::array<char, 200> b{};
    const std::string low_power =
            o.link.low_power_fraction
                    ? ", low width at " + slim::parse::format_real(*o.link.low_power_fraction) +
                              " of full power"
                    : std::string();
    std::snprintf(b.data(), b.size(), "L=%u, P=%s W/lane, low=%u, tau=%s%s%s", o.link.lanes,
                  slim::parse::format_real(o.link.lane_watts).c_str(), o.link.low_width,
                  human_duration(o.link.tau_ns).c_str(), low_power.c_str(),
                  o.packed ? ", packed" : "");
    return name + b.data();
}

// --timeline: the link's usable width (a step at each change) and the
// bursts as replayed, in compact arrays ([t, width], [start, end, width]):
// a window can hold many thousand steps. With --cpu on a trace with waits,
// also the waits ([start, end]) and the core's periods away from full
// ([from, to, state]) in the window.
nlohmann::ordered_json timeline_json(const Replay& driver, const CpuReplay *cpu)
{
    using Json                         = nlohmann::ordered_json;
    const slim::link::WidthTimeline& t = driver.timeline();
    Json steps                         = Json::array();
    for (const slim::link::WidthChange& c : t.widths) {
        steps.push_back({c.at_ns, c.width});
    }
    Json bursts = Json::array();
    for (const slim::link::ReplayedBurst& b : t.bursts) {
        bursts.push_back({b.start_ns, b.end_ns, b.width});
    }
    const ReplayConfig& c = driver.config();
    Json j;
    // 1-based, as --dump-events counts; 0 when the trace has no events.
    j["first_event"] = t.bursts.empty() ? 0 : c.timeline_first_event + 1;
    j["events"]      = t.bursts.size();
    j["steps"]       = std::move(steps);
    j["bursts"]      = std::move(bursts);
    if (cpu != nullptr && cpu->timeline) {
        Json waits = Json::array();
        for (const slim::predict::Wait& w : cpu->timeline->waits) {
            waits.push_back({w.start_ns, w.end_ns});
        }
        Json core = Json::array();
        for (const slim::cpu::CorePeriod& p : cpu->timeline->core) {
            core.push_back({p.from_ns, p.to_ns, slim::cpu::to_string(p.state)});
        }
        j["cpu"] = {{"waits", std::move(waits)}, {"core", std::move(core)}};
    }
    return j;
}

constexpr const char *no_waits_note =
        "the trace has no wait lines ('w t_start_ns t_end_ns'): no CPU side to replay";

std::optional<double> fraction_of(double part, double whole)
{
    if (whole <= 0) {
        return std::nullopt;
    }
    return part / whole;
}

// --cpu: the CPU side, after the link's lines.
std::string cpu_text(const Options& o, const CpuReplay& c)
{
    std::string out = "CPU side\n";
    std::array<char, 256> line{};
    auto add = [&](const std::string& label, const std::string& value) {
        std::snprintf(line.data(), line.size(), "  %-22s %s\n", label.c_str(), value.c_str());
        out.append(line.data());
    };
    add("core", slim::cpu::format_cpu_config(*o.cpu));
    if (c.waits == 0) {
        add("waits", std::string("0: ") + no_waits_note);
        return out;
    }
    const slim::cpu::CpuResult& r = c.result;
    std::string policy            = o.cpu_policy.registry_name;
    if (o.cpu_policy.kind == PolicyKind::timeout) {
        policy += " after " + human_duration(o.cpu_policy.timeout_ns);
    }
    if (!c.in_force.empty()) {
        policy += " (in force: " + c.in_force + ", changed " + std::to_string(c.switches) +
                  " times; bound " + slim::parse::format_real(o.cpu_policy.max_slowdown_pct) +
                  " %)";
    }
    add("policy", policy);
    std::array<char, 200> b{};
    add("waits", std::to_string(r.tally.waits) + " (" + human_duration(r.tally.wait_ns) + " of " +
                         human_duration(r.span_ns) + ")");
    std::snprintf(b.data(), b.size(), " of the rank's CPU energy (%.6g J; always at full %.6g J)",
                  r.saved_joules, r.baseline_joules);
    add("energy savings", percent(r.saved_pct) + b.data());
    add("of the waits' energy", percent(r.saved_of_waits_pct));
    add("time penalty", percent(r.penalty_pct) + " (" + human_duration(r.tally.penalty_ns) +
                                " added to " + human_duration(r.span_ns) + ")");
    add("late wake-ups", std::to_string(r.tally.late_wakes));
    std::snprintf(b.data(), b.size(), " (%s in transition, %.6g J)",
                  human_duration(r.tally.transition_ns).c_str(), r.transition_joules);
    add("transitions", std::to_string(r.tally.transitions) + b.data());
    add("time at low", human_duration(r.tally.low_ns));
    const auto share = [](std::optional<double> v) {
        std::array<char, 32> f{};
        if (!v) {
            return std::string("n/a");
        }
        std::snprintf(f.data(), f.size(), "%.4f", *v);
        return std::string(f.data());
    };
    add("oracle", percent(c.oracle.saved_pct) + " saved; this policy makes " +
                          share(fraction_of(r.saved_joules, c.oracle.saved_joules)) + " of it");
    add("timeout 500us", percent(c.baseline.saved_pct) + " saved at " +
                                 percent(c.baseline.penalty_pct) + " penalty");
    return out;
}

nlohmann::ordered_json cpu_json(const Options& o, const CpuReplay& c)
{
    using Json  = nlohmann::ordered_json;
    auto number = [](std::optional<double> v) { return v ? Json(*v) : Json(nullptr); };
    const slim::cpu::CpuConfig& k = *o.cpu;
    Json j;
    j["core"]   = {{"f_ghz", k.full.ghz},      {"watts", k.full.watts}, {"f_low_ghz", k.low.ghz},
                   {"low_watts", k.low.watts}, {"tau_ns", k.tau_ns},    {"handle_ns", k.handle_ns}};
    j["policy"] = o.cpu_policy.registry_name;
    if (o.cpu_policy.kind == PolicyKind::timeout) {
        j["timeout_ns"] = o.cpu_policy.timeout_ns;
    }
    j["waits"] = c.waits;
    if (c.waits == 0) {
        j["note"] = no_waits_note;
        return j;
    }
    if (!c.in_force.empty()) {
        j["max_slowdown_pct"] = o.cpu_policy.max_slowdown_pct;
        j["policy_in_force"]  = c.in_force;
        j["policy_switches"]  = c.switches;
    }
    const slim::cpu::CpuResult& r   = c.result;
    j["wait_ns"]                    = r.tally.wait_ns;
    j["span_ns"]                    = r.span_ns;
    j["low_ns"]                     = r.tally.low_ns;
    j["transitions"]                = r.tally.transitions;
    j["transition_ns"]              = r.tally.transition_ns;
    j["late_wakeups"]               = r.tally.late_wakes;
    j["penalty_ns"]                 = r.tally.penalty_ns;
    j["penalty_pct"]                = number(r.penalty_pct);
    j["baseline_joules"]            = r.baseline_joules;
    j["wait_joules"]                = r.wait_joules;
    j["energy_joules"]              = r.energy_joules;
    j["saved_joules"]               = r.saved_joules;
    j["transition_joules"]          = r.transition_joules;
    j["saved_pct"]                  = number(r.saved_pct);
    j["saved_of_waits_pct"]         = number(r.saved_of_waits_pct);
    j["oracle_saved_joules"]        = c.oracle.saved_joules;
    j["oracle_saved_pct"]           = number(c.oracle.saved_pct);
    j["fraction_of_oracle"]         = number(fraction_of(r.saved_joules, c.oracle.saved_joules));
    j["timeout_500us_saved_joules"] = c.baseline.saved_joules;
    j["timeout_500us_saved_pct"]    = number(c.baseline.saved_pct);
    j["timeout_500us_penalty_pct"]  = number(c.baseline.penalty_pct);
    return j;
}

}  // namespace

std::string text_summary(const Options& o, const Replay& driver, const ReplayResult& r,
                         const TraceReader& trace, const CpuReplay *cpu)
{
    std::array<char, 256> line{};
    std::string out;
    auto add = [&](const std::string& label, const std::string& value) {
        std::snprintf(line.data(), line.size(), "  %-22s %s\n", label.c_str(), value.c_str());
        out.append(line.data());
    };
    auto fraction = [](std::optional<double> v) {
        if (!v) {
            return std::string("n/a");
        }
        std::array<char, 32> b{};
        std::snprintf(b.data(), b.size(), "%.4f", *v);
        return std::string(b.data());
    };
    out.append("slim-replay: ")
            .append(trace.name())
            .append(", policy ")
            .append(o.policy.registry_name);
    if (o.policy.kind == PolicyKind::timeout) {
        out.append(" after ").append(human_duration(o.policy.timeout_ns));
    }
    out.append("\n");
    add("events", std::to_string(r.events));
    if (const Predictor *predictor = driver.predictor()) {
        const PredictorStats& s = predictor->stats();
        std::string gt;
        if (s.gt_ns) {
            gt = human_duration(*s.gt_ns) + " (" + std::to_string(*s.gt_ns) + " ns, " +
                 (o.policy.kind == PolicyKind::pps ? "fixed" : "tuned by ADGT") + ")";
        } else if (s.gave_up) {
            gt = "none (ADGT found no grouping threshold; gave up, " +
                 std::to_string(s.tuning_retries) + " retries)";
        } else {
            gt = "none yet (still sampling idle intervals)";
        }
        const auto hit_rate   = ratio(static_cast<double>(s.hits), static_cast<double>(s.events));
        const auto idle_share = ratio(static_cast<double>(s.predicted_idle_ns),
                                      static_cast<double>(s.total_idle_ns));
        add("grams", std::to_string(s.grams));
        add("grouping threshold", gt);
        add("restarts", std::to_string(s.restarts));
        add("predictions", std::to_string(s.predictions));
        add("mispredictions", std::to_string(s.mispredictions));
        add("hit rate", fraction(hit_rate) + " (" + std::to_string(s.hits) + " of " +
                                std::to_string(s.events) + " events)");
        add("predicted idle share", fraction(idle_share) + " (" +
                                            human_duration(s.predicted_idle_ns) + " of " +
                                            human_duration(s.total_idle_ns) + " idle)");
    }
    if (const slim::link::AdaptivePolicy *a = driver.adaptive()) {
        add("max slowdown", slim::parse::format_real(a->config().max_penalty_pct) +
                                    " % modelled time penalty (--max-slowdown)");
        add("policy in force",
            a->in_force().name() + " (changed " + std::to_string(a->switches()) + " times)");
        add("predictions",
            std::to_string(a->predictions()) + ", " + std::to_string(a->hits()) + " hits");
    }
    add("link", link_text(o));
    std::array<char, 160> b{};
    std::snprintf(b.data(), b.size(), " (%.6g J; always on %.6g J)", r.energy_joules,
                  r.baseline_joules);
    add("energy savings", percent(r.energy_savings_pct) + b.data());
    add("time penalty", percent(r.time_penalty_pct) + " (" + human_duration(r.delay_ns) +
                                " added to " + human_duration(r.original_span_ns) + ")");
    add("late wake-ups",
        std::to_string(r.late_wakeups) + " (" + human_duration(r.wakeup_delay_ns) + " waited)");
    add("transitions", std::to_string(r.transitions));
    for_each_width(o, r, [&](unsigned w, TimeNs t) {
        add(o.link.kind == slim::link::LinkKind::eee
                    ? (w == 0 ? std::string("time in LPI") : std::string("time active"))
                    : "time at width " + std::to_string(w),
            human_duration(t));
    });
    add("time in transition", human_duration(r.time_in_transition_ns));
    if (cpu) {
        out.append(cpu_text(o, *cpu));
    }
    return out;
}

// The summary as one line of JSON (README.md lists the keys, in this
// order): ordered_json keeps the order the keys are set in.
std::string json_summary(const Options& o, const Replay& driver, const ReplayResult& r,
                         const TraceReader& trace, const CpuReplay *cpu)
{
    using Json = nlohmann::ordered_json;
    // none (an empty trace, no idle time) is null rather than NaN.
    auto number = [](std::optional<double> v) { return v ? Json(*v) : Json(nullptr); };
    Json j;
    j["schema"] = "slimlink.replay.v1";
    j["trace"]  = trace.name();
    j["policy"] = o.policy.registry_name;
    if (o.policy.kind == PolicyKind::timeout) {
        j["timeout_ns"] = o.policy.timeout_ns;
    }
    if (const slim::link::AdaptivePolicy *a = driver.adaptive()) {
        j["max_slowdown_pct"] = a->config().max_penalty_pct;
        j["policy_in_force"]  = a->in_force().name();
        j["policy_switches"]  = a->switches();
        j["predictions"]      = a->predictions();
        j["hits"]             = a->hits();
    }
    if (const Predictor *predictor = driver.predictor()) {
        const PredictorStats& s  = predictor->stats();
        const PredictorConfig& c = predictor->config();
        j["displacement"]        = c.displacement;
        j["t_react_ns"]          = c.t_react_ns;
        j["events"]              = s.events;
        j["grams"]               = s.grams;
        j["gt_ns"]               = s.gt_ns ? Json(*s.gt_ns) : Json(nullptr);
        j["gave_up"]             = s.gave_up;
        j["tuning_retries"]      = s.tuning_retries;
        j["restarts"]            = s.restarts;
        j["predictions"]         = s.predictions;
        j["mispredictions"]      = s.mispredictions;
        j["hits"]                = s.hits;
        j["hit_rate"] = number(ratio(static_cast<double>(s.hits), static_cast<double>(s.events)));
        j["total_idle_ns"]        = s.total_idle_ns;
        j["predicted_idle_ns"]    = s.predicted_idle_ns;
        j["predicted_idle_share"] = number(ratio(static_cast<double>(s.predicted_idle_ns),
                                                 static_cast<double>(s.total_idle_ns)));
    } else {
        j["events"] = r.events;
    }
    j["link"] = {{"lanes", o.link.lanes},
                 {"lane_watts", o.link.lane_watts},
                 {"low_width", o.link.low_width},
                 {"tau_ns", o.link.tau_ns}};
    if (o.link.low_power_fraction) {
        j["link"]["low_power_fraction"] = *o.link.low_power_fraction;
    }
    // The profile, as --link and UCX_SLIM_LINK_PROFILE take it back.
    j["link"]["kind"] = o.link.kind == slim::link::LinkKind::eee ? "eee" : "infiniband";
    j["link"]["spec"] = slim::link::link_spec(o.link);
    if (!o.link.profile.empty()) {
        j["link"]["profile"] = o.link.profile;
    }
    if (o.link.sleep_ns) {
        j["link"]["sleep_ns"] = *o.link.sleep_ns;
    }
    j["packed"]             = o.packed;
    j["energy_joules"]      = r.energy_joules;
    j["baseline_joules"]    = r.baseline_joules;
    j["energy_savings_pct"] = number(r.energy_savings_pct);
    j["original_span_ns"]   = r.original_span_ns;
    j["delay_ns"]           = r.delay_ns;
    j["time_penalty_pct"]   = number(r.time_penalty_pct);
    j["late_wakeups"]       = r.late_wakeups;
    j["wakeup_delay_ns"]    = r.wakeup_delay_ns;
    j["transitions"]        = r.transitions;
    Json& widths = j["time_at_width_ns"] = Json::object();
    for_each_width(o, r, [&](unsigned w, TimeNs t) { widths[std::to_string(w)] = t; });
    j["time_in_transition_ns"] = r.time_in_transition_ns;
    if (cpu) {
        j["cpu"] = cpu_json(o, *cpu);
    }
    if (o.timeline_events > 0) {
        j["timeline"] = timeline_json(driver, cpu);
    }
    // A trace name that is not UTF-8 (a file name is any bytes) gets U+FFFD
    // rather than an exception or invalid JSON.
    return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}


void dump_event(std::uint64_t index, std::uint32_t id, bool prediction)
{
    std::array<char, 48> buf{};
    // Numbers stop short of the end, so the separators always fit (20 + 10
    // digits at most).
    char *const numbers_end = buf.data() + buf.size() - 8;
    char *p                 = std::to_chars(buf.data(), numbers_end, index).ptr;
    *p++                    = ' ';
    p                       = std::to_chars(p, numbers_end, id).ptr;
    *p++                    = ' ';
    *p++                    = prediction ? '1' : '0';
    *p++                    = '\n';
    std::fwrite(buf.data(), 1, static_cast<std::size_t>(p - buf.data()), stdout);
}

}  // namespace slim::tools

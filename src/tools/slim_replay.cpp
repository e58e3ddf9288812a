// SPDX-License-Identifier: BSD-3-Clause
// slim-replay: replays an event trace (src/predict/trace.h) through the link
// model (src/link/replay.h) under a power policy -- always-on, a timeout, an
// oracle, or the pattern predictor (src/predict/predictor.h) the runtime
// uses -- and prints what the predictor predicted and what the link saved
// and cost; see README.md, "Event traces and slim-replay". Figures of its
// results are drawn by slim-plot (src/tools/slim-plot.py), which runs it.
//
// Exit status: 0 done, 2 bad command line or bad trace, 1 anything else
// (e.g. standard output could not be written).
#include "base/parse.h"
#include "link/link_model.h"
#include "link/replay.h"
#include "predict/predictor.h"
#include "predict/trace.h"
#include "tools/cli_common.h"
#include "tools/otf2_trace.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <ios>
#include <optional>
#include <stdexcept>
#include <sstream>
#include <string>
#include <system_error>
#include <utility>

namespace {

using slim::link::LinkConfig;
using slim::link::PolicyKind;
using slim::link::Replay;
using slim::link::ReplayConfig;
using slim::link::ReplayResult;
using slim::predict::Event;
using slim::predict::Policy;
using slim::predict::Predictor;
using slim::predict::PredictorConfig;
using slim::predict::PredictorStats;
using slim::predict::TimeNs;
using slim::predict::TraceError;
using slim::predict::TraceReader;
using namespace std::chrono_literals;

constexpr const char* program = "slim-replay";
constexpr int exit_failure = 1;
constexpr int exit_usage   = 2;

// Accepted ranges; the parsers name them in their messages.
constexpr std::chrono::nanoseconds gt_min = 1ns, gt_max = 1s;
constexpr std::chrono::nanoseconds t_react_min = 0ns, t_react_max = 1s;
constexpr double displacement_min = 0.0, displacement_max = 1.0;
constexpr std::chrono::nanoseconds timeout_min = 0ns, timeout_max = 1s;
// --timeline: a million events make a JSON line of about 60 MB.
constexpr std::int64_t timeline_min = 1, timeline_max = 1'000'000;

constexpr const char* policy_forms =
        "always-on, timeout:DURATION (0ns to 1s, e.g. timeout:100us), oracle, pps, spps, "
        "adaptive, context:DEPTH (1 to 8), runs:DEPTH (1 to 8)";
using slim::tools::link_forms;
using slim::tools::UsageError;
using slim::tools::value_of;

struct Options {
    std::string           events;
    PolicyKind            kind   = PolicyKind::predictor;
    Policy                policy = Policy::spps;       // when kind is predictor
    TimeNs                timeout_ns = 0;              // when kind is timeout
    std::string           policy_name = "spps";
    std::size_t           context_depth = 2;           // when kind is context
    slim::predict::ContextKey context_key = slim::predict::ContextKey::events;
    LinkConfig            link;
    bool                  packed = false;
    std::optional<TimeNs> gt_ns;
    std::optional<double> displacement;
    std::optional<TimeNs> t_react_ns;
    bool                  dump_events = false;
    bool                  json        = false;
    std::uint64_t         timeline_events = 0;         // --timeline N; 0: none
    std::string           location;                    // --location; empty: default
    std::string           help;                        // --help: the text
};

// "always-on", "timeout:100us", "oracle", "pps", "spps".
void parse_policy(Options& o, const std::string& v)
{
    namespace parse = slim::parse;
    const std::string timeout_prefix = "timeout:";
    if (v.rfind(timeout_prefix, 0) == 0) {
        try {
            o.timeout_ns = parse::duration("--policy timeout", v.substr(timeout_prefix.size()),
                                           timeout_min, timeout_max)
                                   .count();
        } catch (const std::exception&) {
            throw UsageError(parse::bad_value("--policy", v, policy_forms));
        }
        o.kind        = PolicyKind::timeout;
        o.policy_name = "timeout";
        return;
    }
    for (const auto& [prefix, key] : {std::pair{std::string("context:"), slim::predict::ContextKey::events},
                                      std::pair{std::string("runs:"), slim::predict::ContextKey::runs}}) {
        if (v.rfind(prefix, 0) != 0) {
            continue;
        }
        const std::string depth = v.substr(prefix.size());
        if (depth.size() != 1 || depth[0] < '1' || depth[0] > '8') {
            throw UsageError(parse::bad_value("--policy", v, policy_forms));
        }
        o.kind          = PolicyKind::context;
        o.context_depth = static_cast<std::size_t>(depth[0] - '0');
        o.context_key   = key;
        o.policy_name   = v;
        return;
    }
    if (v == "adaptive") {
        o.kind        = PolicyKind::adaptive;
        o.policy_name = v;
        return;
    }
    static const char* const names[] = {"always-on", "oracle", "pps", "spps"};
    for (const char* name : names) {
        if (v == name) {
            o.policy_name = name;
            o.kind = v == "always-on" ? PolicyKind::always_on
                   : v == "oracle"    ? PolicyKind::oracle
                                      : PolicyKind::predictor;
            o.policy = v == "pps" ? Policy::pps : Policy::spps;
            return;
        }
    }
    throw UsageError(parse::bad_value("--policy", v, policy_forms));
}

// ------------------------------------------------------------ command line

// The help text, generated by CLI11 from the options below, laid out like
// a GNU tool's: the usage (built from the options) first, then what the
// program does, the options with their text wrapped to 80 columns, and the
// footer. CLI11's own puts the description first and does not wrap.
constexpr std::size_t help_width  = 80;
constexpr std::size_t help_column = 23;

// `text` in lines of at most `width` characters, broken at spaces; a '\n'
// in it starts a new line. Lines are joined with '\n' and no indentation:
// CLI11 indents the lines of an option's text itself.
std::string wrap(const std::string& text, std::size_t width)
{
    std::string out;
    std::size_t line = 0;  // characters on the current line
    std::size_t at   = 0;
    while (at < text.size()) {
        if (text[at] == '\n') {
            out.push_back('\n');
            line = 0;
            ++at;
            continue;
        }
        if (text[at] == ' ') {
            ++at;
            continue;
        }
        const std::size_t end  = std::min(text.find_first_of(" \n", at), text.size());
        const std::string word = text.substr(at, end - at);
        if (line > 0 && line + 1 + word.size() > width) {
            out.push_back('\n');
            line = 0;
        }
        if (line > 0) {
            out.push_back(' ');
            ++line;
        }
        out.append(word);
        line += word.size();
        at = end;
    }
    return out;
}

class HelpFormatter : public CLI::Formatter {
public:
    HelpFormatter() { column_width(help_column); }

    std::string make_help(const CLI::App* app, std::string name, CLI::AppFormatMode mode) const override
    {
        return make_usage(app, name) + "\n" + wrap(app->get_description(), help_width) + "\n" +
               make_groups(app, mode) + "\n" + wrap(app->get_footer(), help_width) + "\n";
    }

    // "usage: slim-replay --events FILE [--policy POLICY] ...": required
    // options bare, the others in brackets, in the order they are defined.
    std::string make_usage(const CLI::App* app, std::string name) const override
    {
        const std::string head   = "usage: " + name;
        const std::string indent(head.size(), ' ');
        std::string       out    = head;
        std::size_t       line   = head.size();
        for (const CLI::Option* opt : app->get_options()) {
            if (opt == app->get_help_ptr() || !opt->nonpositional()) {
                continue;
            }
            std::string item = opt->get_name(false, false) + make_option_opts(opt);
            if (!opt->get_required()) {
                item = "[" + item + "]";
            }
            if (line + 1 + item.size() > help_width) {
                out.append("\n").append(indent);
                line = indent.size();
            }
            out.append(" ").append(item);
            line += 1 + item.size();
        }
        return out + "\n";
    }

    // Only the value's name: defaults and ranges are in each option's text.
    std::string make_option_opts(const CLI::Option* opt) const override
    {
        // A flag has no type name.
        return opt->get_type_name().empty() ? std::string() : " " + opt->get_type_name();
    }

    std::string make_option_desc(const CLI::Option* opt) const override
    {
        return wrap(opt->get_description(), help_width - help_column);
    }
};

Options parse_options(int argc, char** argv)
{
    namespace parse = slim::parse;
    Options  o;
    CLI::App app("Replays an event trace through the link model under a power policy and "
                 "prints a summary: energy saved, time lost, and for pps/spps the predictor's "
                 "statistics.",
                 program);
    app.formatter(std::make_shared<HelpFormatter>());
    app.set_help_flag("-h,--help", "this text");
    app.footer("Durations take a unit: ns, us, ms or s (e.g. 20us, 1.5ms); an option's value "
               "follows it or an '=' (--gt 20us, --gt=20us); given twice, the last one counts.\n"
               "Exit status: 0 done, 2 bad command line or bad trace, 1 other errors.");
    // Unknown options and stray arguments are ours to name (below).
    app.allow_extras();
    app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);

    // Every value goes through its parser here, which names the option and
    // what it accepts (slim::parse, the same as the UCX_SLIM_* variables).
    app.add_option_function<std::string>(
               "--events",
               [&](const std::string& v) { o.events = value_of("--events", "FILE", v); },
               "trace, one event per line: t_start_ns t_end_ns event_id [bytes] "
               "[packed_bytes]; '#' starts a comment; '-' is stdin; or an OTF2 archive's "
               "anchor file (FILE.otf2): one event per MPI communication call of one "
               "location (README.md)")
            ->type_name("FILE")
            ->required();
    app.add_option_function<std::string>(
               "--policy",
               [&](const std::string& v) { parse_policy(o, value_of("--policy", "POLICY", v)); },
               "spps (default): the pattern predictor, grouping threshold tuned by ADGT; pps: "
               "fixed grouping threshold (--gt); always-on: never low; timeout:DURATION (0ns "
               "to 1s): low after that much idle time, wake on demand; oracle: low in every "
               "idle gap of at least 2 tau, back exactly in time; adaptive: the live default, "
               "the best of timeouts and run-keyed context predictors replayed in shadow; "
               "context:DEPTH (1 to 8): the context predictor alone, keyed by the last "
               "DEPTH events; runs:DEPTH (1 to 8): keyed by the run of bursts in progress "
               "and the DEPTH - 1 runs before it")
            ->type_name("POLICY");
    app.add_option_function<std::string>(
               "--link",
               [&](const std::string& v) {
                   try {
                       o.link = slim::link::parse_link_config(value_of("--link", "SPEC", v));
                   } catch (const std::invalid_argument& e) {
                       throw UsageError(parse::bad_value("--link", v, link_forms) + " (" +
                                        e.what() + ")");
                   }
               },
               "the link: L=LANES,P=WATTS,low=WIDTH,tau=DURATION, any subset; lanes 1, 2, 4, 8 "
               "or 12 (default L=4,P=0.5,low=1,tau=10us)")
            ->type_name("SPEC");
    // "--packed=yes" is refused (a flag's value could only repeat it).
    app.add_flag("--packed", o.packed,
                 "a burst needs only the lanes its packed bytes fill: max(1, ceil(L * "
                 "packed_bytes / bytes))")
            ->disable_flag_override();
    app.add_option_function<std::string>(
               "--gt",
               [&](const std::string& v) {
                   o.gt_ns = parse::duration("--gt", value_of("--gt", "DURATION", v), gt_min,
                                             gt_max)
                                     .count();
               },
               "pps only: the grouping threshold, 1ns to 1s (default 20us)")
            ->type_name("DURATION");
    app.add_option_function<std::string>(
               "--displacement",
               [&](const std::string& v) {
                   o.displacement = parse::real("--displacement", value_of("--displacement", "X", v),
                                                displacement_min, displacement_max);
               },
               "pps/spps: displacement factor of Algorithm 4, 0 to 1 (default 0.05)")
            ->type_name("X");
    app.add_option_function<std::string>(
               "--t-react",
               [&](const std::string& v) {
                   o.t_react_ns = parse::duration("--t-react", value_of("--t-react", "DURATION", v),
                                                  t_react_min, t_react_max)
                                          .count();
               },
               "pps/spps: reactivation time the predictor assumes, 0ns to 1s (default: the "
               "link's tau)")
            ->type_name("DURATION");
    app.add_flag("--dump-events", o.dump_events,
                 "pps/spps: first, one line per event: INDEX EVENT_ID PREDICTION (index from 1; "
                 "prediction 1 when a prediction is active after that event)")
            ->disable_flag_override();
    CLI::Option* const json =
            app.add_flag("--json", o.json, "the summary as one line of JSON")
                    ->disable_flag_override();
    app.add_option_function<std::string>(
               "--timeline",
               [&](const std::string& v) {
                   o.timeline_events = static_cast<std::uint64_t>(
                           parse::integer("--timeline", value_of("--timeline", "N", v),
                                          timeline_min, timeline_max));
               },
               "with --json: add \"timeline\", the link's width over the last N events (all "
               "when there are fewer), N from 1 to 1000000: first_event (index from 1), "
               "events, steps [[T_NS, WIDTH], ...] (the usable width from T_NS on) and bursts "
               "[[START_NS, END_NS, WIDTH], ...] (the lanes each needed), in replayed time. A "
               "trace from standard input or a pipe is kept in memory for it")
            ->type_name("N")
            ->needs(json);
    app.add_option_function<std::string>(
               "--location",
               [&](const std::string& v) { o.location = value_of("--location", "N", v); },
               "OTF2 only: the location (OTF2 location id) to replay (default: the first MPI "
               "location, rank 0)")
            ->type_name("N");

    if (slim::tools::parse_command_line(app, argc, argv, o.help,
                                        " (the trace is given with --events FILE)")) {
        return o;
    }
    // An error rather than a warning: a threshold that is silently not used
    // makes a replay look like it tested something it did not.
    if (o.kind != PolicyKind::predictor) {
        const char* predictor_only = o.gt_ns ? "--gt"
                                   : o.displacement ? "--displacement"
                                   : o.t_react_ns ? "--t-react"
                                   : o.dump_events ? "--dump-events" : nullptr;
        if (predictor_only) {
            throw UsageError(std::string(predictor_only) +
                             " is an option of the pattern predictor (--policy pps or spps); "
                             "--policy " + o.policy_name + " has none. Drop " + predictor_only);
        }
    }
    if (o.gt_ns && o.kind == PolicyKind::predictor && o.policy == Policy::spps) {
        throw UsageError("--gt sets the fixed grouping threshold of --policy pps; spps tunes "
                         "its own (ADGT). Add --policy pps, or drop --gt");
    }
    return o;
}

PredictorConfig predictor_config(const Options& o)
{
    PredictorConfig c;
    c.policy = o.policy;
    if (o.gt_ns) {
        c.fixed_gt_ns = *o.gt_ns;
    }
    if (o.displacement) {
        c.displacement = *o.displacement;
    }
    // The predictor leaves its safety margin for the link it drives.
    c.t_react_ns = o.t_react_ns.value_or(o.link.tau_ns);
    return c;
}

ReplayConfig replay_config(const Options& o)
{
    ReplayConfig c;
    c.link              = o.link;
    c.packed            = o.packed;
    c.policy.kind       = o.kind;
    c.policy.timeout_ns = o.timeout_ns;
    if (o.kind == PolicyKind::predictor) {
        c.policy.predictor = predictor_config(o);
    }
    c.policy.context.depth      = o.context_depth;
    c.policy.context.key        = o.context_key;
    c.policy.context.run_gap_ns = slim::link::context_run_gap_ns(o.link);  // as adaptive
    c.policy.context.t_react_ns = o.link.tau_ns;
    return c;
}

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
// spent time at (a packed burst's width), widest first.
template <typename F>
void for_each_width(const Options& o, const ReplayResult& r, F&& f)
{
    for (unsigned w = slim::link::kMaxLanes; w >= 1; --w) {
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

// "L=4, P=0.5 W/lane, low=1, tau=10us, packed"
std::string link_text(const Options& o)
{
    std::array<char, 160> b{};
    std::snprintf(b.data(), b.size(), "L=%u, P=%s W/lane, low=%u, tau=%s%s", o.link.lanes,
                  slim::parse::format_real(o.link.lane_watts).c_str(), o.link.low_width,
                  human_duration(o.link.tau_ns).c_str(), o.packed ? ", packed" : "");
    return b.data();
}

std::string text_summary(const Options& o, const Replay& driver, const ReplayResult& r,
                         const TraceReader& trace)
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
    out.append("slim-replay: ").append(trace.name()).append(", policy ").append(o.policy_name);
    if (o.kind == PolicyKind::timeout) {
        out.append(" after ").append(human_duration(o.timeout_ns));
    }
    out.append("\n");
    add("events", std::to_string(r.events));
    if (const Predictor* predictor = driver.predictor()) {
        const PredictorStats& s = predictor->stats();
        std::string gt;
        if (s.gt_ns) {
            gt = human_duration(*s.gt_ns) + " (" + std::to_string(*s.gt_ns) + " ns, " +
                 (o.policy == Policy::pps ? "fixed" : "tuned by ADGT") + ")";
        } else if (s.gave_up) {
            gt = "none (ADGT found no grouping threshold; gave up, " +
                 std::to_string(s.tuning_retries) + " retries)";
        } else {
            gt = "none yet (still sampling idle intervals)";
        }
        const auto hit_rate = ratio(static_cast<double>(s.hits), static_cast<double>(s.events));
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
    if (const slim::link::AdaptivePolicy* a = driver.adaptive()) {
        add("policy in force", a->in_force().name() + " (changed " + std::to_string(a->switches()) +
                                       " times)");
        add("predictions", std::to_string(a->predictions()) + ", " + std::to_string(a->hits()) +
                                   " hits");
    }
    add("link", link_text(o));
    std::array<char, 160> b{};
    std::snprintf(b.data(), b.size(), " (%.6g J; always on %.6g J)", r.energy_joules,
                  r.baseline_joules);
    add("energy savings", percent(r.energy_savings_pct) + b.data());
    add("time penalty", percent(r.time_penalty_pct) + " (" + human_duration(r.delay_ns) +
                                " added to " + human_duration(r.original_span_ns) + ")");
    add("late wake-ups", std::to_string(r.late_wakeups) + " (" +
                                 human_duration(r.wakeup_delay_ns) + " waited)");
    add("transitions", std::to_string(r.transitions));
    for_each_width(o, r, [&](unsigned w, TimeNs t) {
        add("time at width " + std::to_string(w), human_duration(t));
    });
    add("time in transition", human_duration(r.time_in_transition_ns));
    return out;
}

// --timeline: the link's usable width (a step at each change) and the
// bursts as replayed, in compact arrays ([t, width], [start, end, width]):
// a window can hold many thousand steps.
nlohmann::ordered_json timeline_json(const Replay& driver)
{
    using Json = nlohmann::ordered_json;
    const slim::link::WidthTimeline& t = driver.timeline();
    Json steps  = Json::array();
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
    return j;
}

// The summary as one line of JSON (README.md lists the keys, in this
// order): ordered_json keeps the order the keys are set in.
std::string json_summary(const Options& o, const Replay& driver, const ReplayResult& r,
                         const TraceReader& trace)
{
    using Json = nlohmann::ordered_json;
    // none (an empty trace, no idle time) is null rather than NaN.
    auto number = [](std::optional<double> v) { return v ? Json(*v) : Json(nullptr); };
    Json j;
    j["schema"] = "slimlink.replay.v1";
    j["trace"]  = trace.name();
    j["policy"] = o.policy_name;
    if (o.kind == PolicyKind::timeout) {
        j["timeout_ns"] = o.timeout_ns;
    }
    if (const slim::link::AdaptivePolicy* a = driver.adaptive()) {
        j["policy_in_force"] = a->in_force().name();
        j["policy_switches"] = a->switches();
        j["predictions"]     = a->predictions();
        j["hits"]            = a->hits();
    }
    if (const Predictor* predictor = driver.predictor()) {
        const PredictorStats&  s = predictor->stats();
        const PredictorConfig& c = predictor->config();
        j["displacement"]   = c.displacement;
        j["t_react_ns"]     = c.t_react_ns;
        j["events"]         = s.events;
        j["grams"]          = s.grams;
        j["gt_ns"]          = s.gt_ns ? Json(*s.gt_ns) : Json(nullptr);
        j["gave_up"]        = s.gave_up;
        j["tuning_retries"] = s.tuning_retries;
        j["restarts"]       = s.restarts;
        j["predictions"]    = s.predictions;
        j["mispredictions"] = s.mispredictions;
        j["hits"]           = s.hits;
        j["hit_rate"] =
                number(ratio(static_cast<double>(s.hits), static_cast<double>(s.events)));
        j["total_idle_ns"]     = s.total_idle_ns;
        j["predicted_idle_ns"] = s.predicted_idle_ns;
        j["predicted_idle_share"] = number(ratio(static_cast<double>(s.predicted_idle_ns),
                                                 static_cast<double>(s.total_idle_ns)));
    } else {
        j["events"] = r.events;
    }
    j["link"] = {{"lanes", o.link.lanes},
                 {"lane_watts", o.link.lane_watts},
                 {"low_width", o.link.low_width},
                 {"tau_ns", o.link.tau_ns}};
    j["packed"]                = o.packed;
    j["energy_joules"]         = r.energy_joules;
    j["baseline_joules"]       = r.baseline_joules;
    j["energy_savings_pct"]    = number(r.energy_savings_pct);
    j["original_span_ns"]      = r.original_span_ns;
    j["delay_ns"]              = r.delay_ns;
    j["time_penalty_pct"]      = number(r.time_penalty_pct);
    j["late_wakeups"]          = r.late_wakeups;
    j["wakeup_delay_ns"]       = r.wakeup_delay_ns;
    j["transitions"]           = r.transitions;
    Json& widths               = j["time_at_width_ns"] = Json::object();
    for_each_width(o, r, [&](unsigned w, TimeNs t) { widths[std::to_string(w)] = t; });
    j["time_in_transition_ns"] = r.time_in_transition_ns;
    if (o.timeline_events > 0) {
        j["timeline"] = timeline_json(driver);
    }
    // A trace name that is not UTF-8 (a file name is any bytes) gets U+FFFD
    // rather than an exception or invalid JSON.
    return j.dump(-1, ' ', false, Json::error_handler_t::replace) + "\n";
}

// "INDEX EVENT_ID PREDICTION\n" without allocating: 10^7-event traces.
void dump_event(std::uint64_t index, std::uint32_t id, bool prediction)
{
    std::array<char, 48> buf{};
    // Numbers stop short of the end, so the separators always fit (20 + 10
    // digits at most).
    char* const numbers_end = buf.data() + buf.size() - 8;
    char* p = std::to_chars(buf.data(), numbers_end, index).ptr;
    *p++ = ' ';
    p = std::to_chars(p, numbers_end, id).ptr;
    *p++ = ' ';
    *p++ = prediction ? '1' : '0';
    *p++ = '\n';
    std::fwrite(buf.data(), 1, static_cast<std::size_t>(p - buf.data()), stdout);
}

// The predictor's own check of its configuration (beyond our ranges) is a
// usage error too.
class ConfigRefused : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// `timeline_first`: the 0-based index of the first event --timeline records.
Replay make_replay(const Options& o, std::uint64_t timeline_first)
{
    ReplayConfig c = replay_config(o);
    c.timeline_first_event = timeline_first;
    c.timeline_events      = o.timeline_events;
    try {
        return Replay(c);
    } catch (const std::exception& e) {
        throw ConfigRefused(std::string("the predictor refused the configuration: ") + e.what());
    }
}

// ------------------------------------------------------------ the replay

// The trace, read once -- or twice with --timeline N, which records the
// last N events and so needs the trace's length before the replay. A file
// is then simply read again. Standard input, a pipe or a device
// (--events <(zcat run.trace.gz)) can be read only once: its text is kept
// in memory for both passes.
class TraceInput {
public:
    TraceInput(std::string path, std::string location, bool twice)
        : path_(std::move(path)), location_(std::move(location))
    {
        if (!twice || rereadable(path_)) {
            return;
        }
        kept_.emplace();
        if (path_ == "-") {
            *kept_ << std::cin.rdbuf();
        } else {
            std::ifstream in(path_, std::ios::in | std::ios::binary);
            if (!in) {
                TraceReader says_why(path_);  // throws TraceError, as for any trace
            }
            *kept_ << in.rdbuf();
        }
    }

    // A reader from the trace's first line (replacing the last one opened).
    TraceReader& open()
    {
        reader_.reset();
        // An OTF2 archive's events are in memory already: decoded once.
        if (owned_ && owned_->rewind()) {
            return *owned_;
        }
        owned_.reset();
        if (!kept_) {
            // A text trace, or an OTF2 archive (read whole, --location's
            // events kept in memory): src/tools/otf2_trace.h.
            owned_ = slim::tools::open_trace(path_, location_);
            return *owned_;
        }
        if (!location_.empty()) {
            throw TraceError(path_ == "-" ? std::string("<stdin>") : path_, 0,
                             "--location chooses a location of an OTF2 archive, and standard "
                             "input or a pipe is read as a text trace");
        }
        // An empty input leaves failbit set on the copy.
        kept_->clear();
        kept_->seekg(0);
        return reader_.emplace(*kept_, path_ == "-" ? std::string("<stdin>") : path_);
    }

private:
    static bool rereadable(const std::string& path)
    {
        if (path == "-") {
            return false;
        }
        std::error_code ec;
        const auto      type = std::filesystem::status(path, ec).type();
        // What cannot be read is said by the reader, as without --timeline.
        return ec || type == std::filesystem::file_type::regular ||
               type == std::filesystem::file_type::directory ||
               type == std::filesystem::file_type::not_found;
    }

    std::string                      path_;
    std::string                      location_;
    std::optional<std::stringstream> kept_;
    std::optional<TraceReader>       reader_;
    std::unique_ptr<TraceReader>     owned_;
};

int run(const Options& o)
{
    TraceInput    input(o.events, o.location, o.timeline_events > 0);
    std::uint64_t timeline_first = 0;
    if (o.timeline_events > 0) {
        TraceReader&  counter = input.open();
        std::uint64_t events  = 0;
        while (counter.next()) {
            ++events;
        }
        timeline_first = events - std::min(events, o.timeline_events);
    }
    Replay        driver = make_replay(o, timeline_first);
    TraceReader&  trace  = input.open();
    std::uint64_t index  = 0;
    while (const auto event = trace.next()) {
        bool prediction_active = false;
        try {
            prediction_active = driver.on_event(*event).prediction_active;
        } catch (const std::exception& e) {
            // The reader already enforces the predictor's and the model's
            // input rules, so this is a bug: say where, exit 1.
            throw std::runtime_error(trace.name() + ":" + std::to_string(trace.line()) +
                                     ": the replay failed on this event: " + e.what());
        }
        ++index;
        if (o.dump_events) {
            dump_event(index, event->id, prediction_active);
        }
    }
    ReplayResult      result  = driver.result();
    const std::string summary = o.json ? json_summary(o, driver, result, trace)
                                       : text_summary(o, driver, result, trace);
    std::fputs(summary.c_str(), stdout);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        std::fprintf(stderr, "%s: writing to standard output failed\n", program);
        return exit_failure;
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv)
{
    Options options;
    try {
        options = parse_options(argc, argv);
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

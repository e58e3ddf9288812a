// SPDX-License-Identifier: BSD-3-Clause
#include "tools/replay_options.h"

#include "base/parse.h"
#include "tools/cli_common.h"
#include "tools/help_formatter.h"

#include <CLI/CLI.hpp>

#include <chrono>
#include <memory>
#include <stdexcept>

namespace slim::tools {

namespace {

using slim::link::PolicyKind;
using Options = ReplayOptions;
using namespace std::chrono_literals;

// Accepted ranges; the parsers name them in their messages.
constexpr std::chrono::nanoseconds gt_min = 1ns, gt_max = 1s;
constexpr std::chrono::nanoseconds t_react_min = 0ns, t_react_max = 1s;
constexpr double displacement_min = 0.0, displacement_max = 1.0;
// --timeline: a million events make a JSON line of about 60 MB.
constexpr std::int64_t timeline_min = 1, timeline_max = 1'000'000;

// --cpu's spec, as cli_common.h's link_forms describes --link's.
constexpr const char *cpu_forms =
        "comma-separated KEY=VALUE, any subset in any order, of f and f_low (full and low "
        "frequency, GHz), P and P_low (watts per core polling at each), tau (performance-state "
        "change time, a duration) and handle (work after an arrival done at f_low, a "
        "duration), e.g. f=2.45,P=3,f_low=1.5,P_low=1.4,tau=20us,handle=5us";

// --policy: a name of the registry's (predict/policy_registry.h).
void parse_policy(Options& o, const std::string& v)
{
    try {
        o.policy = slim::link::replay_policy(v);
    } catch (const std::exception&) {
        throw UsageError(slim::parse::bad_value("--policy", v, slim::link::replay_policy_forms));
    }
}

// The pattern predictor's policies, the only ones its options apply to.
bool pattern(const Options& o)
{
    return o.policy.kind == PolicyKind::pps || o.policy.kind == PolicyKind::spps;
}
}  // namespace

ReplayOptions parse_replay_options(int argc, char **argv)
{
    namespace parse = slim::parse;
    ReplayOptions o;
    CLI::App app("Replays an event trace through the link model under a power policy and "
                 "prints a summary: energy saved, time lost, and for pps/spps the predictor's "
                 "statistics.",
                 replay_program);
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
               "location (slim-replay(1))")
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
                   } catch (const slim::Error& e) {
                       throw UsageError(parse::bad_value("--link", v, link_forms) + " (" +
                                        e.what() + ")");
                   }
               },
               "the link: L=LANES,P=WATTS,low=WIDTH,tau=DURATION, any subset; lanes 1, 2, 4, 8 "
               "or 12 (default L=4,P=0.5,low=1,tau=10us)")
            ->type_name("SPEC");
    CLI::Option *const cpu =
            app.add_option_function<std::string>(
                       "--cpu",
                       [&](const std::string& v) {
                           try {
                               o.cpu = slim::cpu::parse_cpu_config(v);
                           } catch (const slim::Error& e) {
                               throw UsageError(parse::bad_value("--cpu", v, cpu_forms) + " (" +
                                                e.what() + ")");
                           }
                       },
                       "also replay the CPU side: the trace's waits ('w' lines) on an emulated "
                       "core under --cpu-policy; SPEC (after '=') sets the core, KEY=VALUE, any "
                       "subset: f and f_low (GHz), P and P_low (watts per core at each), tau "
                       "and handle (durations); default "
                       "f=2.45,P=3,f_low=1.5,P_low=1.4,tau=20us,handle=5us, an EPYC 7763 core "
                       "at P0 and P2")
                    ->type_name("[=SPEC]")
                    ->expected(0, 1);
    app.add_option_function<std::string>(
               "--cpu-policy",
               [&](const std::string& v) {
                   const std::string name = value_of("--cpu-policy", "POLICY", v);
                   try {
                       o.cpu_policy = slim::link::replay_policy(name);
                   } catch (const std::exception&) {
                       throw UsageError(slim::parse::bad_value("--cpu-policy", name,
                                                               slim::link::replay_policy_forms));
                   }
               },
               "with --cpu: the policy of the core, any of --policy's (default adaptive: the "
               "link's candidates and the 500us timeout replayed in shadow on the core); "
               "timeout:500us is the field's baseline")
            ->type_name("POLICY")
            ->needs(cpu);
    // "--packed=yes" is refused (a flag's value could only repeat it).
    app.add_flag("--packed", o.packed,
                 "a burst needs only the lanes its packed bytes fill: max(1, ceil(L * "
                 "packed_bytes / bytes))")
            ->disable_flag_override();
    app.add_option_function<std::string>(
               "--gt",
               [&](const std::string& v) {
                   o.gt_ns =
                           parse::duration("--gt", value_of("--gt", "DURATION", v), gt_min, gt_max)
                                   .count();
               },
               "pps only: the grouping threshold, 1ns to 1s (default 20us)")
            ->type_name("DURATION");
    app.add_option_function<std::string>(
               "--displacement",
               [&](const std::string& v) {
                   o.displacement =
                           parse::real("--displacement", value_of("--displacement", "X", v),
                                       displacement_min, displacement_max);
               },
               "pps/spps: displacement factor of Algorithm 4, 0 to 1 (default 0.05)")
            ->type_name("X");
    app.add_option_function<std::string>(
               "--max-slowdown",
               [&](const std::string& v) {
                   o.max_slowdown_pct =
                           parse::percentage(value_of("--max-slowdown", "PCT", v), 0.0, 100.0);
                   if (!o.max_slowdown_pct) {
                       throw UsageError(slim::parse::bad_value(
                               "--max-slowdown", v,
                               "a percentage from 0 to 100, e.g. 1, 0.5% or 5%"));
                   }
               },
               "adaptive (--policy or --cpu-policy): the modelled time penalty, in % of the "
               "run, that the candidate followed must stay within, 0 to 100 (default 1; a "
               "trailing % is allowed): UCX_SLIM_MAX_SLOWDOWN of a live run")
            ->type_name("PCT");
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
    CLI::Option *const json = app.add_flag("--json", o.json, "the summary as one line of JSON")
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
    // "--cpu" without a value: the default core.
    if (cpu->count() > 0 && !o.cpu) {
        o.cpu = slim::cpu::CpuConfig{};
    }
    // An error rather than a warning: a threshold that is silently not used
    // makes a replay look like it tested something it did not.
    if (!pattern(o)) {
        const char *predictor_only = o.gt_ns          ? "--gt"
                                     : o.displacement ? "--displacement"
                                     : o.t_react_ns   ? "--t-react"
                                     : o.dump_events  ? "--dump-events"
                                                      : nullptr;
        if (predictor_only) {
            throw UsageError(std::string(predictor_only) +
                             " is an option of the pattern predictor (--policy pps or spps); "
                             "--policy " +
                             o.policy.registry_name + " has none. Drop " + predictor_only);
        }
    }
    if (o.max_slowdown_pct) {
        const bool cpu_adaptive = o.cpu && o.cpu_policy.kind == PolicyKind::adaptive;
        if (o.policy.kind != PolicyKind::adaptive && !cpu_adaptive) {
            throw UsageError("--max-slowdown bounds the adaptive policy (--policy adaptive, or "
                             "--cpu with --cpu-policy adaptive); --policy " +
                             o.policy.registry_name + " holds no bound. Drop --max-slowdown");
        }
        o.policy.max_slowdown_pct     = *o.max_slowdown_pct;
        o.cpu_policy.max_slowdown_pct = *o.max_slowdown_pct;
    }
    if (o.gt_ns && o.policy.kind == PolicyKind::spps) {
        throw UsageError("--gt sets the fixed grouping threshold of --policy pps; spps tunes "
                         "its own (ADGT). Add --policy pps, or drop --gt");
    }
    return o;
}

link::ReplayConfig replay_config(const Options& o)
{
    link::ReplayConfig c;
    c.link   = o.link;
    c.packed = o.packed;
    // The predictors leave their safety margin for the link they drive.
    c.policy = slim::link::bound_to(o.policy, o.link);
    if (o.gt_ns) {
        c.policy.predictor.fixed_gt_ns = *o.gt_ns;
    }
    if (o.displacement) {
        c.policy.predictor.displacement = *o.displacement;
    }
    if (o.t_react_ns) {
        c.policy.predictor.t_react_ns = *o.t_react_ns;
    }
    return c;
}

}  // namespace slim::tools

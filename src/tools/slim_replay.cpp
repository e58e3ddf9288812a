// slim-replay: runs the pattern predictor (src/predict/predictor.h) over an
// event trace (src/predict/trace.h) and prints what it predicted. The same
// predictor the runtime uses, so a trace recorded from a run can be replayed
// with other settings; see README.md, "Event traces and slim-replay".
//
// Exit status: 0 done, 2 bad command line or bad trace, 1 anything else
// (e.g. standard output could not be written).
#include "configuration.h"
#include "predict/predictor.h"
#include "predict/trace.h"
#include "report.h"

#include <array>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <ios>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace {

using slim::predict::Decision;
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

constexpr const char* usage_text =
        "usage: slim-replay --events FILE [--policy spps|pps] [--gt DURATION]\n"
        "                   [--displacement X] [--t-react DURATION]\n"
        "                   [--dump-events] [--json]\n"
        "\n"
        "Runs the pattern predictor over an event trace and prints a summary.\n"
        "\n"
        "  --events FILE        trace, one event per line: t_start_ns t_end_ns event_id\n"
        "                       [bytes] [packed_bytes]; '#' starts a comment; '-' is stdin\n"
        "  --policy spps|pps    spps (default): grouping threshold tuned by ADGT;\n"
        "                       pps: fixed grouping threshold (--gt)\n"
        "  --gt DURATION        pps only: the grouping threshold, 1ns to 1s (default 20us)\n"
        "  --displacement X     displacement factor of Algorithm 4, 0 to 1 (default 0.05)\n"
        "  --t-react DURATION   link reactivation time, 0ns to 1s (default 10us)\n"
        "  --dump-events        first, one line per event: INDEX EVENT_ID PREDICTION\n"
        "                       (index from 1; prediction 1 when a prediction is active\n"
        "                       after that event)\n"
        "  --json               the summary as one line of JSON\n"
        "  --help               this text\n"
        "\n"
        "Durations take a unit: ns, us, ms or s (e.g. 20us, 1.5ms).\n"
        "Exit status: 0 done, 2 bad command line or bad trace, 1 other errors.\n";

class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct Options {
    std::string           events;
    Policy                policy = Policy::spps;
    std::optional<TimeNs> gt_ns;
    std::optional<double> displacement;
    std::optional<TimeNs> t_react_ns;
    bool                  dump_events = false;
    bool                  json        = false;
    bool                  help        = false;
};

// Walks argv; options with values take "--opt VALUE" or "--opt=VALUE".
class Arguments {
public:
    Arguments(int argc, char** argv) : argc_(argc), argv_(argv) {}

    bool done() const { return next_ >= argc_; }

    // The next option's name; its inline "=VALUE", if any, is kept for value().
    std::string option()
    {
        std::string arg = argv_[next_++];
        inline_value_.reset();
        if (arg.rfind("--", 0) == 0) {
            if (const std::size_t eq = arg.find('='); eq != std::string::npos) {
                inline_value_ = arg.substr(eq + 1);
                arg.resize(eq);
            }
        }
        return arg;
    }

    std::string value(const std::string& option, const char* what)
    {
        if (inline_value_) {
            return *std::exchange(inline_value_, std::nullopt);
        }
        // "--gt --json" is a forgotten value, not a threshold named "--json".
        if (next_ >= argc_ || std::string_view(argv_[next_]).rfind("--", 0) == 0) {
            throw UsageError("option " + option + " needs a value: " + what);
        }
        return argv_[next_++];
    }

    void no_value(const std::string& option)
    {
        if (inline_value_) {
            throw UsageError("option " + option + " takes no value");
        }
    }

private:
    int                        argc_;
    char**                     argv_;
    int                        next_ = 1;
    std::optional<std::string> inline_value_;
};

Options parse_options(int argc, char** argv)
{
    namespace parse = slim::parse;
    Options   o;
    Arguments args(argc, argv);
    while (!args.done()) {
        const std::string opt = args.option();
        if (opt == "--help" || opt == "-h") {
            o.help = true;
        } else if (opt == "--events") {
            o.events = args.value(opt, "a trace file, or - for standard input");
        } else if (opt == "--policy") {
            const std::string v = args.value(opt, "spps or pps");
            o.policy = parse::choice("--policy", v, {"spps", "pps"}) == 0 ? Policy::spps
                                                                           : Policy::pps;
        } else if (opt == "--gt") {
            const std::string v = args.value(opt, "a duration from 1ns to 1s, e.g. 20us");
            o.gt_ns = parse::duration("--gt", v, gt_min, gt_max).count();
        } else if (opt == "--displacement") {
            const std::string v = args.value(opt, "a number from 0 to 1, e.g. 0.05");
            o.displacement = parse::real("--displacement", v, displacement_min, displacement_max);
        } else if (opt == "--t-react") {
            const std::string v = args.value(opt, "a duration from 0ns to 1s, e.g. 10us");
            o.t_react_ns = parse::duration("--t-react", v, t_react_min, t_react_max).count();
        } else if (opt == "--dump-events") {
            args.no_value(opt);
            o.dump_events = true;
        } else if (opt == "--json") {
            args.no_value(opt);
            o.json = true;
        } else if (opt.rfind("-", 0) == 0 && opt != "-") {
            throw UsageError("unknown option '" + opt + "'");
        } else {
            throw UsageError("unexpected argument '" + opt + "' (the trace is given with --events FILE)");
        }
    }
    if (o.help) {
        return o;
    }
    if (o.events.empty()) {
        throw UsageError("--events FILE is required");
    }
    // An error rather than a warning: a threshold that is silently not used
    // makes a replay look like it tested something it did not.
    if (o.gt_ns && o.policy == Policy::spps) {
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
    if (o.t_react_ns) {
        c.t_react_ns = *o.t_react_ns;
    }
    return c;
}

const char* policy_name(Policy p) { return p == Policy::pps ? "pps" : "spps"; }

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

std::string text_summary(const Options& o, const Predictor& predictor, const TraceReader& trace)
{
    const PredictorStats& s = predictor.stats();
    std::string gt;
    if (s.gt_ns) {
        gt = human_duration(*s.gt_ns) + " (" + std::to_string(*s.gt_ns) + " ns, " +
             (o.policy == Policy::pps ? "fixed" : "tuned by ADGT") + ")";
    } else if (s.gave_up) {
        gt = "none (ADGT found no grouping threshold; gave up)";
    } else {
        gt = "none yet (still sampling idle intervals)";
    }
    const auto hit_rate = ratio(static_cast<double>(s.hits), static_cast<double>(s.events));
    const auto idle_share = ratio(static_cast<double>(s.predicted_idle_ns),
                                  static_cast<double>(s.total_idle_ns));
    std::array<char, 256> line{};
    std::string out;
    auto add = [&](const char* label, const std::string& value) {
        std::snprintf(line.data(), line.size(), "  %-22s %s\n", label, value.c_str());
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
    out.append("slim-replay: ").append(trace.name()).append(", policy ")
            .append(policy_name(o.policy)).append("\n");
    add("events", std::to_string(s.events));
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
    return out;
}

std::string json_summary(const Options& o, const Predictor& predictor, const TraceReader& trace)
{
    const PredictorStats&  s = predictor.stats();
    const PredictorConfig& c = predictor.config();
    auto number = [](std::optional<double> v) {
        return v ? slim::parse::format_real(*v) : std::string("null");
    };
    auto u64 = [](std::uint64_t v) { return std::to_string(v); };
    std::string out = "{\"schema\":\"slimlink.replay.v1\"";
    out.append(",\"trace\":").append(slim::json_quote(trace.name()));
    out.append(",\"policy\":\"").append(policy_name(o.policy)).append("\"");
    out.append(",\"displacement\":").append(slim::parse::format_real(c.displacement));
    out.append(",\"t_react_ns\":").append(std::to_string(c.t_react_ns));
    out.append(",\"events\":").append(u64(s.events));
    out.append(",\"grams\":").append(u64(s.grams));
    out.append(",\"gt_ns\":").append(s.gt_ns ? std::to_string(*s.gt_ns) : "null");
    out.append(",\"gave_up\":").append(s.gave_up ? "true" : "false");
    out.append(",\"restarts\":").append(u64(s.restarts));
    out.append(",\"predictions\":").append(u64(s.predictions));
    out.append(",\"mispredictions\":").append(u64(s.mispredictions));
    out.append(",\"hits\":").append(u64(s.hits));
    out.append(",\"hit_rate\":")
            .append(number(ratio(static_cast<double>(s.hits), static_cast<double>(s.events))));
    out.append(",\"total_idle_ns\":").append(std::to_string(s.total_idle_ns));
    out.append(",\"predicted_idle_ns\":").append(std::to_string(s.predicted_idle_ns));
    out.append(",\"predicted_idle_share\":")
            .append(number(ratio(static_cast<double>(s.predicted_idle_ns),
                                 static_cast<double>(s.total_idle_ns))));
    out.append("}\n");
    return out;
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

Predictor make_predictor(const Options& o)
{
    try {
        return Predictor(predictor_config(o));
    } catch (const std::exception& e) {
        throw ConfigRefused(std::string("the predictor refused the configuration: ") + e.what());
    }
}

int run(const Options& o)
{
    Predictor     predictor = make_predictor(o);
    TraceReader   trace(o.events);
    std::uint64_t index = 0;
    while (const auto event = trace.next()) {
        Decision d;
        try {
            d = predictor.on_event(*event);
        } catch (const std::exception& e) {
            // The reader already enforces the predictor's input rules, so
            // this is a predictor bug: say where, exit 1.
            throw std::runtime_error(trace.name() + ":" + std::to_string(trace.line()) +
                                     ": the predictor failed on this event: " + e.what());
        }
        ++index;
        if (o.dump_events) {
            dump_event(index, event->id, d.prediction_active);
        }
    }
    const std::string summary =
            o.json ? json_summary(o, predictor, trace) : text_summary(o, predictor, trace);
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
    if (options.help) {
        std::fputs(usage_text, stdout);
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

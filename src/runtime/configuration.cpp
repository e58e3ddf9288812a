// SPDX-License-Identifier: BSD-3-Clause
#include "configuration.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <vector>

namespace slim {

const char *to_string(LogLevel level) noexcept
{
    switch (level) {
    case LogLevel::off:   return "off";
    case LogLevel::error: return "error";
    case LogLevel::warn:  return "warn";
    case LogLevel::info:  return "info";
    case LogLevel::debug: return "debug";
    case LogLevel::trace: return "trace";
    }
    return "?";
}

const char *to_string(LinkBackendKind kind) noexcept
{
    switch (kind) {
    case LinkBackendKind::emulated: return "emulated";
    case LinkBackendKind::ibmad:    return "ibmad";
    case LinkBackendKind::exec:     return "exec";
    }
    return "?";
}

const char *to_string(PackingMode mode) noexcept
{
    switch (mode) {
    case PackingMode::automatic: return "auto";
    case PackingMode::on:        return "on";
    case PackingMode::off:       return "off";
    }
    return "?";
}

namespace parse {

namespace {

char ascii_lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool iequals(std::string_view a, std::string_view b)
{
    if (a.size() != b.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (ascii_lower(a[i]) != ascii_lower(b[i])) {
            return false;
        }
    }
    return true;
}

// Parses all of `text` as a double; from_chars is locale-independent, unlike
// strtod, which matters inside applications that call setlocale().
bool whole_double(std::string_view text, double &out)
{
    if (text.empty() || text.front() == '+') {
        return false;
    }
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && end == text.data() + text.size() && std::isfinite(out);
}

struct Unit {
    const char  *suffix;
    std::int64_t ns;
};
// Longest suffix first so "ms" is not read as "m" + "s".
constexpr std::array<Unit, 4> duration_units{{{"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}}};

} // namespace

std::string bad_value(std::string_view var, std::string_view value, std::string_view accepted)
{
    std::string msg;
    msg.reserve(var.size() + value.size() + accepted.size() + 32);
    msg.append(var).append("='").append(value).append("': accepted values are ").append(accepted);
    return msg;
}

std::size_t choice(const char *var, const std::string &value,
                   std::initializer_list<const char *> choices)
{
    std::size_t index = 0;
    for (const char *c : choices) {
        if (iequals(value, c)) {
            return index;
        }
        ++index;
    }
    std::string accepted;
    for (const char *c : choices) {
        accepted.append(accepted.empty() ? "" : ", ").append(c);
    }
    accepted.append(" (case-insensitive)");
    throw ConfigError(bad_value(var, value, accepted));
}

bool yes_no(const char *var, const std::string &value)
{
    const std::size_t index = choice(var, value, {"y", "n", "yes", "no"});
    return index == 0 || index == 2;
}

std::int64_t integer(const char *var, const std::string &value, std::int64_t min, std::int64_t max)
{
    const std::string accepted =
            "integers from " + std::to_string(min) + " to " + std::to_string(max);
    std::int64_t result = 0;
    const char  *first  = value.data();
    const char  *last   = value.data() + value.size();
    const auto [end, ec] = std::from_chars(first, last, result);
    if (value.empty() || ec != std::errc{} || end != last || result < min || result > max) {
        throw ConfigError(bad_value(var, value, accepted));
    }
    return result;
}

double real(const char *var, const std::string &value, double min, double max)
{
    double result = 0;
    if (!whole_double(value, result) || result < min || result > max) {
        throw ConfigError(bad_value(var, value,
                                    "numbers from " + format_real(min) + " to " + format_real(max)));
    }
    return result;
}

std::chrono::nanoseconds duration(const char *var, const std::string &value,
                                  std::chrono::nanoseconds min, std::chrono::nanoseconds max)
{
    const std::string accepted = "durations from " + format_duration(min) + " to " +
                                 format_duration(max) + " with a unit ns, us, ms or s (e.g. 10us)";
    const std::string_view text{value};
    for (const Unit &unit : duration_units) {
        const std::string_view suffix{unit.suffix};
        if (text.size() <= suffix.size() ||
            text.substr(text.size() - suffix.size()) != suffix) {
            continue;
        }
        const std::string_view number = text.substr(0, text.size() - suffix.size());
        double                 amount = 0;
        // "1.5ms" is fine, "5 ms", "-1s" and "1e999s" are not.
        if (!whole_double(number, amount) || amount < 0) {
            break;
        }
        // Round first, then compare exactly: "0.01ms" must equal a 10us bound
        // even though 0.01 * 1e6 is not exactly 10000 in binary.
        const double ns = amount * static_cast<double>(unit.ns);
        if (ns >= 9.2e18) { // would overflow int64 nanoseconds (~292 years)
            break;
        }
        const std::chrono::nanoseconds result{static_cast<std::int64_t>(std::llround(ns))};
        if (result < min || result > max) {
            break;
        }
        return result;
    }
    throw ConfigError(bad_value(var, value, accepted));
}

std::string format_duration(std::chrono::nanoseconds d)
{
    const std::int64_t ns = d.count();
    for (auto it = duration_units.rbegin(); it != duration_units.rend(); ++it) {
        if (ns != 0 && ns % it->ns == 0) {
            return std::to_string(ns / it->ns) + it->suffix;
        }
    }
    return std::to_string(ns) + "ns";
}

std::string format_real(double v)
{
    std::array<char, 32> buf{};
    const auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), v);
    return ec == std::errc{} ? std::string(buf.data(), end) : std::string("?");
}

} // namespace parse

namespace {

std::string parse_inner(const std::string &value)
{
    constexpr const char *accepted =
            "UCT transport names of 1 to 31 characters a-z, 0-9 and _, other than slim "
            "(e.g. tcp, rc_verbs, rc_mlx5, ud_verbs, dc_mlx5)";
    // UCT_TL_NAME_MAX is 32 including the terminating NUL.
    bool ok = !value.empty() && value.size() <= 31 && value != "slim";
    for (const char c : value) {
        ok = ok && ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_');
    }
    if (!ok) {
        throw ConfigError(parse::bad_value(Config::inner_var, value, accepted));
    }
    return value;
}

ReportTarget parse_report(const std::string &value)
{
    constexpr std::string_view json = ".json";
    ReportTarget               target;
    if (parse::iequals(value, "none")) {
        return target;
    }
    if (parse::iequals(value, "stdout")) {
        target.kind = ReportTarget::Kind::stdout_text;
        return target;
    }
    const std::string_view text{value};
    const bool ends_in_json = text.size() > json.size() &&
                              text.substr(text.size() - json.size()) == json &&
                              text[text.size() - json.size() - 1] != '/';
    if (!ends_in_json) {
        throw ConfigError(parse::bad_value(Config::report_var, value,
                                           "none, stdout, or a path ending in .json"));
    }
    target.kind = ReportTarget::Kind::json_file;
    target.path = value;
    return target;
}

LogLevel parse_log_level(const std::string &value)
{
    static constexpr std::array<LogLevel, 6> levels{LogLevel::off,  LogLevel::error,
                                                    LogLevel::warn, LogLevel::info,
                                                    LogLevel::debug, LogLevel::trace};
    return levels.at(parse::choice(Config::log_level_var, value,
                                   {"off", "error", "warn", "info", "debug", "trace"}));
}

LinkBackendKind parse_link(const std::string &value)
{
    static constexpr std::array<LinkBackendKind, 3> kinds{
            LinkBackendKind::emulated, LinkBackendKind::ibmad, LinkBackendKind::exec};
    return kinds.at(parse::choice(Config::link_var, value, {"emulated", "ibmad", "exec"}));
}

constexpr const char *link_exec_accepted =
        "a command containing {width} and optionally {device} and {port}, "
        "e.g. '/usr/local/sbin/set-width {device} {port} {width}'";

// The command template: {width} required; no other {...} placeholders.
std::string parse_link_exec(const std::string &value)
{
    bool ok        = value.find("{width}") != std::string::npos;
    bool has_word  = false;
    for (std::size_t i = 0; ok && i < value.size(); ++i) {
        has_word = has_word || (value[i] != ' ' && value[i] != '\t');
        if (value[i] == '}') {
            ok = false; // a '}' not closing a known placeholder
        }
        if (value[i] != '{') {
            continue;
        }
        const std::size_t close = value.find('}', i);
        const std::string key =
                close == std::string::npos ? std::string() : value.substr(i + 1, close - i - 1);
        ok = key == "width" || key == "device" || key == "port";
        i  = ok ? close : i;
    }
    if (!ok || !has_word || value.front() == '{') {
        throw ConfigError(parse::bad_value(Config::link_exec_var, value, link_exec_accepted));
    }
    return value;
}

PackingMode parse_packing(const std::string &value)
{
    static constexpr std::array<PackingMode, 3> modes{PackingMode::automatic, PackingMode::on,
                                                      PackingMode::off};
    return modes.at(parse::choice(Config::packing_var, value, {"auto", "on", "off"}));
}

live::PredictorKind parse_predictor(const std::string &value)
{
    using live::PredictorKind;
    static constexpr std::array<PredictorKind, 5> kinds{PredictorKind::adaptive, PredictorKind::spps,
                                                        PredictorKind::pps, PredictorKind::timeout,
                                                        PredictorKind::off};
    return kinds.at(parse::choice(Config::predictor_var, value,
                                  {"adaptive", "spps", "pps", "timeout", "off"}));
}

// Any value: empty means no trace (as `ucx_info -c` documents); a directory
// that cannot be written is reported by the trace itself, in the report.
std::string parse_trace_dir(const std::string &value) { return value; }

// 0s: the leader takes what is there at exit; 600s bounds a hung job's exit.
std::chrono::nanoseconds parse_report_wait(const std::string &value)
{
    return parse::duration(Config::report_wait_var, value, std::chrono::seconds(0),
                           std::chrono::seconds(600));
}

bool parse_inject_delay(const std::string &value)
{
    return parse::yes_no(Config::inject_delay_var, value);
}

// Inline rules or @file; a PolicyError already names the variable, the
// offending rule (and file:line) and the accepted forms.
policy::Policy parse_policy(const std::string &value)
{
    try {
        return policy::Policy::parse(value);
    } catch (const policy::PolicyError &e) {
        throw ConfigError(e.what());
    }
}

} // namespace

Config Config::from_lookup(const EnvLookup &lookup)
{
    Config                   config;
    std::vector<std::string> problems;

    // Reads one variable into `field` when it is set; collects the error
    // otherwise, so a user fixes every bad variable in one round.
    auto read = [&](const char *var, auto &field, auto parser) {
        const std::optional<std::string> value = lookup(var);
        if (!value) {
            return;
        }
        try {
            field = parser(*value);
        } catch (const ConfigError &e) {
            problems.emplace_back(e.what());
        }
    };
    read(inner_var, config.inner, parse_inner);
    read(report_var, config.report, parse_report);
    read(log_level_var, config.log_level, parse_log_level);
    read(link_var, config.link, parse_link);
    read(link_exec_var, config.link_exec, parse_link_exec);
    read(inject_delay_var, config.inject_delay, parse_inject_delay);
    read(policy_var, config.policy, parse_policy);
    read(packing_var, config.packing, parse_packing);
    read(predictor_var, config.predictor, parse_predictor);
    read(trace_var, config.trace_dir, parse_trace_dir);
    read(report_wait_var, config.report_wait, parse_report_wait);
    if (config.link == LinkBackendKind::exec && !lookup(link_exec_var)) {
        problems.emplace_back(std::string(link_exec_var) + " is unset: it is required when " +
                              link_var + "=exec; accepted values are " + link_exec_accepted);
    }

    if (!problems.empty()) {
        std::string msg;
        for (const std::string &p : problems) {
            msg.append(msg.empty() ? "" : "; ").append(p);
        }
        throw ConfigError(msg);
    }
    return config;
}

Config Config::from_environment() { return from_lookup(process_environment()); }

} // namespace slim

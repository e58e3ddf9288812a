// SPDX-License-Identifier: BSD-3-Clause
#include "configuration.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <vector>

namespace slim {

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

// SPDX-License-Identifier: BSD-3-Clause
#include "configuration.h"

#include "slim_config.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <strings.h>
#include <vector>

namespace slim {

const char *to_string(LinkBackendKind kind) noexcept
{
    switch (kind) {
    case LinkBackendKind::emulated: return "emulated";
    case LinkBackendKind::ibmad: return "ibmad";
    case LinkBackendKind::exec: return "exec";
    }
    return "?";
}

const char *to_string(PackingMode mode) noexcept
{
    switch (mode) {
    case PackingMode::automatic: return "auto";
    case PackingMode::on: return "on";
    case PackingMode::off: return "off";
    }
    return "?";
}


namespace {

std::string parse_inner(const std::string& value)
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

ReportTarget parse_report(const std::string& value)
{
    constexpr std::string_view json = ".json";
    ReportTarget target;
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

constexpr const char *link_exec_accepted =
        "a command containing {width} and optionally {device} and {port}, "
        "e.g. '/usr/local/sbin/set-width {device} {port} {width}'";

// The command template: {width} required; no other {...} placeholders.
std::string parse_link_exec(const std::string& value)
{
    bool ok       = value.find("{width}") != std::string::npos;
    bool has_word = false;
    for (std::size_t i = 0; ok && i < value.size(); ++i) {
        has_word = has_word || (value[i] != ' ' && value[i] != '\t');
        if (value[i] == '}') {
            ok = false;  // a '}' not closing a known placeholder
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

constexpr const char *service_accepted = "auto, off, or the absolute path of a slimlinkd socket";

// auto, off or an absolute path (a socket checked when connecting).
ServiceChoice parse_service(const std::string& value)
{
    ServiceChoice choice;
    if (parse::iequals(value, "auto")) {
        return choice;
    }
    if (parse::iequals(value, "off")) {
        choice.kind = ServiceChoice::Kind::off;
        return choice;
    }
    if (value.size() < 2 || value.front() != '/' || value.back() == '/' ||
        value.size() >= 108 /* sun_path */) {
        throw ConfigError(parse::bad_value(Config::service_var, value, service_accepted));
    }
    choice.kind = ServiceChoice::Kind::path;
    choice.path = value;
    return choice;
}

constexpr const char *cpu_policy_accepted =
        "always-on, timeout:DURATION (0ns to 1s, e.g. timeout:500us), pps, spps, adaptive, "
        "context:DEPTH (1 to 8), runs:DEPTH (1 to 8); not oracle, which needs each wait's end "
        "(slim-replay --cpu-policy oracle replays it)";

// slim-replay --cpu-policy's names, but the oracle: a live loop plans a
// wait from its start.
link::PolicySpec parse_cpu_policy(const std::string& value)
{
    link::PolicySpec spec;
    try {
        spec = link::replay_policy(value);
    } catch (const std::exception&) {
        throw ConfigError(parse::bad_value(Config::cpu_policy_var, value, cpu_policy_accepted));
    }
    if (!cpu::CpuPolicy::plans_from_start(spec)) {
        throw ConfigError(parse::bad_value(Config::cpu_policy_var, value, cpu_policy_accepted));
    }
    return spec;
}

// Inline rules or @file; a PrecisionRulesError already names the variable, the
// offending rule (and file:line) and the accepted forms.
precision::PrecisionRules parse_policy(const std::string& value)
{
    try {
        return precision::PrecisionRules::parse(value);
    } catch (const precision::PrecisionRulesError& e) {
        throw ConfigError(e.what());
    }
}

constexpr const char *max_slowdown_accepted =
        "a percentage from 0% to 100% (e.g. 1%, 0.5%, 5%; the % sign may be left out)";

// UCX_SLIM_MAX_SLOWDOWN: "1%", "0.5 %", "5".
double parse_max_slowdown(const std::string& value)
{
    const std::optional<double> pct = parse::percentage(value, 0.0, 100.0);
    if (!pct) {
        throw ConfigError(parse::bad_value(Config::max_slowdown_var, value, max_slowdown_accepted));
    }
    return *pct;
}

constexpr const char *link_profile_accepted =
        "a link spec: a preset (ib-qdr, ib-edr, ib-hdr, ib-ndr, eee-1000base-t, eee-10gbase-t, "
        "eee-10gbase-kr, eee-25gbase-t, eee-100g-deep, eee-100g-fast), KEY=VALUE items "
        "(L=4,P=0.5,low=1,tau=10us,lowP=0.43), or a preset and items; empty for the default";

// UCX_SLIM_LINK_PROFILE: the spec's own message says which part is wrong.
link::LinkConfig parse_link_profile(const std::string& value)
{
    try {
        return link::parse_link_config(value);
    } catch (const Error& e) {
        throw ConfigError(parse::bad_value(Config::link_profile_var, value, link_profile_accepted) +
                          " (" + e.what() + ")");
    }
}

// A refused value's full message, for describe_bad_values(): UCX's own
// line names only the field ("Invalid value for INNER").
thread_local std::string last_error;

// UCX_SLIM_POLICY as UCX stores it: the text (for `ucx_info -c`) and the
// rules parsed from it, once.
struct PolicyValue {
    std::string text;
    precision::PrecisionRules policy;
};

std::string var_of(const ucs_config_field_t& field)
{
    return std::string(SLIM_CONFIG_ENV_PREFIX) + SLIM_CONFIG_TABLE_PREFIX + field.name;
}

const char *accepted(slim_config_check_t check)
{
    switch (check) {
    case SLIM_CHECK_INNER:
        return "a UCT transport name of 1 to 31 characters a-z, 0-9 and _, other than slim";
    case SLIM_CHECK_REPORT: return "none, stdout, or a path ending in .json";
    case SLIM_CHECK_LINK_EXEC: return link_exec_accepted;
    case SLIM_CHECK_SERVICE: return service_accepted;
    case SLIM_CHECK_CPU_POLICY: return cpu_policy_accepted;
    case SLIM_CHECK_MAX_SLOWDOWN: return max_slowdown_accepted;
    case SLIM_CHECK_LINK_PROFILE: return link_profile_accepted;
    case SLIM_CHECK_POLICY:
        return "rules LABEL=off, LABEL=keep:N[:truncate|round], LABEL=rel:EPS[:truncate|round] "
               "separated by ';', or @FILE";
    }
    return "?";
}

// Runs `check` on `value`; a refused value leaves its message in last_error.
template <typename Check>
bool checked(Check&& check)
{
    try {
        check();
        return true;
    } catch (const ConfigError& e) {
        last_error = e.what();
    } catch (const std::exception& e) {  // e.g. bad_alloc: refuse, never throw into C
        last_error = e.what();
    }
    return false;
}

// Every variable set in the environment that its field's parser refuses,
// with the full variable name and what it accepts. Called once UCX's parser
// has refused one: it stops at the first, a user wants them all.
std::vector<std::string> describe_bad_values()
{
    std::vector<std::string> problems;
    for (const ucs_config_field_t *field = slim_config_table; field->name != nullptr; ++field) {
        const std::string var = var_of(*field);
        const char *value     = std::getenv(var.c_str());
        if (value == nullptr) {
            continue;
        }
        alignas(16) unsigned char scratch[64] = {};
        last_error.clear();
        if (field->parser.read(value, scratch, field->parser.arg) == 1) {
            field->parser.release(scratch, field->parser.arg);
            continue;
        }
        if (!last_error.empty()) {
            problems.push_back(last_error);
            continue;
        }
        char help[256] = {};
        field->parser.help(help, sizeof(help) - 1, field->parser.arg);
        problems.push_back(parse::bad_value(var, value, help));
    }
    if (problems.empty()) {
        // A bad value from a UCX configuration file (ucx.conf), not the
        // environment: UCX's own message above names it.
        problems.emplace_back("UCX's configuration parser refused a UCX_SLIM_* value from a "
                              "configuration file; its message names it");
    }
    return problems;
}

// Frees what UCX's parser allocated (strings, the policy) on every path.
class ParsedTable {
public:
    ParsedTable()                              = default;
    ParsedTable(const ParsedTable&)            = delete;
    ParsedTable& operator=(const ParsedTable&) = delete;
    ~ParsedTable()
    {
        if (filled_) {
            slim_config_release(&raw_);
        }
    }
    ucs_status_t fill()
    {
        const ucs_status_t status = slim_config_fill(&raw_);
        filled_                   = status == UCS_OK;
        return status;
    }
    const slim_config_t& raw() const { return raw_; }

private:
    slim_config_t raw_{};
    bool filled_ = false;
};

// A whole number UCX parsed for `var` (which has no range of its own): true
// when it is within [min, max]; otherwise the problem, with the text the
// user gave, is added to `problems`.
bool whole_in_range(const char *var, unsigned value, unsigned min, unsigned max,
                    std::vector<std::string>& problems)
{
    if (value >= min && value <= max) {
        return true;
    }
    const char *text = std::getenv(var);
    problems.push_back(parse::bad_value(var, text ? text : std::to_string(value),
                                        "whole numbers from " + std::to_string(min) + " to " +
                                                std::to_string(max)));
    return false;
}

}  // namespace

Config Config::from_ucx()
{
    if (!slim_config_ucs_loaded()) {
        throw ConfigError("UCX's libucs.so.0 cannot be loaded: slimlink reads UCX_SLIM_* "
                          "with UCX's parser (install the Debian package 'libucx0')");
    }
    ParsedTable table;
    if (table.fill() != UCS_OK) {
        std::string msg;
        for (const std::string& p : describe_bad_values()) {
            msg.append(msg.empty() ? "" : "; ").append(p);
        }
        throw ConfigError(msg);
    }
    const slim_config_t& raw = table.raw();
    Config config;
    std::vector<std::string> problems;
    config.inner        = raw.inner;
    config.report       = parse_report(raw.report);
    config.log_level    = static_cast<LogLevel>(raw.log_level);
    config.link         = static_cast<LinkBackendKind>(raw.link);
    config.link_exec    = raw.link_exec;
    config.inject_delay = raw.inject_delay != 0;
    config.forward_only = raw.forward_only != 0;
    config.policy       = static_cast<const PolicyValue *>(raw.policy)->policy;
    config.packing      = static_cast<PackingMode>(raw.packing);
    config.predictor    = link::live_policy(slim_config_predictors[raw.predictor]);
    config.trace_dir    = raw.trace;
    config.service      = parse_service(raw.service);
    // UCX's time parser has no range: 0s lets the leader take what is there
    // at exit; 600s bounds a hung job's exit.
    constexpr double max_report_wait_s = 600.0;
    if (!(raw.report_wait >= 0.0 && raw.report_wait <= max_report_wait_s)) {
        const char *text = std::getenv(report_wait_var);
        problems.push_back(parse::bad_value(report_wait_var,
                                            text ? text : parse::format_real(raw.report_wait) + "s",
                                            "durations from 0s to 600s"));
    } else {
        config.report_wait =
                std::chrono::nanoseconds(static_cast<std::int64_t>(raw.report_wait * 1e9 + 0.5));
    }
    if (raw.bounce_size < min_bounce_size || raw.bounce_size > max_bounce_size) {
        const char *text = std::getenv(bounce_size_var);
        problems.push_back(parse::bad_value(bounce_size_var,
                                            text ? text : std::to_string(raw.bounce_size),
                                            "sizes from 64k to 64m (e.g. 512k, 1m)"));
    } else {
        config.bounce_size = raw.bounce_size;
    }
    if (whole_in_range(bounce_count_var, raw.bounce_count, 0, max_bounce_count, problems)) {
        config.bounce_count = raw.bounce_count;
    }
    if (whole_in_range(bounce_grow_var, raw.bounce_grow, 1, max_bounce_grow, problems)) {
        config.bounce_grow = raw.bounce_grow;
    }
    config.cpu                         = raw.cpu != 0;
    config.cpu_policy                  = parse_cpu_policy(raw.cpu_policy);
    config.max_slowdown_pct            = parse_max_slowdown(raw.max_slowdown);
    config.link_profile                = parse_link_profile(raw.link_profile);
    config.link_profile_set            = raw.link_profile[0] != '\0';
    config.predictor.max_slowdown_pct  = config.max_slowdown_pct;
    config.cpu_policy.max_slowdown_pct = config.max_slowdown_pct;
    config.wait_yield                  = raw.wait != 0;
    if (!(raw.wait_spin >= 0.0 && raw.wait_spin <= 1.0)) {
        const char *text = std::getenv(wait_spin_var);
        problems.push_back(parse::bad_value(wait_spin_var,
                                            text ? text : parse::format_real(raw.wait_spin) + "s",
                                            "durations from 0s to 1s (e.g. 50us)"));
    } else {
        config.wait_spin =
                std::chrono::nanoseconds(static_cast<std::int64_t>(raw.wait_spin * 1e9 + 0.5));
    }
    if (!(raw.wait_max >= 1e-6 && raw.wait_max <= 1.0)) {
        const char *text = std::getenv(wait_max_var);
        problems.push_back(parse::bad_value(wait_max_var,
                                            text ? text : parse::format_real(raw.wait_max) + "s",
                                            "durations from 1us to 1s (e.g. 1ms)"));
    } else {
        config.wait_max =
                std::chrono::nanoseconds(static_cast<std::int64_t>(raw.wait_max * 1e9 + 0.5));
    }
    if (config.link == LinkBackendKind::exec && config.link_exec.empty()) {
        problems.emplace_back(std::string(link_exec_var) + " is unset: it is required when " +
                              link_var + "=exec; accepted values are " + link_exec_accepted);
    }
    if (!problems.empty()) {
        std::string msg;
        for (const std::string& p : problems) {
            msg.append(msg.empty() ? "" : "; ").append(p);
        }
        throw ConfigError(msg);
    }
    return config;
}

LogLevel Config::log_level_for_errors() noexcept
{
    const char *value = std::getenv(log_level_var);
    for (unsigned i = 0; value != nullptr && slim_config_log_levels[i] != nullptr; ++i) {
        if (strcasecmp(value, slim_config_log_levels[i]) == 0) {
            return static_cast<LogLevel>(i);
        }
    }
    return LogLevel::warn;
}

}  // namespace slim

// ---- UCX's parser calls these for our value types (slim_config.h) -------

extern "C" {

int slim_config_read_checked(const char *buf, void *dest, const void *arg)
{
    using namespace slim;
    const auto check = *static_cast<const slim_config_check_t *>(arg);
    const bool ok    = checked([&] {
        const std::string value = buf;
        switch (check) {
        case SLIM_CHECK_INNER: parse_inner(value); break;
        case SLIM_CHECK_REPORT: parse_report(value); break;
        case SLIM_CHECK_LINK_EXEC:
            // Empty is the default: no command (required only for exec).
            if (!value.empty()) {
                parse_link_exec(value);
            }
            break;
        case SLIM_CHECK_POLICY: parse_policy(value); break;
        case SLIM_CHECK_SERVICE: parse_service(value); break;
        case SLIM_CHECK_CPU_POLICY: parse_cpu_policy(value); break;
        case SLIM_CHECK_MAX_SLOWDOWN: parse_max_slowdown(value); break;
        case SLIM_CHECK_LINK_PROFILE: parse_link_profile(value); break;
        }
    });
    return ok ? slim_config_store_string(buf, dest) : 0;
}

void slim_config_help_checked(char *buf, size_t max, const void *arg)
{
    std::snprintf(buf, max, "%s", slim::accepted(*static_cast<const slim_config_check_t *>(arg)));
}

int slim_config_read_policy(const char *buf, void *dest, const void * /*arg*/)
{
    using namespace slim;
    PolicyValue *value = nullptr;
    const bool ok      = checked([&] {
        auto parsed = std::make_unique<PolicyValue>(PolicyValue{buf, parse_policy(buf)});
        value       = parsed.release();
    });
    if (!ok) {
        return 0;
    }
    *static_cast<void **>(dest) = value;
    return 1;
}

int slim_config_write_policy(char *buf, size_t max, const void *src, const void * /*arg*/)
{
    const auto *value = *static_cast<const slim::PolicyValue *const *>(src);
    std::snprintf(buf, max, "%s", value != nullptr ? value->text.c_str() : "");
    return 1;
}

ucs_status_t slim_config_clone_policy(const void *src, void *dest, const void * /*arg*/)
{
    const auto *value = *static_cast<const slim::PolicyValue *const *>(src);
    auto *copy        = value != nullptr ? new (std::nothrow) slim::PolicyValue(*value) : nullptr;
    if (value != nullptr && copy == nullptr) {
        return UCS_ERR_NO_MEMORY;
    }
    *static_cast<void **>(dest) = copy;
    return UCS_OK;
}

void slim_config_release_policy(void *ptr, const void * /*arg*/)
{
    auto **value = static_cast<slim::PolicyValue **>(ptr);
    delete *value;
    *value = nullptr;
}

}  // extern "C"

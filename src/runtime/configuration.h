/* SPDX-License-Identifier: BSD-3-Clause */
// UCX_SLIM_* configuration, read once per process and validated in full.
//
// (Not named config.h: the UCX module includes UCX's generated "config.h".)
//
// Every bad value throws ConfigError whose message names the variable, the
// value and what is accepted, e.g.
//   UCX_SLIM_REPORT='foo': accepted values are none, stdout, or a path ending in .json
// The same table of variables is documented by the module's ucs_config_field_t
// table (ucx_info -c) and in README.md; keep the three in step.
#ifndef SLIM_RUNTIME_CONFIGURATION_H
#define SLIM_RUNTIME_CONFIGURATION_H

#include "env.h"
#include "live/predictor_kind.h"
#include "policy/policy.h"

#include <chrono>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

namespace slim {

class ConfigError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class LogLevel { off, error, warn, info, debug, trace };

const char *to_string(LogLevel level) noexcept;

struct ReportTarget {
    enum class Kind { none, stdout_text, json_file };
    Kind        kind = Kind::none;
    std::string path; // json_file only
};

// Which link backend applies widths (src/link/backend_<name>.cpp).
enum class LinkBackendKind { emulated, ibmad, exec };

const char *to_string(LinkBackendKind kind) noexcept;

// UCX_SLIM_PACKING: whether the transport packs marked data, and whether it
// steers UCP (withholding put/get zcopy) so that marked data of every size
// passes where the sender's pointer is visible.
enum class PackingMode {
    automatic, // pack; steer when the policy packs some label
    on,        // pack and always steer (programs that use slim_mark_precision)
    off,       // never pack, never steer; marked bytes count as missed
};

const char *to_string(PackingMode mode) noexcept;

struct Config {
    static constexpr const char *inner_var     = "UCX_SLIM_INNER";
    static constexpr const char *report_var    = "UCX_SLIM_REPORT";
    static constexpr const char *log_level_var = "UCX_SLIM_LOG_LEVEL";
    static constexpr const char *link_var         = "UCX_SLIM_LINK";
    static constexpr const char *link_exec_var    = "UCX_SLIM_LINK_EXEC";
    static constexpr const char *inject_delay_var = "UCX_SLIM_INJECT_DELAY";
    static constexpr const char *policy_var       = policy::policy_var;
    static constexpr const char *packing_var      = "UCX_SLIM_PACKING";
    static constexpr const char *predictor_var    = "UCX_SLIM_PREDICTOR";
    static constexpr const char *trace_var        = "UCX_SLIM_TRACE";
    static constexpr const char *report_wait_var  = "UCX_SLIM_REPORT_WAIT";

    std::string  inner     = "tcp"; // UCT transport that `slim` wraps
    ReportTarget report;            // exit report destination
    LogLevel     log_level = LogLevel::warn;
    LinkBackendKind link   = LinkBackendKind::emulated;
    // Command template run per width change; required when link == exec.
    // Must contain {width}; may use {device} and {port}.
    std::string  link_exec;
    bool         inject_delay = false; // emulated: late wake-ups really wait
    // Lossy packing rules for slim_mark() labels; the default packs nothing.
    policy::Policy policy;
    PackingMode  packing = PackingMode::automatic;
    // Who drives the link from live traffic: spps (default), pps, timeout
    // (the EEE-style baseline) or off (always on; accounting only).
    live::PredictorKind predictor = live::PredictorKind::adaptive;
    // Directory for per-rank event traces (slim-replay's format); empty: none.
    std::string  trace_dir;
    // How long the node leader waits at exit for the other local ranks'
    // numbers before writing the node report without them.
    std::chrono::nanoseconds report_wait = std::chrono::seconds(10);

    // The transport steers UCP's protocol choice (see PackingMode).
    bool packing_steers() const noexcept
    {
        return packing == PackingMode::on ||
               (packing == PackingMode::automatic && policy.lossy());
    }

    // Reads every variable; unset ones keep their defaults. Throws ConfigError
    // listing every bad variable ("; "-separated) when any is bad.
    static Config from_lookup(const EnvLookup &lookup);
    static Config from_environment();
};

// Parsers for single values. Each throws ConfigError with the message
//   VAR='value': accepted values are <what>
// Use them for every new UCX_SLIM_* variable so messages stay uniform.
namespace parse {

// y or n (also yes, no), case-insensitively.
bool yes_no(const char *var, const std::string &value);

// Formats the uniform message; `accepted` completes "accepted values are ...".
std::string bad_value(std::string_view var, std::string_view value, std::string_view accepted);

// One of `choices`, compared case-insensitively; returns its index.
std::size_t choice(const char *var, const std::string &value,
                   std::initializer_list<const char *> choices);

// A decimal integer in [min, max] (no sign for positive values, no spaces).
std::int64_t integer(const char *var, const std::string &value, std::int64_t min,
                     std::int64_t max);

// A finite decimal number ("0.05", "1e-3") in [min, max].
double real(const char *var, const std::string &value, double min, double max);

// A duration: a non-negative number followed by a unit ns, us, ms or s
// ("10us", "1.5ms", "1s"), in [min, max], rounded to the nearest nanosecond.
std::chrono::nanoseconds duration(const char *var, const std::string &value,
                                  std::chrono::nanoseconds min, std::chrono::nanoseconds max);

// Human form of a duration for messages: the largest of s, ms, us, ns that
// shows it exactly ("100ms", "10us", "1500ns").
std::string format_duration(std::chrono::nanoseconds d);

// Shortest decimal form of a double for messages ("0.05", "1e+20").
std::string format_real(double v);

} // namespace parse

} // namespace slim

#endif

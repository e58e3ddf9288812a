/* SPDX-License-Identifier: BSD-3-Clause */
// UCX_SLIM_* configuration, read once per process with UCX's own parser
// from the one table that declares the variables (slim_config.h).
//
// (Not named config.h: the UCX module includes UCX's generated "config.h".)
//
// Every bad value throws ConfigError whose message names the variable, the
// value and what is accepted, e.g.
//   UCX_SLIM_REPORT='foo': accepted values are none, stdout, or a path ending in .json
// `ucx_info -c` shows that table; slimlink(7) documents it
// (tests/man/man-pages.test checks the defaults).
#ifndef SLIM_RUNTIME_CONFIGURATION_H
#define SLIM_RUNTIME_CONFIGURATION_H

#include "base/log.h"
#include "base/parse.h"
#include "env.h"
#include "predict/cpu_policy.h"
#include "predict/policy_registry.h"
#include "precision/precision_rules.h"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>

namespace slim {


struct ReportTarget {
    enum class Kind { none, stdout_text, json_file };
    Kind kind = Kind::none;
    std::string path;  // json_file only
};

// Which link backend applies widths (src/link/backend_<name>.cpp).
enum class LinkBackendKind { emulated, ibmad, exec };

const char *to_string(LinkBackendKind kind) noexcept;

// UCX_SLIM_PACKING: whether the transport packs marked data, and whether it
// steers UCP (withholding put/get zcopy) so that marked data of every size
// passes where the sender's pointer is visible.
enum class PackingMode {
    automatic,  // pack; steer when the policy packs some label
    on,         // pack and always steer (programs that use slim_mark_precision)
    off,        // never pack, never steer; marked bytes count as missed
};

const char *to_string(PackingMode mode) noexcept;

// UCX_SLIM_SERVICE: who drives the node's port (src/link/service_protocol.h).
struct ServiceChoice {
    enum class Kind {
        automatic,  // the system slimlinkd, else the user's; else in-process
        off,        // in-process emulated link
        path,       // this socket (per-user rules when not root's)
    };
    Kind kind = Kind::automatic;
    std::string path;
};

struct Config {
    static constexpr const char *inner_var        = "UCX_SLIM_INNER";
    static constexpr const char *report_var       = "UCX_SLIM_REPORT";
    static constexpr const char *log_level_var    = "UCX_SLIM_LOG_LEVEL";
    static constexpr const char *link_var         = "UCX_SLIM_LINK";
    static constexpr const char *link_exec_var    = "UCX_SLIM_LINK_EXEC";
    static constexpr const char *policy_var       = precision::policy_var;
    static constexpr const char *report_wait_var  = "UCX_SLIM_REPORT_WAIT";
    static constexpr const char *service_var      = "UCX_SLIM_SERVICE";
    static constexpr const char *bounce_size_var  = "UCX_SLIM_BOUNCE_SIZE";
    static constexpr const char *bounce_count_var = "UCX_SLIM_BOUNCE_COUNT";
    static constexpr std::size_t min_bounce_size  = std::size_t{64} << 10;
    static constexpr std::size_t max_bounce_size  = std::size_t{64} << 20;
    static constexpr unsigned max_bounce_count    = 4096;
    static constexpr const char *bounce_grow_var  = "UCX_SLIM_BOUNCE_GROW";
    static constexpr unsigned max_bounce_grow     = 4096;
    static constexpr const char *wait_spin_var    = "UCX_SLIM_WAIT_SPIN";
    static constexpr const char *wait_max_var     = "UCX_SLIM_WAIT_MAX";
    static constexpr const char *cpu_policy_var   = "UCX_SLIM_CPU_POLICY";
    static constexpr const char *max_slowdown_var = "UCX_SLIM_MAX_SLOWDOWN";
    static constexpr const char *link_profile_var = "UCX_SLIM_LINK_PROFILE";

    std::string inner = "tcp";  // UCT transport that `slim` wraps
    ReportTarget report;        // exit report destination
    LogLevel log_level   = LogLevel::warn;
    LinkBackendKind link = LinkBackendKind::emulated;
    // Command template run per width change; required when link == exec.
    // Must contain {width}; may use {device} and {port}.
    std::string link_exec;
    bool inject_delay = false;  // emulated: late wake-ups really wait
    // The emulated port (UCX_SLIM_LINK_PROFILE); link_profile_set: the user
    // chose it, so a node service driving another port is refused.
    link::LinkConfig link_profile;
    bool link_profile_set = false;
    // slim only forwards: nothing recorded, packed or reported.
    bool forward_only = false;
    // Lossy packing rules for slim_mark() labels; the default packs nothing.
    precision::PrecisionRules policy;
    PackingMode packing = PackingMode::automatic;
    // Who drives the link from live traffic: spps (default), pps, timeout
    // (the EEE-style baseline) or off (always on; accounting only).
    link::PolicySpec predictor = link::default_live_policy();
    // Directory for per-rank event traces (slim-replay's format); empty: none.
    std::string trace_dir;
    ServiceChoice service;
    // How long the node service waits, after a job's first rank handed its
    // numbers over, for the other local ranks before the node report is
    // written without them.
    std::chrono::nanoseconds report_wait = std::chrono::seconds(10);
    // Packed puts: one bounce buffer's size (the largest put packed in one
    // piece), how many each interface may hold (0 packs no puts), and how
    // many it maps and registers at a time (the pool grows when empty).
    std::size_t bounce_size = std::size_t{512} << 10;
    unsigned bounce_count   = 128;
    unsigned bounce_grow    = 8;
    // The CPU side: waits recorded (UCX_SLIM_CPU=on), and blocked in
    // rather than spun through once they lasted wait_spin
    // (UCX_SLIM_WAIT=yield), at most wait_max at a time.
    bool cpu                           = false;
    bool wait_yield                    = false;
    std::chrono::nanoseconds wait_spin = std::chrono::microseconds(50);
    std::chrono::nanoseconds wait_max  = std::chrono::milliseconds(1);
    // With cpu: what plans each wait from its start (UCX_SLIM_CPU_POLICY;
    // slim-replay --cpu-policy's policies but the oracle).
    link::PolicySpec cpu_policy = link::replay_policy(cpu::default_cpu_policy);
    // The modelled slowdown, in % of the run, that the adaptive policies
    // hold (UCX_SLIM_MAX_SLOWDOWN); copied into predictor and cpu_policy.
    double max_slowdown_pct = link::default_max_slowdown_pct;

    // The transport steers UCP's protocol choice (see PackingMode).
    bool packing_steers() const noexcept
    {
        return packing == PackingMode::on || (packing == PackingMode::automatic && policy.lossy());
    }

    // Parses UCX_SLIM_* (environment, then UCX's configuration files) with
    // UCX's parser and the one table of them (slim_config.h); unset ones
    // keep their defaults. Throws ConfigError listing every bad variable
    // ("; "-separated), each with its full name and what it accepts.
    static Config from_ucx();

    // UCX_SLIM_LOG_LEVEL alone, for reporting a configuration that failed
    // as a whole: warn when it is unset or bad too.
    static LogLevel log_level_for_errors() noexcept;
};


}  // namespace slim

#endif

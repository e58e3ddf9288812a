/* SPDX-License-Identifier: BSD-3-Clause */
// slim-replay's command line: its options, parsed and checked, and the
// replay they ask for.
#pragma once

#include "predict/cpu_model.h"
#include "predict/link_model.h"
#include "predict/policy_registry.h"
#include "predict/replay.h"

#include <cstdint>
#include <optional>
#include <string>

namespace slim::tools {

inline constexpr const char *replay_program = "slim-replay";

struct ReplayOptions {
    std::string events;
    link::PolicySpec policy = link::replay_policy("spps");
    link::LinkConfig link;
    bool packed = false;
    std::optional<predict::TimeNs> gt_ns;
    std::optional<double> displacement;
    std::optional<predict::TimeNs> t_react_ns;
    // --max-slowdown: the adaptive policies' bound, also set in `policy`
    // and `cpu_policy`.
    std::optional<double> max_slowdown_pct;
    bool dump_events              = false;
    bool json                     = false;
    std::uint64_t timeline_events = 0;  // --timeline N; 0: none
    std::string location;               // --location; empty: default
    // --cpu[=SPEC]: the CPU side of the trace's waits, on this core; none:
    // not replayed.
    std::optional<cpu::CpuConfig> cpu;
    link::PolicySpec cpu_policy = link::replay_policy("adaptive");  // --cpu-policy
    std::string help;                                               // --help: the text
};

// Throws UsageError (tools/cli_common.h) or slim::ConfigError naming the
// option. --help: the text is in `help`, nothing else is checked.
ReplayOptions parse_replay_options(int argc, char **argv);

// The replay the options ask for (its timeline window still to be set).
link::ReplayConfig replay_config(const ReplayOptions& o);

}  // namespace slim::tools

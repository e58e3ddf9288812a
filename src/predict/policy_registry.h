/* SPDX-License-Identifier: BSD-3-Clause */
// The gap policies by name: the one list that UCX_SLIM_PREDICTOR (the live
// loop), slim-replay --policy and the reports use. The live loop takes the
// policies that need only the past; a replay also takes those that need
// the future (the oracle) or a parameter.
//
//   live:   adaptive (the default), spps, pps, timeout (100 us), off
//   replay: adaptive, spps, pps, always-on, oracle, timeout:DURATION,
//           context:DEPTH, runs:DEPTH
//
// UCX's parser of UCX_SLIM_PREDICTOR needs the live names in a C array of
// its own (src/runtime/slim_config_table.c); a unit test holds it to
// live_policy_names().
#pragma once

#include "predict/gap_policy.h"

#include <string>
#include <string_view>
#include <vector>

namespace slim::link {

// The live default: "adaptive".
PolicySpec default_live_policy();

// UCX_SLIM_PREDICTOR's value (any case). Throws slim::Error
// naming live_policy_forms for a name it does not know.
PolicySpec live_policy(std::string_view name);
// The live names, the default first.
const std::vector<std::string>& live_policy_names();
inline constexpr const char *live_policy_forms = "adaptive, spps, pps, timeout, off";

// slim-replay --policy's value. Throws slim::Error for a name it
// does not know, slim::ConfigError for a duration out of range.
PolicySpec replay_policy(std::string_view name);
inline constexpr const char *replay_policy_forms =
        "always-on, timeout:DURATION (0ns to 1s, e.g. timeout:100us), oracle, pps, spps, "
        "adaptive, context:DEPTH (1 to 8), runs:DEPTH (1 to 8)";

}  // namespace slim::link

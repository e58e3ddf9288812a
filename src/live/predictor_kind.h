/* SPDX-License-Identifier: BSD-3-Clause */
// What drives the link width from live traffic (UCX_SLIM_PREDICTOR).
#pragma once

namespace slim::live {

// adaptive (the default, issue 11): candidates replayed in shadow, the best
// followed (link/adaptive_policy.h).
enum class PredictorKind { adaptive, spps, pps, timeout, off };

// "adaptive", "spps", "pps", "timeout", "off".
const char* to_string(PredictorKind kind);

}  // namespace slim::live

// What drives the link width from live traffic (UCX_SLIM_PREDICTOR).
#pragma once

namespace slim::live {

enum class PredictorKind { spps, pps, timeout, off };

// "spps", "pps", "timeout", "off".
const char* to_string(PredictorKind kind);

}  // namespace slim::live

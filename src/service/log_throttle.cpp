// SPDX-License-Identifier: BSD-3-Clause
#include "service/log_throttle.h"

#include "base/log.h"

namespace slim::link {

void LogThrottle::roll(const std::string& kind, State& s, TimeNs now)
{
    if (now - s.start < kWindowNs) {
        return;
    }
    if (s.suppressed > 0) {
        logger().warn("slimlinkd: {} more '{}' messages left out of the log in the last {} s",
                      s.suppressed, kind, (now - s.start) / 1'000'000'000);
    }
    s = State{now, 0, 0};
}

}  // namespace slim::link

// SPDX-License-Identifier: BSD-3-Clause
#include "link/backend.h"

#include <thread>

namespace slim::link {

Clock steady_clock_ns()
{
    return [] { return steady_now_ns(); };
}

void wait_real_time(TimeNs ns) noexcept
{
    constexpr TimeNs kSpinNs = 200'000;
    const TimeNs deadline    = steady_now_ns() + ns;
    if (ns > kSpinNs) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(ns - kSpinNs));
    }
    while (steady_now_ns() < deadline) {}
}

}  // namespace slim::link

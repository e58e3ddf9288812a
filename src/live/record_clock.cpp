// SPDX-License-Identifier: BSD-3-Clause
#include "live/record_clock.h"

#include "base/error.h"

#include <chrono>
#include <fstream>
#include <string>

namespace slim::live {

namespace {

// Calibration spins this long at start: the rate is then within ~1e-4,
// and each drain refines it over a longer baseline.
constexpr TimeNs kCalibrationNs = 200'000;

}  // namespace

bool RecordClock::tsc_usable() noexcept
{
#if SLIM_HAVE_TSC
    // A stream without exceptions enabled fails by state, not by throwing;
    // only memory can run out.
    try {
        std::ifstream in("/sys/devices/system/clocksource/clocksource0/current_clocksource");
        std::string name;
        return static_cast<bool>(in >> name) && name == "tsc";
    } catch (const std::bad_alloc& e) {
        note_swallowed("reading the clock source (the steady clock stamps records instead)", e);
        return false;
    }
#else
    return false;
#endif
}

TimeNs RecordClock::steady_ns() noexcept
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
}

void RecordClock::pair(std::uint64_t& ticks, TimeNs& ns) noexcept
{
    const std::uint64_t before = read_tsc();
    ns                         = steady_ns();
    const std::uint64_t after  = read_tsc();
    ticks                      = before + (after - before) / 2;
}

RecordClock::RecordClock(Source source)
{
    if (source != Source::tsc || !tsc_usable()) {
        return;
    }
    pair(origin_ticks_, origin_ns_);
    std::uint64_t ticks = 0;
    TimeNs ns           = 0;
    do {
        pair(ticks, ns);
    } while (ns - origin_ns_ < kCalibrationNs);
    if (ticks <= origin_ticks_) {
        return;  // a counter that does not count: keep the steady clock
    }
    ns_per_tick_ =
            static_cast<double>(ns - origin_ns_) / static_cast<double>(ticks - origin_ticks_);
    ref_ticks_ = ticks;
    ref_ns_    = ns;
    tsc_       = true;
}

std::uint64_t RecordClock::ticks_within(TimeNs ns) const noexcept
{
    if (!tsc_) {
        return static_cast<std::uint64_t>(ns);
    }
    // 1 % short of it: the rate is known to ~1e-4 at start.
    return static_cast<std::uint64_t>(static_cast<double>(ns) * 0.99 / ns_per_tick_);
}

void RecordClock::recalibrate() noexcept
{
    if (!tsc_) {
        return;
    }
    std::uint64_t ticks = 0;
    TimeNs ns           = 0;
    pair(ticks, ns);
    if (ticks > origin_ticks_ && ns > origin_ns_) {
        ns_per_tick_ =
                static_cast<double>(ns - origin_ns_) / static_cast<double>(ticks - origin_ticks_);
    }
    ref_ticks_ = ticks;
    ref_ns_    = ns;
}

}  // namespace slim::live

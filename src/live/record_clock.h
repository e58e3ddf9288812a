/* SPDX-License-Identifier: BSD-3-Clause */
// The clock the data path stamps operations with. Every
// operation through `slim` reads it, so it must be the cheapest clock that
// is still right: the CPU's time-stamp counter where the kernel itself
// keeps time with it (clocksource "tsc": invariant, and the same on every
// CPU), read in ~10 ns here against ~23 ns for clock_gettime(), which is
// ~0.6 % of a 4 us loopback ping-pong. Elsewhere it is the steady clock.
//
// Stamps are ticks; only the consumer converts them to steady-clock
// nanoseconds (to_ns), against a reference it moves forward itself
// (recalibrate): the longer the baseline, the closer the rate.
#pragma once

#include "predict/types.h"

#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define SLIM_HAVE_TSC 1
#else
#define SLIM_HAVE_TSC 0
#endif

namespace slim::live {

using predict::TimeNs;

class RecordClock {
public:
    enum class Source { steady, tsc };

    // The steady clock: ticks are nanoseconds.
    RecordClock() = default;
    // `source` tsc: calibrates against the steady clock (~200 us of
    // spinning); falls back to steady when the TSC is not usable here.
    explicit RecordClock(Source source);

    // Whether this machine's kernel keeps time with the TSC.
    static bool tsc_usable() noexcept;

    Source source() const noexcept { return tsc_ ? Source::tsc : Source::steady; }

    // Any thread: now, in ticks.
    std::uint64_t now() const noexcept
    {
        return tsc_ ? read_tsc() : static_cast<std::uint64_t>(steady_ns());
    }

    // Ticks in at most `ns` (for the coalescing gap: never more than ns).
    std::uint64_t ticks_within(TimeNs ns) const noexcept;

    // The consumer only: a stamp in steady-clock nanoseconds.
    TimeNs to_ns(std::uint64_t ticks) const noexcept
    {
        if (!tsc_) {
            return static_cast<TimeNs>(ticks);
        }
        const auto delta = static_cast<std::int64_t>(ticks - ref_ticks_);
        return ref_ns_ + static_cast<TimeNs>(static_cast<double>(delta) * ns_per_tick_);
    }

    // The consumer only: moves the reference to now and refines the rate
    // over everything since construction.
    void recalibrate() noexcept;

private:
    // Inline: every operation reads it, and a call into this library's
    // code costs more than the read (it showed in loopback profiles).
    static std::uint64_t read_tsc() noexcept
    {
#if SLIM_HAVE_TSC
        return __rdtsc();
#else
        return static_cast<std::uint64_t>(steady_ns());
#endif
    }
    static TimeNs steady_ns() noexcept;
    // A TSC reading and the steady time at the same moment.
    static void pair(std::uint64_t& ticks, TimeNs& ns) noexcept;

    bool tsc_                   = false;
    double ns_per_tick_         = 1.0;
    std::uint64_t origin_ticks_ = 0;
    TimeNs origin_ns_           = 0;
    std::uint64_t ref_ticks_    = 0;
    TimeNs ref_ns_              = 0;
};

}  // namespace slim::live

// SPDX-License-Identifier: BSD-3-Clause
// The "emulated" CPU backend: no hardware is touched. Each core is in the
// table's fastest state (full) or its slowest (low); the account charges
//   - time at full:                      full power;
//   - the first transition latency after any change: full power (a core
//     switching is never cheaper than one running at full);
//   - the rest of the time at low:       low power;
// against every core at full power all along, and counts as penalty one
// transition latency per raise: the work that ends a wait runs slow until
// the core is back at full.
#include "service/cpu_backend.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <unistd.h>

namespace slim::link {

namespace {

class EmulatedCpuBackend final : public CpuBackend {
public:
    EmulatedCpuBackend(std::vector<CpuPState> states, unsigned cores, TimeNs now)
        : states_(std::move(states)), started_(now), count_(cores)
    {
        for (unsigned c = 0; c < cores; ++c) {
            cores_.set(c);
        }
        since_.fill(now);
    }

    std::string name() const override { return "emulated"; }
    std::string describe() const override
    {
        char text[256];
        std::snprintf(text, sizeof text,
                      "emulated CPU backend: %u cores, full %u MHz at %g W, low %u MHz at %g W, "
                      "transition %g us (no hardware is touched)",
                      count_, full().khz / 1000, full().watts, low().khz / 1000, low().watts,
                      static_cast<double>(low().transition_ns) * 1e-3);
        return text;
    }
    CoreSet cores() const override { return cores_; }

    void set(const CoreSet& cores, bool low_level, TimeNs now) override
    {
        for (unsigned c = 0; c < count_; ++c) {
            if (!cores.test(c) || low_.test(c) == low_level) {
                continue;
            }
            close_interval(c, now);
            low_.set(c, low_level);
            ++transitions_;
            if (!low_level) {
                penalty_ns_ += low().transition_ns;
            }
        }
    }

    std::string restore(TimeNs now) noexcept override
    {
        CoreSet all = low_;
        set(all, false, now);
        return {};
    }

    std::optional<CpuEnergy> energy(TimeNs now) const override
    {
        CpuEnergy e;
        e.span_ns     = std::max<TimeNs>(0, now - started_);
        e.joules      = joules_;
        e.time_low_ns = time_low_ns_;
        for (unsigned c = 0; c < count_; ++c) {
            const Interval open = interval(c, now);
            e.joules += open.joules;
            e.time_low_ns += open.low_ns;
        }
        e.baseline_joules = static_cast<double>(count_) * full().watts * seconds(e.span_ns);
        e.penalty_ns      = penalty_ns_;
        e.transitions     = transitions_;
        return e;
    }

private:
    struct Interval {
        double joules = 0.0;
        TimeNs low_ns = 0;
    };

    static double seconds(TimeNs ns) { return static_cast<double>(ns) * 1e-9; }
    const CpuPState& full() const { return states_.front(); }
    const CpuPState& low() const { return states_.back(); }

    // The energy of core c from its last change to `now`.
    Interval interval(unsigned c, TimeNs now) const
    {
        const TimeNs d = std::max<TimeNs>(0, now - since_[c]);
        if (!low_.test(c)) {
            return {full().watts * seconds(d), 0};
        }
        const TimeNs switching = std::min(d, low().transition_ns);
        const TimeNs at_low    = d - switching;
        return {full().watts * seconds(switching) + low().watts * seconds(at_low), at_low};
    }

    void close_interval(unsigned c, TimeNs now)
    {
        const Interval done = interval(c, now);
        joules_ += done.joules;
        time_low_ns_ += done.low_ns;
        since_[c] = std::max(since_[c], now);
    }

    std::vector<CpuPState> states_;
    TimeNs started_;
    unsigned count_;
    CoreSet cores_;
    CoreSet low_;
    std::array<TimeNs, service::kMaxCpus> since_{};
    double joules_             = 0.0;
    TimeNs time_low_ns_        = 0;
    TimeNs penalty_ns_         = 0;
    std::uint64_t transitions_ = 0;
};

}  // namespace

std::unique_ptr<CpuBackend> make_emulated_cpu_backend(const CpuBackendConfig& config, TimeNs now)
{
    std::vector<CpuPState> states = config.states.empty() ? default_cpu_states() : config.states;
    if (states.size() < 2) {
        throw CpuBackendError("emulated CPU backend: at least two performance states are needed");
    }
    unsigned cores = config.emulated_cores;
    if (cores == 0) {
        const long n = ::sysconf(_SC_NPROCESSORS_CONF);
        cores        = n > 0 ? static_cast<unsigned>(n) : 1;
    }
    if (cores > service::kMaxCpus) {
        throw CpuBackendError("emulated CPU backend: " + std::to_string(cores) +
                              " cores; at most " + std::to_string(service::kMaxCpus));
    }
    return std::make_unique<EmulatedCpuBackend>(std::move(states), cores, now);
}

}  // namespace slim::link

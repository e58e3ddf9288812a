// SPDX-License-Identifier: BSD-3-Clause
// The "emulated" CPU backend: no hardware is touched. Each core is at the
// table's full state or its low one, the table slim-replay --cpu replays
// with (cpu_model.h), so that a replay and a run with the service count the
// same core. The account charges
//   - time at full:                      P;
//   - the first tau after any change:    P (a core switching is never
//     cheaper than one running at full);
//   - the rest of the time at low:       P_low;
// against every core at P all along, and counts as penalty per raise what
// the model charges an arrival that finds the core low: tau to come back
// up plus `handle` of work run at f_low, handle * (f / f_low - 1).
#include "service/cpu_backend.h"

#include <algorithm>
#include <array>
#include <string>
#include <unistd.h>

namespace slim::link {

namespace {

class EmulatedCpuBackend final : public CpuBackend {
public:
    EmulatedCpuBackend(const cpu::CpuConfig& table, unsigned cores, TimeNs now)
        : table_(table), started_(now), count_(cores)
    {
        for (unsigned c = 0; c < cores; ++c) {
            cores_.set(c);
        }
        since_.fill(now);
    }

    std::string name() const override { return "emulated"; }
    std::string describe() const override
    {
        return "emulated CPU backend: " + std::to_string(count_) + " cores, " +
               cpu::format_cpu_config(table_) + " (no hardware is touched)";
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
                penalty_ns_ += raise_penalty_ns();
            }
        }
    }

    std::string restore(TimeNs now) noexcept override
    {
        CoreSet all = low_;
        set(all, false, now);
        return {};
    }

    const cpu::CpuConfig *table() const override { return &table_; }

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
        e.baseline_joules = static_cast<double>(count_) * table_.full.watts * seconds(e.span_ns);
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

    TimeNs raise_penalty_ns() const { return cpu::wake_penalty_ns(table_); }

    // The energy of core c from its last change to `now`.
    Interval interval(unsigned c, TimeNs now) const
    {
        const TimeNs d = std::max<TimeNs>(0, now - since_[c]);
        if (!low_.test(c)) {
            return {table_.full.watts * seconds(d), 0};
        }
        const TimeNs switching = std::min(d, table_.tau_ns);
        const TimeNs at_low    = d - switching;
        return {table_.full.watts * seconds(switching) + table_.low.watts * seconds(at_low),
                at_low};
    }

    void close_interval(unsigned c, TimeNs now)
    {
        const Interval done = interval(c, now);
        joules_ += done.joules;
        time_low_ns_ += done.low_ns;
        since_[c] = std::max(since_[c], now);
    }

    cpu::CpuConfig table_;
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
    unsigned cores = config.emulated_cores;
    if (cores == 0) {
        const long n = ::sysconf(_SC_NPROCESSORS_CONF);
        cores        = n > 0 ? static_cast<unsigned>(n) : 1;
    }
    if (cores > service::kMaxCpus) {
        throw CpuBackendError("emulated CPU backend: " + std::to_string(cores) +
                              " cores; at most " + std::to_string(service::kMaxCpus));
    }
    return std::make_unique<EmulatedCpuBackend>(config.table, cores, now);
}

}  // namespace slim::link

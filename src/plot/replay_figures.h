/* SPDX-License-Identifier: BSD-3-Clause */
// The figures of slim-replay --plot (README.md, "Event traces and
// slim-replay"): data in, an Image out. slim-replay does the replays and
// collects the data; this file only lays it out.
#pragma once

#include "link/replay.h"
#include "plot/image.h"
#include "predict/types.h"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slim::plot {

using predict::TimeNs;

// Idle intervals -- an event's start minus the previous event's end -- by
// the log2 of their length in microseconds (thesis Figures 5.16, 5.17).
class IdleHistogram {
public:
    // Bucket 0: shorter than 1 us; bucket k >= 1: [2^(k-1) us, 2^k us).
    // 2^63 ns is below 2^54 us, so 55 buckets hold any interval.
    static constexpr std::size_t kBuckets = 55;
    static std::size_t bucket(TimeNs idle_ns);
    static TimeNs      lower_bound_ns(std::size_t bucket);

    // Back-to-back events (idle 0) are not an idle interval: ignored.
    void add(TimeNs idle_ns);

    std::uint64_t count(std::size_t bucket) const { return counts_[bucket]; }
    TimeNs        idle_ns(std::size_t bucket) const { return idle_ns_[bucket]; }
    std::uint64_t intervals() const { return intervals_; }
    TimeNs        total_idle_ns() const { return total_idle_ns_; }

private:
    std::array<std::uint64_t, kBuckets> counts_{};
    std::array<TimeNs, kBuckets>        idle_ns_{};
    std::uint64_t                       intervals_     = 0;
    TimeNs                              total_idle_ns_ = 0;
};

// "1us", "1.02ms", "500ns", "2s": a duration for a label, 3 digits at most.
std::string short_duration(TimeNs ns);

// Figure 1: count of intervals per bucket (top) and each bucket's share of
// the total idle time with its running total (bottom).
Image idle_histogram_figure(const IdleHistogram& histogram, const std::string& trace);

struct SweepPoint {
    TimeNs                gt_ns = 0;
    std::optional<double> savings_pct;   // none for an empty trace
};

struct EnergySweep {
    std::vector<SweepPoint> pps;           // by increasing GT
    std::optional<TimeNs>   chosen_gt_ns;  // the --gt of --policy pps, marked
    std::optional<double>   oracle_pct;
    std::optional<double>   spps_pct;
    std::optional<TimeNs>   spps_gt_ns;    // the GT ADGT settled on, if any
};

// Figure 2 (thesis Fig. 5.14): PPS energy savings against GT (log x), with
// the oracle and SPPS as reference lines. `setup` names trace and link.
Image energy_vs_gt_figure(const EnergySweep& sweep, const std::string& setup);

// Figure 3 (thesis Fig. 4.37): the link's width over the recorded events,
// as a step line over the bursts. `window` says which events, e.g. "first
// 100 of 1000 events"; `setup` names trace and link.
Image width_over_time_figure(const link::WidthTimeline& timeline, unsigned lanes,
                             const std::string& policy, const std::string& window,
                             const std::string& setup);

}  // namespace slim::plot

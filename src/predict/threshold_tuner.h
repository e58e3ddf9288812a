/* SPDX-License-Identifier: BSD-3-Clause */
// ADGT: Automatized Detection of Grouping Threshold (thesis §5.3, Algorithm 5),
// and the sampling state around it (skip the first intervals, collect a
// sample). Pure: no clock, no I/O; no allocation after construction.
#pragma once

#include "types.h"

#include <cstddef>
#include <optional>
#include <vector>

namespace slim::predict {

struct TunerConfig {
    std::size_t skip_intervals   = 100;            // firstIdleIntervals
    std::size_t sample_intervals = 400;            // numberIdleIntervals
    double alpha                 = 4.0;            // dangNum tolerance factor
    double demanded_idle_share   = 0.90;           // demCumIdleTime, initial
    double share_decay           = 0.95;           // demCumIdleTime *= 0.95
    double min_idle_share        = 0.10;           // give up below this
    double gap_ratio             = 1.494;          // necessary gap (Figure 5.18)
    TimeNs histogram_min_ns      = 20'000;         // 20 us
    TimeNs histogram_max_ns      = 1'000'000'000;  // 1 s; last bin open
};

// Diagnostics of one ADGT run, so tests can check every step.
struct AdgtResult {
    std::optional<TimeNs> gt_ns;    // none: no acceptable GT
    std::size_t bins        = 0;    // nBin = floor(sqrt(n))
    std::size_t dang_num    = 0;    // floor(alpha * 28.6 / nBin)
    std::size_t chosen_bin  = 0;    // valid when gt_ns
    double final_idle_share = 0.0;  // demCumIdleTime used
};

// One ADGT run over `samples` (idle interval lengths, any order); those
// shorter than histogram_min_ns are ignored (thesis §5.3.2).
AdgtResult run_adgt(const std::vector<TimeNs>& samples, const TunerConfig& config);

// Feeds idle intervals; after skip + sample intervals it runs ADGT once.
class ThresholdTuner {
public:
    explicit ThresholdTuner(const TunerConfig& config = {});

    enum class State { skipping, sampling, tuned, gave_up };

    // Returns the state after this interval. Becomes `tuned` or `gave_up`
    // on the interval that completes the sample. While sampling, intervals
    // shorter than histogram_min_ns are ignored; while skipping they count.
    State add_idle(TimeNs idle_ns);

    // Start over. A restart (dangerous zone) samples again without skipping.
    void restart(bool skip_again);

    State state() const;
    std::optional<TimeNs> gt_ns() const;
    const AdgtResult& last_result() const;

    // GT +- 10 %: idle intervals here make grouping unstable (§5.3.2).
    bool in_dangerous_zone(TimeNs idle_ns) const;

private:
    // Runs ADGT on sample_ with the scratch below: the same algorithm as
    // run_adgt, without its allocations.
    void tune();

    TunerConfig config_;
    State state_         = State::skipping;
    std::size_t skipped_ = 0;
    std::vector<TimeNs> sample_;  // reserved to sample_intervals
    AdgtResult result_;

    // ADGT scratch, sized at construction (the bin edges computed there).
    std::vector<double> edges_;
    std::vector<std::size_t> counts_;
    std::vector<double> cum_share_;
    std::vector<unsigned char> failed_bins_;
    std::vector<TimeNs> bin_samples_;
};

}  // namespace slim::predict

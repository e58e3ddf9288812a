/* SPDX-License-Identifier: BSD-3-Clause */
// The pattern predictor of the thesis (chapter 5), one per process: PPS with
// a fixed grouping threshold, or SPPS with the threshold tuned by ADGT and
// restarted when idle intervals fall in its dangerous zone.
//
// Pure: time is an input (ns), no clock, no I/O, no allocation per event once
// warmed up, bounded memory.
#pragma once

#include "threshold_tuner.h"
#include "types.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace slim::predict {

struct PredictorConfig {
    // SPPS (true): ADGT tunes the grouping threshold; PPS (false): fixed_gt_ns.
    // A gap policy sets it from its kind (gap_policy.h).
    bool tuned                          = true;
    TimeNs fixed_gt_ns                  = 20'000;  // PPS (and tests); SPPS tunes it
    double displacement                 = 0.05;    // Algorithm 4 displacement factor
    TimeNs t_react_ns                   = 10'000;  // link reactivation time
    std::size_t max_pattern_size        = 64;      // grams; PPA grows up to this
    std::size_t gram_capacity           = 4096;    // gram array ring (bounded)
    std::size_t pattern_capacity        = 1024;    // pattern list entries (bounded)
    std::size_t max_gram_events         = 64;      // events kept per gram
    double idle_tolerance               = 0.10;    // idle intervals within +-10 % are equal
    std::size_t restart_window_patterns = 3;       // second dangerous hit within 3 pattern lengths
    std::size_t retry_after_intervals   = 1000;    // SPPS samples again this many idle
                                                   // intervals after ADGT gave up, or with
                                                   // no prediction under its GT (0: never)
    TunerConfig tuner;
    std::size_t gram_kinds_capacity   = 2048;  // distinct grams alive (gram array + pattern list)
    std::size_t positions_per_pattern = 8;     // most recent positions kept per pattern
};

// What the predictor decided after one event.
struct Decision {
    bool prediction_active = false;  // after this event
    bool hit               = false;  // event arrived while a prediction was active and matched
    std::optional<LowPowerRequest> low_power;  // Algorithm 4 fired on this event
};

struct PredictorStats {
    std::uint64_t events         = 0;
    std::uint64_t grams          = 0;      // completed grams
    std::uint64_t hits           = 0;      // see Decision::hit
    std::uint64_t predictions    = 0;      // low-power requests issued
    std::uint64_t mispredictions = 0;      // active prediction switched off by a mismatch
    std::uint64_t restarts       = 0;      // SPPS dangerous-zone restarts
    TimeNs total_idle_ns         = 0;      // sum of all idle intervals seen
    TimeNs predicted_idle_ns     = 0;      // sum of requested low-power spans, each clipped
                                           // to the idle interval that followed it
    std::optional<TimeNs> gt_ns;           // current grouping threshold (none while SPPS tunes)
    bool gave_up                 = false;  // SPPS found no GT (at least once)
    std::uint64_t tuning_retries = 0;      // samples taken again: no GT, or no
                                           // prediction under it
    std::uint64_t ppa_invocations = 0;     // PPA steps run (Algorithm 1, line 8)
    std::uint64_t idle_matches    = 0;     // predicted grams whose idle came within idle_tolerance
};

class Predictor {
public:
    explicit Predictor(const PredictorConfig& config = {});
    ~Predictor();
    Predictor(Predictor&&) noexcept;
    Predictor& operator=(Predictor&&) noexcept;

    // Events must come in order: start >= previous end, end >= start.
    Decision on_event(const Event& event);

    const PredictorStats& stats() const;
    const PredictorConfig& config() const;

    // Bytes held (gram array, pattern list, tuner sample): bounded.
    std::size_t memory_bytes() const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

}  // namespace slim::predict

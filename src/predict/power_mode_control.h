/* SPDX-License-Identifier: BSD-3-Clause */
// The Power Mode Control Component, PMCC (thesis §5.2.4, Algorithm 4):
// while a prediction is active, follows the predicted pattern event by event;
// when the gram in progress reaches the predicted gram's length and matches,
// asks for low power during the idle interval expected to follow it.
//
// Pure and bounded: the pattern is copied into buffers sized in the
// constructor.
#pragma once

#include "gram_former.h"
#include "types.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace slim::predict {

// Algorithm 4, lines 8-9: idle - (idle x displacement + T_react). May be
// zero or negative: then there is nothing to save.
TimeNs predicted_idle(TimeNs idle_ns, double displacement, TimeNs t_react_ns);

// Idle intervals within +-tolerance of each other count as equal (§5.3.2:
// noise keeps corresponding intervals within about 10 %). Relative to the
// larger of the two.
bool idle_equal(TimeNs a, TimeNs b, double tolerance);

struct PmccConfig {
    double displacement          = 0.05;
    TimeNs t_react_ns            = 10'000;
    double idle_tolerance        = 0.10;
    std::size_t max_pattern_size = 64;
};

struct PmccResult {
    bool mismatch = false;                     // prediction switched off
    std::optional<LowPowerRequest> low_power;  // WRPS_method(predictIdleTime)
};

class PowerModeControl {
public:
    PowerModeControl(const GramTable& grams, const PmccConfig& config);

    // Starts following `size` grams with the idle interval after each;
    // `index` is the gram the gram in progress should be. The events already
    // in the gram in progress are checked at once (the last of them ended at
    // `end_ns`); a mismatch leaves the prediction off.
    PmccResult activate(const GramId *grams, const TimeNs *idles, std::size_t size,
                        std::size_t index, const PartialGram& current, TimeNs end_ns);

    // One event while active. `new_gram`: it started a gram (the idle before
    // it, `previous_idle`, was above the grouping threshold).
    PmccResult on_event(EventId id, bool new_gram, TimeNs previous_idle, TimeNs end_ns);

    void deactivate() { active_ = false; }

    bool active() const { return active_; }
    std::size_t pattern_size() const { return size_; }
    std::size_t index() const { return index_; }  // gram expected next (or in progress)
    TimeNs idle(std::size_t k) const { return idles_[k]; }
    // Completed predicted grams whose following idle interval came within
    // idle_tolerance of the value predicted for it.
    std::uint64_t idle_matches() const { return idle_matches_; }

    std::size_t memory_bytes() const;

private:
    // Appends one event of the gram in progress; false on a mismatch.
    bool match_event(EventId id, TimeNs end_ns, PmccResult& result);
    PmccResult off();

    const GramTable& table_;
    PmccConfig config_;
    std::vector<GramId> grams_;
    std::vector<TimeNs> idles_;
    std::size_t size_           = 0;
    std::size_t index_          = 0;
    std::uint32_t matched_      = 0;      // events of the gram in progress so far
    bool done_                  = false;  // the gram in progress reached its length
    bool active_                = false;
    std::uint64_t idle_matches_ = 0;
};

}  // namespace slim::predict

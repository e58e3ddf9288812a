// SPDX-License-Identifier: BSD-3-Clause
// Algorithm 4. Two readings beyond the pseudo-code, both needed to notice a
// mismatch as soon as it happens instead of one or more grams later:
// * the gram in progress is compared event by event with the predicted gram
//   (line 6 compares only at equal length; a wrong event is a mismatch
//   already when it arrives);
// * a gram that ends shorter than predicted (the next event starts a new
//   gram first) or grows longer (an event joins after the predicted length
//   was reached) is a mismatch too -- line 5 alone would never see it.
// A request is made when the gram reaches its predicted length, at the end
// of its last event: the idle interval that follows starts there.
#include "power_mode_control.h"

#include <algorithm>
#include <cmath>

namespace slim::predict {

TimeNs predicted_idle(TimeNs idle_ns, double displacement, TimeNs t_react_ns)
{
    const double safety =
            static_cast<double>(idle_ns) * displacement + static_cast<double>(t_react_ns);
    return idle_ns - static_cast<TimeNs>(std::llround(safety));
}

bool idle_equal(TimeNs a, TimeNs b, double tolerance)
{
    const TimeNs diff = a > b ? a - b : b - a;
    return static_cast<double>(diff) <= tolerance * static_cast<double>(std::max(a, b));
}

PowerModeControl::PowerModeControl(const GramTable& grams, const PmccConfig& config)
    : table_(grams), config_(config),
      grams_(std::max<std::size_t>(config.max_pattern_size, 1), kNoGram), idles_(grams_.size(), 0)
{}

PmccResult PowerModeControl::off()
{
    active_ = false;
    PmccResult r;
    r.mismatch = true;
    return r;
}

PmccResult PowerModeControl::activate(const GramId *grams, const TimeNs *idles, std::size_t size,
                                      std::size_t index, const PartialGram& current, TimeNs end_ns)
{
    size_ = std::min(size, grams_.size());
    if (size_ == 0) {
        return off();
    }
    std::copy(grams, grams + size_, grams_.begin());
    std::copy(idles, idles + size_, idles_.begin());
    index_   = index % size_;
    matched_ = 0;
    done_    = false;
    active_  = true;

    // The events of the gram in progress, as if they arrived now. Only the
    // last one can complete it, so only its end matters.
    PmccResult result;
    const GramId expected = grams_[index_];
    if (expected == kNoGram || current.length > table_.length(expected)) {
        return off();
    }
    const std::size_t stored = std::min<std::size_t>(current.stored, table_.stored(expected));
    if (!std::equal(current.events, current.events + stored, table_.events(expected))) {
        return off();
    }
    matched_           = current.length - 1;
    const EventId last = current.length <= current.stored ? current.events[current.length - 1] : 0;
    if (!match_event(last, end_ns, result)) {
        return off();
    }
    return result;
}

PmccResult PowerModeControl::on_event(EventId id, bool new_gram, TimeNs previous_idle,
                                      TimeNs end_ns)
{
    if (!active_) {
        return {};
    }
    if (new_gram) {
        if (!done_) {
            return off();  // the gram in progress ended short of the predicted one
        }
        // The idle interval after the gram just completed is known now: keep
        // the latest value for the next time round the pattern.
        const std::size_t completed = (index_ + size_ - 1) % size_;
        if (idle_equal(previous_idle, idles_[completed], config_.idle_tolerance)) {
            ++idle_matches_;
        }
        idles_[completed] = previous_idle;
        matched_          = 0;
        done_             = false;
    } else if (done_) {
        return off();  // an event joined a gram that should have been complete
    }
    PmccResult result;
    if (!match_event(id, end_ns, result)) {
        return off();
    }
    return result;
}

bool PowerModeControl::match_event(EventId id, TimeNs end_ns, PmccResult& result)
{
    const GramId expected = grams_[index_];
    if (expected == kNoGram) {
        return false;
    }
    // Events past the stored ones of a very long gram are known by count only.
    if (matched_ < table_.stored(expected) && table_.events(expected)[matched_] != id) {
        return false;
    }
    ++matched_;
    if (matched_ < table_.length(expected)) {
        return true;
    }
    // Lines 5-11: the gram is complete and matches.
    done_ = true;
    const TimeNs predicted =
            predicted_idle(idles_[index_], config_.displacement, config_.t_react_ns);
    if (predicted > 0) {
        result.low_power = LowPowerRequest{end_ns, end_ns + predicted};
    }
    index_ = (index_ + 1) % size_;
    return true;
}

std::size_t PowerModeControl::memory_bytes() const
{
    return grams_.capacity() * sizeof(GramId) + idles_.capacity() * sizeof(TimeNs);
}

}  // namespace slim::predict

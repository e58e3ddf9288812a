// SPDX-License-Identifier: BSD-3-Clause
// Replay driver: see replay.h. What a policy decided for a gap is carried
// out when the event after the gap arrives, because the oracle and the
// timeout both depend on when that is; the model only ever sees times
// moving forward.
#include "predict/replay.h"

#include <algorithm>
#include <utility>

namespace slim::link {

Replay::Replay(const ReplayConfig& config, std::shared_ptr<SharedContext> shared)
    : config_(config), policy_(config.policy, config.link, config.packed, std::move(shared)),
      recording_flips_at_(config.timeline_events > 0 ? config.timeline_first_event : UINT64_MAX)
{}

unsigned Replay::required_width(const Event& event) const
{
    const unsigned lanes = config_.link.lanes;
    // bytes 0 is unknown, packed_bytes 0 is unpacked: the full width.
    if (!config_.packed || event.bytes == 0 || event.packed_bytes == 0) {
        return lanes;
    }
    return LinkModel::burst_width(lanes, event.bytes, event.packed_bytes);
}

// What the policy decided after the last event, carried out on the gap
// before the next one: a window (and low again after it), or a timeout.
void Replay::act_on_gap(TimeNs gap_end)
{
    const TimeNs gap_start = actual_end_ns_;
    if (policy_.kind() == PolicyKind::oracle) {
        // Down and back up (tau each; EEE: Ts, then Tw): a shorter gap
        // cannot be used without a late wake-up.
        if (gap_end - gap_start >= round_trip_ns(config_.link)) {
            request_width(gap_start, config_.link.low_width);
            request_width(gap_end - config_.link.tau_ns, config_.link.lanes);
        }
        return;
    }
    if (pending_low_) {
        act_on_window(gap_end, pending_timeout_.value_or(0));
        return;
    }
    if (pending_timeout_) {
        const TimeNs at = gap_start + *pending_timeout_;
        // Only when the link has been idle that long; the wake-up is paid
        // by traffic().
        if (at < gap_end) {
            request_width(at, config_.link.low_width);
        }
    }
}

void Replay::act_on_window(TimeNs gap_end, TimeNs again_ns)
{
    if (!pending_low_) {
        return;
    }
    const TimeNs gap_start                 = actual_end_ns_;
    const predict::LowPowerRequest request = *std::exchange(pending_low_, std::nullopt);
    // The request is in recorded time; the gap has moved by D since.
    const TimeNs from  = std::max(request.from_ns + delay_ns_, gap_start);
    const TimeNs until = request.until_ns + delay_ns_;
    if (until > from && from < gap_end) {
        request_width(from, config_.link.low_width);
        // When the next event comes first (a misprediction, or an until
        // within tau of it), traffic() pays the late wake-up.
        if (until < gap_end) {
            request_width(until, config_.link.lanes);
        }
    }
    // Low again after the window when the gap lasts that long (a
    // candidate's after_ns, measured from the gap's start as the live
    // loop's timeout is); 0: not again.
    if (again_ns > request.until_ns - request.from_ns && gap_start + again_ns < gap_end) {
        request_width(gap_start + again_ns, config_.link.low_width);
    }
}

const GapDecision& Replay::on_event(const Event& event)
{
    const TimeNs start = event.start_ns + delay_ns_;
    if (events_ == recording_flips_at_) {
        recording_          = !recording_;
        recording_flips_at_ = recording_ ? events_ + config_.timeline_events : UINT64_MAX;
    }
    if (!model_) {
        model_.emplace(config_.link, start);
        first_start_ns_ = event.start_ns;
        if (recording_) {
            timeline_.widths.push_back({start, config_.link.lanes});
        }
    } else {
        if (recording_ && timeline_.widths.empty()) {
            // A window after the first event opens with the gap before it.
            timeline_.widths.push_back({actual_end_ns_, model_->width_at(actual_end_ns_)});
        }
        act_on_gap(start);
    }
    const unsigned width = required_width(event);
    const TimeNs wait    = traffic(start, width);
    delay_ns_ += wait;
    wakeup_delay_ns_ += wait;

    const TimeNs duration = event.end_ns - event.start_ns;
    const bool sized      = config_.packed && event.bytes != 0 && event.packed_bytes != 0;
    const TimeNs sent     = sized ? LinkModel::burst_duration(duration, config_.link.lanes, width,
                                                              event.bytes, event.packed_bytes)
                                  : duration;
    const TimeNs stretch  = std::max<TimeNs>(0, sent - duration);
    delay_ns_ += stretch;
    stretch_ns_ += stretch;

    ++events_;
    last_end_ns_   = event.end_ns;
    actual_end_ns_ = event.end_ns + delay_ns_;
    if (recording_) {
        timeline_.bursts.push_back({start + wait, actual_end_ns_, width});
        follow_width(actual_end_ns_);
    }

    const GapDecision& decision = policy_.on_event(event);
    pending_low_                = decision.low_power;
    pending_timeout_            = decision.timeout_ns;
    return decision;
}

void Replay::request_width_recorded(TimeNs t, unsigned width)
{
    follow_width(t);
    model_->request_width(t, width);
    note_width(t);
}

TimeNs Replay::traffic_recorded(TimeNs t, unsigned width)
{
    follow_width(t);
    const TimeNs wait = model_->traffic(t, width);
    note_width(t);
    return wait;
}

// Records the width changes in (last recorded change, t], before a call can
// change the model. Between two calls the width moves only through the
// transition in progress and at most one pending behind it, so it is
// monotone there (up, up; or one step either way): the first time it
// differs from the last recorded width can be found by bisection on
// width_at(), which runs a copy of the model forward and leaves it alone.
void Replay::follow_width(TimeNs t)
{
    WidthChange last = timeline_.widths.back();
    while (t > last.at_ns && model_->width_at(t) != last.width) {
        TimeNs lo = last.at_ns;  // width_at(lo) == last.width
        TimeNs hi = t;           // width_at(hi) != last.width
        while (hi - lo > 1) {
            const TimeNs mid                                = lo + (hi - lo) / 2;
            (model_->width_at(mid) == last.width ? lo : hi) = mid;
        }
        last = {hi, model_->width_at(hi)};
        timeline_.widths.push_back(last);
    }
}

// After a call at t: a falling transition lowers the usable width at once.
void Replay::note_width(TimeNs t)
{
    std::vector<WidthChange>& widths = timeline_.widths;
    const unsigned width             = model_->width_at(t);
    if (width == widths.back().width) {
        return;
    }
    if (widths.back().at_ns < t) {
        widths.push_back({t, width});
        return;
    }
    // A change already recorded at t: the call overrides it.
    widths.back().width = width;
    if (widths.size() > 1 && widths[widths.size() - 2].width == width) {
        widths.pop_back();
    }
}

ReplayResult Replay::result()
{
    ReplayResult r;
    r.events = events_;
    if (!model_) {
        return r;
    }
    const LinkStats& s      = model_->stats_at(actual_end_ns_);
    r.original_span_ns      = last_end_ns_ - first_start_ns_;
    r.replayed_span_ns      = actual_end_ns_ - first_start_ns_;
    r.delay_ns              = delay_ns_;
    r.wakeup_delay_ns       = wakeup_delay_ns_;
    r.stretch_ns            = stretch_ns_;
    r.late_wakeups          = s.late_wakeups;
    r.transitions           = s.transitions;
    r.energy_joules         = s.energy_joules;
    r.baseline_joules       = model_->always_on_joules(r.original_span_ns);
    r.time_at_width_ns      = s.time_at_width_ns;
    r.time_in_transition_ns = s.time_in_transition_ns;
    if (r.original_span_ns > 0 && r.baseline_joules > 0) {
        r.energy_savings_pct = 100.0 * (1.0 - r.energy_joules / r.baseline_joules);
        r.time_penalty_pct =
                100.0 * static_cast<double>(r.delay_ns) / static_cast<double>(r.original_span_ns);
    }
    return r;
}

ReplayResult replay(const std::vector<Event>& events, const ReplayConfig& config)
{
    Replay driver(config);
    for (const Event& e : events) {
        driver.on_event(e);
    }
    return driver.result();
}

}  // namespace slim::link

// SPDX-License-Identifier: BSD-3-Clause
// Replay driver: see replay.h. The gap actions of a policy are taken when
// the event after the gap arrives, because the oracle and the timeout both
// depend on when that is; the model only ever sees times moving forward.
#include "link/replay.h"

#include <algorithm>
#include <utility>

namespace slim::link {

Replay::Replay(const ReplayConfig& config, std::shared_ptr<SharedContext> shared)
    : config_(config),
      recording_flips_at_(config.timeline_events > 0 ? config.timeline_first_event : UINT64_MAX)
{
    switch (config_.policy.kind) {
    case PolicyKind::predictor:
        predictor_.emplace(config_.policy.predictor);
        break;
    case PolicyKind::context:
        context_ = shared ? std::move(shared) : std::make_shared<SharedContext>(config_.policy.context);
        break;
    case PolicyKind::adaptive: {
        AdaptiveConfig a = config_.policy.adaptive;
        a.link   = config_.link;
        a.packed = config_.packed;
        adaptive_ = std::make_unique<AdaptivePolicy>(a);
        break;
    }
    default:
        break;
    }
}


unsigned Replay::required_width(const Event& event) const
{
    const unsigned lanes = config_.link.lanes;
    // bytes 0 is unknown, packed_bytes 0 is unpacked: the full width.
    if (!config_.packed || event.bytes == 0 || event.packed_bytes == 0) {
        return lanes;
    }
    return LinkModel::burst_width(lanes, event.bytes, event.packed_bytes);
}

void Replay::act_on_gap(TimeNs gap_end)
{
    const TimeNs   gap_start = actual_end_ns_;
    const unsigned low  = config_.link.low_width;
    const unsigned full = config_.link.lanes;
    const TimeNs   tau  = config_.link.tau_ns;
    PolicyKind kind       = config_.policy.kind;
    TimeNs     timeout_ns = config_.policy.timeout_ns;
    if (kind == PolicyKind::adaptive) {
        // The candidate in force after the last event decided this gap: a
        // window, a timeout, or a window and a timeout after it.
        if (pending_low_ && pending_timeout_) {
            act_on_window(gap_end, *pending_timeout_);
            return;
        }
        kind = pending_timeout_ ? PolicyKind::timeout : PolicyKind::predictor;
        timeout_ns = pending_timeout_.value_or(0);
    } else if (kind == PolicyKind::context && pending_low_ && config_.policy.context_after_window_ns > 0) {
        act_on_window(gap_end, (pending_low_->until_ns - pending_low_->from_ns) +
                                       config_.policy.context_after_window_ns);
        return;
    } else if (kind == PolicyKind::context && !pending_low_ &&
               config_.policy.context_fallback_timeout_ns > 0) {
        // No window predicted for this gap: the hybrid waits like a timeout.
        kind       = PolicyKind::timeout;
        timeout_ns = config_.policy.context_fallback_timeout_ns;
    }
    switch (kind) {
    case PolicyKind::always_on:
        return;
    case PolicyKind::timeout: {
        const TimeNs at = gap_start + timeout_ns;
        // Only when the link has been idle that long; the wake-up is paid
        // by traffic().
        if (at < gap_end) {
            request_width(at, low);
        }
        return;
    }
    case PolicyKind::oracle:
        // Down and back up take tau each: a shorter gap cannot be used
        // without a late wake-up.
        if (gap_end - gap_start >= 2 * tau) {
            request_width(gap_start, low);
            request_width(gap_end - tau, full);
        }
        return;
    case PolicyKind::predictor:
    case PolicyKind::context:
    case PolicyKind::adaptive:
        act_on_window(gap_end);
        return;
    }
}

void Replay::act_on_window(TimeNs gap_end, TimeNs again_ns)
{
    if (!pending_low_) {
        return;
    }
    const TimeNs gap_start = actual_end_ns_;
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

const predict::Decision& Replay::on_event(const Event& event)
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
    const TimeNs   wait  = traffic(start, width);
    delay_ns_ += wait;
    wakeup_delay_ns_ += wait;

    const TimeNs duration = event.end_ns - event.start_ns;
    const bool   sized    = config_.packed && event.bytes != 0 && event.packed_bytes != 0;
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

    if (predictor_) {
        // The predictor sees the trace as recorded: what it predicts does
        // not depend on how the link delayed the run.
        decision_ = predictor_->on_event(event);
        pending_low_ = decision_.low_power;
    } else if (context_) {
        decision_    = context_->decide(event, events_);
        pending_low_ = decision_.low_power;
    } else if (adaptive_) {
        const AdaptiveDecision a = adaptive_->on_event(event);
        decision_                   = predict::Decision{};
        decision_.hit               = a.hit;
        decision_.low_power         = a.low_power;
        decision_.prediction_active = a.low_power.has_value();
        pending_low_     = a.low_power;
        pending_timeout_ = a.timeout_ns;
    }
    return decision_;
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
            const TimeNs mid = lo + (hi - lo) / 2;
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
    const unsigned            width  = model_->width_at(t);
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
    const LinkStats& s = model_->stats_at(actual_end_ns_);
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
        r.time_penalty_pct   = 100.0 * static_cast<double>(r.delay_ns) /
                             static_cast<double>(r.original_span_ns);
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

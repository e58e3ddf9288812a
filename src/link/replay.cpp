// Replay driver: see replay.h. The gap actions of a policy are taken when
// the event after the gap arrives, because the oracle and the timeout both
// depend on when that is; the model only ever sees times moving forward.
#include "link/replay.h"

#include <algorithm>
#include <utility>

namespace slim::link {

Replay::Replay(const ReplayConfig& config) : config_(config)
{
    if (config_.policy.kind == PolicyKind::predictor) {
        predictor_.emplace(config_.policy.predictor);
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
    LinkModel&     model = *model_;
    const TimeNs   gap_start = actual_end_ns_;
    const unsigned low  = config_.link.low_width;
    const unsigned full = config_.link.lanes;
    const TimeNs   tau  = config_.link.tau_ns;
    switch (config_.policy.kind) {
    case PolicyKind::always_on:
        return;
    case PolicyKind::timeout: {
        const TimeNs at = gap_start + config_.policy.timeout_ns;
        // Only when the link has been idle that long; the wake-up is paid
        // by traffic().
        if (at < gap_end) {
            model.request_width(at, low);
        }
        return;
    }
    case PolicyKind::oracle:
        // Down and back up take tau each: a shorter gap cannot be used
        // without a late wake-up.
        if (gap_end - gap_start >= 2 * tau) {
            model.request_width(gap_start, low);
            model.request_width(gap_end - tau, full);
        }
        return;
    case PolicyKind::predictor: {
        if (!pending_low_) {
            return;
        }
        const predict::LowPowerRequest request = *std::exchange(pending_low_, std::nullopt);
        // The request is in recorded time; the gap has moved by D since.
        const TimeNs from  = std::max(request.from_ns + delay_ns_, gap_start);
        const TimeNs until = request.until_ns + delay_ns_;
        if (until <= from || from >= gap_end) {
            return;
        }
        model.request_width(from, low);
        // When the next event comes first (a misprediction, or an until
        // within tau of it), traffic() pays the late wake-up.
        if (until < gap_end) {
            model.request_width(until, full);
        }
        return;
    }
    }
}

const predict::Decision& Replay::on_event(const Event& event)
{
    const TimeNs start = event.start_ns + delay_ns_;
    if (!model_) {
        model_.emplace(config_.link, start);
        first_start_ns_ = event.start_ns;
    } else {
        act_on_gap(start);
    }
    LinkModel&     model = *model_;
    const unsigned width = required_width(event);
    const TimeNs   wait  = model.traffic(start, width);
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

    if (predictor_) {
        // The predictor sees the trace as recorded: what it predicts does
        // not depend on how the link delayed the run.
        decision_ = predictor_->on_event(event);
        pending_low_ = decision_.low_power;
    }
    return decision_;
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

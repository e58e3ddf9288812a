/* SPDX-License-Identifier: BSD-3-Clause */
// Replays an event trace through the link model (link_model.h) under a
// gap policy (gap_policy.h) and says what it would have cost: energy against an
// always-on link, and the delay late wake-ups add to the run. Pure, like
// the predictor: events in (original time), a result out; no clock, no I/O,
// no allocation per event. slim-replay (src/tools/) is its command line;
// slim-replay(1) has the semantics.
#pragma once

#include "predict/gap_policy.h"
#include "predict/link_model.h"
#include "predict/types.h"

#include <array>
#include <memory>
#include <cstdint>
#include <optional>
#include <vector>

namespace slim::link {

using predict::Event;

struct ReplayConfig {
    LinkConfig link;
    PolicySpec policy;
    // Thesis §4.5.2: a burst needs only burst_width() lanes for its packed
    // bytes (events with bytes and packed_bytes both non-zero); otherwise
    // every burst needs the full width.
    bool packed = false;
    // Record Replay::timeline() over `timeline_events` events from event
    // index `timeline_first_event` (0-based) on: slim-replay --timeline. 0
    // events, the default, records nothing and costs a test of a flag per
    // width request.
    std::uint64_t timeline_first_event = 0;
    std::uint64_t timeline_events      = 0;
};

// The link's usable width (LinkModel::width_at) from `at_ns` on, in
// replayed time.
struct WidthChange {
    TimeNs at_ns   = 0;
    unsigned width = 0;
};

// A burst as replayed: on the wire from start_ns (after any wait for the
// link) to end_ns, needing `width` lanes.
struct ReplayedBurst {
    TimeNs start_ns = 0;
    TimeNs end_ns   = 0;
    unsigned width  = 0;
};

// The events ReplayConfig asks for: the width when the window opens (the
// first event's start, or the end of the event before the window), every
// change of width up to the last recorded end, and the bursts.
struct WidthTimeline {
    std::vector<WidthChange> widths;
    std::vector<ReplayedBurst> bursts;
};

struct ReplayResult {
    std::uint64_t events       = 0;
    TimeNs original_span_ns    = 0;  // first start to last end, as recorded
    TimeNs replayed_span_ns    = 0;  // first start to last end after the shifts
    TimeNs delay_ns            = 0;  // D: late wake-ups + stretched bursts
    TimeNs wakeup_delay_ns     = 0;  // part of D spent waiting for the link
    TimeNs stretch_ns          = 0;  // part of D from bursts sent narrower than needed
    std::uint64_t late_wakeups = 0;
    std::uint64_t transitions  = 0;
    double energy_joules       = 0.0;  // integrated over the replayed span
    double baseline_joules     = 0.0;  // always on over the original span
    // 100 (1 - E / E_baseline) and 100 D / original span; none when the
    // original span is 0 (no events, or only instantaneous ones).
    std::optional<double> energy_savings_pct;
    std::optional<double> time_penalty_pct;
    // Stable time at each width (index = width) and time in transition,
    // over the replayed span.
    std::array<TimeNs, kMaxLanes + 1> time_at_width_ns{};
    TimeNs time_in_transition_ns = 0;
};

// Drives one LinkModel through a trace. Feed events in order with
// on_event(); result() may be asked at any time (it integrates the model to
// the end of the last replayed burst).
//
// Each event, shifted by the delay D accumulated so far, first carries out
// what the policy decided for the gap before it (taken when that event
// arrives: the oracle and the timeout depend on when that is), then asks the link for
// its width (waiting adds to D), then lasts burst_duration() (what it lasts
// beyond the recorded duration adds to D).
class Replay {
public:
    // Throws slim::Error when the predictor refuses its config.
    // PolicyKind::context: `shared` (when given) is the predictor, shared
    // with other replays fed the same events in the same order; its config
    // must be config.policy.context.
    explicit Replay(const ReplayConfig& config, std::shared_ptr<SharedContext> shared = nullptr);

    // Events must come in order (start >= previous end, end >= start), as
    // predict::TraceReader guarantees. Returns the policy's decision on
    // this event.
    const GapDecision& on_event(const Event& event);

    ReplayResult result();
    // The decision on the last event, as on_event() returned it.
    const GapDecision& decision() const { return policy_.decision(); }

    const ReplayConfig& config() const { return config_; }
    const GapPolicy& policy() const { return policy_; }
    // The predictor of pps and spps, else none.
    const predict::Predictor *predictor() const { return policy_.predictor(); }
    // The policy of PolicyKind::adaptive, else none.
    const AdaptivePolicy *adaptive() const { return policy_.adaptive(); }
    // The context predictor of PolicyKind::context, else none.
    const predict::ContextPredictor *context() const { return policy_.context(); }

    // The width `event` needs: the full width, or burst_width() with packing.
    unsigned required_width(const Event& event) const;

    // Empty unless config().timeline_events > 0 and the trace reached the
    // window.
    const WidthTimeline& timeline() const { return timeline_; }

private:
    // The pending window over the gap ending at gap_end; then low again
    // `again_ns` after the gap's start if that lies beyond the window.
    void act_on_window(TimeNs gap_end, TimeNs again_ns = 0);
    void act_on_gap(TimeNs gap_end);
    // The model's request_width() and traffic(), keeping the timeline when
    // recording (out of line: the common path stays a flag test).
    void request_width(TimeNs t, unsigned width)
    {
        if (recording_) {
            request_width_recorded(t, width);
        } else {
            model_->request_width(t, width);
        }
    }
    TimeNs traffic(TimeNs t, unsigned width)
    {
        return recording_ ? traffic_recorded(t, width) : model_->traffic(t, width);
    }
    void request_width_recorded(TimeNs t, unsigned width);
    TimeNs traffic_recorded(TimeNs t, unsigned width);
    void follow_width(TimeNs t);
    void note_width(TimeNs t);

    ReplayConfig config_;
    std::optional<LinkModel> model_;  // built at the first event
    GapPolicy policy_;
    std::optional<predict::LowPowerRequest> pending_low_;  // original time
    std::optional<TimeNs> pending_timeout_;                // from the gap's start
    std::uint64_t events_   = 0;
    TimeNs first_start_ns_  = 0;
    TimeNs last_end_ns_     = 0;  // original time
    TimeNs actual_end_ns_   = 0;  // last end + D
    TimeNs delay_ns_        = 0;  // D
    TimeNs wakeup_delay_ns_ = 0;
    TimeNs stretch_ns_      = 0;
    WidthTimeline timeline_;
    bool recording_ = false;  // the current event is in the timeline's window
    // The event index at which recording_ flips next (never: UINT64_MAX):
    // one comparison per event when no timeline is asked for.
    std::uint64_t recording_flips_at_;
};

// The whole trace at once (tests, small traces).
ReplayResult replay(const std::vector<Event>& events, const ReplayConfig& config);

}  // namespace slim::link

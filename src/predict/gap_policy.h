/* SPDX-License-Identifier: BSD-3-Clause */
// What decides the link width: a gap policy. After each event it says what
// the idle gap that follows should do -- go low over a predicted window, go
// low after an idle timeout, both, or nothing -- and the two drivers carry
// that out: the live loop on the link controller (src/live/live_loop.h),
// the replay on a link model (replay.h). The oracle alone needs the gap's
// end, which only a replay knows; the replay applies it itself.
//
// One class, not a hierarchy: the kind is a switch in on_event(), so the
// live loop's per-event path has no virtual call and no allocation. The
// policies are named in one registry (policy_registry.h).
//
// Pure: events in (recorded time), decisions out.
#pragma once

#include "predict/context_predictor.h"
#include "predict/link_model.h"
#include "predict/predictor.h"
#include "predict/types.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace slim::link {

class AdaptivePolicy;

// The policies there are (policy_registry.h names them).
enum class PolicyKind {
    always_on,  // never requests low power: the baseline
    timeout,    // EEE-style: low after `timeout_ns` of idle, wake on demand
    oracle,     // knows the next event: low in every gap >= 2 tau, back in time
    pps,        // the pattern predictor with a fixed grouping threshold
    spps,       // the pattern predictor, threshold tuned by ADGT
    context,    // predict::ContextPredictor's windows
    adaptive,   // AdaptivePolicy: follows the best of its candidates
};

// Bursts closer than this form one run for the run-keyed context
// predictors (ContextKey::runs): 10 tau. An MPI exchange below MPI is a
// rendezvous request, the peer's answer and the data, and the answer waits
// for the peer to reach its call: on the FFT mini-app the request, the
// 128 KiB transpose and the reduction after it came 8-190 us apart, so a
// run cut at 2 tau (the link's break-even) split the same exchange
// differently each step and its context never repeated. Replayed over the
// 220 stored traces of the predictor table's workloads, the mean fraction
// of the oracle went from 0.871 at 2 tau to 0.877, 0.880, 0.878, 0.878 and
// 0.881 at 5, 10, 7, 15 and 20 tau; FFT from 0.828 (lowest 0.750) to 0.862
// (0.797) at 10 tau, the short runs from 0.811 to 0.825, no workload lower.
// Idle inside a run is still predicted: the key holds the run's bytes so far.
inline constexpr TimeNs context_run_gap_ns(const LinkConfig& link) { return 10 * link.tau_ns; }

// A policy and its parameters: what UCX_SLIM_PREDICTOR and slim-replay
// --policy name (policy_registry.h), and each candidate of the adaptive
// policy.
inline constexpr double default_max_slowdown_pct = 1.0;

struct PolicySpec {
    PolicyKind kind = PolicyKind::always_on;
    // The name it was asked by ("spps", "context:2"), for the reports.
    std::string registry_name;
    TimeNs timeout_ns = 100'000;         // timeout
    predict::PredictorConfig predictor;  // pps, spps (tuned is set by the kind)
    predict::ContextConfig context;      // context
    // context: when the context predictor has no window for a gap, an
    // idle timeout of this length (0: none).
    TimeNs fallback_timeout_ns = 0;
    // context: when a gap outlasts the predicted window, low again this
    // long after the window's end (0: not again). Compute phases on a busy
    // node vary: the window is the shorter of the last two, the rest of a
    // longer gap is otherwise lost.
    TimeNs after_ns = 0;
    // adaptive: the modelled time penalty, in % of the run's span, that the
    // candidate followed must stay within (UCX_SLIM_MAX_SLOWDOWN,
    // slim-replay --max-slowdown): "slow me down by no more than this".
    double max_slowdown_pct = default_max_slowdown_pct;

    // What it does, as the adaptive policy's reports name its candidates:
    // "timeout 100us", "pps gt 20us", "spps", "context 2 +-50%",
    // "context 2 +-50% + timeout 50us" (no "+-N%" at the default 10 %),
    // "runs 2 +-50% + timeout 50us, again 50us after" (key runs, after_ns).
    std::string name() const;
};

// The spec for a link: the predictors leave their safety margin (t_react)
// for its tau, and run-keyed contexts cut runs at context_run_gap_ns().
PolicySpec bound_to(PolicySpec spec, const LinkConfig& link);

// What the policy asks for the idle gap after an event.
struct GapDecision {
    // Low over this window (recorded time).
    std::optional<predict::LowPowerRequest> low_power;
    // Low after this much idle, measured from the gap's start; with
    // low_power, longer than its window: low again then.
    std::optional<TimeNs> timeout_ns;
    bool hit               = false;  // the event came while a prediction was active and matched
    bool prediction_active = false;  // a prediction is active after this event
};

// A context predictor that several policies fed the same events share: its
// decisions depend on the events alone, not on what a link did, so the
// adaptive policy's candidates that differ only in their timeouts ask one
// predictor instead of one each (six of the ten defaults share two; the
// live drain's per-event work took a busy-polling rank's core).
class SharedContext {
public:
    explicit SharedContext(const predict::ContextConfig& config) : predictor_(config) {}
    // The decision on the event_index-th event (1-based), computed once.
    const predict::Decision& decide(const predict::Event& event, std::uint64_t event_index)
    {
        if (event_index != decided_) {
            decision_ = predictor_.on_event(event);
            decided_  = event_index;
        }
        return decision_;
    }
    const predict::ContextPredictor& predictor() const { return predictor_; }

private:
    predict::ContextPredictor predictor_;
    predict::Decision decision_;
    std::uint64_t decided_ = 0;
};

class GapPolicy {
public:
    // `link` and `packed` are the adaptive policy's (its shadow replays).
    // PolicyKind::context: `shared` (when given) is the predictor, shared
    // with other policies fed the same events in the same order; its config
    // must be spec.context. Throws slim::Error when a predictor
    // refuses its configuration.
    GapPolicy(const PolicySpec& spec, const LinkConfig& link, bool packed,
              std::shared_ptr<SharedContext> shared = nullptr);
    ~GapPolicy();
    GapPolicy(GapPolicy&&) noexcept;
    GapPolicy& operator=(GapPolicy&&) noexcept;

    // Events in order (start >= previous end, end >= start).
    const GapDecision& on_event(const predict::Event& event);
    // The decision on the last event, as on_event() returned it.
    const GapDecision& decision() const { return decision_; }

    const PolicySpec& spec() const { return spec_; }
    PolicyKind kind() const { return spec_.kind; }
    // The pattern predictor of pps and spps, else none.
    const predict::Predictor *predictor() const { return predictor_ ? &*predictor_ : nullptr; }
    // The context predictor of PolicyKind::context, else none.
    const predict::ContextPredictor *context() const
    {
        return context_ ? &context_->predictor() : nullptr;
    }
    // The policy of PolicyKind::adaptive, else none.
    const AdaptivePolicy *adaptive() const { return adaptive_.get(); }

private:
    PolicySpec spec_;
    std::optional<predict::Predictor> predictor_;
    std::shared_ptr<SharedContext> context_;
    std::unique_ptr<AdaptivePolicy> adaptive_;
    GapDecision decision_;
    std::uint64_t events_ = 0;
};

}  // namespace slim::link

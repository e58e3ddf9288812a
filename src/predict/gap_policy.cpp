// SPDX-License-Identifier: BSD-3-Clause
#include "predict/gap_policy.h"

#include "predict/adaptive_policy.h"

#include <utility>

namespace slim::link {

namespace {

std::string micros(TimeNs ns) { return std::to_string(ns / 1'000) + "us"; }

}  // namespace

std::string PolicySpec::name() const
{
    // " +-50%" unless the context predictor's own default (10 %).
    const auto agreement = [this] {
        const predict::ContextConfig defaults;
        if (context.tolerance == defaults.tolerance) {
            return std::string();
        }
        return " +-" + std::to_string(static_cast<int>(context.tolerance * 100.0 + 0.5)) + "%";
    };
    switch (kind) {
    case PolicyKind::always_on: return "always-on";
    case PolicyKind::timeout: return "timeout " + micros(timeout_ns);
    case PolicyKind::oracle: return "oracle";
    case PolicyKind::pps: return "pps gt " + micros(predictor.fixed_gt_ns);
    case PolicyKind::spps: return "spps";
    case PolicyKind::adaptive: return "adaptive";
    case PolicyKind::context: {
        std::string name = (context.key == predict::ContextKey::runs ? "runs " : "context ") +
                           std::to_string(context.depth) + agreement();
        if (fallback_timeout_ns > 0) {
            name += " + timeout " + micros(fallback_timeout_ns);
        }
        if (after_ns > 0) {
            name += ", again " + micros(after_ns) + " after";
        }
        return name;
    }
    }
    return "?";
}

PolicySpec bound_to(PolicySpec spec, const LinkConfig& link)
{
    spec.predictor.t_react_ns = link.tau_ns;
    spec.context.t_react_ns   = link.tau_ns;
    spec.context.run_gap_ns   = context_run_gap_ns(link);
    return spec;
}

GapPolicy::GapPolicy(const PolicySpec& spec, const LinkConfig& link, bool packed,
                     std::shared_ptr<SharedContext> shared)
    : spec_(spec)
{
    switch (spec_.kind) {
    case PolicyKind::pps:
    case PolicyKind::spps:
        spec_.predictor.tuned = spec_.kind == PolicyKind::spps;
        predictor_.emplace(spec_.predictor);
        break;
    case PolicyKind::context:
        context_ = shared ? std::move(shared) : std::make_shared<SharedContext>(spec_.context);
        break;
    case PolicyKind::adaptive: {
        AdaptiveConfig a;
        a.link            = link;
        a.candidates      = AdaptiveConfig::candidates_for(link);
        a.packed          = packed;
        a.max_penalty_pct = spec_.max_slowdown_pct;
        adaptive_         = std::make_unique<AdaptivePolicy>(a);
        break;
    }
    case PolicyKind::always_on:
    case PolicyKind::timeout:
    case PolicyKind::oracle: break;
    }
}

GapPolicy::~GapPolicy()                               = default;
GapPolicy::GapPolicy(GapPolicy&&) noexcept            = default;
GapPolicy& GapPolicy::operator=(GapPolicy&&) noexcept = default;

const GapDecision& GapPolicy::on_event(const predict::Event& event)
{
    ++events_;
    switch (spec_.kind) {
    case PolicyKind::always_on:
    case PolicyKind::oracle:  // acts on the gap's end, which the replay knows (replay.h)
        break;
    case PolicyKind::timeout: decision_.timeout_ns = spec_.timeout_ns; break;
    case PolicyKind::pps:
    case PolicyKind::spps: {
        // The predictor sees the trace as recorded: what it predicts does
        // not depend on how the link delayed the run.
        const predict::Decision& d  = predictor_->on_event(event);
        decision_.low_power         = d.low_power;
        decision_.hit               = d.hit;
        decision_.prediction_active = d.prediction_active;
        break;
    }
    case PolicyKind::context: {
        const predict::Decision& d  = context_->decide(event, events_);
        decision_.low_power         = d.low_power;
        decision_.hit               = d.hit;
        decision_.prediction_active = d.prediction_active;
        decision_.timeout_ns.reset();
        if (!d.low_power && spec_.fallback_timeout_ns > 0) {
            // No window foretold for this gap: wait like a timeout.
            decision_.timeout_ns = spec_.fallback_timeout_ns;
        } else if (d.low_power && spec_.after_ns > 0) {
            // Measured from the event's end, like every timeout.
            decision_.timeout_ns = (d.low_power->until_ns - d.low_power->from_ns) + spec_.after_ns;
        }
        break;
    }
    case PolicyKind::adaptive: decision_ = adaptive_->on_event(event); break;
    }
    return decision_;
}

}  // namespace slim::link

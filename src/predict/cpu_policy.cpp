// SPDX-License-Identifier: BSD-3-Clause
// The core's policies (cpu_policy.h).
#include "predict/cpu_policy.h"

#include "base/error.h"
#include "predict/adaptive_policy.h"

#include <algorithm>
#include <cmath>

namespace slim::cpu {

namespace {

using link::PolicyKind;
using link::PolicySpec;

// The gap policies take a link; on a core only its tau counts (the
// predictors' safety margin and the run-keyed contexts' run gap).
link::LinkConfig core_as_link(const CpuConfig& cpu)
{
    link::LinkConfig l;
    l.tau_ns = cpu.tau_ns;
    return l;
}

// A busy phase's length class: factors of two of microseconds (0: under
// 1 us). A loop's compute phases repeat by length, within jitter.
predict::EventId length_class(TimeNs ns)
{
    const auto us = static_cast<std::uint64_t>(std::max<TimeNs>(0, ns) / 1000);
    return static_cast<predict::EventId>(64 - __builtin_clzll(us | 1)) - (us == 0 ? 1 : 0);
}

}  // namespace

WaitPlanner::WaitPlanner(const PolicySpec& spec, const CpuConfig& cpu)
    : policy_(link::bound_to(spec, core_as_link(cpu)), core_as_link(cpu), false)
{
    if (spec.kind == PolicyKind::adaptive || spec.kind == PolicyKind::oracle) {
        throw Error("a wait planner cannot run " + spec.name());
    }
}

CpuPlan WaitPlanner::plan(TimeNs start, TimeNs busy_start, const predict::Event *before)
{
    predict::Event busy;
    busy.start_ns = std::min(busy_start, start);
    busy.end_ns   = start;
    if (before) {
        // The message and its size: an MPI call's bytes do not vary.
        busy.id    = before->id ^ static_cast<predict::EventId>(before->bytes * 0x9e3779b1u);
        busy.bytes = before->bytes;
    } else {
        busy.id = length_class(busy.end_ns - busy.start_ns);
    }
    const link::GapDecision& d = policy_.on_event(busy);
    CpuPlan plan;
    if (d.low_power) {
        plan.low_from  = d.low_power->from_ns;
        plan.low_until = d.low_power->until_ns;
        // A timeout beside a window: low again that long after the wait's
        // start when the window closed before (link::Replay's rule).
        if (d.timeout_ns && *d.timeout_ns > d.low_power->until_ns - d.low_power->from_ns) {
            plan.again_at = start + *d.timeout_ns;
        }
    } else if (d.timeout_ns) {
        plan.low_from = start + *d.timeout_ns;
    }
    return plan;
}

std::vector<PolicySpec> CpuAdaptiveConfig::default_candidates()
{
    std::vector<PolicySpec> c = link::AdaptiveConfig::default_candidates();
    PolicySpec baseline;
    baseline.kind       = PolicyKind::timeout;
    baseline.timeout_ns = baseline_timeout_ns;
    c.push_back(baseline);
    return c;
}

CpuAdaptivePolicy::CpuAdaptivePolicy(const CpuConfig& cpu, const CpuAdaptiveConfig& config)
    : cpu_(cpu), config_(config)
{
    if (config_.candidates.empty()) {
        throw Error("the adaptive policy needs at least one candidate");
    }
    if (config_.initial >= config_.candidates.size()) {
        config_.initial = 0;
    }
    if (config_.check_every == 0) {
        config_.check_every = 1;
    }
    current_ = config_.initial;
    decay_   = config_.half_life_checks > 0 ? std::pow(0.5, 1.0 / config_.half_life_checks) : 0.0;
    for (const PolicySpec& k : config_.candidates) {
        planners_.emplace_back(k, cpu_);
    }
    scores_.resize(planners_.size());
    pending_.resize(planners_.size());
}

CpuPlan CpuAdaptivePolicy::on_wait(const Wait& wait, TimeNs busy_start,
                                   const predict::Event *before)
{
    const CpuPlan in_force = plan(wait.start_ns, busy_start, before);
    account(wait);
    return in_force;
}

CpuPlan CpuAdaptivePolicy::plan(TimeNs start, TimeNs busy_start, const predict::Event *before)
{
    planned_.resize(planners_.size());
    for (std::size_t i = 0; i < planners_.size(); ++i) {
        planned_[i] = planners_[i].plan(start, busy_start, before);
    }
    planned_busy_start_ = busy_start;
    return planned_[current_];
}

void CpuAdaptivePolicy::account(const Wait& wait)
{
    const TimeNs span = wait.end_ns - std::min(planned_busy_start_, wait.start_ns);
    const double baseline =
            cpu_.full.watts * static_cast<double>(span) * 1e-9;  // this busy phase and wait
    for (std::size_t i = 0; i < planners_.size() && i < planned_.size(); ++i) {
        const CpuTally tally = account_wait(cpu_, wait, planned_[i]);
        Score& s             = pending_[i];
        s.saved += saved_joules(cpu_, tally);
        s.baseline += baseline;
        s.penalty += static_cast<double>(tally.penalty_ns);
        s.span += static_cast<double>(span);
    }
    // The plan was the one in force before the check: the check scores
    // this wait, which the candidates could not see in advance.
    ++waits_;
    const bool early = config_.early_check > 0 &&
                       (waits_ == config_.early_check || waits_ == 2 * config_.early_check);
    if (early || waits_ % config_.check_every == 0) {
        check();
    }
}

void CpuAdaptivePolicy::check()
{
    for (std::size_t i = 0; i < scores_.size(); ++i) {
        Score& s       = scores_[i];
        const Score& n = pending_[i];
        s.saved        = s.saved * decay_ + n.saved;
        s.baseline     = s.baseline * decay_ + n.baseline;
        s.penalty      = s.penalty * decay_ + n.penalty;
        s.span         = s.span * decay_ + n.span;
        pending_[i]    = Score{};
    }
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < scores_.size(); ++i) {
        if (scores_[i].penalty_pct() > config_.max_penalty_pct) {
            continue;
        }
        if (!best || scores_[i].savings() > scores_[*best].savings()) {
            best = i;
        }
    }
    if (!best) {
        // Nothing keeps the bound: the least penalty.
        for (std::size_t i = 0; i < scores_.size(); ++i) {
            if (!best || scores_[i].penalty_pct() < scores_[*best].penalty_pct()) {
                best = i;
            }
        }
        if (*best != current_ && scores_[*best].penalty_pct() < scores_[current_].penalty_pct()) {
            current_ = *best;
            ++switches_;
        }
        return;
    }
    if (*best == current_) {
        return;
    }
    const Score& now = scores_[current_];
    const bool over  = now.penalty_pct() > config_.max_penalty_pct;
    if (over || scores_[*best].savings() > now.savings() + config_.switch_margin_pct) {
        current_ = *best;
        ++switches_;
    }
}

CpuPolicy::CpuPolicy(const PolicySpec& spec, const CpuConfig& cpu,
                     const CpuAdaptiveConfig& adaptive)
    : spec_(spec), cpu_(cpu)
{
    switch (spec_.kind) {
    case PolicyKind::adaptive: {
        // The user's bound holds for the core as for the link.
        CpuAdaptiveConfig bounded = adaptive;
        bounded.max_penalty_pct   = spec_.max_slowdown_pct;
        adaptive_                 = std::make_unique<CpuAdaptivePolicy>(cpu_, bounded);
        break;
    }
    case PolicyKind::oracle: break;
    default: planner_.emplace(spec_, cpu_); break;
    }
}

CpuPolicy::~CpuPolicy()                               = default;
CpuPolicy::CpuPolicy(CpuPolicy&&) noexcept            = default;
CpuPolicy& CpuPolicy::operator=(CpuPolicy&&) noexcept = default;

CpuPlan CpuPolicy::on_wait(const Wait& wait, TimeNs busy_start, const predict::Event *before)
{
    if (spec_.kind == PolicyKind::oracle) {
        CpuPlan plan;
        // Down and back up draw full power for tau each: only the time
        // beyond 2 tau saves.
        if (wait.end_ns - wait.start_ns > 2 * cpu_.tau_ns) {
            plan.low_from  = wait.start_ns;
            plan.low_until = wait.end_ns - cpu_.tau_ns;
        }
        return plan;
    }
    if (adaptive_) {
        return adaptive_->on_wait(wait, busy_start, before);
    }
    return planner_->on_wait(wait, busy_start, before);
}

CpuPlan CpuPolicy::plan(TimeNs start, TimeNs busy_start, const predict::Event *before)
{
    if (!plans_from_start(spec_)) {
        throw Error("the " + spec_.name() +
                    " needs each wait's end: it plans only in a replay (slim-replay --cpu)");
    }
    if (adaptive_) {
        return adaptive_->plan(start, busy_start, before);
    }
    return planner_->plan(start, busy_start, before);
}

void CpuPolicy::account(const Wait& wait)
{
    if (adaptive_) {
        adaptive_->account(wait);
    }
    // A gap policy learns a wait's length from the next busy phase (plan()).
}

CpuResult replay_waits(const std::vector<Wait>& waits, const std::vector<predict::Event>& events,
                       TimeNs span_start, TimeNs span_end, const CpuConfig& cpu, CpuPolicy& policy,
                       std::vector<CpuPlan> *plans)
{
    CpuTally total;
    TimeNs busy_start = span_start;
    std::size_t next  = 0;  // the first event not started before the wait
    for (const Wait& w : waits) {
        while (next < events.size() && events[next].start_ns < w.start_ns) {
            ++next;
        }
        const predict::Event *before = next > 0 ? &events[next - 1] : nullptr;
        const CpuPlan plan           = policy.on_wait(w, busy_start, before);
        if (plans != nullptr) {
            plans->push_back(plan);
        }
        total += account_wait(cpu, w, plan);
        busy_start = w.end_ns;
    }
    return cpu_result(cpu, total, std::max<TimeNs>(0, span_end - span_start));
}

}  // namespace slim::cpu

/* SPDX-License-Identifier: BSD-3-Clause */
// What decides a core's performance state while its rank waits: the
// policies of the link's registry (policy_registry.h), applied to the
// rank's waits instead of the link's idle gaps.
//
// A wait is the CPU's idle interval, as a gap between bursts is the link's,
// so the link's gap policies and their predictors serve unchanged: they are
// fed one event per busy phase (from the end of one wait to the start of
// the next) and their decision on the gap after it is the plan for the
// wait. The event's id and bytes are those of the last link event of
// the trace that started before the wait (its id mixed with its bytes): a
// wait follows a message, and the same message of a loop is followed by
// the same wait -- the link's contexts key on the same. Replayed on a CG
// trace's idle gaps taken as waits, keyed by the busy phase's length
// instead (all bursts look alike) the adaptive policy made 0.65 of the
// oracle's savings, keyed by the message 0.75.
// Without link events, the id is the busy phase's length class (factors of
// two of microseconds). The predictors bound to the core leave tau (its
// transition) as their safety margin, as they leave the link's.
//
//   always-on      never low
//   timeout:D      low after D of waiting, full at the arrival (500us: the
//                  field's baseline, per-call DVFS from a PMPI timer)
//   oracle         knows each wait's end: low over every wait longer than
//                  2 tau, full again exactly at its end (the saving beats
//                  the transitions' cost exactly there: they draw full power)
//   adaptive       CpuAdaptivePolicy below: the link's candidates and the
//                  baseline timeout replayed in shadow on the core, the best
//                  within the penalty bound followed
//   pps, spps, context:N, runs:N   the link's predictors alone
//
// Pure: waits in (recorded time), plans out. Every policy but the oracle
// plans a wait from its start alone (plan(), then account() once its end
// is known), so a live loop can act on the plan while the wait lasts;
// on_wait() is the two in one, for a replay.
#pragma once

#include "predict/cpu_model.h"
#include "predict/gap_policy.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace slim::cpu {

// The default spec: what slim-replay --cpu-policy takes when not given.
inline constexpr const char *default_cpu_policy = "adaptive";
// The field's baseline: low after 500 us in one MPI call.
inline constexpr TimeNs baseline_timeout_ns = 500'000;

// One policy of the registry driving a core (not the adaptive one, not the
// oracle): a gap policy fed the busy phases.
class WaitPlanner {
public:
    WaitPlanner(const link::PolicySpec& spec, const CpuConfig& cpu);
    // Waits in order, each after the previous one's end; `busy_start` is
    // where the busy phase before it started (the previous wait's end);
    // `before`, when there is one, the last link event that started before
    // the wait.
    CpuPlan on_wait(const Wait& wait, TimeNs busy_start, const predict::Event *before = nullptr)
    {
        return plan(wait.start_ns, busy_start, before);
    }
    // The same from the wait's start alone: a gap policy learns a gap's
    // length from the next event, which here is the next busy phase.
    CpuPlan plan(TimeNs start, TimeNs busy_start, const predict::Event *before = nullptr);
    const link::PolicySpec& spec() const { return policy_.spec(); }

private:
    link::GapPolicy policy_;
};

struct CpuAdaptiveConfig {
    // The link's default candidates (link::AdaptiveConfig) and the 500 us
    // baseline timeout, so the adaptive policy never follows less than
    // what it is measured against for long.
    std::vector<link::PolicySpec> candidates = default_candidates();
    std::size_t initial                      = 6;  // the link's initial one: runs 1 + timeout 200us
    double max_penalty_pct   = link::default_max_slowdown_pct;  // CpuPolicy sets the spec's
    double switch_margin_pct = 0.5;
    std::size_t check_every  = 16;  // waits
    std::size_t early_check  = 4;
    double half_life_checks  = 8.0;

    static std::vector<link::PolicySpec> default_candidates();
};

// The adaptive policy on the core: every candidate plans every wait in
// shadow, its plan is accounted on the core model (cpu_model.h), and the
// one whose decayed savings are best at a penalty within the bound is
// followed, with the link's adaptive policy's hysteresis
// (adaptive_policy.h). Scored on the core rather than through the link's
// shadow replays: the link model's energy is in lanes and its penalty has
// no slow handling.
class CpuAdaptivePolicy {
public:
    CpuAdaptivePolicy(const CpuConfig& cpu, const CpuAdaptiveConfig& config = {});
    CpuPlan on_wait(const Wait& wait, TimeNs busy_start, const predict::Event *before = nullptr);
    // on_wait() in two steps: every candidate plans the wait from its
    // start and the one in force's plan is returned; account() then
    // scores the candidates' plans on the wait, once its end is known
    // (`wait.start_ns` is plan()'s `start`). One account() per plan().
    CpuPlan plan(TimeNs start, TimeNs busy_start, const predict::Event *before = nullptr);
    void account(const Wait& wait);

    const link::PolicySpec& in_force() const { return config_.candidates[current_]; }
    std::uint64_t switches() const { return switches_; }
    const CpuAdaptiveConfig& config() const { return config_; }

private:
    struct Score {
        double saved = 0, baseline = 0, penalty = 0, span = 0;  // decayed sums
        double savings() const { return baseline > 0 ? 100.0 * saved / baseline : 0.0; }
        double penalty_pct() const { return span > 0 ? 100.0 * penalty / span : 0.0; }
    };
    void check();

    CpuConfig cpu_;
    CpuAdaptiveConfig config_;
    std::vector<WaitPlanner> planners_;
    std::vector<Score> scores_;     // decayed up to the last check
    std::vector<Score> pending_;    // since the last check
    std::vector<CpuPlan> planned_;  // the candidates' plans of the wait in course
    TimeNs planned_busy_start_ = 0;
    std::size_t current_       = 0;
    std::uint64_t waits_       = 0;
    std::uint64_t switches_    = 0;
    double decay_              = 1.0;
};

// Any policy of the registry on a core.
class CpuPolicy {
public:
    // `spec`: link::replay_policy()'s; for the adaptive policy its
    // max_slowdown_pct replaces `adaptive`'s max_penalty_pct. Throws
    // slim::Error when a predictor refuses its configuration.
    CpuPolicy(const link::PolicySpec& spec, const CpuConfig& cpu,
              const CpuAdaptiveConfig& adaptive = {});
    ~CpuPolicy();
    CpuPolicy(CpuPolicy&&) noexcept;
    CpuPolicy& operator=(CpuPolicy&&) noexcept;

    // Waits in order; `busy_start` and `before` as WaitPlanner::on_wait.
    // The oracle reads the wait's end; every other policy only what came
    // before it.
    CpuPlan on_wait(const Wait& wait, TimeNs busy_start, const predict::Event *before = nullptr);
    // on_wait() in two steps, for every policy but the oracle (it needs the
    // end: plan() throws slim::Error for it): the plan from the wait's
    // start, then, once the wait ended, account() lets the policy learn
    // from it. One account() per plan(), in order.
    static bool plans_from_start(const link::PolicySpec& spec)
    {
        return spec.kind != link::PolicyKind::oracle;
    }
    CpuPlan plan(TimeNs start, TimeNs busy_start, const predict::Event *before = nullptr);
    void account(const Wait& wait);

    const link::PolicySpec& spec() const { return spec_; }
    // The adaptive policy, else none.
    const CpuAdaptivePolicy *adaptive() const { return adaptive_.get(); }

private:
    link::PolicySpec spec_;
    CpuConfig cpu_;
    std::optional<WaitPlanner> planner_;
    std::unique_ptr<CpuAdaptivePolicy> adaptive_;
};

// A rank's waits replayed under a policy, over its span [span_start,
// span_end] (first start to last end of its events and waits). Waits in
// order, non-overlapping, inside the span; `events`, the rank's link events
// in order (may be empty), key the predictors' contexts. `plans`, when
// given, gets each wait's plan (slim-replay --timeline draws them).
CpuResult replay_waits(const std::vector<Wait>& waits, const std::vector<predict::Event>& events,
                       TimeNs span_start, TimeNs span_end, const CpuConfig& cpu, CpuPolicy& policy,
                       std::vector<CpuPlan> *plans = nullptr);

}  // namespace slim::cpu

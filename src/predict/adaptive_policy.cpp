// SPDX-License-Identifier: BSD-3-Clause
#include "predict/adaptive_policy.h"

#include "base/error.h"

#include "predict/replay.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <stdexcept>

namespace slim::link {

namespace {

// Every field of ContextConfig: predictors configured alike decide alike.
bool same_context(const predict::ContextConfig& a, const predict::ContextConfig& b)
{
    return a.depth == b.depth && a.displacement == b.displacement && a.t_react_ns == b.t_react_ns &&
           a.tolerance == b.tolerance && a.table_entries == b.table_entries && a.key == b.key &&
           a.run_gap_ns == b.run_gap_ns;
}

}  // namespace

std::vector<Candidate> AdaptiveConfig::default_candidates()
{
    // Ten candidates: every one is replayed in shadow on every event, on the
    // drain thread, which takes its time from a core a rank polls on. The
    // set was chosen on 28 live traces (the predictor table's seven
    // workloads, two runs of two ranks, one on a quiet and one on a loaded
    // machine) by greedy selection from 77 candidates (timeouts,
    // PPS, context and run-keyed context at depths 1, 2, 4, agreeing within
    // 10 or 50 %, alone or with a 50 or 200 us timeout, with or without a
    // second low period after the window): the mean fraction of the oracle
    // went from 0.76 with the previous twelve (context keyed by events) to
    // 0.91, the lowest from 0.27 to 0.70 (a run of 90 events). Adding the
    // 1 ms timeout or the event-keyed context to these ten lowered the
    // lowest to 0.33 and 0.49: early in a short run every candidate breaks
    // the penalty bound and the one with the least penalty, which saves
    // least, is followed until another beats it.
    std::vector<Candidate> c;
    // Timeouts from 2 tau up (candidates_for() puts the first at the
    // link's round trip): where every idle interval is long the
    // shortest wins; where short ones are many the longer keep the penalty
    // down (each late wake-up costs tau).
    for (TimeNs t : {20'000, 50'000, 100'000, 200'000}) {
        Candidate k;
        k.kind       = PolicyKind::timeout;
        k.timeout_ns = t;
        c.push_back(k);
    }
    // Run-keyed context predictors (ContextKey::runs) agreeing within
    // +-50 %: compute phases on a busy node vary by more than 10 %, and the
    // window is the shorter of the last two intervals anyway. A timeout for
    // the gaps no context foretells yet; with "again 50us after" the link
    // goes low a second time when a gap outlasts its window (the mean over
    // the 28 traces: 0.87 without, 0.91 with).
    const auto runs = [&c](std::size_t depth, TimeNs timeout, TimeNs after) {
        Candidate k;
        k.kind                = PolicyKind::context;
        k.context.key         = predict::ContextKey::runs;
        k.context.depth       = depth;
        k.fallback_timeout_ns = timeout;
        k.context.tolerance   = 0.5;
        k.after_ns            = after;
        c.push_back(k);
    };
    runs(2, 200'000, 0);
    runs(2, 50'000, 50'000);
    runs(1, 200'000, 0);  // AdaptiveConfig::initial (index 6)
    runs(2, 200'000, 50'000);
    runs(2, 50'000, 0);
    runs(1, 50'000, 50'000);
    return c;
}

std::vector<Candidate> AdaptiveConfig::candidates_for(const LinkConfig& link)
{
    // The set's durations are in units of the round trip it was chosen on
    // (the thesis's port: 2 tau = 20 us), so on that port it is unchanged.
    constexpr double chosen_on_ns = 20'000.0;
    const double scale            = static_cast<double>(round_trip_ns(link)) / chosen_on_ns;
    const auto scaled             = [scale](TimeNs ns) {
        return ns == 0 ? ns : std::max<TimeNs>(1, std::llround(static_cast<double>(ns) * scale));
    };
    std::vector<Candidate> c = default_candidates();
    for (Candidate& k : c) {
        k.timeout_ns          = scaled(k.timeout_ns);
        k.fallback_timeout_ns = scaled(k.fallback_timeout_ns);
        k.after_ns            = scaled(k.after_ns);
    }
    return c;
}

AdaptivePolicy::AdaptivePolicy(const AdaptiveConfig& config) : config_(config)
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
    // Candidates whose context predictors are configured alike share one
    // (SharedContext): they differ only in what they do where it has no
    // window, and its decisions depend on the events alone.
    std::vector<std::shared_ptr<SharedContext>> contexts;
    const auto shared_context = [&contexts](const predict::ContextConfig& c) {
        for (const std::shared_ptr<SharedContext>& have : contexts) {
            if (same_context(have->predictor().config(), c)) {
                return have;
            }
        }
        contexts.push_back(std::make_shared<SharedContext>(c));
        return contexts.back();
    };
    for (const Candidate& k : config_.candidates) {
        if (k.kind == PolicyKind::oracle || k.kind == PolicyKind::adaptive) {
            throw Error("the adaptive policy cannot follow " + k.name());
        }
        ReplayConfig rc;
        rc.link   = config_.link;
        rc.packed = config_.packed;
        rc.policy = bound_to(k, config_.link);
        std::shared_ptr<SharedContext> shared;
        if (k.kind == PolicyKind::context) {
            shared = shared_context(rc.policy.context);
        }
        shadows_.push_back(std::make_unique<Replay>(rc, std::move(shared)));
    }
    scores_.resize(shadows_.size());
}

AdaptivePolicy::~AdaptivePolicy()                                    = default;
AdaptivePolicy::AdaptivePolicy(AdaptivePolicy&&) noexcept            = default;
AdaptivePolicy& AdaptivePolicy::operator=(AdaptivePolicy&&) noexcept = default;

GapDecision AdaptivePolicy::on_event(const predict::Event& event)
{
    for (const std::unique_ptr<Replay>& shadow : shadows_) {
        shadow->on_event(event);
    }
    // The hit scores the gap before this event: the candidate in force
    // then, even when the check below replaces it.
    const bool hit = shadows_[current_]->decision().hit;
    ++events_;
    const bool early = config_.early_check > 0 &&
                       (events_ == config_.early_check || events_ == 2 * config_.early_check);
    if (early || events_ % config_.check_every == 0) {
        check();
    }
    // The gap after this event is the one in force now: its window.
    GapDecision out       = shadows_[current_]->decision();
    out.hit               = hit;
    out.prediction_active = out.low_power.has_value();
    hits_ += hit ? 1 : 0;
    predictions_ += out.low_power ? 1 : 0;
    return out;
}

void AdaptivePolicy::check()
{
    for (std::size_t i = 0; i < shadows_.size(); ++i) {
        const ReplayResult r  = shadows_[i]->result();
        Score& s              = scores_[i];
        const double energy   = r.energy_joules;
        const double baseline = r.baseline_joules;
        const double delay    = static_cast<double>(r.delay_ns);
        const double span     = static_cast<double>(r.original_span_ns);
        s.energy              = s.energy * decay_ + (energy - s.last_energy);
        s.baseline            = s.baseline * decay_ + (baseline - s.last_baseline);
        s.delay               = s.delay * decay_ + (delay - s.last_delay);
        s.span                = s.span * decay_ + (span - s.last_span);
        s.last_energy         = energy;
        s.last_baseline       = baseline;
        s.last_delay          = delay;
        s.last_span           = span;
    }
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < scores_.size(); ++i) {
        if (scores_[i].penalty() > config_.max_penalty_pct) {
            continue;
        }
        if (!best || scores_[i].savings() > scores_[*best].savings()) {
            best = i;
        }
    }
    if (!best) {
        // Nothing keeps the bound: the least penalty, so the run is slowed
        // as little as the candidates allow.
        for (std::size_t i = 0; i < scores_.size(); ++i) {
            if (!best || scores_[i].penalty() < scores_[*best].penalty()) {
                best = i;
            }
        }
        if (*best != current_ && scores_[*best].penalty() < scores_[current_].penalty()) {
            current_ = *best;
            ++switches_;
        }
        return;
    }
    if (*best == current_) {
        return;
    }
    const Score& now = scores_[current_];
    const bool over  = now.penalty() > config_.max_penalty_pct;
    if (over || scores_[*best].savings() > now.savings() + config_.switch_margin_pct) {
        current_ = *best;
        ++switches_;
    }
}

}  // namespace slim::link

// SPDX-License-Identifier: BSD-3-Clause
// The predictor facade: PPS (thesis §5.2) behind the SPPS front-end (§5.3.2).
//
// Per event, in the thesis's order: the idle interval before the event is
// settled (statistics, the pending low-power request, the SPPS front-end);
// Algorithm 1 forms grams and, while no prediction is active, invokes the PPA
// (Algorithms 2-3) "before the MPI event"; Algorithm 4 (PMCC) runs "after"
// it when a prediction is active.
//
// SPPS front-end. Until ADGT has a GT every idle interval goes to the
// ThresholdTuner and nothing is grouped or predicted; with the GT, PPS starts
// afresh on the event that completed the sample. Afterwards, idle intervals in
// the dangerous zone (GT +- 10 %): "we tolerate a single idle interval in the
// dangerous zone, and restart if a second one appears within an interval of
// three times the current pattern size". The interval is counted in completed
// grams, and the current pattern size is the predicted pattern's while a
// prediction is active, else the size the PPA is working on (patSize, at
// least 2). A restart forgets grams, patterns and prediction and samples
// again without skipping; the interval that triggered it is the first of the
// new sample, since it belongs to the new behaviour.
//
// A tuner that gives up leaves the predictor without prediction (the thesis
// stops there) until retry_after_intervals idle intervals later, when it
// samples again (0: never). So does a GT under which no low-power request
// was issued for that many intervals: on a noisy sample ADGT can pick a GT
// above every useful interval (16 ms was seen on a loaded 2-core node,
// where the CG mini-app's intervals are 20-500 us), which groups everything
// into one gram and predicts nothing. Applications change phase — setup,
// then a solver; a solve, then another — and one noisy sample would
// otherwise cost the whole run.
#include "predictor.h"

#include "gram_former.h"
#include "pattern_predictor.h"
#include "power_mode_control.h"

#include <algorithm>
#include <cmath>

namespace slim::predict {

namespace {

PatternPredictorConfig pattern_config(const PredictorConfig& c)
{
    PatternPredictorConfig p;
    p.max_pattern_size      = c.max_pattern_size;
    p.gram_capacity         = c.gram_capacity;
    p.pattern_capacity      = c.pattern_capacity;
    p.positions_per_pattern = c.positions_per_pattern;
    return p;
}

PmccConfig pmcc_config(const PredictorConfig& c)
{
    PmccConfig p;
    p.displacement     = c.displacement;
    p.t_react_ns       = c.t_react_ns;
    p.idle_tolerance   = c.idle_tolerance;
    p.max_pattern_size = std::max<std::size_t>(c.max_pattern_size, 2);
    return p;
}

// The tuner keeps its sample and ADGT scratch (nBin + 1 edges, nBin counts,
// shares and flags), all reserved at construction.
std::size_t tuner_bytes(const TunerConfig& c)
{
    const auto bins = static_cast<std::size_t>(std::sqrt(static_cast<double>(c.sample_intervals)));
    return sizeof(ThresholdTuner) + c.sample_intervals * sizeof(TimeNs) +
           (bins + 1) * (sizeof(double) + sizeof(std::size_t) + sizeof(double) + 1);
}

}  // namespace

struct Predictor::Impl {
    explicit Impl(const PredictorConfig& c)
        : config(c), grams(c.gram_kinds_capacity, c.max_gram_events), former(grams),
          ppa(grams, pattern_config(c)), pmcc(grams, pmcc_config(c)), tuner(c.tuner)
    {
        if (!c.tuned) {
            mode        = Mode::running;
            gt          = c.fixed_gt_ns;
            stats.gt_ns = gt;
        }
    }

    enum class Mode { tuning, running, gave_up };
    enum class Step { skip, first_event, run };  // what the front-end lets through

    Decision on_event(const Event& event);
    Step front_end(std::optional<TimeNs> idle);
    void restart();
    void retune();        // no GT, or no prediction under it: sample again
    void sample_again();  // forget grams, patterns and GT; tune anew
    std::size_t current_pattern_size() const;
    void issue(const std::optional<LowPowerRequest>& request, Decision& decision);

    PredictorConfig config;
    GramTable grams;
    GramFormer former;
    PatternPredictor ppa;
    PowerModeControl pmcc;
    ThresholdTuner tuner;
    PredictorStats stats;

    Mode mode                             = Mode::tuning;
    TimeNs gt                             = 0;
    std::uint64_t idle_since_give_up      = 0;
    std::uint64_t idle_without_prediction = 0;  // while running (SPPS)

    bool has_previous   = false;
    TimeNs previous_end = 0;
    std::optional<LowPowerRequest> pending;  // last request, until the next event

    bool danger_seen          = false;  // one tolerated dangerous interval...
    std::uint64_t danger_gram = 0;      // ...seen when this many grams were complete
};

Decision Predictor::Impl::on_event(const Event& event)
{
    Decision decision;
    ++stats.events;
    std::optional<TimeNs> idle;
    if (has_previous) {
        idle = std::max<TimeNs>(0, event.start_ns - previous_end);
        stats.total_idle_ns += *idle;
        if (pending) {
            // The low-power span actually spent idle: the link must be up
            // again when the next event starts.
            const TimeNs until = std::min(pending->until_ns, event.start_ns);
            stats.predicted_idle_ns += std::max<TimeNs>(0, until - pending->from_ns);
            pending.reset();
        }
    }
    has_previous = true;
    previous_end = std::max(event.end_ns, event.start_ns);

    Step step = Step::run;
    if (config.tuned) {
        step = front_end(idle);
        if (step == Step::skip) {
            return decision;
        }
    }

    const bool was_active = pmcc.active();
    const std::optional<CompletedGram> completed =
            former.on_event(event.id, step == Step::first_event ? std::nullopt : idle, gt);
    if (completed) {
        ++stats.grams;
        ppa.add_gram(*completed);
    }
    const std::optional<Activation> activation = ppa.on_event(was_active);
    if (was_active) {
        const PmccResult r = pmcc.on_event(event.id, completed.has_value(),
                                           completed ? completed->idle_after : 0, event.end_ns);
        if (r.mismatch) {
            ++stats.mispredictions;
            ppa.prediction_ended();
        } else {
            decision.hit = true;
            ++stats.hits;
            issue(r.low_power, decision);
        }
    } else if (activation) {
        const PmccResult r = pmcc.activate(activation->grams, activation->idles, activation->size,
                                           activation->index, former.current(), event.end_ns);
        if (r.mismatch) {
            ppa.prediction_ended();  // never really on: the gram in progress disagrees
        } else {
            issue(r.low_power, decision);
        }
    }
    decision.prediction_active = pmcc.active();
    stats.ppa_invocations      = ppa.ppa_invocations();
    stats.idle_matches         = pmcc.idle_matches();
    return decision;
}

void Predictor::Impl::issue(const std::optional<LowPowerRequest>& request, Decision& decision)
{
    if (!request) {
        return;
    }
    decision.low_power = request;
    pending            = request;
    ++stats.predictions;
    idle_without_prediction = 0;
}

Predictor::Impl::Step Predictor::Impl::front_end(std::optional<TimeNs> idle)
{
    switch (mode) {
    case Mode::gave_up:
        if (!idle || config.retry_after_intervals == 0 ||
            ++idle_since_give_up < config.retry_after_intervals) {
            return Step::skip;
        }
        retune();
        return Step::skip;  // the sample starts with the next interval
    case Mode::tuning:
        if (!idle) {
            return Step::skip;
        }
        switch (tuner.add_idle(*idle)) {
        case ThresholdTuner::State::tuned:
            gt                      = *tuner.gt_ns();
            stats.gt_ns             = gt;
            mode                    = Mode::running;
            danger_seen             = false;
            idle_without_prediction = 0;
            return Step::first_event;
        case ThresholdTuner::State::gave_up:
            stats.gave_up      = true;
            mode               = Mode::gave_up;
            idle_since_give_up = 0;
            return Step::skip;
        default: return Step::skip;
        }
    case Mode::running: break;
    }
    if (idle && config.tuned && config.retry_after_intervals > 0 &&
        ++idle_without_prediction >= config.retry_after_intervals) {
        retune();
        return Step::skip;
    }
    if (idle && tuner.in_dangerous_zone(*idle)) {
        const std::uint64_t window = config.restart_window_patterns * current_pattern_size();
        if (danger_seen && stats.grams - danger_gram <= window) {
            restart();
            return front_end(idle);
        }
        danger_seen = true;
        danger_gram = stats.grams;
    }
    return Step::run;
}

std::size_t Predictor::Impl::current_pattern_size() const
{
    return pmcc.active() ? pmcc.pattern_size() : ppa.current_pattern_size();
}

void Predictor::Impl::retune()
{
    ++stats.tuning_retries;
    sample_again();
}

void Predictor::Impl::restart()
{
    ++stats.restarts;
    sample_again();
}

void Predictor::Impl::sample_again()
{
    pmcc.deactivate();
    ppa.clear();
    former.clear();
    grams.clear();
    tuner.restart(false);
    stats.gt_ns.reset();
    mode        = Mode::tuning;
    danger_seen = false;
}

// -------------------------------------------------------------- Predictor

Predictor::Predictor(const PredictorConfig& config) : impl_(std::make_unique<Impl>(config)) {}
Predictor::~Predictor()                               = default;
Predictor::Predictor(Predictor&&) noexcept            = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

Decision Predictor::on_event(const Event& event) { return impl_->on_event(event); }

const PredictorStats& Predictor::stats() const { return impl_->stats; }

const PredictorConfig& Predictor::config() const { return impl_->config; }

std::size_t Predictor::memory_bytes() const
{
    const Impl& i = *impl_;
    return sizeof(Impl) + i.grams.memory_bytes() + i.former.memory_bytes() + i.ppa.memory_bytes() +
           i.pmcc.memory_bytes() + tuner_bytes(i.config.tuner);
}

}  // namespace slim::predict

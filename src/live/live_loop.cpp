// SPDX-License-Identifier: BSD-3-Clause
#include "live/live_loop.h"

#include "base/error.h"
#include "predict/adaptive_policy.h"
#include "predict/link_profile.h"

#include <limits>
#include <stdexcept>

namespace slim::live {

namespace {

unsigned size_class(std::uint64_t bytes)
{
    unsigned c = 0;
    while (bytes > 1) {
        bytes >>= 1;
        ++c;
    }
    return c;
}

// FNV-1a over the fields, one byte at a time: stable across runs and
// compilers (the peer is the only per-run part).
struct Fnv {
    std::uint64_t h = 1469598103934665603ull;
    void add(std::uint64_t v, int bytes)
    {
        for (int i = 0; i < bytes; ++i) {
            h ^= (v >> (8 * i)) & 0xFF;
            h *= 1099511628211ull;
        }
    }
};

}  // namespace

predict::EventId event_id(const Traffic& t)
{
    Fnv f;
    f.add(static_cast<std::uint64_t>(t.op_class), 1);
    f.add(t.am_id, 1);
    f.add(size_class(t.orig_bytes), 1);
    f.add(t.peer, 8);
    return static_cast<predict::EventId>(f.h ^ (f.h >> 32));
}

namespace {

// The spec bound to the loop's link; the oracle is refused (it needs the
// future: a replay's policy only).
link::PolicySpec live_spec(const LiveConfig& config)
{
    if (config.policy.kind == link::PolicyKind::oracle) {
        throw Error("the oracle needs the next event's time: it runs only in a replay");
    }
    return link::bound_to(config.policy, config.backend.link);
}

}  // namespace

LiveLoop::LiveLoop(LiveConfig config)
    : config_(std::move(config)),
      policy_(live_spec(config_), config_.backend.link, config_.compression_aware)
{
    clock_                = config_.backend.clock ? config_.backend.clock : link::steady_clock_ns();
    config_.backend.clock = clock_;
    config_.max_burst_gap_ns = std::max(config_.max_burst_gap_ns, config_.burst_gap_ns);
    burst_gap_ns_            = config_.burst_gap_ns;
    widest_gap_ns_           = burst_gap_ns_;
    link::ControllerOptions options;
    options.clock     = clock_;
    options.low_width = config_.backend.link.low_width;
    controller_       = std::make_unique<link::Controller>(
            config_.backend_factory ? config_.backend_factory(config_.backend)
                                          : link::make_emulated_backend(config_.backend).backend,
            options);
    if (config_.cpu.enabled) {
        cpu_ = std::make_unique<LiveCpu>(config_.cpu);
    }
    if (!config_.trace_path.empty()) {
        try {
            trace_ = std::make_unique<predict::TraceWriter>(config_.trace_path);
            trace_->comment("slimlink live trace: t_start_ns t_end_ns event_id bytes packed_bytes");
            trace_->comment("predictor " + config_.policy.registry_name + ", burst gap " +
                            std::to_string(config_.burst_gap_ns) + " ns");
        } catch (const std::exception& e) {
            trace_error_ = e.what();
            trace_.reset();
        }
    }
}

LiveLoop::~LiveLoop() = default;

TimeNs LiveLoop::now() { return clock_(); }

void LiveLoop::on_traffic(const Traffic& traffic)
{
    if (finished_) return;
    TimeNs t = now();
    if (open_ && !burst_gap_passed(t)) {
        if (t - last_op_ns_ > config_.burst_gap_ns && in_flight_ == 0) {
            ++open_->split_gaps;  // the gap widened for dense traffic merged these
        }
        // Inside a burst, the common case: the link was woken for its first
        // operation and nothing lowers it while a burst is open (requests
        // come when it closes), so only the burst's totals change.
        extend_burst(traffic, t);
        return;
    }
    // A new burst from here on.
    if (open_) {
        close_burst(t);
    }
    // The link carries this operation: wake it first (a late wake-up is
    // what the wait measures).
    timeout_fired_ = false;
    // Below full width now: a low-power request (or width) the controller
    // still holds, unless the request expired before this operation (the
    // link woke then, on time). The controller's own state, not a flag of
    // ours: a flag outlived the expiry and narrowed links already awake.
    const std::optional<TimeNs> low_until = controller_->low_until();
    const bool waking =
            controller_->width() < controller_->full_width() && !(low_until && *low_until <= t);
    if (waking && config_.compression_aware && !in_region_) {
        // A packed burst keeps its speed on fewer lanes (thesis §4.5.2), so
        // a link in low power wakes only to those. A link at full width is
        // not narrowed for a burst: a width change takes tau (10 us), longer
        // than most bursts; slim-replay --packed models the same rule.
        double ratio     = 1.0;
        const auto known = last_ratio_.find(event_id(traffic));
        if (known != last_ratio_.end()) {
            ratio = known->second;
        } else if (traffic.orig_bytes > 0 && traffic.wire_bytes < traffic.orig_bytes) {
            ratio = static_cast<double>(traffic.wire_bytes) /
                    static_cast<double>(traffic.orig_bytes);
        }
        if (ratio < 1.0) {
            controller_->burst(ratio);
            burst_demand_ = true;
        }
    }
    // Wakes the link for this operation (an expired low-power request ends
    // at its own time first).
    const TimeNs wait = controller_->traffic();
    if (wait > 0) {
        ++late_wakeups_;
        wakeup_delay_ns_ += wait;
        wait_joules_ += static_cast<double>(wait) * 1e-9 *
                        link::port_watts(config_.backend.link, controller_->width());
    }
    t = std::max(t, prev_end_ns_);
    if (!first_start_ns_) {
        first_start_ns_ = t;
        if (const link::LinkStats *s = controller_->backend().stats()) {
            energy_at_first_ = s->energy_joules;
        }
    }
    open_.emplace();
    open_->event.start_ns = t;
    open_->event.id       = event_id(traffic);
    extend_burst(traffic, t);
}

void LiveLoop::continue_burst(TimeNs end, std::uint64_t orig, std::uint64_t wire,
                              std::uint64_t splits, std::uint64_t began, std::uint64_t ended)
{
    if (finished_) return;
    Traffic t;
    t.orig_bytes = orig;
    t.wire_bytes = wire;
    t.send       = false;
    on_traffic(t);  // extends the open burst, the common case
    last_op_ns_ = std::max(last_op_ns_, end);
    // Gaps the producer's coalescing hid count as the ones the loop sees
    // itself (on_traffic): the widened gap merged them.
    if (open_) {
        open_->split_gaps += splits;
    }
    // Completions the loop never saw begin (their records were lost to a
    // full ring) must not hold later bursts open.
    in_flight_ = in_flight_ + began >= ended ? in_flight_ + began - ended : 0;
}

void LiveLoop::extend_burst(const Traffic& traffic, TimeNs t)
{
    if (traffic.send && !open_->send_id) {
        open_->send_id = event_id(traffic);
    }
    open_->event.bytes += traffic.orig_bytes;
    open_->event.packed_bytes += traffic.wire_bytes;
    last_op_ns_ = std::max(t, last_op_ns_);
}

void LiveLoop::region_begin(double ratio)
{
    if (finished_) return;
    in_region_ = true;
    // Wake now (the region's traffic must not wait), at the region's width.
    controller_->burst(ratio);
    controller_->traffic();
}

void LiveLoop::region_end()
{
    if (finished_ || !in_region_) return;
    in_region_ = false;
    controller_->end_burst();
}

void LiveLoop::poll()
{
    if (cpu_) {
        if (const std::optional<TimeNs> due = cpu_->deadline(); due && !finished_) {
            const TimeNs t = now();
            if (t >= *due) {
                cpu_->act(t);
            }
        }
    }
    if (!open_ && controller_->low_until()) {
        // Real backends need the wake at the predicted time, not at the next
        // operation: the progress loop is the timer.
        controller_->tick();
    }
    if (!open_) {
        if (const std::optional<TimeNs> timeout = active_timeout();
            timeout && !timeout_fired_ && !finished_) {
            // EEE-style baseline: low after timeout_ns of idle, until traffic.
            const TimeNs t = now();
            if (t - prev_end_ns_ >= *timeout) {
                timeout_fired_ = true;
                controller_->low_power_until(std::numeric_limits<TimeNs>::max());
            }
        }
        return;
    }
    const TimeNs t = now();
    if (burst_gap_passed(t)) {
        close_burst(t);
    }
    controller_->tick();
}

std::optional<TimeNs> LiveLoop::next_deadline() const
{
    if (finished_) return std::nullopt;
    std::optional<TimeNs> deadline;
    const auto earliest = [&](TimeNs t) { deadline = deadline ? std::min(*deadline, t) : t; };
    if (open_) {
        earliest(last_op_ns_ + open_gap_ns() + 1);
    }
    if (const std::optional<TimeNs> until = controller_->low_until()) {
        earliest(*until);
    }
    if (const std::optional<TimeNs> timeout = active_timeout();
        !open_ && timeout && !timeout_fired_) {
        earliest(prev_end_ns_ + *timeout);
    }
    if (cpu_) {
        if (const std::optional<TimeNs> due = cpu_->deadline()) {
            earliest(*due);
        }
    }
    return deadline;
}

void LiveLoop::adapt_burst_gap(TimeNs start, std::uint64_t split_gaps)
{
    if (last_start_ns_) {
        // A moving mean over about the last 8 events, of the interval events
        // would have had at the configured gap: a widened gap must not
        // narrow again only because it merged the events it was widened for.
        // The previous burst spans this interval: its gaps count.
        const TimeNs interval =
                (start - *last_start_ns_) / static_cast<TimeNs>(1 + last_split_gaps_);
        mean_interval_ns_ = mean_interval_ns_ == 0
                                    ? interval
                                    : mean_interval_ns_ + (interval - mean_interval_ns_) / 8;
    }
    last_start_ns_   = start;
    last_split_gaps_ = split_gaps;
    // Every 8 events: the mean has then seen the gap in use. Not before
    // config_.dense_settle_events (MPI_Init's wire-up).
    if (events_ < config_.dense_settle_events || events_ % 8 != 0) {
        return;
    }
    if (mean_interval_ns_ < config_.dense_interval_ns && burst_gap_ns_ < config_.max_burst_gap_ns &&
        last_ratio_.empty()) {
        burst_gap_ns_  = std::min(2 * burst_gap_ns_, config_.max_burst_gap_ns);
        widest_gap_ns_ = std::max(widest_gap_ns_, burst_gap_ns_);
    } else if (mean_interval_ns_ > config_.sparse_interval_ns &&
               burst_gap_ns_ > config_.burst_gap_ns) {
        burst_gap_ns_ = std::max(burst_gap_ns_ / 2, config_.burst_gap_ns);
    }
}

void LiveLoop::close_burst(TimeNs now_ns)
{
    predict::Event event            = open_->event;
    const std::uint64_t split_gaps  = open_->split_gaps;
    const predict::EventId start_id = event.id;  // what on_traffic looks up
    event.id                        = open_->send_id.value_or(event.id);
    open_.reset();
    event.end_ns = std::max(now_ns, event.start_ns);
    // Unpacked bursts: packed_bytes 0 means "same as bytes" in traces.
    if (event.packed_bytes >= event.bytes) {
        event.packed_bytes = 0;
    }
    prev_end_ns_ = event.end_ns;
    ++events_;
    adapt_burst_gap(event.start_ns, split_gaps);

    if (config_.compression_aware) {
        constexpr std::size_t kMaxRemembered = 4096;
        const double ratio =
                event.packed_bytes > 0 && event.bytes > 0
                        ? static_cast<double>(event.packed_bytes) / static_cast<double>(event.bytes)
                        : 1.0;
        if (ratio < 1.0 && (last_ratio_.size() < kMaxRemembered || last_ratio_.count(start_id))) {
            last_ratio_[start_id] = ratio;
        } else if (ratio >= 1.0) {
            last_ratio_.erase(start_id);
        }
        if (burst_demand_ && !in_region_) {
            controller_->end_burst();
        }
        burst_demand_ = false;
    }

    if (trace_) {
        try {
            trace_->write(event);
            ++trace_events_;
        } catch (const std::exception& e) {
            trace_error_ = e.what();
            trace_.reset();
        }
    }

    // The policy's decision for the gap after this event: a window now,
    // a timeout when poll() finds the link idle that long.
    const link::GapDecision& d = policy_.on_event(event);
    idle_timeout_              = d.timeout_ns;
    if (d.low_power) {
        controller_->low_power_until(d.low_power->until_ns);
    }

    last_end_ns_ = event.end_ns;
    if (cpu_) {
        last_event_ = event;  // what the next wait follows
    }
    if (const link::LinkStats *s = controller_->backend().stats()) {
        energy_at_last_end_ = s->energy_joules;
        stats_at_last_end_  = *s;
    }
}

void LiveLoop::wait_begin(TimeNs start)
{
    if (wait_start_) {
        // The open wait's end was lost to a full ring: it ends where this
        // one begins, for the counts as for the CPU side, which ends its
        // plan there too (never more waits lowered than waits).
        wait_end(std::max(start, *wait_start_), 0, 0, 0);
    }
    // A hand-over of the same rank stamped later than the wait's begin
    // (the first round of the MPI call that waits) bounds where it began.
    wait_bound_ = std::max(last_wait_end_, last_op_ns_);
    wait_start_ = std::max(start, wait_bound_);
    if (!cpu_ || finished_) {
        return;
    }
    if (!first_wait_start_) {
        first_wait_start_ = *wait_start_;
    }
    // The busy phase before it began at the previous wait's end (at the
    // first event, before any); the link event it follows is the open
    // burst (it started before the wait) or the last closed one -- what a
    // replay of the trace finds as the last event started before the wait.
    const TimeNs busy_start = waits_ > 0 ? last_wait_end_ : first_start_ns_.value_or(*wait_start_);
    predict::Event open_event;
    const predict::Event *before = last_event_ ? &*last_event_ : nullptr;
    if (open_) {
        open_event    = open_->event;
        open_event.id = open_->send_id.value_or(open_event.id);
        before        = &open_event;
    }
    cpu_->begin(*wait_start_, busy_start, before);
}

void LiveLoop::wait_end(TimeNs end, TimeNs blocked_ns, std::uint64_t blocks, TimeNs ahead_ns)
{
    if (!wait_start_) {
        return;  // its begin was lost to a full ring
    }
    // The rounds before the begin's were the wait's too: the module
    // estimates how long they took once it knows the timed rounds'.
    const TimeNs reached = *wait_start_ > ahead_ns ? *wait_start_ - ahead_ns : 0;
    const TimeNs start   = std::max(reached, wait_bound_);
    if (first_wait_start_ && *first_wait_start_ == *wait_start_) {
        first_wait_start_ = start;
    }
    predict::Wait wait{start, std::max(end, start)};
    wait_start_.reset();
    last_wait_end_ = wait.end_ns;
    ++waits_;
    wait_ns_ += wait.end_ns - wait.start_ns;
    wait_blocked_ns_ += std::min(blocked_ns, wait.end_ns - wait.start_ns);
    wait_blocks_ += blocks;
    if (cpu_ && !finished_) {
        cpu_->end(wait.end_ns, wait.start_ns);
    }
    if (trace_) {
        try {
            trace_->write(wait);
        } catch (const std::exception& e) {
            trace_error_ = e.what();
            trace_.reset();
        }
    }
}

void LiveLoop::flush_trace()
{
    if (!trace_ || !trace_->unflushed()) {
        return;
    }
    try {
        trace_->flush();
    } catch (const std::exception& e) {
        trace_error_ = e.what();
        trace_.reset();
    }
}

LiveSummary LiveLoop::summary(bool final)
{
    if (open_) {
        close_burst(now());
    }
    if (final && !finished_ && wait_start_) {
        // A wait whose end was not handed over before the run ends (the
        // report came before the next progress round): it ends now, as
        // the CPU side's request does, and counts among the waits.
        wait_end(std::max(now(), *wait_start_), 0, 0, 0);
    }
    LiveSummary s;
    s.predictor = config_.policy.registry_name;
    if (config_.policy.kind == link::PolicyKind::adaptive) {
        s.max_slowdown_pct = config_.policy.max_slowdown_pct;
    }
    s.backend             = controller_->backend().name();
    s.link_profile        = link::link_spec(config_.backend.link);
    s.events              = events_;
    s.burst_gap_ns        = burst_gap_ns_;
    s.widest_burst_gap_ns = widest_gap_ns_;
    s.lanes               = controller_->full_width();
    s.late_wakeups        = late_wakeups_;
    s.wakeup_delay_ns     = wakeup_delay_ns_;
    if (first_start_ns_ && last_end_ns_ > *first_start_ns_) {
        s.span_ns       = last_end_ns_ - *first_start_ns_;
        s.energy_joules = energy_at_last_end_ - energy_at_first_;
        // Only a port that accounts energy (the emulated one) has any.
        if (!config_.waits_in_recorded_time && controller_->backend().stats() != nullptr) {
            s.energy_joules += wait_joules_;
        }
        s.baseline_joules = static_cast<double>(config_.backend.link.lanes) *
                            config_.backend.link.lane_watts *
                            (static_cast<double>(s.span_ns) * 1e-9);
        // Only a backend that accounts energy (the emulated port) has any:
        // a real port's power is not measured, and 0 J would read as 100 %.
        if (s.baseline_joules > 0.0 && controller_->backend().stats() != nullptr) {
            s.energy_savings_pct = 100.0 * (1.0 - s.energy_joules / s.baseline_joules);
        }
        s.time_penalty_pct =
                100.0 * static_cast<double>(wakeup_delay_ns_) / static_cast<double>(s.span_ns);
    }
    s.transitions      = stats_at_last_end_.transitions;
    s.time_at_width_ns = stats_at_last_end_.time_at_width_ns;
    if (const predict::Predictor *predictor = policy_.predictor()) {
        const predict::PredictorStats& p = predictor->stats();
        s.hits                           = p.hits;
        s.predictions                    = p.predictions;
        s.restarts                       = p.restarts;
        s.gt_ns                          = p.gt_ns;
    }
    if (const link::AdaptivePolicy *adaptive = policy_.adaptive()) {
        s.hits            = adaptive->hits();
        s.predictions     = adaptive->predictions();
        s.policy_in_force = adaptive->in_force().name();
        s.policy_switches = adaptive->switches();
    }
    s.controller_failed = controller_->failed();
    s.controller_error  = controller_->error();
    if (trace_) {
        try {
            trace_->flush();
        } catch (const std::exception& e) {
            trace_error_ = e.what();
        }
        if (final) {
            trace_.reset();  // closed: the run's trace is complete
        }
    }
    s.trace_events    = trace_events_;
    s.waits           = waits_;
    s.wait_ns         = wait_ns_;
    s.wait_blocked_ns = wait_blocked_ns_;
    s.wait_blocks     = wait_blocks_;
    s.trace_path      = config_.trace_path;
    s.trace_error     = trace_error_;
    if (cpu_) {
        if (final && !finished_) {
            cpu_->finish(now());
        }
        // The rank's span: its first event or wait to its last.
        std::optional<TimeNs> first = first_start_ns_;
        if (first_wait_start_) {
            first = first ? std::min(*first, *first_wait_start_) : *first_wait_start_;
        }
        const TimeNs last = std::max(last_end_ns_, last_wait_end_);
        s.cpu_live        = cpu_->summary(first && last > *first ? last - *first : 0);
    }
    if (final && !finished_) {
        finished_ = true;
        controller_->restore_full_width();
    }
    return s;
}

}  // namespace slim::live

// SPDX-License-Identifier: BSD-3-Clause
#include "live/live_drain.h"

#include "base/error.h"

#include <algorithm>
#include <chrono>

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>

namespace slim::live {

namespace {

// The drain sleeps about a millisecond; the default 50 us timer slack is
// harmless here but costs nothing to tighten for real ports' deadlines.
constexpr unsigned long kTimerSlackNs = 10'000;

}  // namespace

link::Clock LiveDrain::replay_clock(const TimeNs& replay_now)
{
    const TimeNs *now = &replay_now;
    return [now] { return *now; };
}

LiveDrain::LiveDrain(OpLog& log, LiveLoop& loop, TimeNs& replay_now, link::Clock real,
                     DrainOptions options)
    : log_(log), loop_(loop), now_(replay_now), real_(std::move(real)), options_(options)
{}

LiveDrain::~LiveDrain() { stop(); }

void LiveDrain::start()
{
    // The thread takes no signals meant for the application.
    sigset_t all;
    sigfillset(&all);
    // The caller's mask comes back however thread creation ends.
    struct MaskRestore {
        sigset_t previous;
        ~MaskRestore() { pthread_sigmask(SIG_SETMASK, &previous, nullptr); }
    } restore;
    pthread_sigmask(SIG_BLOCK, &all, &restore.previous);
    thread_ = std::thread([this] { run(); });
}

void LiveDrain::stop()
{
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    stop_wake_.notify_one();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) {
        thread_.join();
    }
}

void LiveDrain::drain()
{
    const std::lock_guard<std::mutex> lock(mutex_);
    drain_locked(real_() - options_.horizon_margin_ns);
}

void LiveDrain::finish()
{
    stop();
    const std::lock_guard<std::mutex> lock(mutex_);
    drain_locked(real_());
}

DrainStats LiveDrain::stats() const
{
    const std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
}

void LiveDrain::replay_deadlines(TimeNs until)
{
    // Each poll() acts on the deadline it was called at and moves the next
    // one later; a deadline that did not move would loop forever, so stop.
    std::optional<TimeNs> previous;
    while (const std::optional<TimeNs> deadline = loop_.next_deadline()) {
        if (*deadline > until || (previous && *deadline <= *previous)) {
            return;
        }
        previous = deadline;
        now_     = std::max(now_, *deadline);
        loop_.poll();
    }
}

void LiveDrain::apply(const OpRecord& r)
{
    switch (r.kind) {
    case OpKind::traffic: {
        Traffic t;
        t.op_class   = r.op_class;
        t.am_id      = r.am_id;
        t.wire_bytes = r.wire_bytes;
        t.orig_bytes = r.orig_bytes;
        t.peer       = r.peer;
        t.send       = r.send;
        loop_.on_traffic(t);
        return;
    }
    case OpKind::region_begin: loop_.region_begin(r.ratio); return;
    case OpKind::region_end: loop_.region_end(); return;
    case OpKind::wait_begin: loop_.wait_begin(r.t_ns); return;
    case OpKind::wait_end:
        loop_.wait_end(r.t_ns, static_cast<TimeNs>(r.peer), r.wire_bytes, r.orig_bytes);
        return;
    }
}

void LiveDrain::drain_locked(TimeNs horizon)
{
    const DrainResult drained = log_.drain([this](const LogItem& item) {
        if (item.at() < now_) {
            ++stats_.late;
        }
        replay_deadlines(item.at() - 1);
        now_ = std::max(now_, item.at());
        // One record the loop could not take must not cost it the rest:
        // the loop reports its own failures (the controller goes to full
        // width), the drain counts it and goes on.
        try {
            if (item.kind == LogItem::Kind::op) {
                apply(item.op);
            } else {
                loop_.continue_burst(item.end, item.orig, item.wire, item.splits, item.began,
                                     item.ended);
            }
        } catch (const std::exception& e) {
            note_swallowed("the live loop could not take a record", e);
        }
    });
    stats_.records += drained.ops;
    // A run whose latest operations could not be read may still be going
    // on: its burst must not end early. The next round replays these
    // deadlines.
    if (drained.complete) {
        try {
            replay_deadlines(horizon);
        } catch (const std::exception& e) {
            note_swallowed("the live loop's deadlines", e);
        }
    }
    try {
        loop_.sync(now_);
    } catch (const std::exception& e) {
        note_swallowed("the live loop's link sync", e);
    }
    // Producers fold operations into runs at the loop's gap: while dense
    // traffic keeps it widened, a 1 MiB stream logs a few runs per drain,
    // not hundreds (each of which this thread then replays, preempting a
    // rank). A narrowed gap reaches them at the next round; until then,
    // the runs they fold are ones the loop merged a moment ago.
    log_.set_coalesce_gap(loop_.burst_gap_ns());
    if (options_.publish_owed != nullptr) {
        const TimeNs charged = loop_.wakeup_delay_ns();
        if (charged > owed_published_) {
            options_.publish_owed->fetch_add(charged - owed_published_, std::memory_order_relaxed);
            owed_published_ = charged;
        }
    }
    if (horizon - trace_flushed_ns_ >= options_.trace_flush_ns) {
        loop_.flush_trace();
        trace_flushed_ns_ = horizon;
    }
}

void LiveDrain::run()
{
    ::prctl(PR_SET_TIMERSLACK, kTimerSlackNs, 0, 0, 0);
    TimeNs sleep_ns = options_.interval_ns;
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
        ++stats_.wakeups;
        const std::uint64_t before = stats_.records;
        // Nothing may leave the thread (that would end the process): a
        // round that failed is counted and the next one tries again.
        try {
            drain_locked(real_() - options_.horizon_margin_ns);
        } catch (const std::exception& e) {
            note_swallowed("the live loop's drain thread", e);
        } catch (...) {
            note_swallowed("the live loop's drain thread");
        }
        // Traffic flowing: come back soon, the ring fills. None: back off,
        // so an idle or computing process is left alone.
        sleep_ns       = stats_.records != before ? options_.interval_ns
                                                  : std::min(sleep_ns * 2, options_.max_sleep_ns);
        TimeNs wait_ns = sleep_ns;
        if (options_.follow_deadlines) {
            if (const std::optional<TimeNs> deadline = loop_.next_deadline()) {
                const TimeNs until = *deadline + options_.horizon_margin_ns - real_();
                wait_ns            = std::clamp<TimeNs>(until, 10'000, wait_ns);
            }
        }
        // A core asked low while its rank waits acts in real time, as a
        // real port does, whichever port the loop drives.
        if (const std::optional<TimeNs> due = loop_.cpu_request_deadline()) {
            const TimeNs until = *due + options_.horizon_margin_ns - real_();
            wait_ns            = std::clamp<TimeNs>(until, 10'000, wait_ns);
        }
        if (loop_.cpu_asked_low()) {
            wait_ns = std::min(wait_ns, options_.cpu_low_poll_ns);
        }
        stop_wake_.wait_for(lock, std::chrono::nanoseconds(wait_ns));
    }
}

}  // namespace slim::live

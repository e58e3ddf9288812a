/* SPDX-License-Identifier: BSD-3-Clause */
// The live loop's consumer: replays the send path's record log
// (OpLog) into the LiveLoop, off the send path, on its own thread.
//
// The send path only records what it did and when (OpLog); nothing
// there waits for, locks against or wakes this thread. The drain wakes on
// its own schedule (every `interval`, backing off to `max_sleep` while no
// traffic comes), takes everything out of the log, and replays it into
// the LiveLoop in time order with a *replay clock*: the loop, its
// controller and the emulated port read the time of the record or deadline
// being replayed, not the wall clock. Deadlines that fell between two
// records (a burst's end a gap after its last operation, a low-power
// request's expiry, the timeout policy firing) are replayed at their own
// times. So the emulated link's energy and late wake-ups are exactly what a
// perfectly timed loop would have produced, however late the drain runs.
//
// A real port (exec, ibmad) cannot act in the past: for those the drain
// also sleeps no longer than the loop's next deadline, and commands reach
// the port up to one wake-up late.
#pragma once

#include "link/backend.h"
#include "live/live_loop.h"
#include "live/op_log.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

namespace slim::live {

struct DrainOptions {
    // Each wake preempts a busy-polling rank on a full machine (a context
    // switch costs 5-9 us on this VM): a 1 ms interval cost 12-15 % of
    // ping-pong latency, 4 ms is within noise. The emulated link loses
    // nothing by the wait (see above).
    TimeNs interval_ns  = 4'000'000;   // sleep while traffic flows
    TimeNs max_sleep_ns = 16'000'000;  // longest sleep while none does
    // Records are replayed up to this long before the wall clock: a sender
    // preempted between reading the clock and pushing its record must not
    // find its time already replayed past.
    TimeNs horizon_margin_ns = 50'000;
    // Sleep no longer than the loop's next deadline (real ports).
    bool follow_deadlines = false;
    // The trace's buffered lines reach its file at least this often (a
    // write on this thread, never on the send path): all a process killed
    // by a signal can lose of its trace is about this much of the end of
    // its run, and the burst still open then.
    TimeNs trace_flush_ns = 50'000'000;
    // While the rank's cores are asked low, sleep no longer than this: the
    // raise at the wait's end (the arrival) is then at most this late. A
    // waiting rank only polls, so a wake costs it little.
    TimeNs cpu_low_poll_ns = 1'000'000;
    // Each round adds the late wake-up waits the loop charged since the
    // previous round (ns): UCX_SLIM_INJECT_DELAY's sender then waits them
    // out, so the run loses what the model says it loses.
    std::atomic<TimeNs> *publish_owed = nullptr;
};

using DrainStats = DrainCounters;

class LiveDrain {
public:
    // The clock a drained LiveLoop must use (LiveConfig::backend.clock): it
    // reads `replay_now`, which the drain sets. `replay_now` must outlive
    // the loop.
    static link::Clock replay_clock(const TimeNs& replay_now);

    // `loop` must have been built with replay_clock(replay_now); all three
    // outlive the drain. `real` is the wall clock (tests pass a manual one).
    LiveDrain(OpLog& log, LiveLoop& loop, TimeNs& replay_now, link::Clock real,
              DrainOptions options = {});
    ~LiveDrain();  // stop()
    LiveDrain(const LiveDrain&)            = delete;
    LiveDrain& operator=(const LiveDrain&) = delete;

    // Starts the thread; throws std::system_error when it cannot.
    void start();
    // Ends and joins the thread; idempotent.
    void stop();

    // Replays every record in the ring and the deadlines up to the wall
    // clock less the margin, on the calling thread (the thread does the same
    // each round). Thread-safe.
    void drain();

    // stop(), then replays everything recorded and every deadline up to now.
    void finish();

    // Runs `f(loop)` with the loop to itself (summary, tests).
    template <typename F>
    auto with_loop(F&& f)
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        return f(loop_);
    }

    DrainStats stats() const;

private:
    void run();
    void drain_locked(TimeNs horizon);
    void replay_deadlines(TimeNs until);
    void apply(const OpRecord& record);

    OpLog& log_;
    LiveLoop& loop_;
    TimeNs& now_;  // the replay clock, under mutex_
    link::Clock real_;
    DrainOptions options_;
    mutable std::mutex mutex_;  // the loop and now_; never taken by the send path
    DrainStats stats_;          // under mutex_
    std::condition_variable stop_wake_;
    bool stopping_           = false;  // under mutex_
    TimeNs owed_published_   = 0;      // under mutex_
    TimeNs trace_flushed_ns_ = 0;      // wall clock, under mutex_
    std::thread thread_;
};

}  // namespace slim::live

// The live loop's timer (issue 6): a thread that sleeps until the loop's
// next deadline (LiveLoop::next_deadline) and then polls it.
//
// Why a thread: below MPI, slim runs only when the application is inside an
// MPI call. While the application computes nobody calls the transport, so
// without a timer a burst would end only at the next MPI call — the idle
// period the predictor exists to use would already be over, and the trace
// would show none. The timer closes the burst a gap after its last
// operation (then the predictor runs here, off the send path) and wakes a
// real port when a low-power request expires.
//
// It shares the Engine's mutex with the send path: the loop is never used
// by two threads at once. It costs one futex wake per burst (kick() only
// signals when the new deadline is earlier than the one it sleeps to) and
// one timed sleep per deadline; it never spins.
#pragma once

#include "live/live_loop.h"

#include <condition_variable>
#include <mutex>
#include <thread>

namespace slim::live {

class LiveTimer {
public:
    // `loop` must use steady_clock_ns (the timer sleeps on steady_clock)
    // and outlive the timer; `mutex` guards it everywhere. Throws
    // std::system_error when the thread cannot start.
    LiveTimer(std::mutex& mutex, LiveLoop& loop);
    ~LiveTimer();  // stop()
    LiveTimer(const LiveTimer&) = delete;
    LiveTimer& operator=(const LiveTimer&) = delete;

    // Call with the mutex held, after the loop changed: wakes the thread
    // when the loop's deadline moved earlier than the one it sleeps to.
    void kick();

    // Ends and joins the thread. Call without the mutex held; idempotent.
    void stop();

private:
    void run();

    std::mutex&             mutex_;
    LiveLoop&               loop_;
    std::condition_variable wake_;
    TimeNs                  sleeping_until_ = 0;  // under mutex_; max: no deadline
    bool                    stopping_ = false;    // under mutex_
    std::thread             thread_;
};

}  // namespace slim::live

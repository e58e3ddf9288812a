#include "live/live_timer.h"

#include <chrono>
#include <limits>

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>

namespace slim::live {

namespace {

constexpr TimeNs kNoDeadline = std::numeric_limits<TimeNs>::max();

// Idle periods worth a width change last tens of microseconds; the default
// 50 us timer slack would eat them.
constexpr unsigned long kTimerSlackNs = 1'000;

}  // namespace

LiveTimer::LiveTimer(std::mutex& mutex, LiveLoop& loop) : mutex_(mutex), loop_(loop)
{
    // The thread takes no signals meant for the application (SIGINT,
    // SIGTERM go to its own threads; the controller's fatal-signal
    // handlers still run wherever the kernel delivers).
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &previous);
    try {
        thread_ = std::thread([this] { run(); });
    } catch (...) {
        pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        throw;
    }
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
}

LiveTimer::~LiveTimer() { stop(); }

void LiveTimer::kick()
{
    const std::optional<TimeNs> deadline = loop_.next_deadline();
    if (deadline && *deadline < sleeping_until_) {
        sleeping_until_ = *deadline;  // one signal per earlier deadline
        wake_.notify_one();
    }
}

void LiveTimer::stop()
{
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        stopping_ = true;
    }
    wake_.notify_one();
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) {
        thread_.join();
    }
}

void LiveTimer::run()
{
    ::prctl(PR_SET_TIMERSLACK, kTimerSlackNs, 0, 0, 0);
    std::unique_lock<std::mutex> lock(mutex_);
    while (!stopping_) {
        try {
            loop_.poll();
        } catch (...) {
            // The loop reports its own failures (the controller goes to full
            // width); the timer goes on.
        }
        const std::optional<TimeNs> deadline = loop_.next_deadline();
        sleeping_until_ = deadline.value_or(kNoDeadline);
        if (!deadline) {
            wake_.wait(lock);
            continue;
        }
        const std::chrono::steady_clock::time_point at{std::chrono::nanoseconds(*deadline)};
        wake_.wait_until(lock, at);
    }
}

}  // namespace slim::live

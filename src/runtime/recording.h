/* SPDX-License-Identifier: BSD-3-Clause */
// What a process records for its live link loop: the operation log (one
// ring per UCT interface, one shared), the loop it feeds, and the drain
// thread that replays the log into the loop off the send path.
//
// The send path only writes a ring (no lock, no allocation, no system call,
// no clock read beyond the ring's own tick counter); everything else here
// runs at interface open/close, per progress round, or on the drain thread.
#ifndef SLIM_RUNTIME_RECORDING_H
#define SLIM_RUNTIME_RECORDING_H

#include "configuration.h"
#include "live/live_drain.h"
#include "live/live_loop.h"
#include "live/op_log.h"
#include "slim_core.h"
#include "traffic_monitor.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace slim {

class ServiceAttachment;

static_assert(live::kActivityOpClass == SLIM_OP_COUNT,
              "activity records are named one past the operation classes");

// What one UCT interface records through (slim_core_recorder_open): its own
// counters and ring, written only by that interface's operations, which UCX
// runs one at a time. So recording takes no locked instruction.
struct Recorder {
    TrafficMonitor counts;
    live::SerialOpRing *ring = nullptr;  // null when the live loop did not start
};

// Moves a tally's counters into `counts` (serially written or shared) and
// zeroes them.
void fold_counts(slim_core_tally_t& tally, TrafficMonitor& counts, bool serial) noexcept;

// Where this process's trace goes under UCX_SLIM_TRACE: rank<N>.trace, or
// pid<N>.trace outside a launcher; empty when no trace is asked for.
std::string trace_path(const Config& config);

class Recording {
public:
    // Starts the loop, its log and drain thread, attaching to the node
    // service through `service` first. When the loop cannot start, says why
    // and records nothing (the link stays at full width). Never throws.
    void start(const Config& config, ServiceAttachment& service) noexcept;

    // The live loop: the send path records each operation in
    // a ring (no lock, no system call, no wake); the LiveDrain thread
    // replays the ring into the loop off that path. Safe from any thread,
    // never throws.
    void on_traffic(const live::Traffic& traffic) noexcept;

    // A recorder for one UCT interface, or nullptr when out of memory (the
    // interface then records through on_traffic()). Interface open/close
    // only: these lock.
    Recorder *open_recorder(const slim_core_tally_t *tally = nullptr) noexcept;
    void close_recorder(Recorder *recorder) noexcept;

    // One interface's tally (slim_core_tally_t: what it did since its last
    // progress round): folds its counts into `recorder`'s, stamps it now
    // and logs it for the live loop, and empties it. `recorder` null: the
    // process's shared counters and log. Called once per progress round
    // that has something to hand over, never per operation.
    void flush(Recorder *recorder, slim_core_tally_t& tally) noexcept;

    // Waits (slim_core_wait_*): the clock they are stamped with, in the
    // ticks of `recorder`'s ring (the steady clock's nanoseconds without
    // one), `ns` in those ticks, a timed wait's begin and then its end
    // handed to the live loop through that ring. Called at the start of
    // progress rounds, never on an operation's path.
    std::uint64_t wait_clock(const Recorder *recorder) const noexcept
    {
        return log_ && recorder != nullptr && recorder->ring != nullptr ? log_->clock().now()
                                                                        : steady_ticks();
    }
    std::uint64_t wait_ticks(const Recorder *recorder, std::uint64_t ns) const noexcept;
    void record_wait_begin(Recorder *recorder, std::uint64_t first) noexcept;
    void record_wait(Recorder *recorder, const slim_core_wait_t& wait) noexcept;
    static std::uint64_t steady_ticks() noexcept;
    // How long after a wait's start the CPU policy's latest plan lowered
    // the cores, in nanoseconds (UINT64_MAX: it did not, or there is no
    // plan): written by the drain thread, read by the waiting rank's idle
    // rounds with a relaxed load (slim_core_wait_low_after).
    const std::uint64_t *wait_low_after_ns() const noexcept { return &wait_low_after_ns_; }

    // Transport progress: drains the ring only when the drain thread could
    // not start (slim_core_poll_wanted, which the transport reads itself).
    void poll() noexcept
    {
        if (slim_core_poll_wanted) {
            poll_slow();
        }
    }

    // slim_region_begin/end: nesting depth kept here; the outermost region
    // drives the live loop. end() without begin() returns false.
    void region_begin(double ratio) noexcept;
    bool region_end() noexcept;

    // Ends the drain thread (at exit, before static objects it may use are
    // destroyed); idempotent.
    void stop() noexcept;

    // Final live totals (the link goes back to full width), naming `service`
    // as the link's owner; none when the loop could not start. Stops the
    // drain first; later calls return the first call's totals.
    std::optional<live::LiveSummary> finish(const ServiceAttachment& service) noexcept;

    // Why the trace could not be created (said at start), if so.
    const std::string& trace_open_error() const noexcept { return trace_open_error_; }

private:
    void start_loop(const Config& config, ServiceAttachment& service);
    void poll_slow() noexcept;
    void push(const live::OpRecord& record) noexcept;
    // UCX_SLIM_INJECT_DELAY: the progress round that hands over the first
    // operations after a drain round really waits the late wake-up waits
    // the loop charged in that round.
    void inject_if_low() noexcept
    {
        if (inject_owed_ns_.load(std::memory_order_relaxed) != 0) {
            inject_now();
        }
    }
    void inject_now() noexcept;

    std::unique_ptr<live::OpLog> log_;
    predict::TimeNs replay_now_ = 0;  // the loop's clock (LiveDrain)
    std::unique_ptr<live::LiveLoop> live_;
    std::unique_ptr<live::LiveDrain> drain_;  // after live_: stops first
    std::string trace_open_error_;
    bool cpu_        = false;  // UCX_SLIM_CPU=on: the summary shows the waits
    bool wait_yield_ = false;
    // UCX_SLIM_INJECT_DELAY: the waits the drain's rounds charged and no
    // operation has waited out yet (ns).
    std::atomic<predict::TimeNs> inject_owed_ns_{0};
    // Accessed only with __atomic builtins: the C module reads it too.
    alignas(64) std::uint64_t wait_low_after_ns_ = UINT64_MAX;
    std::mutex region_mutex_;
    int region_depth_ = 0;  // under region_mutex_
    std::mutex finish_mutex_;
    std::optional<live::LiveSummary> final_live_;  // under finish_mutex_
};

}  // namespace slim

#endif

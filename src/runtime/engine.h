/* SPDX-License-Identifier: BSD-3-Clause */
// The per-process Engine: created by the first slim_core_init(), owns the
// configuration and the logger level, and writes the exit report. Later
// releases add the event stream, predictor and link controller here.
#ifndef SLIM_RUNTIME_ENGINE_H
#define SLIM_RUNTIME_ENGINE_H

#include "configuration.h"
#include "link/service_client.h"
#include "live/live_loop.h"
#include "live/live_drain.h"
#include "live/op_log.h"
#include "traffic_monitor.h"
#include "pack/region_registry.h"
#include "slim_core.h"
#include "slimlink.h"

#include <atomic>
#include <memory>
#include <mutex>

namespace slim {

static_assert(live::kActivityOpClass == SLIM_OP_COUNT,
              "activity records are named one past the operation classes");

// What one UCT interface records through (slim_core_recorder_open): its own
// counters and ring, written only by that interface's operations, which UCX
// runs one at a time. So recording takes no locked instruction.
struct Recorder {
    TrafficMonitor      counts;
    live::SerialOpRing *ring = nullptr;  // null when the live loop did not start
};

// Moves a tally's counters into `counts` (serially written or shared) and
// zeroes them.
void fold_counts(slim_core_tally_t &tally, TrafficMonitor &counts, bool serial) noexcept;

class Engine {
public:
    // Builds the Engine once (std::call_once) from the process environment;
    // every call returns the first call's status. A bad configuration is
    // logged once and yields SLIM_ERR_CONFIG from then on.
    static slim_status_t init() noexcept;

    // The Engine, or nullptr when init() has not succeeded.
    static Engine *get() noexcept;

    explicit Engine(Config config);

    const Config &config() const noexcept { return config_; }
    const precision::PrecisionRules &policy() const noexcept { return config_.policy; }

    // Buffers marked through slim_mark*(); the send path reads it lock-free.
    pack::RegionRegistry       &regions() noexcept { return regions_; }
    const pack::RegionRegistry &regions() const noexcept { return regions_; }

    // True while anything is marked in this process: otherwise the send
    // path skips the registry with one relaxed load.
    bool any_marked() const noexcept { return regions_.size() != 0; }

    // The live loop (issues 6, 11): the send path records each operation in
    // a ring (no lock, no system call, no wake); the LiveDrain thread
    // replays the ring into the loop off that path. Safe from any thread,
    // never throws.
    void on_traffic(const live::Traffic &traffic) noexcept;

    // A recorder for one UCT interface, or nullptr when out of memory (the
    // interface then records through on_traffic()). Interface open/close
    // only: these lock.
    Recorder *open_recorder(const slim_core_tally_t *tally = nullptr) noexcept;
    void      close_recorder(Recorder *recorder) noexcept;

    // One interface's tally (slim_core_tally_t: what it did since its last
    // progress round): folds its counts into `recorder`'s, stamps it now
    // and logs it for the live loop, and empties it. `recorder` null: the
    // process's shared counters and log. Called once per progress round
    // that has something to hand over, never per operation.
    void flush(Recorder *recorder, slim_core_tally_t &tally) noexcept;
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

    // Ends the live loop's drain thread (at exit, before static objects it
    // may use are destroyed); idempotent.
    void stop_timer() noexcept;

    // Final live totals (the link goes back to full width); none when the
    // live loop could not start. Stops the timer first.
    std::optional<live::LiveSummary> finish_live() noexcept;

    // Writes the report the configuration asks for; only the first call in
    // the process writes. I/O errors are logged, never thrown. A rank's
    // text report on stdout waits for report_node(): the node report may
    // show it instead.
    void report() noexcept;

    // At exit, after report(): hands this rank's record to the node service,
    // and writes the job's node report when the service names this rank its
    // reporter; then leaves the service. Never throws.
    void report_node() noexcept;

private:
    Config               config_;
    pack::RegionRegistry regions_;
    std::atomic<bool>    reported_{false};
    std::string          trace_open_error_;   // why the trace was not created, if so

    void start_live() noexcept;
    // Attaches to the node's slimlinkd (UCX_SLIM_SERVICE) and points the
    // loop's backend at it; otherwise says why the process keeps its own
    // emulated link. Throws only bad_alloc.
    void attach_service(live::LiveConfig &lc);
    void poll_slow() noexcept;
    void push(const live::OpRecord &record) noexcept;
    // UCX_SLIM_INJECT_DELAY: the progress round that hands over the first
    // operations after the link went low really waits the reactivation
    // time, once per low-power period.
    void inject_if_low() noexcept
    {
        if (inject_pending_.load(std::memory_order_relaxed)) {
            inject_now();
        }
    }
    void inject_now() noexcept;

    std::unique_ptr<live::OpLog>     log_;
    predict::TimeNs                  replay_now_ = 0;  // the loop's clock (LiveDrain)
    std::unique_ptr<live::LiveLoop>  live_;
    std::unique_ptr<live::LiveDrain> drain_;   // after live_: stops first
    // UCX_SLIM_INJECT_DELAY: set by the drain when it lowered the link; the
    // next operation then really waits the reactivation time (once).
    std::atomic<bool>                inject_pending_{false};
    std::mutex                       region_mutex_;
    int                              region_depth_ = 0;   // under region_mutex_
    std::mutex                       finish_mutex_;
    std::optional<live::LiveSummary> final_live_;         // under finish_mutex_
    // The node service driving the port (null: in-process emulated link),
    // and what the reports say about who drove it.
    std::shared_ptr<link::ServiceClient> service_;
    std::string                      link_owner_detail_;
    // What report() left for report_node().
    std::optional<std::vector<std::uint8_t>> pending_record_;
    std::string                      pending_text_;       // stdout: the rank's block
};

} // namespace slim

#endif

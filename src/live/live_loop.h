/* SPDX-License-Identifier: BSD-3-Clause */
// The live loop (ARCHITECTURE.md §3–4): traffic that `slim` sees
// becomes events for the predictor, whose low-power requests drive the link
// Controller and its backend (emulated by default); every operation wakes
// the link first. Optionally every event is written to a trace that
// slim-replay reads, so a live run can be replayed under every policy.
//
// Bursts: operations closer than `burst_gap_ns` form one event. Below MPI
// nobody says when a call ends, so an event ends when the loop notices the
// gap (poll() from the LiveDrain thread at the gap's replayed time, or the
// next operation); that
// moment is the event's end, in the trace too, so the trace replays what the
// live controller really did. Event identity: a stable hash of what the
// burst's first send shows on the wire — operation class, AM id, size class
// (log2), peer — so repeated MPI calls give repeated ids; of its first
// receive when it sent nothing. Sends come in program order; receives come
// when peers send, and with more ranks than cores which of two neighbours'
// halos arrives first is chance, so a receive naming the burst would make
// the same MPI call look like different events.
//
// Not thread-safe: the LiveDrain serialises calls.
#pragma once

#include "link/controller.h"
#include "live/live_cpu.h"
#include "live/op_ring.h"
#include "predict/gap_policy.h"
#include "predict/policy_registry.h"
#include "trace/trace.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

namespace slim::live {

using predict::TimeNs;

// The default burst gap (LiveConfig::burst_gap_ns says why 20 us).
inline constexpr TimeNs kDefaultBurstGapNs = 20'000;

struct LiveConfig {
    // What decides the width (UCX_SLIM_PREDICTOR; the registry's live
    // policies): its predictors are bound to backend.link.
    link::PolicySpec policy = link::default_live_policy();
    link::BackendConfig backend;  // link, clock, ...
    std::string backend_name = "emulated";
    // Builds the backend instead of backend_name (the node service's
    // client); it must read `backend.clock`.
    std::function<std::unique_ptr<link::LinkBackend>(const link::BackendConfig&)> backend_factory;
    // Operations closer than this form one burst (event). 2 tau: an idle
    // interval shorter than a transition down and back up saves nothing
    // under any policy, and a gap this wide keeps an MPI call's protocol
    // round trips (rendezvous request, ack, fragments: 4-32 us over tcp)
    // inside one event instead of splitting it into several.
    TimeNs burst_gap_ns = kDefaultBurstGapNs;
    // Dense traffic widens the gap (see LiveLoop::adapt_burst_gap): while
    // events start on average less than `dense_interval_ns` apart, the gap
    // doubles, up to `max_burst_gap_ns`; it halves back once they are
    // `sparse_interval_ns` apart. Equal to burst_gap_ns: never widened.
    // 100 us: a 1 MiB rendezvous stream over tcp loopback makes an event
    // every 72 us, and at 50 us its events cost the drain 8-13 % of the
    // bandwidth; the mini-apps' events are rarely that dense (under 1 % of
    // the checks on their traces) except in MPI_Init's wire-up, so a gap
    // widened there must narrow back at their usual 150-500 us.
    TimeNs dense_interval_ns  = 100'000;
    TimeNs sparse_interval_ns = 200'000;
    TimeNs max_burst_gap_ns   = 320'000;
    // Events before the gap may first widen: MPI_Init's wire-up comes dense
    // (events 20-90 us apart), and merging those cost a 100-event run 5-10
    // points of the oracle's savings; a stream worth widening for lasts far
    // longer.
    std::uint64_t dense_settle_events = 64;
    // An operation in flight holds its burst open at most this long after
    // the burst's last operation (kInFlightHoldNs says why).
    TimeNs in_flight_hold_ns = kInFlightHoldNs;
    std::string trace_path;  // empty: no trace
    // Thesis §4.5.2: a burst that carries packed data and finds the link in
    // low power wakes it only to
    // max(1, ceil(L * wire/original)) lanes; the ratio is the one the same
    // event id had last time (or its first operation's, the first time).
    bool compression_aware = true;
    // Whether the traffic really waits for late wake-ups
    // (UCX_SLIM_INJECT_DELAY): the recorded times then hold the waits. If
    // not, the emulated port woke while the traffic went on, and the energy
    // of each wait (the link rising, at the width it rises to) is charged
    // on top, as slim-replay charges it when it delays the traffic.
    bool waits_in_recorded_time = false;
    // The CPU side (live_cpu.h): waits planned and the node service asked
    // for the rank's cores low while they last.
    LiveCpuConfig cpu;
};

// What one operation shows on the wire.
struct Traffic {
    int op_class             = 0;  // slim_op_t
    unsigned am_id           = 0;
    std::uint64_t wire_bytes = 0;     // bytes that crossed the link
    std::uint64_t orig_bytes = 0;     // before packing (== wire when not packed)
    std::uintptr_t peer      = 0;     // identifies the endpoint
    bool send                = true;  // false: received
};

// What the drain thread did (LiveDrain::stats()).
struct DrainCounters {
    std::uint64_t wakeups = 0;  // thread rounds
    std::uint64_t records = 0;  // operations replayed (coalesced ones included)
    // Records that reached the drain after it had replayed past their time
    // (their producer was descheduled between stamping and logging longer
    // than the horizon margin): the loop took them at a later time than
    // they carry, so its link can differ from a replay of the trace.
    std::uint64_t late = 0;
};

struct LiveSummary {
    std::string predictor;  // the policy's registry name (link::live_policy_names)
    std::string backend;
    // Who drove the port, filled by the runtime: "slimlinkd"
    // (the node service: the shared port's energy is in the node report,
    // and the energy and late wake-ups below are this rank's demand alone,
    // on a port of its own; link/tee_backend.h) or "in-process" (this
    // process's own emulated link), with the socket or the reason.
    std::string link_owner = "in-process";
    std::string link_owner_detail;
    // The port modelled, as UCX_SLIM_LINK_PROFILE takes it (link_spec()).
    std::string link_profile;
    std::uint64_t events   = 0;
    TimeNs span_ns         = 0;                // first event start to last end
    double energy_joules   = 0.0;              // over the span
    double baseline_joules = 0.0;              // always on over the span
    std::optional<double> energy_savings_pct;  // none: no span, or the backend
                                               // does not account energy
    std::optional<double> time_penalty_pct;    // late wake-up waits / span
    std::optional<double> max_slowdown_pct;    // adaptive: the bound it holds, else none
    std::uint64_t late_wakeups = 0;
    TimeNs wakeup_delay_ns     = 0;
    std::uint64_t transitions  = 0;
    std::uint64_t hits         = 0;  // predictor
    std::uint64_t predictions  = 0;
    std::uint64_t restarts     = 0;
    std::optional<TimeNs> gt_ns;
    std::string policy_in_force;        // adaptive: the candidate followed at the end
    std::uint64_t policy_switches = 0;  // adaptive: how often it changed
    TimeNs burst_gap_ns           = 0;  // the gap in use at the end
    TimeNs widest_burst_gap_ns    = 0;  // the widest dense traffic needed
    bool controller_failed        = false;
    std::string controller_error;
    unsigned lanes = 0;
    std::array<TimeNs, link::kMaxLanes + 1> time_at_width_ns{};
    std::string trace_path;  // written trace, if any
    std::uint64_t trace_events = 0;
    std::string trace_error;  // why the trace stopped, if it did
    // The send path's record log and its drain.
    DrainCounters drain;
    std::uint64_t ops_dropped = 0;  // records lost to a full ring
    std::uint64_t ops_logged  = 0;  // records written (runs, first sends, regions)
    // The CPU side (UCX_SLIM_CPU=on, filled by the runtime): the rank's
    // waits, their total time, and of it the time blocked instead of
    // spinning (UCX_SLIM_WAIT=yield) and how many blocks that took.
    bool cpu                  = false;
    std::string wait_mode     = "spin";
    std::uint64_t waits       = 0;
    TimeNs wait_ns            = 0;
    TimeNs wait_blocked_ns    = 0;
    std::uint64_t wait_blocks = 0;
    // What the live CPU side planned, asked and modelled (LiveConfig::cpu
    // enabled), over the span of the rank's events and waits.
    std::optional<LiveCpuSummary> cpu_live;
};

class LiveLoop {
public:
    // Throws slim::Error for a predictor configuration it refuses.
    explicit LiveLoop(LiveConfig config);
    ~LiveLoop();
    LiveLoop(const LiveLoop&)            = delete;
    LiveLoop& operator=(const LiveLoop&) = delete;

    // An operation now: wakes the link, extends or starts a burst.
    void on_traffic(const Traffic& traffic);
    // Operations that ran from now through `end` with no gap longer than
    // the burst gap, `orig` and `wire` bytes in all, and none of which names
    // a burst (OpLog's continuation): the open burst takes their bytes and
    // lasts through `end`. With no burst open (its operations came later
    // than the drain could wait) they start one, named like an unknown
    // operation. `splits`: gaps among them longer than the configured
    // burst gap, which the producer's widened coalescing hid. `began` of
    // them went in flight and `ended` earlier ones completed: while any is
    // in flight its data is on the wire, and the burst does not end.
    void continue_burst(TimeNs end, std::uint64_t orig, std::uint64_t wire, std::uint64_t splits,
                        std::uint64_t began = 0, std::uint64_t ended = 0);
    // Zero-copy operations in flight now (continue_burst).
    std::uint64_t in_flight() const noexcept { return in_flight_; }
    // Closes the current burst when its gap has passed (cheap when none is
    // open). Called by LiveDrain at each deadline it replays.
    void poll();
    bool burst_open() const { return open_.has_value(); }
    // Every decision up to `through` is made (the drain finished a round):
    // tells the backend (Controller::sync).
    void sync(TimeNs through) { controller_->sync(through); }
    // The link is below its full width (a low-power request holds it).
    bool link_low() const { return controller_->width() < controller_->full_width(); }
    // The late wake-up waits charged so far (the report's wakeup_delay_ns).
    TimeNs wakeup_delay_ns() const noexcept { return wakeup_delay_ns_; }
    // The burst gap in use now (widened while traffic is dense).
    TimeNs burst_gap_ns() const noexcept { return burst_gap_ns_; }

    // The next time poll() has work to do at the latest: the open burst's
    // gap, the low-power request's expiry (a real port must be woken then),
    // the timeout policy's firing time. None when only traffic can change
    // anything. LiveDrain replays poll() at these times.
    std::optional<TimeNs> next_deadline() const;
    // The CPU plan's next time when its requests reach a node service: the
    // drain wakes for it, whatever port it drives.
    std::optional<TimeNs> cpu_request_deadline() const
    {
        return cpu_ && config_.cpu.request ? cpu_->deadline() : std::nullopt;
    }
    // The rank's cores are asked low now: the drain comes back soon, so
    // that the raise at the wait's end reaches the service in time.
    bool cpu_asked_low() const { return cpu_ && config_.cpu.request && cpu_->low(); }

    // Regions (thesis §4.5.2, slim_region_begin/end): the link is raised now
    // to the width a region sending at `ratio` of its original bytes needs
    // (1.0: full width) and held there until region_end(), after which it
    // may drop again. Only the outermost region acts; the caller checks
    // nesting and balance.
    void region_begin(double ratio);
    void region_end();

    // A wait of the rank (OpKind::wait_begin, wait_end): begun at `start`
    // (the module's first timed round, while the wait lasts), reaching
    // `ahead_ns` before it (the rounds that made it long enough to time,
    // known at its end), through `end`, `blocked_ns` of it blocked in
    // `blocks` blocks. Counted for the summary and written to the trace as
    // a "w" line; a wait that would begin before the previous one ended,
    // or before the latest operation at its begin, starts there. With
    // LiveConfig::cpu enabled, the begin plans the wait from what came
    // before it (poll() follows the plan at next_deadline()) and the end
    // raises the cores if they went low and accounts the wait.
    void wait_begin(TimeNs start);
    void wait_end(TimeNs end, TimeNs blocked_ns, std::uint64_t blocks, TimeNs ahead_ns = 0);

    // Closes the open burst and returns the totals so far. The link goes
    // back to full width for good when `final` is set.
    LiveSummary summary(bool final);

    // Writes the trace's buffered lines to its file, when there are any.
    // The buffer is written only when full (8 KiB) or at exit otherwise,
    // and a process killed by a signal never exits: LiveDrain calls this
    // every DrainOptions::trace_flush_ns, so such a trace lacks at most
    // that much of the run's end.
    void flush_trace();

    // Why the trace could not be created or stopped; empty while it is fine.
    const std::string& trace_error() const { return trace_error_; }

private:
    struct OpenBurst {
        predict::Event event;                     // id: the first operation's
        std::optional<predict::EventId> send_id;  // the first send's
        std::uint64_t split_gaps = 0;             // gaps the configured burst gap splits at
    };

    void close_burst(TimeNs now);
    // Follows the event rate with the burst gap. Every event
    // costs the drain a few hundred ns of shadow replays under the
    // adaptive policy (about a microsecond with its first twenty
    // candidates), taken from a core the application polls on; a
    // streaming phase (rendezvous puts waiting for their requests or for
    // the socket) makes one every 30-80 us, and its 20-50 us gaps save
    // little under any policy. On a core a rank busy-polls on, that work
    // cost several times its own CPU time in bandwidth (1.7 % of a core,
    // 8-13 % of 1 MiB bandwidth). So where events come denser than
    // config_.dense_interval_ns the gap widens and they merge. Not in a
    // run that packs: a packed burst wakes a low link to the lanes its
    // event id needed last time, and bursts merged by a wider gap differ
    // from one time to the next (its trace no longer replayed to what the
    // loop did: 2 points apart on CG at 4 ranks).
    // `split_gaps`: gaps inside the burst that started at `start` that the
    // configured gap would have split it at.
    void adapt_burst_gap(TimeNs start, std::uint64_t split_gaps);
    // Adds an operation at `t` to the open burst.
    void extend_burst(const Traffic& traffic, TimeNs t);
    // The idle timeout the policy asked for after the last event (the
    // timeout policy's, or the adaptive policy's when it follows a
    // timeout); none before the first event.
    std::optional<TimeNs> active_timeout() const
    {
        if (events_ == 0) return std::nullopt;
        return idle_timeout_;
    }
    TimeNs now();
    // How long after its last operation the open burst ends: the burst
    // gap, or the in-flight hold while operations are in flight.
    TimeNs open_gap_ns() const
    {
        return in_flight_ > 0 ? std::max(burst_gap_ns_, config_.in_flight_hold_ns) : burst_gap_ns_;
    }
    bool burst_gap_passed(TimeNs t) const { return t - last_op_ns_ > open_gap_ns(); }

    LiveConfig config_;
    link::Clock clock_;
    std::unique_ptr<link::Controller> controller_;
    // Held by value: close_burst() calls it with no indirection.
    link::GapPolicy policy_;
    std::optional<TimeNs> idle_timeout_;
    std::unique_ptr<predict::TraceWriter> trace_;
    std::string trace_error_;
    std::optional<OpenBurst> open_;
    TimeNs last_op_ns_ = 0;
    // Zero-copy operations issued and not yet completed: the burst stays
    // open while any is (its data is still moving).
    std::uint64_t in_flight_ = 0;
    TimeNs prev_end_ns_      = 0;
    // The burst gap in use, and what adapts it (adapt_burst_gap).
    TimeNs burst_gap_ns_  = 0;
    TimeNs widest_gap_ns_ = 0;
    std::optional<TimeNs> last_start_ns_;
    std::uint64_t last_split_gaps_ = 0;
    TimeNs mean_interval_ns_       = 0;
    std::uint64_t events_          = 0;
    // Energy and delay at the first event's start (the span starts there).
    std::optional<TimeNs> first_start_ns_;
    double energy_at_first_    = 0.0;
    TimeNs last_end_ns_        = 0;
    double energy_at_last_end_ = 0.0;
    link::LinkStats stats_at_last_end_{};
    TimeNs wakeup_delay_ns_ = 0;
    // Each late wake-up's wait at the power of the width the link rose to.
    double wait_joules_         = 0.0;
    std::uint64_t late_wakeups_ = 0;
    bool finished_              = false;
    bool timeout_fired_         = false;
    bool burst_demand_          = false;  // Controller::burst() is live
    bool in_region_             = false;  // a region holds the width
    // Wire/original ratio of each event id's last packed burst (bounded).
    std::unordered_map<predict::EventId, double> last_ratio_;
    std::uint64_t trace_events_ = 0;
    // Waits (wait_begin, wait_end).
    std::unique_ptr<LiveCpu> cpu_;  // LiveConfig::cpu enabled
    // The last closed event and the first wait's start, for the CPU side
    // only (kept while cpu_ is set).
    std::optional<predict::Event> last_event_;
    std::optional<TimeNs> first_wait_start_;
    std::optional<TimeNs> wait_start_;
    TimeNs wait_bound_      = 0;  // no wait starts before: the previous end, the latest operation
    TimeNs last_wait_end_   = 0;
    std::uint64_t waits_    = 0;
    TimeNs wait_ns_         = 0;
    TimeNs wait_blocked_ns_ = 0;
    std::uint64_t wait_blocks_ = 0;
};

// The stable identity of an operation (see the file comment).
predict::EventId event_id(const Traffic& traffic);

}  // namespace slim::live

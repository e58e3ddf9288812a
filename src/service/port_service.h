/* SPDX-License-Identifier: BSD-3-Clause */
// The node service's decisions, without sockets or threads so
// that tests drive it on a manual clock: the port runs at the maximum
// demand over live clients (thesis §4.5.4), full width when none is live;
// it is the only place a backend runs, and its energy is accounted once.
// When the last client has gone the backend is also released
// (LinkBackend::release()): a backend whose full width is a setting of its
// own (ethtool) puts the site's settings back.
//
// Clients' demand records (service_protocol.h) are merged in time order up
// to the *horizon*: the earliest `through_ns` over live clients (a client
// may still publish anything after its own through_ns, nothing before).
// Each change of the maximum goes to the backend with set_width_at(width,
// t), and traffic records go to backend->traffic() at their time, so the
// emulated port's energy, transitions and late wake-ups are what a port
// driven by all clients together would show, however late records arrive.
// The backend reads the service's replay clock (replay_clock()), which
// stands at the record being applied.
//
// The horizon is exclusive: a client may still publish a record at exactly
// its through_ns, so events at the horizon wait for the next advance and
// the order in which records arrive never changes what the port does.
// A client's timeline is also complete up to its last record's time (its
// next record cannot be earlier), so max(through_ns, last record) counts.
//
// A real port cannot act in the past: act_on_deadlines(now) raises it at
// a client's published `until_ns` even while the horizon lags behind.
//
// A stalled client (a suspended job, a rank stopped in a debugger, one that
// attached and never published) must not hold every other job's
// accounting back: the horizon never lags more than kMaxHorizonLag behind
// the latest `now` the service was given. A record older than the point
// the merge has passed is applied there, late, and counted (a real port
// could not have acted in the past either); reports say how many, and how
// many clients fell that far behind.
//
// A report states only what was confirmed: transitions are the width
// changes the backend confirmed (an exec command that exited 0), a failed
// backend is named, and a port whose restore to full width failed (or that
// a previous service left narrow, see use_state_file()) has an unknown
// width in every report until a restore succeeds.
//
// Not thread-safe: the server's loop owns it.
#pragma once

#include "link/backend.h"
#include "link/service_protocol.h"
#include "service/state_file.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace slim::link {

inline constexpr TimeNs kMaxHorizonLag = service::kMaxHorizonLagNs;

struct PortServiceOptions {
    std::string port_name = "emulated";
    // LinkConfig::lane_watts of the port: the always-on baseline of reports.
    double lane_watts = LinkConfig{}.lane_watts;
    // LinkConfig::low_width: the narrowest width a client may ask for (an
    // EEE port's 0, LPI allowed).
    unsigned low_width = LinkConfig{}.low_width;
};

// What a client attaching says about itself (from AttachRequest and the
// socket's credentials).
struct ClientInfo {
    std::int32_t rank       = -1;
    std::int32_t local_rank = -1;
    std::int32_t local_size = 0;
    std::int64_t pid        = 0;
    std::int32_t uid        = -1;
    std::string job_key;
};

// A job's node report, ready for the reporting client (the server turns it
// into a node_report message).
struct JobReport {
    service::PortSection port;
    struct Entry {
        service::NodeReportEntry entry;
        std::vector<std::uint8_t> record;  // opaque, as deposited
    };
    std::vector<Entry> entries;  // local-rank order
    std::uint32_t record_version = 0;
    std::uint64_t job_serial     = 0;  // the job's (job_serial()): its CPU section
};

// Makes the service's backend, given the clock it must read: the replay
// clock exists before the backend, which exists before the service.
//   PortService service([&](Clock clock) {
//       config.clock = std::move(clock);
//       return make_backend_or_emulated(name, config, report);
//   });
using BackendMaker = std::function<std::unique_ptr<LinkBackend>(Clock replay_clock)>;

class PortService {
public:
    // The backend is made by `make_backend` with the replay clock (the way
    // for the emulated port, whose accounting must follow the records).
    // Throws std::invalid_argument when it returns null. Starts it at full
    // width.
    explicit PortService(const BackendMaker& make_backend, PortServiceOptions options = {});
    // A backend that does not read the replay clock (real hardware on its
    // own clock, test doubles). Owned; starts it at full width.
    PortService(std::unique_ptr<LinkBackend> backend, PortServiceOptions options = {});
    ~PortService();  // restores full width
    PortService(const PortService&)            = delete;
    PortService& operator=(const PortService&) = delete;

    // The clock the backend reads (the one given to the BackendMaker): it
    // stands at the instant being applied and never goes back; after
    // act_on_deadlines(now) at `now`. Starts at 0.
    Clock replay_clock();

    // A client joins with demand full width from `now` on. Returns its id,
    // or 0 (with the reason in `why`) when another live client of its job
    // holds the same local rank. A job is its key and its uid together: a
    // client never joins a job of another uid, whatever key it names.
    std::uint32_t attach(const ClientInfo& info, TimeNs now, std::string *why = nullptr);
    // The serial of client `id`'s job (0: unknown client): what the CPU
    // controller counts the client's cores under for the job's report.
    std::uint64_t job_serial(std::uint32_t id) const;

    // Records the client published (copied out of its ring), and its new
    // through_ns. Returns false (and takes nothing) for garbage: a width
    // outside 1..full_width, a time before its previous record or before its
    // through_ns, until_ns set but not after t_ns, through_ns going back.
    // The caller then drops the client (drop()).
    // Also false when the client's records waiting for the horizon would
    // exceed kMaxQueuedRecords (`queue_full` then says so): the caller drops
    // it as well.
    bool publish(std::uint32_t client, const service::DemandRecord *records, std::size_t count,
                 TimeNs through_ns, std::string *why = nullptr, bool *queue_full = nullptr);

    // Records one client may have waiting for the merge horizon. A busy
    // rank publishes a few records per idle interval it forms (a width, a
    // "low until", a traffic mark): about 3,000 a second in the ping-pong
    // tests at 1 ms gaps, and the horizon normally trails by a drain round
    // (up to 16 ms) and the service's 50 ms tick, so a few hundred wait.
    // 65,536 (16 ring-fulls, 2 MiB of queue) is 20 s of such a rank with
    // the horizon held still, and bounds what a flooding client can make
    // the service hold.
    static constexpr std::size_t kMaxQueuedRecords = 1u << 16;
    // Records of the client waiting for the horizon (0: unknown client).
    std::size_t queued(std::uint32_t client) const;

    // The client could not publish (its ring overflowed): full width for it
    // from its last record on, for good. Its later records are checked but
    // not used, and its through_ns no longer holds the horizon back.
    void overflowed(std::uint32_t client);

    // The client is gone (socket closed, detach, garbage) at `now`: its
    // records up to its through_ns still count, then its demand is dropped
    // at max(its through_ns, its last record), never later than `now`.
    // `died`: it closed without depositing (its job's report lists it).
    void drop(std::uint32_t client, TimeNs now, bool died);

    // Applies every record before the horizon and returns the horizon (with
    // no live client: everything pending, and the time of the last event).
    TimeNs advance();

    // Real ports: a client's "low until t" whose t has passed while the
    // horizon lags gets the port raised now. Returns the next deadline
    // (for the loop's timeout); none when nothing is pending.
    // Also polls the backend, and retries a restore to full width that
    // failed (see kRestoreRetryFirstNs).
    std::optional<TimeNs> act_on_deadlines(TimeNs now);

    // A restore to full width that failed is retried while the service
    // runs, not only by the next service: a site command that failed once
    // (a switch CLI busy, a management network down) usually works later,
    // and until then every job on the port is told its width is unknown.
    // The first retry is this long after the failure; each failed retry
    // doubles the wait, up to kRestoreRetryMaxNs, so a backend that stays
    // broken costs one command a minute. Not configurable: a site command
    // that must not run that often can refuse quickly at no cost. Logged
    // when the restore starts failing, when its reason changes and when it
    // succeeds, not at every retry.
    static constexpr TimeNs kRestoreRetryFirstNs = 1'000'000'000;
    static constexpr TimeNs kRestoreRetryMaxNs   = 60'000'000'000;
    // Retries of the failing restore so far (0 once one succeeded).
    std::uint64_t restore_retries() const { return restore_retries_; }

    // Reports. deposit(): the client's rank record; returns true when this
    // client is the job's reporter: the first of its job to deposit, which
    // then waits for the others (see DepositAck). A job's report is
    // ready when every local rank 0..local_size-1 of it has deposited or
    // died, or at `deadline` (wait_ns after the reporter's deposit) with
    // the rest listed as timed out / never started.
    bool deposit(std::uint32_t client, std::uint32_t record_version,
                 std::vector<std::uint8_t> record, TimeNs now, TimeNs wait_ns);
    // Reports ready by `now`: (reporting client id, report). Each is
    // returned once. Calls advance(). The port section covers the job's span
    // from the first record of any of its clients (its first attach when
    // none published) to the latest through_ns / drop of its clients. A
    // complete job's report waits until the horizon has passed that end
    // (at most kMaxHorizonLag); a report due at its deadline before then
    // is cut at the horizon and says so (uncovered_ns). A job whose
    // reporter is gone, or complete without a reporter, is dropped without
    // a report.
    std::vector<std::pair<std::uint32_t, JobReport>> ready_reports(TimeNs now);
    // The earliest report deadline, for the loop's timeout.
    std::optional<TimeNs> next_report_deadline() const;

    // The port's state file (next to the service's socket): written when
    // a real port first leaves full width and when a restore fails, removed
    // once the port is confirmed back at full width at exit. A service
    // killed while the port is narrow leaves it behind; the next service
    // reads it here (call once its folder is checked), restores full width,
    // logs the outcome and, until a restore succeeds, reports the port's
    // width as unknown. Empty: none (tests, the emulated port).
    void use_state_file(const std::string& path);

    // For status replies and tests.
    unsigned width() const { return applied_; }
    bool backend_failed() const { return failed_; }
    bool width_unknown() const { return width_unknown_; }
    // Why (the backend's failure, the restore's), for status and reports.
    std::string problem() const;
    std::uint64_t late_records() const { return late_records_; }
    unsigned full_width() const;
    unsigned demand(std::uint32_t client) const;  // 0: unknown client
    std::size_t live_clients() const;
    // Live clients as a status request lists them. `of_uid`: only that
    // user's (a user asking a system instance sees its own ranks' pids and
    // ranks, never another user's); the others are counted in `others`.
    // None: every client (root, the service's own user).
    std::vector<service::StatusClient> clients(std::optional<std::int32_t> of_uid = std::nullopt,
                                               std::size_t *others                = nullptr) const;
    LinkBackend& backend() { return *backend_; }
    const std::string& port_name() const { return options_.port_name; }
    std::uint64_t backend_errors() const { return backend_errors_; }
    // Late wake-ups the port caused on this client's traffic.
    std::uint64_t late_wakeups(std::uint32_t client) const;

private:
    struct Client;
    struct Job;
    struct Snapshot;
    struct Interval;
    using Key = std::pair<TimeNs, std::uint32_t>;  // next event time, client id

    PortService(std::shared_ptr<TimeNs> replay_now, std::unique_ptr<LinkBackend> backend,
                PortServiceOptions options);
    void start();
    std::optional<TimeNs> horizon() const;
    void see(TimeNs now) { now_ = std::max(now_, now); }
    void note_stalls(std::optional<TimeNs> horizon);
    void apply_until(std::optional<TimeNs> horizon);
    void apply_client_at(Client& client, TimeNs t, TimeNs at,
                         std::vector<std::pair<Client *, unsigned>>& traffic);
    void set_port(unsigned width, TimeNs t);
    void release_if_unused();
    Status command(unsigned width, std::optional<TimeNs> at);
    std::uint64_t confirmed_changes() const;
    void poll_backend();
    void check_restored();
    void write_state(const std::string& text);
    void fail(const Status& status);
    unsigned target() const;
    void recount(Client& client);
    void reschedule(Client& client);
    std::optional<TimeNs> next_event(const Client& client) const;
    Client *find(std::uint32_t client) const;
    Job *job_of(const Client& client) const;
    TimeNs job_end(const Job& job) const;
    void snapshot_job_ends(std::optional<TimeNs> before);
    Snapshot take_snapshot(TimeNs t);
    bool job_complete(const Job& job) const;
    bool job_open(const Job& job) const;
    TimeNs job_start(const Job& job) const;
    JobReport make_report(Job& job);
    void forget_job(const std::string& key);
    void prune_history();

    std::unique_ptr<LinkBackend> backend_;
    PortServiceOptions options_;
    std::shared_ptr<TimeNs> replay_now_;  // read by replay_clock()
    unsigned full_          = 0;
    unsigned applied_       = 0;
    bool has_stats_         = false;  // the backend accounts energy (emulated)
    std::uint64_t commands_ = 0;      // widths sent to the backend
    // Width changes that returned success, for backends that confirm on
    // return (LinkBackend::confirmed() is nullopt).
    std::uint64_t sync_changes_   = 0;
    std::uint64_t backend_errors_ = 0;
    bool failed_                  = false;  // a backend error: the service stops driving the port
    std::string failure_;                   // the first backend error
    // The full-width command after a failure or at start, polled (not
    // waited for) until the backend confirms it or fails.
    bool restore_pending_ = false;
    // No client counts: the backend was told (LinkBackend::release()).
    bool released_      = true;
    bool width_unknown_ = false;
    std::string width_note_;    // why the width is unknown
    std::string state_origin_;  // what the state file of a previous service said
    StateFile state_;
    void restore_failed(const Status& status);
    // The restore is failing (restore_failed()) and not retried yet.
    bool restore_failing_ = false;
    std::string restore_failure_;     // its last reason, logged once
    std::optional<TimeNs> retry_at_;  // the next retry (set by retry_restore)
    TimeNs retry_wait_             = kRestoreRetryFirstNs;
    std::uint64_t restore_retries_ = 0;
    // Retries the restore when due; returns when the next retry is due.
    std::optional<TimeNs> retry_restore(TimeNs now);
    TimeNs now_                 = 0;  // the latest now given to any call
    TimeNs floor_               = 0;  // every event before it has been applied
    std::uint64_t late_records_ = 0;
    std::uint64_t stalls_       = 0;  // clients that fell kMaxHorizonLag behind, ever
    std::uint32_t stalled_now_  = 0;
    void raise_ahead(Client& client, const service::DemandRecord& latest);
    std::map<std::uint32_t, std::unique_ptr<Client>> clients_;
    std::map<std::string, std::unique_ptr<Job>> jobs_;
    std::set<Key> schedule_;                                 // clients with a pending event
    std::array<std::size_t, kMaxLanes + 1> demand_count_{};  // counted clients per width
    std::vector<Interval> history_;  // clients' lifetimes, for reports' other jobs
    std::uint32_t next_id_         = 1;
    std::uint64_t next_job_serial_ = 1;
};

}  // namespace slim::link

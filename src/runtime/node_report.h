/* SPDX-License-Identifier: BSD-3-Clause */
// The per-node report (UCX_SLIM_REPORT, README.md "Reading the report"):
// the ranks of one job on one node hand their finished per-rank numbers to
// the node leader (local rank 0), which prints one table (stdout) or appends
// one "slimlink.node.v1" line (JSON) for the node.
//
// How the numbers travel: a per-user, per-job POSIX shared-memory segment
// ("/slimlink-<uid>-report-<job key>", mode 0600, a robust process-shared
// mutex; the same habits as link/node_arbiter). Every process joins it when
// the Engine starts (inside MPI_Init, before any rank can have finished),
// writing its pid and rank into the slot of its local rank; at report time
// it deposits its RankRecord there. The last local rank to join removes
// the name (the mappings stay valid), so a job whose ranks are killed
// leaves nothing in /dev/shm. At exit the leader waits up to
// UCX_SLIM_REPORT_WAIT until every slot holds a record or belongs to a
// process that is gone, then takes what is there (and removes the name if
// some rank never joined). A rank that never deposits is listed as missing,
// never invented.
//
// Formatting and totals are pure (tests/unit/test_node_report.cpp); the
// exchange is the only part that touches the system. Nothing here may lose
// the per-rank report: every failure is logged and the caller falls back to
// writing the rank's own report as if there were no node report.
#ifndef SLIM_RUNTIME_NODE_REPORT_H
#define SLIM_RUNTIME_NODE_REPORT_H

#include "configuration.h"
#include "link/link_model.h"
#include "live/live_loop.h"
#include "packing_monitor.h"
#include "process_identity.h"
#include "slimlink.h"

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <sys/types.h>

namespace slim {

inline constexpr const char *node_report_schema = "slimlink.node.v1";

class NodeReportError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// What the node table needs of one rank. Plain data: it is copied through
// shared memory between processes of the same build.
struct RankRecord {
    std::int32_t rank       = -1;
    std::int32_t local_rank = -1;
    std::int64_t pid        = 0;

    bool has_link          = false; // the live loop ran (the fields below mean something)
    bool has_savings       = false; // energy_savings_pct is set
    bool has_penalty       = false; // time_penalty_pct is set
    bool has_gt            = false; // gt_ns is set
    bool controller_failed = false;
    std::uint32_t lanes    = 0;
    std::uint64_t events   = 0;
    std::int64_t  span_ns  = 0;
    double        energy_joules      = 0.0;
    double        baseline_joules    = 0.0;
    double        energy_savings_pct = 0.0;
    double        time_penalty_pct   = 0.0;
    std::uint64_t late_wakeups    = 0;
    std::int64_t  wakeup_delay_ns = 0;
    std::uint64_t predictions     = 0;
    std::uint64_t hits            = 0;
    std::uint64_t restarts        = 0;
    std::int64_t  gt_ns           = 0;
    std::int64_t  time_at_width_ns[link::kMaxLanes + 1] = {};

    std::uint64_t bytes_sent    = 0; // on the wire, every operation (traffic totals)
    std::uint64_t payload_bytes = 0; // packing frames: original bytes ...
    std::uint64_t wire_bytes    = 0; // ... and bytes on the wire
    std::uint64_t packed_bytes  = 0;
    std::uint64_t missed_bytes  = 0;
    std::int32_t  error_bound_bits = 0; // ErrorBound::min_bits

    std::uint64_t saved_bytes() const
    {
        return payload_bytes > wire_bytes ? payload_bytes - wire_bytes : 0;
    }
};

static_assert(std::is_trivially_copyable_v<RankRecord>);

RankRecord make_rank_record(const ProcessIdentity &who, const slim_traffic_t &traffic,
                            const slim_packing_stats_t &packing, ErrorBound bound,
                            const live::LiveSummary *live);

// A local rank whose record the leader did not get.
struct MissingRank {
    enum class Reason {
        never_started, // its slot was never joined
        died,          // its process ended without depositing (crash, kill, _exit)
        timed_out,     // still running when UCX_SLIM_REPORT_WAIT ran out
    };
    int    local_rank = -1;
    int    rank       = -1; // -1: unknown (never started)
    long   pid        = 0;  // 0: unknown
    Reason reason     = Reason::never_started;
};

const char *to_string(MissingRank::Reason reason) noexcept;

// What the leader collected, in local rank order.
struct NodeCollection {
    std::vector<RankRecord>  reported;
    std::vector<MissingRank> missing;
};

// Sums over the reported ranks, and the values derived from the sums.
struct NodeTotals {
    std::size_t   ranks_with_link = 0;
    std::uint64_t events          = 0;
    double        energy_joules   = 0.0;
    double        baseline_joules = 0.0;
    std::optional<double> energy_savings_pct;   // 100 * (1 - energy / baseline)
    std::optional<double> time_penalty_pct_max; // over ranks that have one
    std::optional<double> time_penalty_pct_mean;
    std::uint64_t late_wakeups = 0;
    std::int64_t  wakeup_delay_ns = 0;
    std::uint64_t predictions  = 0;
    std::uint64_t hits         = 0;
    std::optional<double> hit_rate_pct;         // 100 * hits / events, as per rank
    std::uint64_t restarts     = 0;
    unsigned      lanes        = 0;             // widest of the ranks
    std::int64_t  time_at_width_ns[link::kMaxLanes + 1] = {};
    std::uint64_t bytes_sent   = 0;
    std::uint64_t packed_bytes = 0;
    std::uint64_t saved_bytes  = 0;
    std::uint64_t missed_bytes = 0;
    ErrorBound    error_bound;                  // the coarsest over ranks
    std::size_t   controllers_failed = 0;
};

NodeTotals node_totals(const std::vector<RankRecord> &ranks);

// The node as the leader describes it.
struct NodeInfo {
    std::string host;
    LocalJob    job;
};

// The table for UCX_SLIM_REPORT=stdout: a header line (host, job, ranks
// reported, missing ranks), one row per reported local rank, a total row,
// then a line with the time penalty (max, mean) and time at width.
std::string format_node_text(const NodeInfo &node, const NodeCollection &collection);

// One "slimlink.node.v1" JSON line (README.md), terminated by '\n'.
std::string format_node_json(const NodeInfo &node, const NodeCollection &collection);

// "/slimlink-<uid>-report-<key>", characters outside [A-Za-z0-9_.-] of the
// key replaced by '_'.
std::string node_segment_name(uid_t uid, const std::string &job_key);

// The shared-memory exchange of one job on one node.
class NodeExchange {
public:
    static constexpr int kMaxLocalRanks = 4096;

    // Opens (or creates) `name` for `local_size` ranks and registers this
    // process (pid, `rank`) in slot `local_rank`; the last of the local_size
    // ranks to join removes the name. A segment left by a dead job with the
    // same key is taken over. Throws NodeReportError: syscall
    // failure, segment of another user or not mode 0600, another layout, or
    // the slot held by another live process.
    static NodeExchange join(const std::string &name, int local_rank, int local_size, int rank,
                             std::chrono::nanoseconds init_wait = std::chrono::seconds(1));

    NodeExchange(NodeExchange &&other) noexcept;
    NodeExchange &operator=(NodeExchange &&other) noexcept;
    NodeExchange(const NodeExchange &)            = delete;
    NodeExchange &operator=(const NodeExchange &) = delete;
    ~NodeExchange(); // unmaps; never unlinks

    // Stores this process's record in its slot (once; later calls replace
    // it). Returns false, storing nothing, in a fork()ed child or when the
    // segment is already closed (the leader gave up waiting). Throws
    // NodeReportError on lock failures.
    bool deposit(const RankRecord &record);

    // True when the leader (slot 0) has joined and its process is alive or
    // has not collected yet: it will show our record.
    bool leader_will_collect();

    // The leader: waits until every slot holds a record or a process that
    // is gone, polling every `poll`, at most `wait`; then takes the records,
    // marks the segment closed and removes its name if still there.
    NodeCollection collect(std::chrono::nanoseconds wait,
                           std::chrono::nanoseconds poll = std::chrono::milliseconds(5));

    const std::string &name() const { return name_; }
    int local_rank() const { return local_rank_; }
    int local_size() const { return local_size_; }

private:
    struct Segment;
    class Lock;

    NodeExchange() = default;
    void unmap() noexcept;
    bool owns_slot() const;

    Segment    *seg_ = nullptr;
    std::size_t bytes_ = 0;
    std::string name_;
    int         local_rank_ = -1;
    int         local_size_ = 0;
    pid_t       pid_ = 0;   // at join: a fork()ed copy owns nothing
};

// ---- the process's node report, used by the Engine ------------------------

// Joins the node segment when `who` knows its local rank and `report` is not
// none. Failures are logged (warn) and disable the node report.
void node_report_join(const ProcessIdentity &who, const ReportTarget &report) noexcept;

// Removes this user's hydra node-report segments in `dir` (/dev/shm) whose
// job's hydra_pmi_proxy is gone (its pid and start time are in the name):
// left by a job one of whose ranks never started. Returns how many.
std::size_t remove_stale_hydra_segments(uid_t uid, const std::string &dir);

// Deposits this rank's record. True when the node leader will show it, so
// that a stdout rank other than the leader may print nothing itself.
bool node_report_deposit(const RankRecord &record) noexcept;

// At exit, in the leader only: collects the node's records (waiting up to
// `wait`) and writes the node table or JSON line to `report`.
void node_report_finish(const ReportTarget &report, const ProcessIdentity &who,
                        std::chrono::nanoseconds wait) noexcept;

} // namespace slim

#endif

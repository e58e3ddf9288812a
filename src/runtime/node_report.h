/* SPDX-License-Identifier: BSD-3-Clause */
// The per-node report (UCX_SLIM_REPORT, slimlink(7) "Node report"):
// one table (stdout) or one "slimlink.node.v1" line (JSON) per job and node,
// with a row per local rank and the port's own numbers.
//
// How the numbers travel: through the node service that drove the port
// (slimlinkd, src/link/service_protocol.h). At exit each rank deposits its
// RankRecord there; the service names one rank of the job the reporter and
// hands it every local rank's record, the ranks that died or never came,
// and the port's energy over the job, accounted once. A rank that never
// deposits is listed as missing, never invented. Without a service there is
// no node report: each rank writes its own.
//
// Formatting and totals are pure (tests/unit/test_node_report.cpp).
#ifndef SLIM_RUNTIME_NODE_REPORT_H
#define SLIM_RUNTIME_NODE_REPORT_H

#include "configuration.h"
#include "predict/link_model.h"
#include "link/service_client.h"
#include "link/service_protocol.h"
#include "live/live_loop.h"
#include "packing_monitor.h"
#include "process_identity.h"
#include "slimlink.h"

#include <optional>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace slim {

inline constexpr const char *node_report_schema = "slimlink.node.v1";

// What the node table needs of one rank. Plain data: it travels through the
// node service as opaque bytes (rank_record_version) between processes of
// the same build.
struct RankRecord {
    std::int32_t rank       = -1;
    std::int32_t local_rank = -1;
    std::int64_t pid        = 0;

    bool has_link                = false;  // the live loop ran (the fields below mean something)
    bool has_savings             = false;  // energy_savings_pct is set
    bool has_penalty             = false;  // time_penalty_pct is set
    bool has_gt                  = false;  // gt_ns is set
    bool controller_failed       = false;
    std::uint32_t lanes          = 0;
    std::uint64_t events         = 0;
    std::int64_t span_ns         = 0;
    double energy_joules         = 0.0;
    double baseline_joules       = 0.0;
    double energy_savings_pct    = 0.0;
    double time_penalty_pct      = 0.0;
    std::uint64_t late_wakeups   = 0;
    std::int64_t wakeup_delay_ns = 0;
    std::uint64_t predictions    = 0;
    std::uint64_t hits           = 0;
    std::uint64_t restarts       = 0;
    std::int64_t gt_ns           = 0;
    std::int64_t time_at_width_ns[link::kMaxLanes + 1] = {};

    std::uint64_t bytes_sent      = 0;  // on the wire, every operation (traffic totals)
    std::uint64_t payload_bytes   = 0;  // packing frames: original bytes ...
    std::uint64_t wire_bytes      = 0;  // ... and bytes on the wire
    std::uint64_t packed_bytes    = 0;
    std::uint64_t missed_bytes    = 0;
    std::int32_t error_bound_bits = 0;  // ErrorBound::min_bits

    std::uint64_t saved_bytes() const
    {
        return payload_bytes > wire_bytes ? payload_bytes - wire_bytes : 0;
    }

    // The CPU side (UCX_SLIM_CPU=on): the rank's waits, and what its live
    // loop planned and modelled for them on the emulated core (the rank
    // report's cpu and cpu.live).
    struct Cpu {
        bool has_waits                = false;  // the rank counted its waits
        bool has_live                 = false;  // the live loop planned them (fields below)
        bool requests_enabled         = false;  // a service took the requests
        std::uint64_t waits           = 0;
        std::int64_t wait_ns          = 0;
        std::int64_t blocked_ns       = 0;  // yielded instead of spinning
        std::uint64_t blocks          = 0;
        std::uint64_t waits_lowered   = 0;
        std::int64_t low_ns           = 0;
        std::uint64_t transitions     = 0;
        std::uint64_t late_wakes      = 0;
        std::int64_t penalty_ns       = 0;
        std::int64_t span_ns          = 0;
        double baseline_joules        = 0.0;  // always at full over the span
        double energy_joules          = 0.0;
        double saved_joules           = 0.0;
        double oracle_saved_joules    = 0.0;
        std::uint64_t requests_low    = 0;
        std::uint64_t requests_full   = 0;
        std::uint64_t requests_unsent = 0;
    } cpu;
};

static_assert(std::is_trivially_copyable_v<RankRecord>);

RankRecord make_rank_record(const ProcessIdentity& who, const slim_traffic_t& traffic,
                            const slim_packing_stats_t& packing, ErrorBound bound,
                            const live::LiveSummary *live);

// A local rank whose record the leader did not get.
struct MissingRank {
    enum class Reason {
        never_started,  // its slot was never joined
        died,           // its process ended without depositing (crash, kill, _exit)
        timed_out,      // still running when UCX_SLIM_REPORT_WAIT ran out
    };
    int local_rank = -1;
    int rank       = -1;  // -1: unknown (never started)
    long pid       = 0;   // 0: unknown
    Reason reason  = Reason::never_started;
};

const char *to_string(MissingRank::Reason reason) noexcept;

// What the reporter got, in local rank order, and the port the node
// service drove over the job's span (none: no service drove it).
struct NodeCollection {
    std::vector<RankRecord> reported;
    std::vector<MissingRank> missing;
    std::optional<link::service::PortSection> port;
    // The port's profile as the service gave it (link_spec()); empty when
    // unknown (an older service, or no service).
    std::string link_profile;
    // The cores as the service's CPU controller drove them over the job
    // (none: it did not run); the cores listed (all, or as many as the
    // service's message held: the sums in `cpu` cover every core).
    std::optional<link::service::CpuSection> cpu;
    std::vector<link::service::CpuSectionCore> cpu_cores;
};

// Sums over the reported ranks, and the values derived from the sums.
struct NodeTotals {
    std::size_t ranks_with_link = 0;
    std::uint64_t events        = 0;
    double energy_joules        = 0.0;
    double baseline_joules      = 0.0;
    std::optional<double> energy_savings_pct;    // 100 * (1 - energy / baseline)
    std::optional<double> time_penalty_pct_max;  // over ranks that have one
    std::optional<double> time_penalty_pct_mean;
    std::uint64_t late_wakeups   = 0;
    std::int64_t wakeup_delay_ns = 0;
    std::uint64_t predictions    = 0;
    std::uint64_t hits           = 0;
    std::optional<double> hit_rate_pct;  // 100 * hits / events, as per rank
    std::uint64_t restarts                             = 0;
    unsigned lanes                                     = 0;  // widest of the ranks
    std::int64_t time_at_width_ns[link::kMaxLanes + 1] = {};
    std::uint64_t bytes_sent                           = 0;
    std::uint64_t packed_bytes                         = 0;
    std::uint64_t saved_bytes                          = 0;
    std::uint64_t missed_bytes                         = 0;
    ErrorBound error_bound;  // the coarsest over ranks
    std::size_t controllers_failed = 0;
};

// The CPU side summed over the ranks that have one (RankRecord::Cpu);
// percentages from the sums, so a rank that ran longer weighs more.
struct NodeCpuTotals {
    std::size_t ranks            = 0;  // with waits counted
    std::size_t live_ranks       = 0;  // of them, with live plans
    std::size_t requesting_ranks = 0;  // of those, whose requests a service took
    RankRecord::Cpu sum;
    std::optional<double> saved_pct;      // 100 saved / baseline
    std::optional<double> penalty_pct;    // 100 penalty / summed spans
    std::optional<double> of_oracle_pct;  // 100 saved / the oracle's saved
};

// None when no rank reported a CPU side.
std::optional<NodeCpuTotals> node_cpu_totals(const std::vector<RankRecord>& ranks);

// With `port`, the energy, time at width, transitions and late wake-ups
// are the port's (accounted once by the service), not sums over ranks.
NodeTotals node_totals(const std::vector<RankRecord>& ranks,
                       const std::optional<link::service::PortSection>& port = std::nullopt);

// The node as the leader describes it.
struct NodeInfo {
    std::string host;
    LocalJob job;
};

// The table for UCX_SLIM_REPORT=stdout: a header line (host, job, ranks
// reported, missing ranks), one row per reported local rank, a total row,
// then a line with the time penalty (max, mean) and time at width; when
// ranks had a CPU side, its sums over them (node_cpu_totals) in a line or
// two; with a CPU section, its sums in a line and a row per core.
std::string format_node_text(const NodeInfo& node, const NodeCollection& collection);

// One "slimlink.node.v1" JSON line (slimlink(7)), terminated by '\n'.
std::string format_node_json(const NodeInfo& node, const NodeCollection& collection);

// ---- the node report through the node service ------------------------------
//
// At exit every rank hands its RankRecord to the node's slimlinkd (opaque
// bytes, rank_record_version); the rank the service names the job's
// reporter gets every local rank's record back, with the port's numbers
// over the job's span, and writes the node report.

// Bump on any change of RankRecord: a job mixing builds lists the other
// build's ranks as missing instead of misreading them.
inline constexpr std::uint32_t rank_record_version = 3;

// The records and port section the service returned, as a collection:
// records of another size or version are listed as missing; each rank's
// late wake-ups and time penalty are the shared port's on its traffic.
NodeCollection collection_from_service(const link::ReceivedReport& received);

// Writes the node table (stdout) or the "slimlink.node.v1" line (JSON).
// Errors are logged, never thrown.
void write_node_report(const ReportTarget& report, const ProcessIdentity& who,
                       const NodeCollection& collection) noexcept;

}  // namespace slim

#endif

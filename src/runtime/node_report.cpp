// SPDX-License-Identifier: BSD-3-Clause
#include "node_report.h"

#include "base/error.h"
#include "base/log.h"
#include "base/no_destructor.h"
#include "report.h"
#include "report_json.h"
#include "traffic_monitor.h"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <utility>


namespace slim {

// ---- records and totals -----------------------------------------------------

RankRecord make_rank_record(const ProcessIdentity& who, const slim_traffic_t& traffic,
                            const slim_packing_stats_t& packing, ErrorBound bound,
                            const live::LiveSummary *live)
{
    RankRecord r;
    r.rank             = who.rank;
    r.local_rank       = who.local.local_rank;
    r.pid              = who.pid;
    r.bytes_sent       = total(traffic, SLIM_DIR_SEND).bytes;
    r.payload_bytes    = packing.payload_bytes;
    r.wire_bytes       = packing.wire_bytes;
    r.packed_bytes     = packing.packed_bytes;
    r.missed_bytes     = packing.missed_bytes;
    r.error_bound_bits = bound.min_bits;
    if (live == nullptr) {
        return r;
    }
    r.has_link           = true;
    r.has_savings        = live->energy_savings_pct.has_value();
    r.has_penalty        = live->time_penalty_pct.has_value();
    r.has_gt             = live->gt_ns.has_value();
    r.controller_failed  = live->controller_failed;
    r.lanes              = std::min<unsigned>(live->lanes, link::kMaxLanes);
    r.events             = live->events;
    r.span_ns            = live->span_ns;
    r.energy_joules      = live->energy_joules;
    r.baseline_joules    = live->baseline_joules;
    r.energy_savings_pct = live->energy_savings_pct.value_or(0.0);
    r.time_penalty_pct   = live->time_penalty_pct.value_or(0.0);
    r.late_wakeups       = live->late_wakeups;
    r.wakeup_delay_ns    = live->wakeup_delay_ns;
    r.predictions        = live->predictions;
    r.hits               = live->hits;
    r.restarts           = live->restarts;
    r.gt_ns              = live->gt_ns.value_or(0);
    for (std::size_t w = 0; w < live->time_at_width_ns.size() && w <= link::kMaxLanes; ++w) {
        r.time_at_width_ns[w] = live->time_at_width_ns[w];
    }
    if (!live->cpu) {
        return r;
    }
    RankRecord::Cpu& c = r.cpu;
    c.has_waits        = true;
    c.waits            = live->waits;
    c.wait_ns          = live->wait_ns;
    c.blocked_ns       = live->wait_blocked_ns;
    c.blocks           = live->wait_blocks;
    if (!live->cpu_live) {
        return r;
    }
    const live::LiveCpuSummary& l = *live->cpu_live;
    const cpu::CpuResult& m       = l.model;
    c.has_live                    = true;
    c.requests_enabled            = l.requests_enabled;
    c.waits_lowered               = l.waits_lowered;
    c.low_ns                      = m.tally.low_ns;
    c.transitions                 = m.tally.transitions;
    c.late_wakes                  = m.tally.late_wakes;
    c.penalty_ns                  = m.tally.penalty_ns;
    c.span_ns                     = m.span_ns;
    c.baseline_joules             = m.baseline_joules;
    c.energy_joules               = m.energy_joules;
    c.saved_joules                = m.saved_joules;
    c.oracle_saved_joules         = l.oracle.saved_joules;
    c.requests_low                = l.requests_low;
    c.requests_full               = l.requests_full;
    c.requests_unsent             = l.requests_unsent;
    return r;
}

const char *to_string(MissingRank::Reason reason) noexcept
{
    switch (reason) {
    case MissingRank::Reason::never_started: return "never_started";
    case MissingRank::Reason::died: return "died";
    case MissingRank::Reason::timed_out: return "timed_out";
    }
    return "?";
}

NodeTotals node_totals(const std::vector<RankRecord>& ranks,
                       const std::optional<link::service::PortSection>& port)
{
    NodeTotals t;
    double penalty_sum        = 0.0;
    std::size_t penalty_ranks = 0;
    for (const RankRecord& r : ranks) {
        t.bytes_sent += r.bytes_sent;
        t.packed_bytes += r.packed_bytes;
        t.saved_bytes += r.saved_bytes();
        t.missed_bytes += r.missed_bytes;
        if (r.error_bound_bits > 0 &&
            (!t.error_bound.packed() || r.error_bound_bits < t.error_bound.min_bits)) {
            t.error_bound.min_bits = r.error_bound_bits;
        }
        if (!r.has_link) {
            continue;
        }
        ++t.ranks_with_link;
        t.events += r.events;
        t.energy_joules += r.energy_joules;
        t.baseline_joules += r.baseline_joules;
        t.late_wakeups += r.late_wakeups;
        t.wakeup_delay_ns += r.wakeup_delay_ns;
        t.predictions += r.predictions;
        t.hits += r.hits;
        t.restarts += r.restarts;
        t.lanes = std::max<unsigned>(t.lanes, r.lanes);
        t.controllers_failed += r.controller_failed ? 1 : 0;
        for (std::size_t w = 0; w <= link::kMaxLanes; ++w) {
            t.time_at_width_ns[w] += r.time_at_width_ns[w];
        }
        if (r.has_penalty) {
            t.time_penalty_pct_max = std::max(t.time_penalty_pct_max.value_or(r.time_penalty_pct),
                                              r.time_penalty_pct);
            penalty_sum += r.time_penalty_pct;
            ++penalty_ranks;
        }
    }
    if (port) {
        // One port, accounted once by the service: its numbers, not sums
        // of what each rank would have had alone.
        t.lanes           = std::min<unsigned>(port->lanes, link::kMaxLanes);
        t.energy_joules   = port->has_energy != 0 ? port->energy_joules : 0.0;
        t.baseline_joules = port->has_energy != 0 ? port->baseline_joules : 0.0;
        t.late_wakeups    = port->late_wakeups;
        t.wakeup_delay_ns = port->wakeup_delay_ns;
        for (std::size_t w = 0; w <= link::kMaxLanes; ++w) {
            t.time_at_width_ns[w] = port->time_at_width_ns[w];
        }
    }
    // Over the sums, not a mean of percentages: a rank that ran longer weighs more.
    if (t.baseline_joules > 0.0) {
        t.energy_savings_pct = 100.0 * (1.0 - t.energy_joules / t.baseline_joules);
    }
    if (penalty_ranks > 0) {
        t.time_penalty_pct_mean = penalty_sum / static_cast<double>(penalty_ranks);
    }
    // Hits per event, as the per-rank report counts its hit rate.
    if (t.events > 0) {
        t.hit_rate_pct = 100.0 * static_cast<double>(t.hits) / static_cast<double>(t.events);
    }
    return t;
}

std::optional<NodeCpuTotals> node_cpu_totals(const std::vector<RankRecord>& ranks)
{
    NodeCpuTotals t;
    RankRecord::Cpu& s = t.sum;
    for (const RankRecord& r : ranks) {
        const RankRecord::Cpu& c = r.cpu;
        if (!c.has_waits) {
            continue;
        }
        ++t.ranks;
        s.waits += c.waits;
        s.wait_ns += c.wait_ns;
        s.blocked_ns += c.blocked_ns;
        s.blocks += c.blocks;
        if (!c.has_live) {
            continue;
        }
        ++t.live_ranks;
        s.waits_lowered += c.waits_lowered;
        s.low_ns += c.low_ns;
        s.transitions += c.transitions;
        s.late_wakes += c.late_wakes;
        s.penalty_ns += c.penalty_ns;
        s.span_ns += c.span_ns;
        s.baseline_joules += c.baseline_joules;
        s.energy_joules += c.energy_joules;
        s.saved_joules += c.saved_joules;
        s.oracle_saved_joules += c.oracle_saved_joules;
        if (c.requests_enabled) {
            ++t.requesting_ranks;
            s.requests_low += c.requests_low;
            s.requests_full += c.requests_full;
            s.requests_unsent += c.requests_unsent;
        }
    }
    if (t.ranks == 0) {
        return std::nullopt;
    }
    s.has_waits        = true;
    s.has_live         = t.live_ranks > 0;
    s.requests_enabled = t.requesting_ranks > 0;
    if (s.baseline_joules > 0.0) {
        t.saved_pct = 100.0 * s.saved_joules / s.baseline_joules;
    }
    if (s.span_ns > 0) {
        t.penalty_pct = 100.0 * static_cast<double>(s.penalty_ns) / static_cast<double>(s.span_ns);
    }
    if (s.oracle_saved_joules > 0.0) {
        t.of_oracle_pct = 100.0 * s.saved_joules / s.oracle_saved_joules;
    }
    return t;
}

// ---- formatting -------------------------------------------------------------

namespace {

std::string u64(std::uint64_t v) { return std::to_string(v); }

std::optional<double> hit_rate(const RankRecord& r)
{
    if (!r.has_link || r.events == 0) {
        return std::nullopt;
    }
    return 100.0 * static_cast<double>(r.hits) / static_cast<double>(r.events);
}

std::string text_or_dash(const std::optional<double>& v, int decimals)
{
    return v ? format_fixed(*v, decimals) : std::string("-");
}

std::string describe_missing(const MissingRank& m)
{
    std::string who = m.rank >= 0 ? "rank " + std::to_string(m.rank) + " (local " +
                                            std::to_string(m.local_rank)
                                  : "local rank " + std::to_string(m.local_rank) + " (rank unknown";
    if (m.pid > 0) {
        who += ", pid " + std::to_string(m.pid);
    }
    switch (m.reason) {
    case MissingRank::Reason::never_started: return who + "): never started slim";
    case MissingRank::Reason::died: return who + "): ended without a report";
    case MissingRank::Reason::timed_out: return who + "): no report within UCX_SLIM_REPORT_WAIT";
    }
    return who + ")";
}

std::string table_row(const std::string& label, const std::string& events, const std::string& saved,
                      const std::string& penalty, const std::string& late, const std::string& hits,
                      const std::string& gt, const std::string& restarts, std::uint64_t sent,
                      std::uint64_t packed, std::uint64_t saved_bytes, std::uint64_t missed,
                      const std::string& error)
{
    std::array<char, 512> line{};
    std::snprintf(line.data(), line.size(),
                  "  %7s %8s %8s %10s %6s %7s %10s %8s %14" PRIu64 " %12" PRIu64 " %12" PRIu64
                  " %12" PRIu64 "  %s\n",
                  label.c_str(), events.c_str(), saved.c_str(), penalty.c_str(), late.c_str(),
                  hits.c_str(), gt.c_str(), restarts.c_str(), sent, packed, saved_bytes, missed,
                  error.c_str());
    return line.data();
}

// What the port's numbers do not cover, or cannot be trusted for: said in
// the report, not only in the service's log.
std::string port_caveats(const link::service::PortSection& p)
{
    std::string out;
    const auto seconds = [](std::int64_t ns) {
        return format_fixed(static_cast<double>(ns) * 1e-9, 3) + " s";
    };
    if (p.uncovered_ns > 0) {
        out += "  port numbers cut short: they cover " + seconds(p.span_ns) + " of the job's " +
               seconds(p.job_span_ns) + "; the service's accounting had not reached the last " +
               seconds(p.uncovered_ns) + " when the report was due (a client held it back)\n";
    }
    if (p.late_records > 0 || p.stalled_clients > 0) {
        out += "  " + std::to_string(p.stalled_clients) +
               " client(s) stalled during the job (more than " +
               format_fixed(static_cast<double>(link::service::kMaxHorizonLagNs) * 1e-9, 1) +
               " s behind); " + u64(p.late_records) +
               " of their demand records were applied late, when they arrived\n";
    }
    const std::string problem = link::service::text_of(p.problem);
    if (p.backend_failed != 0) {
        out += "  port backend FAILED: the service stopped driving the port" +
               (problem.empty() ? std::string() : ": " + problem) + "\n";
    }
    if (p.width_unknown != 0) {
        out += "  port width UNKNOWN" +
               (p.backend_failed != 0 || problem.empty() ? std::string() : ": " + problem) + "\n";
    }
    return out;
}

// The ranks' own CPU side, summed: what their live loops planned and the
// emulated core modelled, next to the link's totals (the service's CPU
// section, after it, is what the cores were actually set to).
std::string ranks_cpu_text(const std::vector<RankRecord>& ranks)
{
    const std::optional<NodeCpuTotals> t = node_cpu_totals(ranks);
    if (!t) {
        return {};
    }
    const RankRecord::Cpu& s = t->sum;
    const auto seconds       = [](std::int64_t ns) {
        return format_fixed(static_cast<double>(ns) * 1e-9, 6);
    };
    std::string out = "  cpu of the ranks (" + std::to_string(t->ranks) +
                      " ranks): " + u64(s.waits) + " waits, " + seconds(s.wait_ns) +
                      " s in waits, " + seconds(s.blocked_ns) + " s of it yielded (" +
                      u64(s.blocks) + " blocks)\n";
    if (!s.has_live) {
        return out;
    }
    out += "  cpu as planned (" + std::to_string(t->live_ranks) +
           " ranks, emulated core): " + u64(s.waits_lowered) + " waits lowered, " +
           seconds(s.low_ns) + " s low, " + u64(s.transitions) + " transitions; energy " +
           format_fixed(s.energy_joules, 6) + " J of " + format_fixed(s.baseline_joules, 6) +
           " J always at full (saved " + format_fixed(s.saved_joules, 6) + " J, " +
           text_or_dash(t->saved_pct, 2) + "%), modelled penalty " +
           format_fixed(static_cast<double>(s.penalty_ns) * 1e-3, 1) + " us (" +
           text_or_dash(t->penalty_pct, 2) + "%); oracle saved " +
           format_fixed(s.oracle_saved_joules, 6) + " J (planned " +
           text_or_dash(t->of_oracle_pct, 1) + "% of it)\n";
    return out;
}

// The CPU section: a line of sums, then a row per core listed.
std::string cpu_text(const NodeCollection& collection)
{
    if (!collection.cpu) {
        return {};
    }
    namespace svc            = link::service;
    const svc::CpuSection& c = *collection.cpu;
    const auto seconds       = [](std::int64_t ns) {
        return format_fixed(static_cast<double>(ns) * 1e-9, 6);
    };
    const bool energy = c.has_energy != 0;
    std::string out   = "  cpu (" + svc::text_of(c.backend) + ", driven by slimlinkd) over " +
                      format_fixed(static_cast<double>(c.span_ns) * 1e-9, 3) +
                      " s: " + std::to_string(c.cores_mapped) + " cores mapped, " +
                      std::to_string(c.cores_refused) + " kept at full because shared; " +
                      u64(c.low_requests) + " low and " + u64(c.full_requests) +
                      " full requests, " + u64(c.transitions) + " transitions, " +
                      seconds(c.time_low_ns) + " s low; ";
    if (energy) {
        std::optional<double> saved;
        if (c.baseline_joules > 0.0) {
            saved = 100.0 * (1.0 - c.energy_joules / c.baseline_joules);
        }
        out += "energy " + format_fixed(c.energy_joules, 6) + " J of " +
               format_fixed(c.baseline_joules, 6) + " J always at full (saved " +
               text_or_dash(saved, 1) + "%), modelled penalty " +
               format_fixed(static_cast<double>(c.penalty_ns) * 1e-3, 1) + " us\n";
    } else {
        out += "energy not measured by this backend\n";
    }
    if (c.failed != 0) {
        const std::string problem = svc::text_of(c.problem);
        out += "  cpu backend FAILED: every core restored, no longer driven" +
               (problem.empty() ? std::string() : ": " + problem) + "\n";
    }
    std::array<char, 256> line{};
    std::snprintf(line.data(), line.size(), "  %8s %6s %8s %8s %8s %11s %12s %12s %12s\n",
                  "cpu core", "ranks", "low req", "full req", "refused", "transitions",
                  "time low s", "energy J", "baseline J");
    out += line.data();
    for (const svc::CpuSectionCore& e : collection.cpu_cores) {
        std::snprintf(line.data(), line.size(),
                      "  %8u %6u %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %11" PRIu64
                      " %12s %12s %12s\n",
                      e.core, e.ranks, e.low_requests, e.full_requests, e.refused, e.transitions,
                      seconds(e.time_low_ns).c_str(),
                      energy ? format_fixed(e.energy_joules, 6).c_str() : "-",
                      energy ? format_fixed(e.baseline_joules, 6).c_str() : "-");
        out += line.data();
    }
    if (collection.cpu_cores.size() < c.cores_mapped) {
        out += "  (" + std::to_string(c.cores_mapped - collection.cpu_cores.size()) +
               " more cores not listed; the sums above cover them)\n";
    }
    return out;
}

}  // namespace

std::string format_node_text(const NodeInfo& node, const NodeCollection& collection)
{
    const NodeTotals t = node_totals(collection.reported, collection.port);
    std::string out = "slimlink node report: host " + node.host + ", job " + node.job.key + ", " +
                      std::to_string(node.job.local_size) + " local ranks, " +
                      std::to_string(collection.reported.size()) + " reported, " +
                      std::to_string(collection.missing.size()) + " missing\n";
    for (const MissingRank& m : collection.missing) {
        out += "  missing: " + describe_missing(m) + "\n";
    }
    std::array<char, 512> header{};
    std::snprintf(header.data(), header.size(),
                  "  %7s %8s %8s %10s %6s %7s %10s %8s %14s %12s %12s %12s  %s\n", "rank", "events",
                  "saved %", "penalty %", "late", "hit %", "GT", "restarts", "bytes sent", "packed",
                  "saved", "missed", "max rel error");
    out += header.data();
    for (const RankRecord& r : collection.reported) {
        const auto dash = std::string("-");
        out += table_row(
                r.rank >= 0 ? std::to_string(r.rank) : "l" + std::to_string(r.local_rank),
                r.has_link ? u64(r.events) : dash,
                r.has_savings ? format_fixed(r.energy_savings_pct, 1) : dash,
                r.has_penalty ? format_fixed(r.time_penalty_pct, 2) : dash,
                r.has_link ? u64(r.late_wakeups) : dash, text_or_dash(hit_rate(r), 1),
                r.has_gt ? format_fixed(static_cast<double>(r.gt_ns) * 1e-3, 1) + "us" : dash,
                r.has_link ? u64(r.restarts) : dash, r.bytes_sent, r.packed_bytes, r.saved_bytes(),
                r.missed_bytes, text_error_bound(ErrorBound{r.error_bound_bits}));
    }
    const bool any_link = t.ranks_with_link > 0;
    out += table_row("total", any_link ? u64(t.events) : "-", text_or_dash(t.energy_savings_pct, 1),
                     t.time_penalty_pct_max ? "max " + format_fixed(*t.time_penalty_pct_max, 2)
                                            : std::string("-"),
                     any_link ? u64(t.late_wakeups) : "-", text_or_dash(t.hit_rate_pct, 1), "-",
                     any_link ? u64(t.restarts) : "-", t.bytes_sent, t.packed_bytes, t.saved_bytes,
                     t.missed_bytes, text_error_bound(t.error_bound));
    if (!any_link) {
        return out + ranks_cpu_text(collection.reported) + cpu_text(collection);
    }
    // Energy the port's backend did not measure is not printed as zeros.
    const bool measured = !collection.port || collection.port->has_energy != 0;
    if (collection.port) {
        const link::service::PortSection& p = *collection.port;
        out += "  port " + link::service::text_of(p.port) + " (" +
               link::service::text_of(p.backend) + ", " +
               (collection.link_profile.empty() ? std::to_string(p.lanes) + " lanes"
                                                : collection.link_profile) +
               "), driven by slimlinkd for " +
               std::to_string(collection.reported.size() + collection.missing.size()) +
               " local ranks" +
               (p.other_jobs > 0 ? " and " + std::to_string(p.other_jobs) + " other job(s)"
                                 : std::string()) +
               " over " + format_fixed(static_cast<double>(p.span_ns) * 1e-9, 3) + " s: " +
               (p.has_energy != 0
                        ? "energy saved " + text_or_dash(t.energy_savings_pct, 1) + "% vs always on"
                        : std::string("energy not measured by this backend")) +
               ", " + u64(p.transitions) + " transitions, " + u64(p.late_wakeups) +
               " late wake-ups (" + format_fixed(static_cast<double>(p.wakeup_delay_ns) * 1e-3, 1) +
               " us)\n";
        out += port_caveats(p);
    }
    if (measured) {
        out += "  energy " + format_fixed(t.energy_joules, 6) + " J of " +
               format_fixed(t.baseline_joules, 6) + " J always on; ";
    } else {
        out += "  ";
    }
    out += "time penalty max " + text_or_dash(t.time_penalty_pct_max, 2) + "%, mean " +
           text_or_dash(t.time_penalty_pct_mean, 2) + "%; " + u64(t.predictions) +
           " low-power predictions, " + u64(t.hits) + " hits\n";
    if (measured) {
        out += collection.port ? "  time at width (the port):" : "  time at width (all ranks):";
        out += width_times_text(t.time_at_width_ns, t.lanes) + "\n";
    }
    if (t.controllers_failed > 0) {
        out += "  " + std::to_string(t.controllers_failed) +
               " rank(s) had a controller failure (see each rank's report for the port's "
               "width as it knew it)\n";
    }
    return out + ranks_cpu_text(collection.reported) + cpu_text(collection);
}

namespace {

// The port as the node service accounted it over the job's span.
ReportJson port_json(const link::service::PortSection& p, const std::string& profile)
{
    const bool energy = p.has_energy != 0;
    std::optional<double> saved;
    if (energy && p.baseline_joules > 0.0) {
        saved = 100.0 * (1.0 - p.energy_joules / p.baseline_joules);
    }
    return {
            {"owner", "slimlinkd"},
            {"port", link::service::text_of(p.port)},
            {"backend", link::service::text_of(p.backend)},
            {"profile", json_text_or_null(profile)},
            {"lanes", p.lanes},
            {"span_ns", p.span_ns},
            {"energy_joules", energy ? json_fixed(p.energy_joules, 6) : ReportJson(nullptr)},
            {"baseline_joules", energy ? json_fixed(p.baseline_joules, 6) : ReportJson(nullptr)},
            {"energy_savings_pct", json_fixed(saved, 4)},
            {"transitions", p.transitions},
            {"late_wakeups", p.late_wakeups},
            {"wakeup_delay_ns", p.wakeup_delay_ns},
            {"time_at_width_ns", width_times_json(p.time_at_width_ns, p.lanes)},
            {"time_in_transition_ns", p.time_in_transition_ns},
            {"other_jobs", p.other_jobs},
            {"clients_of_other_jobs", p.clients_seen},
            {"job_span_ns", p.job_span_ns},
            {"uncovered_ns", p.uncovered_ns},
            {"late_records", p.late_records},
            {"stalled_clients", p.stalled_clients},
            {"backend_failed", p.backend_failed != 0},
            {"width_unknown", p.width_unknown != 0},
            {"problem", link::service::text_of(p.problem).empty()
                                ? ReportJson(nullptr)
                                : ReportJson(link::service::text_of(p.problem))},
    };
}

// The cores as the service's CPU controller drove them over the job.
ReportJson cpu_json(const link::service::CpuSection& c,
                    const std::vector<link::service::CpuSectionCore>& listed)
{
    const bool energy = c.has_energy != 0;
    const auto joules = [energy](double v) {
        return energy ? json_fixed(v, 6) : ReportJson(nullptr);
    };
    ReportJson cores = ReportJson::array();
    for (const link::service::CpuSectionCore& e : listed) {
        cores.push_back({
                {"core", e.core},
                {"ranks", e.ranks},
                {"low_requests", e.low_requests},
                {"full_requests", e.full_requests},
                {"refused", e.refused},
                {"transitions", e.transitions},
                {"span_ns", e.span_ns},
                {"time_low_ns", e.time_low_ns},
                {"penalty_ns", energy ? ReportJson(e.penalty_ns) : ReportJson(nullptr)},
                {"energy_joules", joules(e.energy_joules)},
                {"baseline_joules", joules(e.baseline_joules)},
        });
    }
    std::optional<double> saved;
    if (energy && c.baseline_joules > 0.0) {
        saved = 100.0 * (1.0 - c.energy_joules / c.baseline_joules);
    }
    const std::string problem = link::service::text_of(c.problem);
    return {
            {"owner", "slimlinkd"},
            {"backend", link::service::text_of(c.backend)},
            {"span_ns", c.span_ns},
            {"cores_mapped", c.cores_mapped},
            {"cores_refused", c.cores_refused},
            {"low_requests", c.low_requests},
            {"full_requests", c.full_requests},
            {"transitions", c.transitions},
            {"time_low_ns", c.time_low_ns},
            {"penalty_ns", energy ? ReportJson(c.penalty_ns) : ReportJson(nullptr)},
            {"energy_joules", joules(c.energy_joules)},
            {"baseline_joules", joules(c.baseline_joules)},
            {"energy_savings_pct", json_fixed(saved, 4)},
            {"backend_failed", c.failed != 0},
            {"problem", problem.empty() ? ReportJson(nullptr) : ReportJson(problem)},
            {"cores", cores},
    };
}

// The ranks' CPU side summed (totals.cpu).
ReportJson ranks_cpu_json(const NodeCpuTotals& t)
{
    const RankRecord::Cpu& s = t.sum;

    ReportJson j = {
            {"ranks", t.ranks},           {"waits", s.waits},   {"wait_ns", s.wait_ns},
            {"blocked_ns", s.blocked_ns}, {"blocks", s.blocks}, {"live", nullptr},
    };
    if (!s.has_live) {
        return j;
    }
    j["live"] = {
            {"ranks", t.live_ranks},
            {"requests", s.requests_enabled ? ReportJson{{"low", s.requests_low},
                                                         {"full", s.requests_full},
                                                         {"unsent", s.requests_unsent}}
                                            : ReportJson(nullptr)},
            {"waits_lowered", s.waits_lowered},
            {"low_ns", s.low_ns},
            {"transitions", s.transitions},
            {"late_wakes", s.late_wakes},
            {"penalty_ns", s.penalty_ns},
            {"span_ns", s.span_ns},
            {"baseline_joules", json_fixed(s.baseline_joules, 9)},
            {"energy_joules", json_fixed(s.energy_joules, 9)},
            {"saved_joules", json_fixed(s.saved_joules, 9)},
            {"saved_pct", json_fixed(t.saved_pct, 4)},
            {"penalty_pct", json_fixed(t.penalty_pct, 4)},
            {"oracle_saved_joules", json_fixed(s.oracle_saved_joules, 9)},
            {"of_oracle_pct", json_fixed(t.of_oracle_pct, 4)},
    };
    return j;
}

}  // namespace

std::string format_node_json(const NodeInfo& node, const NodeCollection& collection)
{
    const NodeTotals t = node_totals(collection.reported, collection.port);
    ReportJson missing = ReportJson::array();
    for (const MissingRank& m : collection.missing) {
        missing.push_back({
                {"local_rank", m.local_rank},
                {"rank", m.rank >= 0 ? ReportJson(m.rank) : ReportJson(nullptr)},
                {"pid", m.pid > 0 ? ReportJson(m.pid) : ReportJson(nullptr)},
                {"reason", to_string(m.reason)},
        });
    }
    // A port whose backend measures no energy has none to total.
    const bool measured = !collection.port || collection.port->has_energy != 0;

    ReportJson totals = {
            {"events", t.events},
            {"energy_joules", measured ? json_fixed(t.energy_joules, 6) : ReportJson(nullptr)},
            {"baseline_joules", measured ? json_fixed(t.baseline_joules, 6) : ReportJson(nullptr)},
            {"energy_savings_pct", json_fixed(t.energy_savings_pct, 4)},
            {"time_penalty_pct_max", json_fixed(t.time_penalty_pct_max, 4)},
            {"time_penalty_pct_mean", json_fixed(t.time_penalty_pct_mean, 4)},
            {"late_wakeups", t.late_wakeups},
            {"wakeup_delay_ns", t.wakeup_delay_ns},
            {"predictions", t.predictions},
            {"hits", t.hits},
            {"hit_rate_pct", json_fixed(t.hit_rate_pct, 4)},
            {"restarts", t.restarts},
            {"time_at_width_ns", width_times_json(t.time_at_width_ns, t.lanes)},
            {"bytes_sent", t.bytes_sent},
            {"packed_bytes", t.packed_bytes},
            {"saved_bytes", t.saved_bytes},
            {"missed_bytes", t.missed_bytes},
            {"max_rel_error_bound", json_error_bound(t.error_bound)},
            {"controllers_failed", t.controllers_failed},
    };
    // Only when some rank had a CPU side: other reports keep their bytes.
    if (const std::optional<NodeCpuTotals> cpu = node_cpu_totals(collection.reported)) {
        totals["cpu"] = ranks_cpu_json(*cpu);
    }
    ReportJson ranks = ReportJson::array();
    for (const RankRecord& r : collection.reported) {
        ranks.push_back({
                {"rank", r.rank},
                {"local_rank", r.local_rank},
                {"pid", r.pid},
                {"link", r.has_link},
                {"events", r.events},
                {"energy_savings_pct",
                 r.has_savings ? json_fixed(r.energy_savings_pct, 4) : ReportJson(nullptr)},
                {"time_penalty_pct",
                 r.has_penalty ? json_fixed(r.time_penalty_pct, 4) : ReportJson(nullptr)},
                {"late_wakeups", r.late_wakeups},
                {"predictions", r.predictions},
                {"hits", r.hits},
                {"hit_rate_pct", json_fixed(hit_rate(r), 4)},
                {"gt_ns", r.has_gt ? ReportJson(r.gt_ns) : ReportJson(nullptr)},
                {"restarts", r.restarts},
                {"bytes_sent", r.bytes_sent},
                {"packed_bytes", r.packed_bytes},
                {"saved_bytes", r.saved_bytes()},
                {"missed_bytes", r.missed_bytes},
                {"max_rel_error_bound", json_error_bound(ErrorBound{r.error_bound_bits})},
                {"controller_failed", r.controller_failed},
        });
    }
    ReportJson report = {
            {"schema", node_report_schema},
            {"host", node.host},
            {"job", node.job.key},
            {"launcher", node.job.launcher},
            {"local_size", node.job.local_size},
            {"ranks_reported", collection.reported.size()},
            {"ranks_missing", missing},
            {"totals", totals},
            {"ranks", ranks},
            {"port", collection.port ? port_json(*collection.port, collection.link_profile)
                                     : ReportJson(nullptr)},
    };
    // Only when the CPU controller ran: reports without it keep their bytes.
    if (collection.cpu) {
        report["cpu"] = cpu_json(*collection.cpu, collection.cpu_cores);
    }
    return json_line(report);
}

// ---- the node report through the node service -----------------------------

NodeCollection collection_from_service(const link::ReceivedReport& received)
{
    NodeCollection collection;
    collection.port         = received.port;
    collection.link_profile = received.link_spec;
    collection.cpu          = received.cpu;
    collection.cpu_cores    = received.cpu_cores;
    for (const link::ReceivedReport::Entry& e : received.entries) {
        const auto state = static_cast<link::service::EntryState>(e.entry.state);
        MissingRank m;
        m.local_rank = e.entry.local_rank;
        m.rank       = e.entry.rank;
        m.pid        = static_cast<long>(e.entry.pid);
        if (state == link::service::EntryState::reported) {
            if (received.record_version != rank_record_version ||
                e.record.size() != sizeof(RankRecord)) {
                // Another build of slimlink in the same job: its numbers
                // cannot be read, so the rank is listed, not invented.
                logger().warn("node report: rank {} sent a record of {} bytes, version {} "
                              "(this build reads {} bytes, version {}); listed as missing",
                              e.entry.rank, e.record.size(), received.record_version,
                              sizeof(RankRecord), rank_record_version);
                m.reason = MissingRank::Reason::died;
                collection.missing.push_back(m);
                continue;
            }
            RankRecord r;
            std::memcpy(&r, e.record.data(), sizeof r);
            r.local_rank = e.entry.local_rank;
            // The port's numbers are the node's: this rank's late wake-ups
            // are the ones the shared port caused on its traffic.
            r.has_savings      = false;
            r.late_wakeups     = e.entry.late_wakeups;
            r.wakeup_delay_ns  = e.entry.wakeup_delay_ns;
            r.has_penalty      = r.has_link && r.span_ns > 0;
            r.time_penalty_pct = r.has_penalty ? 100.0 * static_cast<double>(r.wakeup_delay_ns) /
                                                         static_cast<double>(r.span_ns)
                                               : 0.0;
            collection.reported.push_back(r);
            continue;
        }
        m.reason = state == link::service::EntryState::died ? MissingRank::Reason::died
                   : state == link::service::EntryState::timed_out
                           ? MissingRank::Reason::timed_out
                           : MissingRank::Reason::never_started;
        collection.missing.push_back(m);
    }
    return collection;
}

void write_node_report(const ReportTarget& report, const ProcessIdentity& who,
                       const NodeCollection& collection) noexcept
{
    try {
        const NodeInfo node{who.host, who.local};
        if (!collection.missing.empty()) {
            const MissingRank& first = collection.missing.front();
            logger().warn("node report: {} of {} local ranks did not report (first: {}, {})",
                          collection.missing.size(),
                          collection.missing.size() + collection.reported.size(),
                          first.rank >= 0 ? "rank " + std::to_string(first.rank)
                                          : "local rank " + std::to_string(first.local_rank),
                          to_string(first.reason));
        }
        write_report_content(report, report.kind == ReportTarget::Kind::json_file
                                             ? format_node_json(node, collection)
                                             : format_node_text(node, collection));
    } catch (const std::exception& e) {
        note_swallowed("node report: cannot write the node summary", e);
    }
}

}  // namespace slim

// SPDX-License-Identifier: BSD-3-Clause
#include "report.h"

#include "base/output_file.h"
#include "base/parse.h"

#include "report_json.h"
#include "traffic_monitor.h"

#include <array>
#include <utility>
#include <cerrno>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace slim {

namespace {

bool is_zero(const slim_counter_t& c) { return c.count == 0 && c.bytes == 0; }

std::string text_row(const char *name, const slim_counter_t& sent, const slim_counter_t& recv)
{
    std::array<char, 160> line{};
    std::snprintf(line.data(), line.size(),
                  "  %-10s %14" PRIu64 " %16" PRIu64 " %14" PRIu64 " %16" PRIu64 "\n", name,
                  sent.count, sent.bytes, recv.count, recv.bytes);
    return line.data();
}

ReportJson counter_json(const slim_counter_t& c)
{
    return {{"count", c.count}, {"bytes", c.bytes}};
}

ReportJson directions_json(const slim_counter_t& sent, const slim_counter_t& recv)
{
    return {{"sent", counter_json(sent)}, {"received", counter_json(recv)}};
}

// One write() for the whole block; loops only on EINTR and short writes
// (pipes), which do not happen for small blocks on terminals and files.
void write_all(int fd, const std::string& data)
{
    std::size_t done = 0;
    while (done < data.size()) {
        const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw std::system_error(errno, std::generic_category(), "write");
        }
        done += static_cast<std::size_t>(n);
    }
}

// Owns a file descriptor.
class Fd {
public:
    explicit Fd(int fd) noexcept : fd_(fd) {}
    Fd(const Fd&)            = delete;
    Fd& operator=(const Fd&) = delete;
    ~Fd()
    {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    int get() const noexcept { return fd_; }

private:
    int fd_;
};

}  // namespace

std::string format_fixed(double v, int decimals)
{
    // "-0.0" for a rounding-level negative reads like a loss; it is none.
    if (v < 0.0 && v > -0.5 * std::pow(10.0, -decimals)) {
        v = 0.0;
    }
    std::array<char, 48> text{};
    std::snprintf(text.data(), text.size(), "%.*f", decimals, v);
    return text.data();
}

ReportJson json_error_bound(ErrorBound bound)
{
    // The exact power of two: the shortest text that reads back as this
    // double never rounds the bound below it.
    return bound.packed() ? ReportJson(bound.relative()) : ReportJson(nullptr);
}

ReportJson json_fixed(double v, int decimals)
{
    // The number the text with `decimals` decimals says, so a report reads
    // the same in JSON as in text.
    return std::stod(format_fixed(v, decimals));
}

ReportJson json_fixed(const std::optional<double>& v, int decimals)
{
    return v ? json_fixed(*v, decimals) : ReportJson(nullptr);
}

ReportJson json_text_or_null(const std::string& text)
{
    return text.empty() ? ReportJson(nullptr) : ReportJson(text);
}

ReportJson width_times_json(const std::int64_t *ns, unsigned lanes)
{
    ReportJson widths = ReportJson::object();
    for (unsigned w = 0; w <= lanes && w <= link::kMaxLanes; ++w) {
        if (w > 0 || ns[w] > 0) {
            widths[std::to_string(w)] = ns[w];
        }
    }
    return widths;
}

std::string width_times_text(const std::int64_t *ns, unsigned lanes)
{
    std::string out;
    for (unsigned w = 0; w <= lanes && w <= link::kMaxLanes; ++w) {
        if (ns[w] > 0) {
            out += " " + (w == 0 ? std::string("LPI") : std::to_string(w) + "x") + " " +
                   format_fixed(static_cast<double>(ns[w]) * 1e-9, 3) + " s";
        }
    }
    return out;
}

std::string json_line(const ReportJson& j)
{
    // Host names and paths are bytes: invalid UTF-8 becomes U+FFFD rather
    // than an exception that would lose the report.
    return j.dump(-1, ' ', false, ReportJson::error_handler_t::replace) + "\n";
}

std::string text_error_bound(ErrorBound bound)
{
    if (!bound.packed()) {
        return "-";
    }
    // Two digits, rounded up: a bound must not read smaller than it is.
    const double v  = bound.relative();
    int exponent    = static_cast<int>(std::floor(std::log10(v)));
    double mantissa = std::ceil(v / std::pow(10.0, exponent - 1)) / 10.0;
    if (mantissa >= 10.0) {
        mantissa /= 10.0;
        ++exponent;
    }
    std::array<char, 48> text{};
    std::snprintf(text.data(), text.size(), "2^-%d (%.1fe%03d)", bound.min_bits, mantissa,
                  exponent);
    return text.data();
}

namespace {

std::string fixed(double v, int decimals) { return format_fixed(v, decimals); }

// Wire bytes per original byte of the framed messages, as text ("0.52").
std::string packing_ratio(const slim_packing_stats_t& p)
{
    if (p.payload_bytes == 0) {
        return "-";
    }
    return fixed(static_cast<double>(p.wire_bytes) / static_cast<double>(p.payload_bytes), 3);
}

bool any_puts(const PackingMonitor::PutCounts& puts)
{
    return puts.puts_packed != 0 || puts.notices_rejected != 0 || puts.bounce_empty != 0;
}

std::string text_packing(const slim_packing_stats_t& p, ErrorBound bound,
                         const PackingMonitor::PutCounts& puts,
                         const PackingMonitor::Unseen& unseen)
{
    if (p.marked_bytes == 0 && p.frames_sent == 0 && p.frames_received == 0 &&
        p.frames_rejected == 0 && unseen.sync_sends == 0) {
        return {};
    }
    const std::uint64_t saved = p.payload_bytes > p.wire_bytes ? p.payload_bytes - p.wire_bytes : 0;
    std::array<char, 512> block{};
    std::snprintf(block.data(), block.size(),
                  "  packing: %" PRIu64 " frames sent, %" PRIu64 " bytes -> %" PRIu64
                  " on the wire (ratio %s, %" PRIu64 " saved)\n"
                  "           marked %" PRIu64 " bytes: packed %" PRIu64 ", edge %" PRIu64
                  ", missed %" PRIu64 "\n"
                  "           frames received %" PRIu64 ", rejected %" PRIu64 "\n",
                  p.frames_sent, p.payload_bytes, p.wire_bytes, packing_ratio(p).c_str(), saved,
                  p.marked_bytes, p.packed_bytes, p.edge_bytes, p.missed_bytes, p.frames_received,
                  p.frames_rejected);
    std::string out = block.data();
    if (any_puts(puts)) {
        std::snprintf(block.data(), block.size(),
                      "           of those, puts packed %" PRIu64
                      "; expand notices rejected %" PRIu64
                      "; puts unpacked for want of a bounce buffer %" PRIu64 "\n"
                      "           bounce buffers %" PRIu64 " (%.1f MiB registered)\n",
                      puts.puts_packed, puts.notices_rejected, puts.bounce_empty,
                      puts.bounce_buffers, static_cast<double>(puts.bounce_bytes) / (1 << 20));
        out += block.data();
    }
    if (unseen.sync_sends != 0) {
        // Not marked bytes: slim cannot tell which of these bytes were marked.
        std::snprintf(block.data(), block.size(),
                      "           not seen by slim: %" PRIu64 " synchronous sends of %" PRIu64
                      " bytes, copied by UCP itself (am_bcopy, as UCX_PROTO_ENABLE=y sends\n"
                      "           them) while memory was marked: marked data in them "
                      "travelled exact, in none of the counts above\n",
                      unseen.sync_sends, unseen.sync_bytes);
        out += block.data();
    }
    if (bound.packed()) {
        out += "           max relative error <= " + text_error_bound(bound) +
               " (a bound from the coarsest precision packed, not a measurement)\n";
    }
    return out;
}

ReportJson packing_json(const slim_packing_stats_t& p, ErrorBound bound,
                        const PackingMonitor::PutCounts& puts, const PackingMonitor::Unseen& unseen)
{
    ReportJson out = {
            {"frames_sent", p.frames_sent},
            {"payload_bytes", p.payload_bytes},
            {"wire_bytes", p.wire_bytes},
            {"marked_bytes", p.marked_bytes},
            {"packed_bytes", p.packed_bytes},
            {"edge_bytes", p.edge_bytes},
            {"missed_bytes", p.missed_bytes},
            {"frames_received", p.frames_received},
            {"frames_rejected", p.frames_rejected},
            {"max_rel_error_bound", json_error_bound(bound)},
    };
    if (any_puts(puts)) {
        out["puts"] = {{"packed", puts.puts_packed},
                       {"notices_rejected", puts.notices_rejected},
                       {"bounce_empty", puts.bounce_empty},
                       {"bounce_buffers", puts.bounce_buffers},
                       {"bounce_bytes", puts.bounce_bytes}};
    }
    if (unseen.sync_sends != 0) {
        out["unseen"] = {{"sync_sends", unseen.sync_sends}, {"sync_bytes", unseen.sync_bytes}};
    }
    return out;
}

std::string text_live(const live::LiveSummary *l)
{
    if (l == nullptr) {
        return {};
    }
    std::string out = "  link (" + l->backend + ", " + std::to_string(l->lanes) +
                      " lanes, predictor " + l->predictor + "): ";
    if (l->link_owner == "slimlinkd") {
        // The shared port's energy is accounted once, by the service, in the
        // node report; the numbers here are this rank's demand alone.
        out += "port driven by the node service slimlinkd (" + l->link_owner_detail +
               "): the port's energy is in the node report; this rank's demand alone, on a "
               "port of its own: ";
    } else if (!l->link_owner_detail.empty()) {
        out += "this process's own emulated link (" + l->link_owner_detail + "): ";
    }
    if (l->span_ns == 0) {
        return out + "no traffic to account\n";
    }
    out += (l->energy_savings_pct ? "energy saved " + fixed(*l->energy_savings_pct, 1) +
                                            "% vs always on (" + fixed(l->energy_joules, 6) +
                                            " J of " + fixed(l->baseline_joules, 6) + " J over "
                                  : std::string("energy not measured by this backend (over ")) +
           fixed(static_cast<double>(l->span_ns) * 1e-9, 3) + " s), time penalty " +
           fixed(l->time_penalty_pct.value_or(0.0), 2) + "%" +
           (l->max_slowdown_pct ? " (bound " + parse::format_real(*l->max_slowdown_pct) + "%)"
                                : std::string()) +
           "\n";
    if (!l->link_profile.empty()) {
        out += "           port modelled: " + l->link_profile + "\n";
    }
    out += "           " + std::to_string(l->events) + " events, " +
           std::to_string(l->predictions) + " low-power predictions, " + std::to_string(l->hits) +
           " hits (hit rate " +
           (l->events > 0
                    ? fixed(100.0 * static_cast<double>(l->hits) / static_cast<double>(l->events),
                            1) +
                              "%"
                    : std::string("-")) +
           "), " + std::to_string(l->late_wakeups) + " late wake-ups (" +
           fixed(static_cast<double>(l->wakeup_delay_ns) * 1e-3, 1) + " us), GT " +
           (l->gt_ns ? fixed(static_cast<double>(*l->gt_ns) * 1e-3, 1) + " us" : std::string("-")) +
           ", restarts " + std::to_string(l->restarts) + "\n";
    if (!l->policy_in_force.empty()) {
        out += "           policy in force: " + l->policy_in_force + " (changed " +
               std::to_string(l->policy_switches) + " times)\n";
    }
    if (l->widest_burst_gap_ns > live::kDefaultBurstGapNs) {
        out += "           burst gap widened to " +
               fixed(static_cast<double>(l->widest_burst_gap_ns) * 1e-3, 0) +
               " us under dense traffic (" + fixed(static_cast<double>(l->burst_gap_ns) * 1e-3, 0) +
               " us at the end)\n";
    }
    if (l->ops_dropped > 0) {
        out += "           " + std::to_string(l->ops_dropped) +
               " records lost to a full record ring: bursts they started are not named\n";
    }
    if (l->drain.late > 0) {
        out += "           " + std::to_string(l->drain.late) +
               " records logged after the live loop had passed their time (the rank was"
               " descheduled): the live link can differ from a replay of the trace\n";
    }
    out += "           time at width:" + width_times_text(l->time_at_width_ns.data(), l->lanes);
    out += "\n";
    if (l->controller_failed) {
        out += "           controller failed: " + l->controller_error + "\n";
    }
    if (!l->trace_path.empty()) {
        out += "           trace " + l->trace_path + ": " + std::to_string(l->trace_events) +
               " events" + (l->trace_error.empty() ? "" : " (stopped: " + l->trace_error + ")") +
               "\n";
    }
    return out;
}

std::string text_cpu(const live::LiveSummary *l)
{
    if (l == nullptr || !l->cpu) {
        return {};
    }
    std::string out = "  cpu (waits " + l->wait_mode + "): " + std::to_string(l->waits) +
                      " waits, " + fixed(static_cast<double>(l->wait_ns) * 1e-9, 6) +
                      " s in all, " + fixed(static_cast<double>(l->wait_blocked_ns) * 1e-9, 6) +
                      " s of it blocked (" + std::to_string(l->wait_blocks) + " blocks)\n";
    if (!l->cpu_live) {
        return out;
    }
    const live::LiveCpuSummary& c = *l->cpu_live;
    const cpu::CpuResult& m       = c.model;
    out += "           policy " + c.policy +
           (c.policy_in_force.empty() ? "" : " (in force: " + c.policy_in_force + ")") + ": " +
           std::to_string(c.waits_lowered) + " waits lowered, " +
           fixed(static_cast<double>(m.tally.low_ns) * 1e-9, 6) + " s low as planned, " +
           std::to_string(m.tally.transitions) + " transitions\n";
    out += "           requests ";
    out += c.requests_enabled
                   ? std::to_string(c.requests_low) + " low, " + std::to_string(c.requests_full) +
                             " full" +
                             (c.requests_unsent > 0
                                      ? ", " + std::to_string(c.requests_unsent) + " unsent"
                                      : "")
                   : std::string("none (no node service with the CPU extension)");
    out += "\n";
    out += "           modelled: saved " + fixed(m.saved_joules, 6) + " J (" +
           (m.saved_pct ? fixed(*m.saved_pct, 2) + "% of always-full" : std::string("n/a")) +
           "), penalty " + fixed(m.penalty_pct.value_or(0.0), 2) + "%; oracle saved " +
           fixed(c.oracle.saved_joules, 6) + " J" +
           (c.oracle.saved_joules > 0
                    ? " (live " + fixed(100.0 * m.saved_joules / c.oracle.saved_joules, 1) + "%)"
                    : std::string()) +
           "\n";
    return out;
}

// The live CPU side's numbers (rank part of report.schema.json).
ReportJson cpu_live_json(const live::LiveCpuSummary& c)
{
    const cpu::CpuResult& m = c.model;
    const cpu::CpuResult& o = c.oracle;
    return {
            {"policy", c.policy},
            {"policy_in_force",
             c.policy_in_force.empty() ? ReportJson(nullptr) : ReportJson(c.policy_in_force)},
            {"requests", c.requests_enabled ? ReportJson{{"low", c.requests_low},
                                                         {"full", c.requests_full},
                                                         {"unsent", c.requests_unsent}}
                                            : ReportJson(nullptr)},
            {"waits_lowered", c.waits_lowered},
            {"low_ns", m.tally.low_ns},
            {"model",
             {{"span_ns", m.span_ns},
              {"transitions", m.tally.transitions},
              {"late_wakes", m.tally.late_wakes},
              {"penalty_ns", m.tally.penalty_ns},
              {"baseline_joules", json_fixed(m.baseline_joules, 9)},
              {"energy_joules", json_fixed(m.energy_joules, 9)},
              {"saved_joules", json_fixed(m.saved_joules, 9)},
              {"saved_pct", json_fixed(m.saved_pct, 4)},
              {"saved_of_waits_pct", json_fixed(m.saved_of_waits_pct, 4)},
              {"penalty_pct", json_fixed(m.penalty_pct, 4)}}},
            {"oracle",
             {{"low_ns", o.tally.low_ns},
              {"transitions", o.tally.transitions},
              {"saved_joules", json_fixed(o.saved_joules, 9)},
              {"saved_pct", json_fixed(o.saved_pct, 4)}}},
            {"of_oracle_pct", o.saved_joules > 0
                                      ? json_fixed(100.0 * m.saved_joules / o.saved_joules, 4)
                                      : ReportJson(nullptr)},
    };
}

ReportJson live_json(const live::LiveSummary& l)
{
    return {
            {"backend", l.backend},
            {"owner", l.link_owner},
            {"owner_detail", l.link_owner_detail},
            {"predictor", l.predictor},
            {"lanes", l.lanes},
            {"events", l.events},
            {"span_ns", l.span_ns},
            {"energy_joules", json_fixed(l.energy_joules, 6)},
            {"baseline_joules", json_fixed(l.baseline_joules, 6)},
            {"energy_savings_pct", json_fixed(l.energy_savings_pct, 4)},
            {"time_penalty_pct", json_fixed(l.time_penalty_pct, 4)},
            {"max_slowdown_pct", json_fixed(l.max_slowdown_pct, 4)},
            {"link_profile", json_text_or_null(l.link_profile)},
            {"late_wakeups", l.late_wakeups},
            {"wakeup_delay_ns", l.wakeup_delay_ns},
            {"transitions", l.transitions},
            {"predictions", l.predictions},
            {"hits", l.hits},
            {"restarts", l.restarts},
            {"gt_ns", l.gt_ns ? ReportJson(*l.gt_ns) : ReportJson(nullptr)},
            {"time_at_width_ns", width_times_json(l.time_at_width_ns.data(), l.lanes)},
            {"controller_failed", l.controller_failed},
            {"controller_error",
             l.controller_failed ? ReportJson(l.controller_error) : ReportJson(nullptr)},
            {"trace", l.trace_path.empty() ? ReportJson(nullptr) : ReportJson(l.trace_path)},
            {"trace_events", l.trace_events},
            {"policy_in_force",
             l.policy_in_force.empty() ? ReportJson(nullptr) : ReportJson(l.policy_in_force)},
            {"policy_switches", l.policy_switches},
            {"burst_gap_ns", l.burst_gap_ns},
            {"widest_burst_gap_ns", l.widest_burst_gap_ns},
            {"ops_recorded", l.drain.records},
            {"ops_logged", l.ops_logged},
            {"ops_dropped", l.ops_dropped},
            {"drain_wakeups", l.drain.wakeups},
            {"ops_late", l.drain.late},
    };
}

}  // namespace

std::string format_text_report(const RankReportData& data)
{
    const ProcessIdentity& who    = data.who;
    const slim_traffic_t& traffic = data.traffic;
    const std::string rank = who.rank >= 0 ? std::to_string(who.rank) : std::string("unknown");
    std::string out        = "slimlink report: rank " + rank + ", host " + who.host + ", pid " +
                      std::to_string(who.pid) + "\n";
    std::array<char, 160> header{};
    std::snprintf(header.data(), header.size(), "  %-10s %14s %16s %14s %16s\n", "operation",
                  "sent count", "sent bytes", "recv count", "recv bytes");
    out.append(header.data());

    bool any = false;
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        const slim_counter_t& sent = traffic.op[op][SLIM_DIR_SEND];
        const slim_counter_t& recv = traffic.op[op][SLIM_DIR_RECV];
        if (is_zero(sent) && is_zero(recv)) {
            continue;
        }
        any = true;
        out.append(text_row(slim_op_name(static_cast<slim_op_t>(op)), sent, recv));
    }
    if (!any) {
        out.append("  (no traffic passed through slim)\n");
    }
    out.append(text_row("total", total(traffic, SLIM_DIR_SEND), total(traffic, SLIM_DIR_RECV)));
    out.append(text_packing(data.packing, data.bound, data.puts, data.unseen));
    out.append(text_live(data.live));
    out.append(text_cpu(data.live));
    if (data.errors_swallowed != 0) {
        out.append("  errors swallowed " + std::to_string(data.errors_swallowed) +
                   " (logged as they happened)\n");
    }
    return out;
}

std::string format_json_report(const RankReportData& data)
{
    const ProcessIdentity& who    = data.who;
    const slim_traffic_t& traffic = data.traffic;
    ReportJson operations         = ReportJson::object();
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        operations[slim_op_name(static_cast<slim_op_t>(op))] =
                directions_json(traffic.op[op][SLIM_DIR_SEND], traffic.op[op][SLIM_DIR_RECV]);
    }
    ReportJson report = {
            {"schema", report_schema},
            {"rank", who.rank},
            {"host", who.host},
            {"pid", who.pid},
            {"traffic", operations},
            {"totals",
             directions_json(total(traffic, SLIM_DIR_SEND), total(traffic, SLIM_DIR_RECV))},
            {"packing", packing_json(data.packing, data.bound, data.puts, data.unseen)},
            {"link", data.live != nullptr ? live_json(*data.live) : ReportJson(nullptr)},
    };
    // Only with UCX_SLIM_CPU=on: other reports keep their fields.
    if (data.live != nullptr && data.live->cpu) {
        const live::LiveSummary& l = *data.live;
        report["cpu"]              = {{"wait_mode", l.wait_mode},
                                      {"waits", l.waits},
                                      {"wait_ns", l.wait_ns},
                                      {"blocked_ns", l.wait_blocked_ns},
                                      {"blocks", l.wait_blocks}};
        if (l.cpu_live) {
            report["cpu"]["live"] = cpu_live_json(*l.cpu_live);
        }
    }
    // Only when some were: a clean run's report keeps its fields.
    if (data.errors_swallowed != 0) {
        report["errors_swallowed"] = data.errors_swallowed;
    }
    return json_line(report);
}

namespace {

RankReportData rank_data(const ProcessIdentity& who, const slim_traffic_t& traffic,
                         const slim_packing_stats_t& packing, const live::LiveSummary *live,
                         ErrorBound bound, const PackingMonitor::PutCounts& puts)
{
    RankReportData data;
    data.who     = who;
    data.traffic = traffic;
    data.packing = packing;
    data.live    = live;
    data.bound   = bound;
    data.puts    = puts;
    return data;
}

}  // namespace

std::string format_text_report(const ProcessIdentity& who, const slim_traffic_t& traffic,
                               const slim_packing_stats_t& packing, const live::LiveSummary *live,
                               ErrorBound bound, const PackingMonitor::PutCounts& puts)
{
    return format_text_report(rank_data(who, traffic, packing, live, bound, puts));
}

std::string format_json_report(const ProcessIdentity& who, const slim_traffic_t& traffic,
                               const slim_packing_stats_t& packing, const live::LiveSummary *live,
                               ErrorBound bound, const PackingMonitor::PutCounts& puts)
{
    return format_json_report(rank_data(who, traffic, packing, live, bound, puts));
}

void write_report(const ReportTarget& target, const RankReportData& data)
{
    switch (target.kind) {
    case ReportTarget::Kind::none: return;
    case ReportTarget::Kind::stdout_text:
        write_report_content(target, format_text_report(data));
        return;
    case ReportTarget::Kind::json_file:
        write_report_content(target, format_json_report(data));
        return;
    }
}

void write_report(const ReportTarget& target, const ProcessIdentity& who,
                  const slim_traffic_t& traffic, const slim_packing_stats_t& packing,
                  const live::LiveSummary *live, ErrorBound bound,
                  const PackingMonitor::PutCounts& puts)
{
    write_report(target, rank_data(who, traffic, packing, live, bound, puts));
}

void write_report_content(const ReportTarget& target, const std::string& content)
{
    switch (target.kind) {
    case ReportTarget::Kind::none: return;
    case ReportTarget::Kind::stdout_text: {
        // The application's buffered output comes first.
        std::fflush(stdout);
        write_all(STDOUT_FILENO, content);
        return;
    }
    case ReportTarget::Kind::json_file: {
        // O_APPEND: every rank appends its lines atomically to a shared file.
        // Mode 0644 (reports are for reading); never through a symbolic link
        // or into another user's file (base/output_file.h).
        const Fd fd{base::open_output_file(target.path, base::ExistingFile::append, 0644)};
        write_all(fd.get(), content);
        return;
    }
    }
}

}  // namespace slim

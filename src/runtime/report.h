/* SPDX-License-Identifier: BSD-3-Clause */
// The per-rank exit report (UCX_SLIM_REPORT): formatting is pure, writing is
// one write() so that ranks sharing a terminal or a file never interleave.
#ifndef SLIM_RUNTIME_REPORT_H
#define SLIM_RUNTIME_REPORT_H

#include "configuration.h"
#include "live/live_loop.h"
#include "packing_monitor.h"
#include "process_identity.h"
#include "slimlink.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace slim {

inline constexpr const char *report_schema = "slimlink.report.v1";

// Everything a rank's report shows, gathered once at exit (rank_report.cpp).
// A new report field is a member here, its line in the text and JSON
// formatters below, and its place in report.schema.json.
struct RankReportData {
    ProcessIdentity who;
    slim_traffic_t traffic{};
    slim_packing_stats_t packing{};
    const live::LiveSummary *live = nullptr;  // none: the live loop did not run
    ErrorBound bound;
    PackingMonitor::PutCounts puts;
    // Synchronous sends UCP copied out of slim's sight while memory was
    // marked; shown when non-zero.
    PackingMonitor::Unseen unseen;
    // Errors that could not be passed on (base/error.h); shown when non-zero.
    std::uint64_t errors_swallowed = 0;
};

std::string format_text_report(const RankReportData& data);
std::string format_json_report(const RankReportData& data);
void write_report(const ReportTarget& target, const RankReportData& data);

// The same, field by field (the tests build reports this way).

// Text block for UCX_SLIM_REPORT=stdout: rank, host, pid, then one row per
// operation kind with non-zero counters, then totals.
// A packing block follows when anything marked was sent or a frame arrived;
// it ends with the bound on the relative error packing introduced, when
// anything was packed. `puts` (packed puts, rejected expand notices, puts
// unpacked for want of a bounce buffer) adds a line when any is non-zero.
// RankReportData::unseen adds one (the synchronous sends slim could not see)
// when non-zero.
std::string format_text_report(const ProcessIdentity& who, const slim_traffic_t& traffic,
                               const slim_packing_stats_t& packing = {},
                               const live::LiveSummary *live = nullptr, ErrorBound bound = {},
                               const PackingMonitor::PutCounts& puts = {});

// One JSON Lines record (schema slimlink.report.v1, documented in slimlink(7)),
// terminated by '\n'. Every operation kind is present, zero or not; the
// packing object has a `puts` object only when `puts` has a non-zero count.
// (RankReportData::unseen: an `unseen` object only when non-zero.)
std::string format_json_report(const ProcessIdentity& who, const slim_traffic_t& traffic,
                               const slim_packing_stats_t& packing = {},
                               const live::LiveSummary *live = nullptr, ErrorBound bound = {},
                               const PackingMonitor::PutCounts& puts = {});

// `v` with `decimals` decimals ("12.50"); a rounding-level negative prints
// as zero, not "-0.0".
std::string format_fixed(double v, int decimals);

// The error bound for people: "2^-28 (3.7e-09)", or "-" when nothing was packed.
std::string text_error_bound(ErrorBound bound);

// Writes the report to its target: stdout (text) or appends to the JSON file
// (O_APPEND, created 0644). Throws std::system_error on I/O errors.
void write_report(const ReportTarget& target, const ProcessIdentity& who,
                  const slim_traffic_t& traffic, const slim_packing_stats_t& packing = {},
                  const live::LiveSummary *live = nullptr, ErrorBound bound = {},
                  const PackingMonitor::PutCounts& puts = {});

// Writes already formatted text (stdout target) or JSON lines (JSON target)
// with one write(), as write_report does; nothing for none.
void write_report_content(const ReportTarget& target, const std::string& content);

}  // namespace slim

#endif

// The per-rank exit report (UCX_SLIM_REPORT): formatting is pure, writing is
// one write() so that ranks sharing a terminal or a file never interleave.
#ifndef SLIM_RUNTIME_REPORT_H
#define SLIM_RUNTIME_REPORT_H

#include "configuration.h"
#include "live/live_loop.h"
#include "process_identity.h"
#include "slimlink.h"

#include <string>
#include <string_view>

namespace slim {

inline constexpr const char *report_schema = "slimlink.report.v1";

// Text block for UCX_SLIM_REPORT=stdout: rank, host, pid, then one row per
// operation kind with non-zero counters, then totals.
// A packing block follows when anything marked was sent or a frame arrived.
std::string format_text_report(const ProcessIdentity &who, const slim_traffic_t &traffic,
                               const slim_packing_stats_t &packing = {},
                               const live::LiveSummary *live = nullptr);

// One JSON Lines record (schema slimlink.report.v1, documented in README.md),
// terminated by '\n'. Every operation kind is present, zero or not.
std::string format_json_report(const ProcessIdentity &who, const slim_traffic_t &traffic,
                               const slim_packing_stats_t &packing = {},
                               const live::LiveSummary *live = nullptr);

// JSON string literal for `text`, quotes included.
std::string json_quote(std::string_view text);

// Writes the report to its target: stdout (text) or appends to the JSON file
// (O_APPEND, created 0644). Throws std::system_error on I/O errors.
void write_report(const ReportTarget &target, const ProcessIdentity &who,
                  const slim_traffic_t &traffic, const slim_packing_stats_t &packing = {},
                  const live::LiveSummary *live = nullptr);

} // namespace slim

#endif

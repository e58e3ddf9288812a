/* SPDX-License-Identifier: BSD-3-Clause */
// This rank's exit report (UCX_SLIM_REPORT) and its hand-over to the node
// report: gathers what the report shows (RankReportData), writes it, and at
// exit deposits the rank's record with the node service, whose reporter
// then writes the node's table for every local rank.
#ifndef SLIM_RUNTIME_RANK_REPORT_H
#define SLIM_RUNTIME_RANK_REPORT_H

#include "configuration.h"
#include "live/live_loop.h"
#include "report.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slim {

class ServiceAttachment;

// What the report shows of this process now: traffic, packing, the live
// loop's totals (`live`, may be null) and the errors swallowed so far.
RankReportData gather_rank_report(const live::LiveSummary *live);

class RankReport {
public:
    // Writes the report `config` asks for, once per process (Engine). A
    // rank's text report on stdout waits for hand_over() when a service
    // drives the link: the node report may show it instead. I/O errors are
    // logged and counted, never thrown.
    void write(const Config& config, const std::optional<live::LiveSummary>& live,
               const ServiceAttachment& service) noexcept;

    // At exit, after write(): hands this rank's record to the node service,
    // and writes the job's node report when the service names this rank its
    // reporter; then leaves the service. Never throws.
    void hand_over(const Config& config, ServiceAttachment& service) noexcept;

    // Says once how the trace ended (written, incomplete, never created:
    // `open_error` was said at start).
    static void log_trace_outcome(const live::LiveSummary& live,
                                  const std::string& open_error) noexcept;

private:
    // What write() left for hand_over().
    std::optional<std::vector<std::uint8_t>> pending_record_;
    std::string pending_text_;  // stdout: the rank's block
};

}  // namespace slim

#endif

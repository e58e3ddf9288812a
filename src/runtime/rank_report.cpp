// SPDX-License-Identifier: BSD-3-Clause
#include "rank_report.h"

#include "base/error.h"
#include "base/log.h"
#include "node_report.h"
#include "packing_monitor.h"
#include "process_identity.h"
#include "service_attach.h"
#include "traffic_monitor.h"

namespace slim {

RankReportData gather_rank_report(const live::LiveSummary *live)
{
    RankReportData data;
    data.who              = this_process();
    data.traffic          = process_traffic_snapshot();
    data.packing          = process_packing().snapshot();
    data.bound            = process_packing().error_bound();
    data.puts             = process_packing().put_counts();
    data.unseen           = process_packing().unseen();
    data.live             = live;
    data.errors_swallowed = swallowed_errors();
    return data;
}

void RankReport::log_trace_outcome(const live::LiveSummary& live,
                                   const std::string& open_error) noexcept
{
    if (live.trace_path.empty()) {
        return;
    }
    if (!open_error.empty() && live.trace_error == open_error) {
        // Not created: said at start.
    } else if (!live.trace_error.empty()) {
        logger().error("UCX_SLIM_TRACE: the trace {} is incomplete: {}", live.trace_path,
                       live.trace_error);
    } else {
        logger().info("trace {}: {} events written", live.trace_path, live.trace_events);
    }
}

void RankReport::write(const Config& config, const std::optional<live::LiveSummary>& live,
                       const ServiceAttachment& service) noexcept
{
    if (config.report.kind == ReportTarget::Kind::none) {
        return;
    }
    if (config.forward_only) {
        logger().info("UCX_SLIM_FORWARD_ONLY=y: nothing was observed, no report");
        return;
    }
    try {
        const RankReportData data = gather_rank_report(live ? &*live : nullptr);
        if (data.unseen.sync_sends != 0) {
            // Also said here: on stdout under a node service only the
            // reporter prints its block, and the node report has no room
            // for this count.
            logger().warn("{} synchronous sends ({} bytes) went by am_bcopy while memory was "
                          "marked, out of slim's sight: marked data in them travelled exact and "
                          "is in none of the packing counts",
                          data.unseen.sync_sends, data.unseen.sync_bytes);
        }
        if (service) {
            const RankRecord record =
                    make_rank_record(data.who, data.traffic, data.packing, data.bound, data.live);
            const auto *bytes = reinterpret_cast<const std::uint8_t *>(&record);
            pending_record_.emplace(bytes, bytes + sizeof record);
        }
        if (config.report.kind == ReportTarget::Kind::stdout_text && service) {
            // On stdout the node report shows every local rank's row: this
            // block is printed only by the reporter, or when no node report
            // comes (hand_over()).
            pending_text_ = format_text_report(data);
            return;
        }
        write_report(config.report, data);
    } catch (const std::exception& e) {
        static const std::string stdout_name = "stdout";
        note_swallowed("cannot write the report",
                       config.report.kind == ReportTarget::Kind::json_file ? config.report.path
                                                                           : stdout_name,
                       e);
    }
}

void RankReport::hand_over(const Config& config, ServiceAttachment& service) noexcept
{
    try {
        bool shown = false;
        if (service && pending_record_ && config.report.kind != ReportTarget::Kind::none) {
            try {
                const std::optional<link::ReceivedReport> received =
                        service.client()->deposit(rank_record_version, pending_record_->data(),
                                                  pending_record_->size(), config.report_wait);
                if (received) {
                    if (!pending_text_.empty()) {
                        write_report_content(config.report, pending_text_);
                        pending_text_.clear();
                    }
                    write_node_report(config.report, this_process(),
                                      collection_from_service(*received));
                }
                shown = true;
            } catch (const link::ServiceError& e) {
                logger().warn("node report: {}; this rank writes its own report", e.what());
            }
        }
        if (!shown && !pending_text_.empty()) {
            write_report_content(config.report, pending_text_);
        }
    } catch (const std::exception& e) {
        note_swallowed("node report", e);
    }
    pending_text_.clear();
    service.detach();
}

}  // namespace slim

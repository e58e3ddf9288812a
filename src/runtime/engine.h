/* SPDX-License-Identifier: BSD-3-Clause */
// The per-process Engine: created by the first slim_core_init() from the
// configuration, it puts the process's parts together and ends them at
// exit. Each part has its own room:
//   recording.h        the operation log, the live loop and its drain
//   service_attach.h   the node service that drives the port, if any
//   rank_report.h      the exit report and its hand-over to the node report
//   pack/region_registry.h  the buffers marked through slim_mark*()
#ifndef SLIM_RUNTIME_ENGINE_H
#define SLIM_RUNTIME_ENGINE_H

#include "configuration.h"
#include "pack/region_registry.h"
#include "rank_report.h"
#include "recording.h"
#include "service_attach.h"
#include "slim_core.h"

#include <atomic>

namespace slim {

class Engine {
public:
    // Builds the Engine once (std::call_once) from the process environment;
    // every call returns the first call's status. A bad configuration is
    // logged once and yields SLIM_ERR_CONFIG from then on.
    static slim_status_t init() noexcept;

    // The Engine, or nullptr when init() has not succeeded.
    static Engine *get() noexcept;

    explicit Engine(Config config);

    const Config& config() const noexcept { return config_; }
    const precision::PrecisionRules& policy() const noexcept { return config_.policy; }

    // Buffers marked through slim_mark*(); the send path reads it lock-free.
    pack::RegionRegistry& regions() noexcept { return regions_; }
    const pack::RegionRegistry& regions() const noexcept { return regions_; }

    // True while anything is marked in this process: otherwise the send
    // path skips the registry with one relaxed load.
    bool any_marked() const noexcept { return regions_.size() != 0; }

    // What the transport records through (recording.h). Empty under
    // UCX_SLIM_FORWARD_ONLY: nothing is recorded.
    Recording& recording() noexcept { return recording_; }

    // Ends the drain thread (at exit, before static objects it may use are
    // destroyed); idempotent.
    void stop_timer() noexcept { recording_.stop(); }

    // Ends the live loop (the link goes back to full width, the trace is
    // closed) and writes the report the configuration asks for; only the
    // first call in the process does. Never throws.
    void report() noexcept;

    // At exit, after report(): hands this rank's record to the node service
    // (rank_report.h), then leaves the service. Never throws.
    void report_node() noexcept { rank_report_.hand_over(config_, service_); }

private:
    Config config_;
    pack::RegionRegistry regions_;
    ServiceAttachment service_;
    Recording recording_;  // after service_: its backend uses the client
    RankReport rank_report_;
    std::atomic<bool> reported_{false};
};

}  // namespace slim

#endif

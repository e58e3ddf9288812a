// SPDX-License-Identifier: BSD-3-Clause
#include "engine.h"

#include "base/error.h"
#include "base/log.h"
#include "base/no_destructor.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <system_error>

namespace slim {

namespace {

std::once_flag g_init_once;
slim_status_t g_init_status = SLIM_ERR_INTERNAL;
std::atomic<Engine *> g_engine{nullptr};

void report_at_exit()
{
    if (Engine *engine = Engine::get()) {
        engine->stop_timer();
        engine->report();
        // The reporter waits for the other local ranks here, at exit, and
        // not in report(), which the transport may call inside MPI_Finalize.
        engine->report_node();
    }
}

slim_status_t create_engine()
{
    Config config;
    try {
        config = Config::from_ucx();
    } catch (const ConfigError& e) {
        // At the level the user asked for, so that a bad UCX_SLIM_REPORT is
        // still reported (or silenced) as asked.
        set_log_level(Config::log_level_for_errors());
        logger().error("invalid configuration, the slim transport is disabled: {}", e.what());
        return SLIM_ERR_CONFIG;
    }
    set_log_level(config.log_level);

    // Never destroyed: UCX teardown and our own atexit hook may use it last.
    static NoDestructor<Engine> engine{std::move(config)};
    g_engine.store(engine.get(), std::memory_order_release);

    // Registered after the Engine exists so the hook always finds it.
    if (std::atexit(report_at_exit) != 0) {
        logger().warn("cannot register the exit report (atexit failed); "
                      "the report is written only when the slim transport closes");
    }
    const Config& c = engine->config();
    logger().debug("slimlink {} started: inner transport {}, report {}, log level {}, "
                   "lossy packing {} (UCX_SLIM_PACKING={}, steering UCP: {})",
                   slim_version(), c.inner,
                   c.report.kind == ReportTarget::Kind::none          ? "none"
                   : c.report.kind == ReportTarget::Kind::stdout_text ? "stdout"
                                                                      : c.report.path.c_str(),
                   to_string(c.log_level),
                   c.policy.lossy() ? "policy packs" : "policy packs nothing", to_string(c.packing),
                   c.packing_steers() ? "yes" : "no");
    return SLIM_OK;
}

}  // namespace

Engine::Engine(Config config) : config_(std::move(config))
{
    // Forward-only (UCX_SLIM_FORWARD_ONLY): nothing is recorded, so there
    // is no loop, no drain thread and no node service to attach to.
    if (!config_.forward_only) {
        recording_.start(config_, service_);
    }
}

slim_status_t Engine::init() noexcept
{
    try {
        std::call_once(g_init_once, [] {
            try {
                g_init_status = create_engine();
            } catch (const std::bad_alloc&) {
                g_init_status = SLIM_ERR_NO_MEMORY;
            } catch (const std::exception& e) {
                note_swallowed("the slim transport cannot start", e);
                g_init_status = SLIM_ERR_INTERNAL;
            }
        });
    } catch (const std::system_error& e) {
        // call_once itself failed: nothing was created.
        note_swallowed("the slim transport cannot start", e);
        return SLIM_ERR_INTERNAL;
    }
    return g_init_status;
}

Engine *Engine::get() noexcept { return g_engine.load(std::memory_order_acquire); }

void Engine::report() noexcept
{
    if (reported_.exchange(true)) {
        return;
    }
    // Whatever the report setting: the loop ends, the link is restored and
    // the trace is flushed and closed (a trace-only run lost its tail).
    const std::optional<live::LiveSummary> live = recording_.finish(service_);
    if (live) {
        RankReport::log_trace_outcome(*live, recording_.trace_open_error());
    }
    rank_report_.write(config_, live, service_);
}

}  // namespace slim

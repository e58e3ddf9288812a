#include "engine.h"

#include "log.h"
#include "node_report.h"
#include "packing_monitor.h"
#include "no_destructor.h"
#include "process_identity.h"
#include "report.h"
#include "traffic_monitor.h"

#include <cstdlib>
#include <mutex>
#include <new>
#include <optional>

namespace slim {

namespace {

std::once_flag       g_init_once;
slim_status_t        g_init_status = SLIM_ERR_INTERNAL;
std::atomic<Engine *> g_engine{nullptr};

// The log level alone, so that a bad UCX_SLIM_REPORT is still reported at the
// level the user asked for; the default when the level itself is bad.
LogLevel log_level_for_errors(const EnvLookup &lookup)
{
    try {
        return Config::from_lookup([&](const char *name) -> std::optional<std::string> {
                   return std::string_view{name} == Config::log_level_var ? lookup(name)
                                                                          : std::nullopt;
               }).log_level;
    } catch (const ConfigError &) {
        return Config{}.log_level;
    }
}

void report_at_exit()
{
    if (Engine *engine = Engine::get()) {
        engine->stop_timer();
        engine->report();
        // The node leader waits for the other local ranks here, at exit, and
        // not in report(), which the transport may call inside MPI_Finalize.
        node_report_finish(engine->config().report, this_process(),
                           engine->config().report_wait);
    }
}

slim_status_t create_engine()
{
    const EnvLookup lookup = process_environment();
    Config          config;
    try {
        config = Config::from_lookup(lookup);
    } catch (const ConfigError &e) {
        set_log_level(log_level_for_errors(lookup));
        logger().error("invalid configuration, the slim transport is disabled: {}", e.what());
        return SLIM_ERR_CONFIG;
    }
    set_log_level(config.log_level);

    // Never destroyed: UCX teardown and our own atexit hook may use it last.
    static NoDestructor<Engine> engine{std::move(config)};
    g_engine.store(engine.get(), std::memory_order_release);

    // UCX's v2 protocols (off by default in 1.13) send medium and large
    // messages by am_bcopy even when slim withholds put/get zcopy: marked
    // data there is invisible to slim and cannot even be counted as missed.
    if (engine->config().packing_steers()) {
        const std::optional<std::string> proto = lookup("UCX_PROTO_ENABLE");
        if (proto && (*proto == "y" || *proto == "yes" || *proto == "on" || *proto == "1")) {
            logger().warn("UCX_PROTO_ENABLE={}: UCX's v2 protocols send messages of about "
                          "24 KiB and more by am_bcopy, where slim cannot see or pack marked "
                          "data (nor count it as missed); unset it for lossy packing",
                          *proto);
        }
    }

    // Registered after the Engine exists so the hook always finds it.
    if (std::atexit(report_at_exit) != 0) {
        logger().warn("cannot register the exit report (atexit failed); "
                      "the report is written only when the slim transport closes");
    }
    // Now, inside MPI_Init: the node leader learns who to wait for at exit.
    node_report_join(this_process(), engine->config().report);
    const Config &c = engine->config();
    logger().debug("slimlink {} started: inner transport {}, report {}, log level {}, "
                   "lossy packing {} (UCX_SLIM_PACKING={}, steering UCP: {})",
                   slim_version(), c.inner,
                   c.report.kind == ReportTarget::Kind::none          ? "none"
                   : c.report.kind == ReportTarget::Kind::stdout_text ? "stdout"
                                                                      : c.report.path.c_str(),
                   to_string(c.log_level), c.policy.lossy() ? "policy packs" : "policy packs nothing",
                   to_string(c.packing), c.packing_steers() ? "yes" : "no");
    return SLIM_OK;
}

} // namespace

Engine::Engine(Config config) : config_(std::move(config)) { start_live(); }

void Engine::start_live() noexcept
{
    try {
        live::LiveConfig lc;
        lc.kind                = config_.predictor;
        lc.backend_name        = to_string(config_.link);
        lc.backend.exec_template = config_.link_exec;
        lc.backend.inject_delay  = config_.inject_delay;
        if (!config_.trace_dir.empty()) {
            const ProcessIdentity &who = this_process();
            lc.trace_path = config_.trace_dir + "/" +
                            (who.rank >= 0 ? "rank" + std::to_string(who.rank)
                                           : "pid" + std::to_string(who.pid)) +
                            ".trace";
        }
        live_ = std::make_unique<live::LiveLoop>(std::move(lc));
        if (config_.predictor != live::PredictorKind::off) {
            try {
                timer_ = std::make_unique<live::LiveTimer>(live_mutex_, *live_);
            } catch (const std::exception &e) {
                // Bursts then end at the next operation or transport
                // progress: the loop still works, it just sees less idle time.
                logger().warn("the live loop's timer thread cannot start ({}); idle periods "
                              "are seen only when MPI calls into the transport",
                              e.what());
            }
        }
    } catch (const std::exception &e) {
        live_.reset();
        try {
            logger().error("the live link loop cannot start ({}); the link stays at full width",
                           e.what());
        } catch (...) {
        }
    } catch (...) {
        live_.reset();
    }
}

void Engine::on_traffic(const live::Traffic &traffic) noexcept
{
    if (!live_) {
        return;
    }
    try {
        const std::lock_guard<std::mutex> lock(live_mutex_);
        live_->on_traffic(traffic);
        poll_wanted_.store(live_->wants_poll(), std::memory_order_relaxed);
        if (timer_) {
            timer_->kick();
        }
    } catch (...) {
    }
}

void Engine::region_begin(double ratio) noexcept
{
    try {
        const std::lock_guard<std::mutex> lock(live_mutex_);
        if (region_depth_++ > 0) {
            logger().info("slim_region_begin inside a region (depth {}): the outer region "
                          "keeps the link", region_depth_);
            return;
        }
        if (live_) {
            live_->region_begin(ratio);
            poll_wanted_.store(live_->wants_poll(), std::memory_order_relaxed);
            if (timer_) {
                timer_->kick();
            }
        }
    } catch (...) {
    }
}

bool Engine::region_end() noexcept
{
    try {
        const std::lock_guard<std::mutex> lock(live_mutex_);
        if (region_depth_ == 0) {
            logger().warn("slim_region_end without slim_region_begin: ignored");
            return false;
        }
        if (--region_depth_ == 0 && live_) {
            live_->region_end();
        }
        return true;
    } catch (...) {
        return false;
    }
}

void Engine::poll_slow() noexcept
{
    if (!live_ || !live_mutex_.try_lock()) {
        return; // another thread is in the loop: it polls for us
    }
    try {
        live_->poll();
        poll_wanted_.store(live_->wants_poll(), std::memory_order_relaxed);
        if (timer_) {
            timer_->kick();
        }
    } catch (...) {
    }
    live_mutex_.unlock();
}

void Engine::stop_timer() noexcept
{
    try {
        if (timer_) {
            timer_->stop();
        }
    } catch (...) {
    }
}

std::optional<live::LiveSummary> Engine::finish_live() noexcept
{
    if (!live_) {
        return std::nullopt;
    }
    stop_timer();
    try {
        const std::lock_guard<std::mutex> lock(live_mutex_);
        if (!final_live_) {
            final_live_ = live_->summary(true);
            poll_wanted_.store(false, std::memory_order_relaxed);
        }
        return final_live_;
    } catch (...) {
        return std::nullopt;
    }
}

slim_status_t Engine::init() noexcept
{
    try {
        std::call_once(g_init_once, [] {
            try {
                g_init_status = create_engine();
            } catch (const std::bad_alloc &) {
                g_init_status = SLIM_ERR_NO_MEMORY;
            } catch (...) {
                g_init_status = SLIM_ERR_INTERNAL;
            }
        });
    } catch (...) {
        // call_once itself failed (std::system_error): nothing was created.
        return SLIM_ERR_INTERNAL;
    }
    return g_init_status;
}

Engine *Engine::get() noexcept { return g_engine.load(std::memory_order_acquire); }

void Engine::report() noexcept
{
    if (config_.report.kind == ReportTarget::Kind::none || reported_.exchange(true)) {
        return;
    }
    try {
        const std::optional<live::LiveSummary> live = finish_live();
        const ProcessIdentity     &who     = this_process();
        const slim_traffic_t       traffic = process_traffic().snapshot();
        const slim_packing_stats_t packing = process_packing().snapshot();
        const ErrorBound           bound   = process_packing().error_bound();
        const live::LiveSummary   *summary = live ? &*live : nullptr;
        const bool shown_by_leader =
                node_report_deposit(make_rank_record(who, traffic, packing, bound, summary));
        // On stdout the node leader prints every local rank's row; the other
        // ranks keep quiet unless the leader cannot show them.
        if (shown_by_leader && who.local.local_rank > 0 &&
            config_.report.kind == ReportTarget::Kind::stdout_text) {
            return;
        }
        write_report(config_.report, who, traffic, packing, summary, bound);
    } catch (const std::exception &e) {
        try {
            logger().error("cannot write the report ({}): {}",
                           config_.report.kind == ReportTarget::Kind::json_file
                                   ? config_.report.path
                                   : std::string("stdout"),
                           e.what());
        } catch (...) {
        }
    } catch (...) {
    }
}

} // namespace slim

#include "engine.h"

#include "log.h"
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
        engine->report();
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

    // Registered after the Engine exists so the hook always finds it.
    if (std::atexit(report_at_exit) != 0) {
        logger().warn("cannot register the exit report (atexit failed); "
                      "the report is written only when the slim transport closes");
    }
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

Engine::Engine(Config config) : config_(std::move(config)) {}

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
        write_report(config_.report, this_process(), process_traffic().snapshot(),
                     process_packing().snapshot());
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

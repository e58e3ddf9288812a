// SPDX-License-Identifier: BSD-3-Clause
#include "base/log.h"

#include "base/error.h"
#include "base/no_destructor.h"

#include <spdlog/sinks/stdout_sinks.h>

#include <atomic>
#include <memory>
#include <new>

#include <unistd.h>

namespace slim {

namespace {

std::atomic<LogLabelSource> label_source{nullptr};

std::string process_label()
{
    if (const LogLabelSource source = label_source.load(std::memory_order_acquire)) {
        return source();
    }
    return "pid" + std::to_string(::getpid());
}

spdlog::level::level_enum to_spdlog(LogLevel level)
{
    switch (level) {
    case LogLevel::off: return spdlog::level::off;
    case LogLevel::error: return spdlog::level::err;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::trace: return spdlog::level::trace;
    }
    return spdlog::level::warn;
}

spdlog::logger make_logger()
{
    spdlog::logger slim_logger{"slim", std::make_shared<spdlog::sinks::stderr_sink_mt>()};
    slim_logger.set_pattern(log_pattern(process_label()));
    slim_logger.set_level(to_spdlog(LogLevel::warn));
    // Errors must reach the user even if the process dies right after.
    slim_logger.flush_on(spdlog::level::warn);
    // A line that could not be written is lost; the report counts it.
    slim_logger.set_error_handler([](const std::string&) { count_swallowed(); });
    return slim_logger;
}

// Without memory for the sink and pattern, a logger without sinks: its
// lines are dropped (and counted), the process goes on.
spdlog::logger make_logger_or_mute() noexcept
{
    try {
        return make_logger();
    } catch (const std::bad_alloc&) {
        count_swallowed();
        spdlog::logger mute{"slim"};
        mute.set_error_handler([](const std::string&) { count_swallowed(); });
        return mute;
    }
}

}  // namespace

const char *to_string(LogLevel level) noexcept
{
    switch (level) {
    case LogLevel::off: return "off";
    case LogLevel::error: return "error";
    case LogLevel::warn: return "warn";
    case LogLevel::info: return "info";
    case LogLevel::debug: return "debug";
    case LogLevel::trace: return "trace";
    }
    return "?";
}

std::string log_pattern(const std::string& process_label)
{
    // %l prints spdlog's level name ("warning", "error", ...).
    return "[slim " + process_label + "] %l: %v";
}

spdlog::logger& logger() noexcept
{
    static NoDestructor<spdlog::logger> instance{make_logger_or_mute()};
    return *instance;
}

void set_log_level(LogLevel level) noexcept { logger().set_level(to_spdlog(level)); }

bool log_enabled(LogLevel level) noexcept
{
    return level != LogLevel::off && logger().should_log(to_spdlog(level));
}

void set_log_label_source(LogLabelSource source)
{
    label_source.store(source, std::memory_order_release);
}

}  // namespace slim

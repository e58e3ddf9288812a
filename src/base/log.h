/* SPDX-License-Identifier: BSD-3-Clause */
// The "slim" logger: spdlog, stderr, rank in every line:
//   [slim r3] warning: ...
// The one logger of the process: the core logs through it, and the UCX
// module through slim_core_log() (src/runtime/slim_core.h), so that every
// line of slimlink has this format and follows UCX_SLIM_LOG_LEVEL.
#ifndef SLIM_BASE_LOG_H
#define SLIM_BASE_LOG_H

#include <spdlog/logger.h>

#include <string>

namespace slim {

enum class LogLevel { off, error, warn, info, debug, trace };

const char *to_string(LogLevel level) noexcept;


// The process's logger, created on first use at level warn. It is not put in
// spdlog's global registry: the application may use spdlog itself (and call
// spdlog::drop_all() or shutdown()) without affecting slimlink.
//
// Logging never throws, so it needs no try around it: spdlog catches a
// failure to format or write a line and hands it to our handler, which
// counts it as a swallowed error (base/error.h); without memory for the
// logger itself, lines are dropped and counted the same way.
spdlog::logger& logger() noexcept;

void set_log_level(LogLevel level) noexcept;

// Whether a line at `level` would be written.
bool log_enabled(LogLevel level) noexcept;

// Where the lines' process label ("r3", "pid42") comes from. The runtime,
// which knows the launcher's rank variables, installs its own; without one
// the label is "pid<N>". It takes effect when the logger is made, at its
// first use: install it before (the runtime does, as its library loads).
using LogLabelSource = std::string (*)();
void set_log_label_source(LogLabelSource source);

// The line prefix for a process label ("r3" -> "[slim r3] "), for tests.
std::string log_pattern(const std::string& process_label);

}  // namespace slim

#endif

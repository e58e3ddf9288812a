/* SPDX-License-Identifier: BSD-3-Clause */
// The "slim" logger: spdlog, stderr, rank in every line:
//   [slim r3] warning: ...
#ifndef SLIM_RUNTIME_LOG_H
#define SLIM_RUNTIME_LOG_H

#include "configuration.h"

#include <spdlog/logger.h>

#include <string>

namespace slim {

// The process's logger, created on first use at level warn. It is not put in
// spdlog's global registry: the application may use spdlog itself (and call
// spdlog::drop_all() or shutdown()) without affecting slimlink.
spdlog::logger &logger();

void set_log_level(LogLevel level);

// The line prefix for a process label ("r3" -> "[slim r3] "), for tests.
std::string log_pattern(const std::string &process_label);

} // namespace slim

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
// Environment access behind a function, so configuration and rank detection
// are testable without touching the real environment.
#ifndef SLIM_RUNTIME_ENV_H
#define SLIM_RUNTIME_ENV_H

#include <functional>
#include <optional>
#include <string>

namespace slim {

// Returns the value of a variable, or nullopt when it is unset. A variable set
// to the empty string is returned as "" (and is a bad value for most settings).
using EnvLookup = std::function<std::optional<std::string>(const char *name)>;

// Lookup in the real process environment (getenv).
EnvLookup process_environment();

}  // namespace slim

#endif

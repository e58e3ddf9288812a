/* SPDX-License-Identifier: BSD-3-Clause */
// The node service's backends by name ("emulated", "ibmad", "exec",
// "ethtool"), as
// slimlinkd --backend names them. Only the service drives a real port: a
// rank drives the emulated port and the service's client (link/tee_backend.h),
// so the real backends, and the libraries they need, stay out of the
// library ranks preload.
#pragma once

#include "link/backend.h"
#include "link/controller.h"

#include <memory>
#include <string>
#include <vector>

namespace slim::link {

// Creates the backend registered as `name`, initialised and ready; or an
// error saying why not (never throws).
BackendResult make_backend(const std::string& name, const BackendConfig& config);

// Names of the backends, in the order make_backend lists them.
std::vector<std::string> backend_names();

// The backend named `name`, or — when it cannot start (no IB hardware, no
// umad permission, a bad command) — the emulated one, after reporting why
// once: the real port is then never touched (it stays at full width) while
// the emulated accounting goes on.
std::unique_ptr<LinkBackend> make_backend_or_emulated(const std::string& name,
                                                      const BackendConfig& config,
                                                      const ErrorReporter& report);

// The real backends, one file each (backend_<name>.cpp).
BackendResult make_exec_backend(const BackendConfig& config);
BackendResult make_ibmad_backend(const BackendConfig& config);
BackendResult make_ethtool_backend(const BackendConfig& config);

}  // namespace slim::link

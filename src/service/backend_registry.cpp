// SPDX-License-Identifier: BSD-3-Clause
// The backends listed by name, as libfabric lists its providers in fi_ini:
// explicitly, rather than by static registrars, which a static link of the
// service's library would drop.
#include "service/backend_registry.h"

#include "base/log.h"

#include <exception>
#include <utility>

namespace slim::link {

namespace {

using BackendFactory = BackendResult (*)(const BackendConfig&);

struct Entry {
    const char *name;
    BackendFactory make;
};

constexpr Entry kBackends[] = {
        {"emulated", make_emulated_backend},
        {"ibmad", make_ibmad_backend},
        {"exec", make_exec_backend},
        {"ethtool", make_ethtool_backend},
};

}  // namespace

BackendResult make_backend(const std::string& name, const BackendConfig& config)
{
    BackendFactory factory = nullptr;
    std::string known;
    for (const Entry& e : kBackends) {
        known.append(known.empty() ? "" : ", ").append(e.name);
        if (name == e.name) {
            factory = e.make;
        }
    }
    if (!factory) {
        return {nullptr,
                Status::error("link backend '" + name + "' is unknown (known: " + known + ")")};
    }
    try {
        BackendResult result = factory(config);
        if (result.status && !result.backend) {
            return {nullptr, Status::error("link backend '" + name + "' returned nothing")};
        }
        return result;
    } catch (const std::exception& e) {
        return {nullptr, Status::error("link backend '" + name + "': " + e.what())};
    }
}

std::vector<std::string> backend_names()
{
    std::vector<std::string> names;
    for (const Entry& e : kBackends) {
        names.emplace_back(e.name);
    }
    return names;
}

std::unique_ptr<LinkBackend> make_backend_or_emulated(const std::string& name,
                                                      const BackendConfig& config,
                                                      const ErrorReporter& report)
{
    BackendResult result = make_backend(name, config);
    if (result.status) {
        return std::move(result.backend);
    }
    const std::string message =
            result.status.message() + "; the link stays at full width (emulated accounting only)";
    if (report) {
        report(message);
    } else {
        slim::logger().error("{}", message);
    }
    return std::move(make_emulated_backend(config).backend);
}

}  // namespace slim::link

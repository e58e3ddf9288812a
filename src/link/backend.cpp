// SPDX-License-Identifier: BSD-3-Clause
#include "link/backend.h"

#include "base/no_destructor.h"

#include <mutex>
#include <thread>
#include <utility>

namespace slim::link {

namespace {

struct Registry {
    std::mutex                                           mutex;
    std::vector<std::pair<std::string, BackendFactory>> entries{
            {"emulated", make_emulated_backend},
            {"ibmad", make_ibmad_backend},
            {"exec", make_exec_backend},
    };
};

Registry& registry()
{
    static NoDestructor<Registry> r; // never destroyed: usable from atexit
    return *r;
}

}  // namespace

Clock steady_clock_ns()
{
    return [] { return steady_now_ns(); };
}

void wait_real_time(TimeNs ns) noexcept
{
    constexpr TimeNs kSpinNs  = 200'000;
    const TimeNs     deadline = steady_now_ns() + ns;
    if (ns > kSpinNs) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(ns - kSpinNs));
    }
    while (steady_now_ns() < deadline) {
    }
}

BackendResult make_backend(const std::string& name, const BackendConfig& config)
{
    BackendFactory factory;
    std::string    known;
    {
        Registry&                   r = registry();
        std::lock_guard<std::mutex> lock(r.mutex);
        for (const auto& [n, f] : r.entries) {
            known.append(known.empty() ? "" : ", ").append(n);
            if (n == name) {
                factory = f;
            }
        }
    }
    if (!factory) {
        return {nullptr, Status::error("link backend '" + name + "' is unknown (known: " +
                                       known + ")")};
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

void register_backend(const std::string& name, BackendFactory factory)
{
    Registry&                   r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (auto& entry : r.entries) {
        if (entry.first == name) {
            entry.second = std::move(factory);
            return;
        }
    }
    r.entries.emplace_back(name, std::move(factory));
}

std::vector<std::string> backend_names()
{
    Registry&                   r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    std::vector<std::string>    names;
    for (const auto& entry : r.entries) {
        names.push_back(entry.first);
    }
    return names;
}

}  // namespace slim::link

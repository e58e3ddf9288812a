// SPDX-License-Identifier: BSD-3-Clause
// The CPU backends by name and the core lists the kernel writes
// (cpu_backend.h).
#include "service/cpu_backend.h"

#include "base/log.h"
#include "base/parse.h"
#include "service/state_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace slim::link {

namespace {

using BackendFactory = std::unique_ptr<CpuBackend> (*)(const CpuBackendConfig&, TimeNs);

struct Entry {
    const char *name;
    BackendFactory make;
};

const Entry kCpuBackends[] = {
        {"emulated", make_emulated_cpu_backend},
        {"cpufreq", [](const CpuBackendConfig& c, TimeNs) { return make_cpufreq_cpu_backend(c); }},
        {"exec", [](const CpuBackendConfig& c, TimeNs) { return make_exec_cpu_backend(c); }},
};

}  // namespace

std::unique_ptr<CpuBackend> make_cpu_backend(const std::string& name,
                                             const CpuBackendConfig& config, TimeNs now)
{
    std::string known;
    for (const Entry& e : kCpuBackends) {
        known.append(known.empty() ? "" : ", ").append(e.name);
        if (name == e.name) {
            return e.make(config, now);
        }
    }
    throw CpuBackendError("CPU backend '" + name + "' is unknown (known: " + known + ")");
}

std::vector<std::string> cpu_backend_names()
{
    std::vector<std::string> names;
    for (const Entry& e : kCpuBackends) {
        names.emplace_back(e.name);
    }
    return names;
}

void CpuBackend::use_state_file(const std::string& path)
{
    if (path.empty() || !read_state_file_text(path, 1)) {
        return;
    }
    logger().warn("slimlinkd: CPU: a previous slimlinkd left {} (cores it lowered with the values "
                  "to write back); the {} backend does not write cores, so it is left for a "
                  "service with --cpu cpufreq to restore",
                  path, name());
}

std::uint32_t low_khz_of(const cpu::CpuConfig& table)
{
    return static_cast<std::uint32_t>(table.low.ghz * 1e6 + 0.5);
}

std::string parse_cpu_list(const std::string& text, CoreSet& cores)
{
    cores.reset();
    const std::string_view all = parse::trim(text);
    std::size_t i              = 0;
    auto number                = [&](unsigned long               &out) {
        const std::size_t start = i;
        out                     = 0;
        while (i < all.size() && all[i] >= '0' && all[i] <= '9') {
            out = out * 10 + static_cast<unsigned long>(all[i] - '0');
            if (out >= service::kMaxCpus) {
                return false;
            }
            ++i;
        }
        return i > start;
    };
    const std::string bad = "core list '" + std::string(all) + "'";
    while (i < all.size()) {
        unsigned long first = 0;
        unsigned long last  = 0;
        if (!number(first)) {
            return bad + ": a core number (below " + std::to_string(service::kMaxCpus) +
                   ") expected at offset " + std::to_string(i);
        }
        last = first;
        if (i < all.size() && all[i] == '-') {
            ++i;
            if (!number(last) || last < first) {
                return bad + ": a bad range at offset " + std::to_string(i);
            }
        }
        for (unsigned long c = first; c <= last; ++c) {
            cores.set(c);
        }
        if (i < all.size()) {
            if (all[i] != ',') {
                return bad + ": ',' expected at offset " + std::to_string(i);
            }
            ++i;
        }
    }
    return {};
}

std::string format_cpu_list(const CoreSet& cores)
{
    std::string text;
    for (std::size_t c = 0; c < cores.size(); ++c) {
        if (!cores.test(c)) {
            continue;
        }
        std::size_t last = c;
        while (last + 1 < cores.size() && cores.test(last + 1)) {
            ++last;
        }
        text.append(text.empty() ? "" : ",").append(std::to_string(c));
        if (last > c) {
            text.append("-").append(std::to_string(last));
        }
        c = last;
    }
    return text;
}

std::optional<CoreSet> read_allowed_cores(std::int64_t pid, std::string& why,
                                          const std::string& proc_root)
{
    const std::string path = proc_root + "/" + std::to_string(pid) + "/status";
    std::ifstream in(path);
    if (!in) {
        why = path + ": " + std::strerror(errno);
        return std::nullopt;
    }
    const std::string key = "Cpus_allowed_list:";
    std::string line;
    while (std::getline(in, line)) {
        if (line.compare(0, key.size(), key) != 0) {
            continue;
        }
        CoreSet cores;
        if (std::string bad = parse_cpu_list(line.substr(key.size()), cores); !bad.empty()) {
            why = path + ": " + bad;
            return std::nullopt;
        }
        return cores;
    }
    why = path + ": no " + key + " line";
    return std::nullopt;
}

}  // namespace slim::link

// SPDX-License-Identifier: BSD-3-Clause
// The CPU backends by name and the core lists the kernel writes
// (cpu_backend.h).
#include "service/cpu_backend.h"

#include "base/log.h"
#include "base/parse.h"
#include "service/state_file.h"
#include "trace/trace.h"

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

std::optional<std::vector<CpuStateLine>> adopt_cpu_state_file(StateFile& state,
                                                              const std::string& path)
{
    state.set_path(path);
    if (path.empty()) {
        return std::nullopt;
    }
    const std::optional<std::string> text = read_state_file_text(path, kMaxCpuStateBytes);
    if (!text) {
        return std::nullopt;
    }
    return parse_cpu_state_file(*text).lines;
}

CpuStateFile parse_cpu_state_file(const std::string& text)
{
    CpuStateFile file;
    std::istringstream lines(text);
    std::string line;
    std::string note;  // the reason of the last note seen
    const std::string header   = "# slimlinkd pid ";
    const std::string kept_tag = kNotRestoredNote;
    while (std::getline(lines, line)) {
        if (!line.empty() && line.back() == '\r') {
            line.pop_back();
        }
        if (line.empty()) {
            continue;
        }
        if (line.compare(0, kept_tag.size(), kept_tag) == 0) {
            const std::size_t colon = line.find(": ", kept_tag.size());
            note = colon == std::string::npos ? "no reason recorded" : line.substr(colon + 2);
            if (file.not_restored.find(note) == std::string::npos) {
                file.not_restored.append(file.not_restored.empty() ? "" : "; ").append(note);
            }
            continue;
        }
        if (line[0] == '#') {
            if (file.lines.empty() && file.writer_pid == 0 &&
                line.compare(0, header.size(), header) == 0) {
                std::int64_t pid = 0;
                for (std::size_t i = header.size();
                     i < line.size() && line[i] >= '0' && line[i] <= '9' && pid < (1LL << 40);
                     ++i) {
                    pid = pid * 10 + (line[i] - '0');
                }
                file.writer_pid = pid;
            }
            continue;
        }
        CpuStateLine l;
        l.text         = line;
        l.not_restored = note;
        if (line.compare(0, 5, "exec ") == 0) {
            l.kind = "exec";
        } else if (line.compare(0, 3, "cpu") == 0) {
            l.kind = "cpufreq";
        }
        file.lines.push_back(std::move(l));
    }
    return file;
}

namespace {

// The template an exec line records: what follows its core list.
std::string exec_template_of(const std::string& line)
{
    const std::size_t cores = line.find_first_not_of(' ', 5);
    const std::size_t space = cores == std::string::npos ? cores : line.find(' ', cores);
    return space == std::string::npos ? std::string()
                                      : std::string(parse::trim(line.substr(space)));
}

}  // namespace

void restore_left_cores(const std::string& path, const CpuBackendConfig& config,
                        CpuBackend *running, TimeNs now)
{
    if (path.empty()) {
        return;
    }
    const std::optional<std::string> text = read_state_file_text(path, kMaxCpuStateBytes);
    if (text) {
        const CpuStateFile left = parse_cpu_state_file(*text);
        for (const char *kind : {"cpufreq", "exec"}) {
            if (running != nullptr && running->name() == kind) {
                continue;  // its own lines: use_state_file below
            }
            std::string lines;
            CpuBackendConfig made = config;
            for (const CpuStateLine& l : left.lines) {
                if (l.kind != kind) {
                    continue;
                }
                // exec: the first line's command; this service runs none
                // of its own (else it restores them itself).
                if (l.kind == "exec" && lines.empty()) {
                    made.exec_template = exec_template_of(l.text);
                }
                lines.append(lines.empty() ? "" : "; ").append(l.text);
            }
            if (lines.empty()) {
                continue;
            }
            try {
                // A backend of that kind only for the restore: it restores
                // its lines, keeps the others, and is gone before any core
                // is driven.
                const std::unique_ptr<CpuBackend> restorer = make_cpu_backend(kind, made, now);
                restorer->use_state_file(path);
            } catch (const CpuBackendError& e) {
                logger().error("slimlinkd: CPU: a previous slimlinkd left cores low with the {} "
                               "backend ({}: {}), and this service cannot restore them: {}; the "
                               "file is kept for a service that can",
                               kind, path, predict::escape_for_message(lines, 400), e.what());
                // Rewritten with the reason, for the next service and --status.
                const std::optional<std::string> now_text =
                        read_state_file_text(path, kMaxCpuStateBytes);
                StateFile file;
                file.set_path(path);
                for (const CpuStateLine& l :
                     parse_cpu_state_file(now_text ? *now_text : *text).lines) {
                    file.keep(l.text, l.kind == kind ? std::string(e.what()) : l.not_restored);
                }
                file.remove();  // leaves the kept lines alone
            }
        }
    }
    if (running != nullptr) {
        running->use_state_file(path);
    }
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

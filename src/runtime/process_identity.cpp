// SPDX-License-Identifier: BSD-3-Clause
#include "process_identity.h"

#include "base/log.h"

#include "base/no_destructor.h"

#include <array>
#include <charconv>
#include <climits>
#include <fstream>
#include <sstream>

#include <unistd.h>

namespace slim {

namespace {

// All of `text` as a non-negative int.
std::optional<int> whole_int(const std::string& text)
{
    int value            = -1;
    const char *first    = text.data();
    const char *last     = first + text.size();
    const auto [end, ec] = std::from_chars(first, last, value);
    if (text.empty() || ec != std::errc{} || end != last || value < 0) {
        return std::nullopt;
    }
    return value;
}

std::optional<int> int_var(const EnvLookup& lookup, const char *name)
{
    const std::optional<std::string> value = lookup(name);
    return value ? whole_int(*value) : std::nullopt;
}

std::optional<std::string> first_set(const EnvLookup& lookup,
                                     std::initializer_list<const char *> names)
{
    for (const char *name : names) {
        std::optional<std::string> value = lookup(name);
        if (value && !value->empty()) {
            return value;
        }
    }
    return std::nullopt;
}

LocalJob make_local(const char *launcher, std::optional<int> local_rank,
                    std::optional<int> local_size, const std::optional<std::string>& key)
{
    LocalJob job;
    if (!local_rank || !local_size || !key || key->empty()) {
        return job;  // the launcher is recognised, its variables are not usable
    }
    job.local_rank = *local_rank;
    job.local_size = *local_size;
    job.launcher   = launcher;
    job.key        = std::string(launcher) + "-" + *key;
    return job.known() ? job : LocalJob{};
}

// /proc/<pid>/stat: command name, parent and start time (clock ticks since
// boot; tells a process from a later one with the same pid).
struct ProcStat {
    std::string comm;
    long ppid                = 0;
    std::uint64_t start_time = 0;
};

std::optional<ProcStat> read_proc_stat(long pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!in || !std::getline(in, text)) {
        return std::nullopt;
    }
    // comm (field 2) may hold spaces and parentheses: it ends at the last ')'.
    const auto open  = text.find('(');
    const auto close = text.rfind(')');
    if (open == std::string::npos || close == std::string::npos || close < open) {
        return std::nullopt;
    }
    ProcStat stat;
    std::istringstream fields(text.substr(close + 1));
    std::string state;
    stat.comm = text.substr(open + 1, close - open - 1);
    fields >> state >> stat.ppid;  // fields 3 and 4
    std::string skip;
    for (int field = 5; field < 22; ++field) {
        fields >> skip;
    }
    fields >> stat.start_time;
    if (!fields) {
        return std::nullopt;
    }
    return stat;
}

}  // namespace

int detect_rank(const EnvLookup& lookup)
{
    for (const char *var : rank_variables) {
        if (const std::optional<int> rank = int_var(lookup, var)) {
            return *rank;
        }
    }
    return -1;
}

int slurm_tasks_on_node(const std::string& tasks_per_node, int node)
{
    // Comma-separated entries "N" or "N(xM)" (M consecutive nodes with N tasks).
    std::size_t pos = 0;
    int first       = 0;  // index of the entry's first node
    while (pos <= tasks_per_node.size() && node >= 0) {
        const std::size_t comma = std::min(tasks_per_node.find(',', pos), tasks_per_node.size());
        const std::string entry = tasks_per_node.substr(pos, comma - pos);
        const std::size_t paren = entry.find('(');
        const std::optional<int> tasks = whole_int(entry.substr(0, paren));
        std::optional<int> nodes       = 1;
        if (paren != std::string::npos) {
            const bool framed = entry.size() > paren + 3 && entry.compare(paren, 2, "(x") == 0 &&
                                entry.back() == ')';
            nodes = framed ? whole_int(entry.substr(paren + 2, entry.size() - paren - 3))
                           : std::nullopt;
        }
        if (!tasks || !nodes || *nodes == 0) {
            return -1;
        }
        if (node < first + *nodes) {
            return *tasks;
        }
        first += *nodes;
        pos = comma + 1;
    }
    return -1;
}

LocalJob detect_local_job(const EnvLookup& lookup, const HydraProxyLookup& hydra_proxy)
{
    if (lookup("MPI_LOCALRANKID")) {
        return make_local("hydra", int_var(lookup, "MPI_LOCALRANKID"),
                          int_var(lookup, "MPI_LOCALNRANKS"),
                          hydra_proxy ? hydra_proxy() : std::nullopt);
    }
    if (lookup("OMPI_COMM_WORLD_LOCAL_RANK")) {
        return make_local("openmpi", int_var(lookup, "OMPI_COMM_WORLD_LOCAL_RANK"),
                          int_var(lookup, "OMPI_COMM_WORLD_LOCAL_SIZE"),
                          first_set(lookup, {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid",
                                             "OMPI_MCA_orte_ess_jobid"}));
    }
    if (lookup("SLURM_LOCALID")) {
        const std::optional<std::string> per_node =
                first_set(lookup, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
        const std::optional<int> node = int_var(lookup, "SLURM_NODEID");
        std::optional<int> size;
        if (per_node && node) {
            const int tasks = slurm_tasks_on_node(*per_node, *node);
            size            = tasks > 0 ? std::optional<int>(tasks) : std::nullopt;
        }
        const std::optional<std::string> job  = lookup("SLURM_JOB_ID");
        const std::optional<std::string> step = lookup("SLURM_STEP_ID");
        std::optional<std::string> key;
        if (job && !job->empty() && step && !step->empty()) {
            key = *job + "." + *step;
        }
        return make_local("slurm", int_var(lookup, "SLURM_LOCALID"), size, key);
    }
    return {};
}

HydraProxyLookup hydra_proxy_of_this_process()
{
    return []() -> std::optional<std::string> {
        // Ranks are the proxy's children, or further down under wrapper
        // scripts and tools (valgrind, numactl, sh -c ...).
        long pid = static_cast<long>(::getppid());
        for (int depth = 0; depth < 16 && pid > 1; ++depth) {
            const std::optional<ProcStat> stat = read_proc_stat(pid);
            if (!stat) {
                return std::nullopt;
            }
            if (stat->comm == "hydra_pmi_proxy") {
                return std::to_string(pid) + "-" + std::to_string(stat->start_time);
            }
            pid = stat->ppid;
        }
        return std::nullopt;
    };
}

std::string ProcessIdentity::label() const
{
    return rank >= 0 ? "r" + std::to_string(rank) : "pid" + std::to_string(pid);
}

ProcessIdentity make_process_identity(const EnvLookup& lookup, const HydraProxyLookup& hydra_proxy)
{
    ProcessIdentity id;
    id.rank  = detect_rank(lookup);
    id.pid   = static_cast<long>(::getpid());
    id.local = detect_local_job(lookup, hydra_proxy ? hydra_proxy : hydra_proxy_of_this_process());
    std::array<char, HOST_NAME_MAX + 1> host{};
    if (::gethostname(host.data(), host.size() - 1) == 0) {
        id.host = host.data();
    } else {
        id.host = "unknown";
    }
    return id;
}

const ProcessIdentity& this_process()
{
    static NoDestructor<ProcessIdentity> identity{make_process_identity(process_environment())};
    return *identity;
}

namespace {

// The log lines' "[slim r3]": installed as this library loads, before its
// first line (base/log.h).
const bool log_label_installed =
        (set_log_label_source([] { return this_process().label(); }), true);

}  // namespace

}  // namespace slim

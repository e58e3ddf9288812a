/* SPDX-License-Identifier: BSD-3-Clause */
// What sets a core's frequency for slimlinkd's CPU controller
// (cpu_controller.h), as LinkBackend does for the port: the controller
// decides which cores go low, a backend only applies it and says what it
// did. One file per backend, listed by name in cpu_backend.cpp:
//   emulated  no hardware; a table of performance states per core and the
//             energy they would have used against always-full (the default)
//   cpufreq   the kernel's cpufreq files under a sysfs root
//   exec      a site command per change
// Only the service runs these: a rank never writes hardware.
#pragma once

#include "base/error.h"
#include "link/service_protocol.h"
#include "predict/cpu_model.h"
#include "predict/types.h"

#include <bitset>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace slim::link {

// Cores by number, as the kernel numbers them (cpuN).
using CoreSet = std::bitset<service::kMaxCpus>;

class CpuBackendError : public Error {
public:
    using Error::Error;
};

// The emulated backend's account from its start to a given time.
struct CpuEnergy {
    TimeNs span_ns            = 0;
    TimeNs time_low_ns        = 0;  // summed over cores, transitions excluded
    TimeNs penalty_ns         = 0;  // per raise: tau, plus the handling run at f_low (cpu_model.h)
    double joules             = 0.0;
    double baseline_joules    = 0.0;  // every core at full frequency all along
    std::uint64_t transitions = 0;
};

class CpuBackend {
public:
    virtual ~CpuBackend()                = default;
    virtual std::string name() const     = 0;
    virtual std::string describe() const = 0;
    // The cores it can set.
    virtual CoreSet cores() const = 0;
    // Every core of `cores` low (`low`) or back to full. Throws
    // CpuBackendError naming what failed; the controller then restores
    // every core (restore()) and stops driving them.
    virtual void set(const CoreSet& cores, bool low, TimeNs now) = 0;
    // Every core it changed back to what it was before (full, or the value
    // it found). Returns what could not be restored ("" when all were).
    virtual std::string restore(TimeNs now) noexcept = 0;
    // The emulated energy account up to `now`; nullopt for real hardware.
    virtual std::optional<CpuEnergy> energy(TimeNs /*now*/) const { return std::nullopt; }
    // The emulated table its energy follows; null for real hardware.
    virtual const cpu::CpuConfig *table() const { return nullptr; }
    // The cores' state file at `path` (empty: none). A backend that changes
    // hardware (cpufreq, exec) records there the cores it changes and how
    // to undo it, before the change, and removes the file once every core
    // is restored: a service killed while cores are low (SIGKILL, a crash)
    // leaves it behind, and the next one, holding the socket's lock, first
    // restores what it lists and logs it (restore_left_cores). A backend
    // restores the lines of its own kind it finds there and keeps the
    // others, and those it could not restore, in the file
    // (StateFile::keep). The emulated backend writes none.
    virtual void use_state_file(const std::string& /*path*/) {}
};

struct CpuBackendConfig {
    // cpufreq: where cpuN/cpufreq/ live (tests point it at a fake tree).
    std::string sysfs_root = "/sys/devices/system/cpu";
    // exec: the command, with {cores} (e.g. "0,2-3"), {level} (low|full)
    // and {khz} replaced; run without a shell.
    std::string exec_template;
    std::chrono::milliseconds exec_timeout{2000};
    // emulated: the node's cores (0: as many as the system has configured).
    unsigned emulated_cores = 0;
    // emulated: the core's two states, its transition and its handling,
    // the table slim-replay --cpu replays with (cpu_model.h; the defaults
    // and their sources are in slim-replay(1), CPU MODEL).
    cpu::CpuConfig table;
    // cpufreq: the low frequency (0: the lowest the core offers,
    // cpuinfo_min_freq); exec: the {khz} of "low" (0: the table's f_low).
    std::uint32_t low_khz = 0;
};

// The backend called `name`, ready; throws CpuBackendError saying why not
// (the path and the reason for cpufreq, the command for exec).
std::unique_ptr<CpuBackend> make_cpu_backend(const std::string& name,
                                             const CpuBackendConfig& config, TimeNs now);
std::vector<std::string> cpu_backend_names();

// A cores' state file, read. Each backend writes its own lines:
//   cpufreq  "cpuN FILE VALUE": the core, the file it wrote
//            (scaling_setspeed or scaling_max_freq) and the value to write
//            back;
//   exec     "exec CORES TEMPLATE": the cores it may have lowered ("0,2-3")
//            and the --cpu-exec template that did it; the template with
//            {level} full restores them;
// under a first line "# slimlinkd pid P --cpu KIND ...". A line another
// service kept (StateFile::keep) follows a note "# not restored by
// slimlinkd pid P: WHY". Other comments are ignored.
struct CpuStateLine {
    std::string kind;  // "cpufreq", "exec", or "" (a line no backend writes)
    std::string text;
    std::string not_restored;  // the note above it: why it is still there
};
struct CpuStateFile {
    std::vector<CpuStateLine> lines;  // not the comments
    std::int64_t writer_pid = 0;      // of the first line; 0: not said
    // Every distinct note's reason, "; "-separated; empty: none.
    std::string not_restored;
};
CpuStateFile parse_cpu_state_file(const std::string& text);
// Bounds what a cores' state file may make the service read: a line per
// core, a template line per service whose lines were kept.
inline constexpr std::size_t kMaxCpuStateBytes = service::kMaxCpus * 48 + 16 * 1024;

class StateFile;
// How a backend's use_state_file() starts: `state` takes `path` for the
// backend's own records, and the lines a previous service left there are
// returned; none without a path or a file.
std::optional<std::vector<CpuStateLine>> adopt_cpu_state_file(StateFile& state,
                                                              const std::string& path);

// What a previous service's cores' state file at `path` lists, restored
// first, whatever this service runs (`running`: its backend, before it
// drives a core; null for --cpu off), each kind of line by a backend of
// that kind: `running` for its own kind, else one made from `config` for
// the purpose (cpufreq: the --cpu-sysfs tree, no path taken from the file;
// exec: the template the line records, checked as --cpu-exec is). A kind
// that cannot be restored here (no cpufreq under the tree, a command that
// fails) is logged as an error and its lines stay in the file, with why,
// for a service that can; the file is never dropped unread. Then
// `running` takes the file for its own records (use_state_file).
void restore_left_cores(const std::string& path, const CpuBackendConfig& config,
                        CpuBackend *running, TimeNs now);

// The table's low frequency in kHz (exec's {khz}).
std::uint32_t low_khz_of(const cpu::CpuConfig& table);

// One file per backend.
std::unique_ptr<CpuBackend> make_emulated_cpu_backend(const CpuBackendConfig& config, TimeNs now);
std::unique_ptr<CpuBackend> make_cpufreq_cpu_backend(const CpuBackendConfig& config);
std::unique_ptr<CpuBackend> make_exec_cpu_backend(const CpuBackendConfig& config);

// "0-3,8,10-11" (the kernel's list form: Cpus_allowed_list, affected_cpus
// with blanks) into `cores`. Empty when good, else why not (a core at or
// above kMaxCpus is an error: it cannot be represented, so cannot be
// claimed either).
std::string parse_cpu_list(const std::string& text, CoreSet& cores);
// "0-3,8" back.
std::string format_cpu_list(const CoreSet& cores);

// The cores process `pid` may run on: Cpus_allowed_list of
// <proc_root>/<pid>/status. nullopt (with `why`) when it cannot be read.
std::optional<CoreSet> read_allowed_cores(std::int64_t pid, std::string& why,
                                          const std::string& proc_root = "/proc");

}  // namespace slim::link

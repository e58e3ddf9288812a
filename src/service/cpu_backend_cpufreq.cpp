// SPDX-License-Identifier: BSD-3-Clause
// The "cpufreq" CPU backend: the kernel's cpufreq files of each core,
// <root>/cpuN/cpufreq/ (root: /sys/devices/system/cpu, or a fake tree in
// tests).
//
// - Under the userspace governor a core runs at scaling_setspeed: written.
//   Under any other governor the governor picks, and scaling_max_freq caps
//   it: written instead (the governor then stays in charge below the cap).
// - Low is config.low_khz, or the core's cpuinfo_min_freq.
// - Everything is checked before anything is written: a tree without
//   cpufreq, a core without scaling_governor, a file that cannot be opened
//   for writing is a refusal naming the path and why, and no core changed.
// - The value each file held at the start is what "full" writes back, and
//   what restore() writes to every core it touched.
// - Paths come only from the directory scan at the start: nothing a client
//   sends names a file, nor does the state file (it names cores by number
//   and the file by one of the two names above).
// - The state file (CpuBackend::use_state_file): before a core is first
//   written low its line "cpuN FILE ORIGINAL" is recorded; the file goes
//   once every core is restored. A new service restores what a killed one
//   left, and takes the recorded value as the core's full; a value it
//   cannot write back, and another backend's lines, stay in the file.
#include "service/cpu_backend.h"

#include "base/log.h"
#include "service/state_file.h"
#include "trace/trace.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>

namespace slim::link {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

// The first line of a small file, without its line end; nullopt with `why`.
std::optional<std::string> read_line(const std::string& path, std::string& why)
{
    std::ifstream in(path);
    if (!in) {
        why = path + ": " + errno_text(errno);
        return std::nullopt;
    }
    std::string line;
    std::getline(in, line);
    while (!line.empty() && (line.back() == '\n' || line.back() == ' ' || line.back() == '\r')) {
        line.pop_back();
    }
    return line;
}

bool is_number(const std::string& s)
{
    return !s.empty() && s.size() <= 10 && s.find_first_not_of("0123456789") == std::string::npos;
}

// Writes `value` into a cpufreq file; empty, or why not.
std::string write_value(const std::string& path, const std::string& value)
{
    const int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        return path + ": " + errno_text(errno);
    }
    const ssize_t n = ::write(fd, value.data(), value.size());
    const int err   = n < 0 ? errno : 0;
    if (::close(fd) != 0 && n >= 0) {
        return path + ": " + errno_text(errno);
    }
    if (n < 0) {
        return path + ": writing " + value + ": " + errno_text(err);
    }
    if (static_cast<std::size_t>(n) != value.size()) {
        return path + ": writing " + value + ": short write";
    }
    return {};
}

constexpr const char *kSetspeed = "scaling_setspeed";
constexpr const char *kMaxFreq  = "scaling_max_freq";

struct Core {
    unsigned number = 0;
    std::string dir;       // <root>/cpuN/cpufreq
    std::string name;      // kSetspeed or kMaxFreq
    std::string file;      // dir/name
    std::string original;  // what it held at the start
    std::string low;       // kHz
};

class CpufreqBackend final : public CpuBackend {
public:
    CpufreqBackend(std::string root, std::vector<Core> cores, std::string governors)
        : root_(std::move(root)), list_(std::move(cores)), governors_(std::move(governors))
    {
        for (const Core& c : list_) {
            cores_.set(c.number);
        }
    }

    ~CpufreqBackend() override { (void)restore(0); }

    std::string name() const override { return "cpufreq"; }
    std::string describe() const override
    {
        return "cpufreq CPU backend: " + std::to_string(list_.size()) + " cores under " + root_ +
               " (" + governors_ + ")";
    }
    CoreSet cores() const override { return cores_; }

    void set(const CoreSet& cores, bool low, TimeNs) override
    {
        if (low) {
            record(cores);
        }
        for (const Core& c : list_) {
            if (!cores.test(c.number)) {
                continue;
            }
            // A sysfs write that fails applies nothing: only what was
            // written is restored.
            if (std::string bad = write_value(c.file, low ? c.low : c.original); !bad.empty()) {
                throw CpuBackendError("cpufreq CPU backend: " + bad);
            }
            touched_.set(c.number, low);
        }
    }

    std::string restore(TimeNs) noexcept override
    {
        std::string problems;
        for (const Core& c : list_) {
            if (!touched_.test(c.number)) {
                continue;
            }
            if (std::string bad = write_value(c.file, c.original); !bad.empty()) {
                problems.append(problems.empty() ? "" : "; ").append(bad);
                continue;
            }
            touched_.reset(c.number);
        }
        if (touched_.none() && state_.written()) {
            state_.remove();  // what a previous service left and could not be restored stays
            recorded_.reset();
        }
        return problems;
    }

    void use_state_file(const std::string& path) override
    {
        const std::optional<std::vector<CpuStateLine>> left_lines =
                adopt_cpu_state_file(state_, path);
        if (!left_lines) {
            return;
        }
        std::vector<std::string> restored;
        for (const CpuStateLine& l : *left_lines) {
            if (l.kind == "exec") {
                // Another backend's: restore_left_cores tried it first.
                state_.keep(l.text, l.not_restored);
                continue;
            }
            std::istringstream fields(l.text);
            std::string cpu_word;
            std::string file_name;
            std::string value;
            fields >> cpu_word >> file_name >> value;
            Core *core = nullptr;
            if (cpu_word.size() > 3 && cpu_word.compare(0, 3, "cpu") == 0 &&
                is_number(cpu_word.substr(3)) &&
                (file_name == kSetspeed || file_name == kMaxFreq) && is_number(value)) {
                const unsigned long number = std::stoul(cpu_word.substr(3));
                for (Core& c : list_) {
                    core = c.number == number ? &c : core;
                }
            }
            if (core == nullptr) {
                logger().warn("slimlinkd: CPU: state file {}: line '{}' names no core of {}; "
                              "ignored",
                              path, predict::escape_for_message(l.text, 80), root_);
                continue;
            }
            const std::string file = core->dir + "/" + file_name;
            if (std::string bad = write_value(file, value); !bad.empty()) {
                logger().error("slimlinkd: CPU: restoring what a previous slimlinkd left low "
                               "failed: {}; kept in {}",
                               bad, path);
                state_.keep(l.text, "cpufreq CPU backend: " + bad);
                continue;
            }
            if (file == core->file) {
                core->original = value;  // what it held before the killed service lowered it
            }
            restored.push_back(file + " = " + value);
        }
        if (!restored.empty()) {
            std::string list;
            for (const std::string& r : restored) {
                list.append(list.empty() ? "" : ", ").append(r);
            }
            logger().warn("slimlinkd: CPU: a previous slimlinkd left cores low ({}); restored "
                          "first: {}",
                          path, list);
        }
        state_.remove();  // leaves only what was kept, if anything
    }

private:
    // Records the cores of `cores` not recorded yet, before any is written.
    void record(const CoreSet& cores)
    {
        bool more = false;
        for (const Core& c : list_) {
            if (cores.test(c.number) && !recorded_.test(c.number)) {
                recorded_.set(c.number);
                more = true;
            }
        }
        if (more) {
            write_state();
        }
    }

    void write_state()
    {
        if (state_.path().empty()) {
            return;
        }
        // Kept lines (StateFile::keep) follow: for a core lowered again
        // here after a restore that failed, the older value, written back
        // last, wins.
        std::string text = "# slimlinkd pid " + std::to_string(::getpid()) +
                           " --cpu cpufreq under " + root_ +
                           ": cores it may have lowered, the file and the value to write back";
        for (const Core& c : list_) {
            if (recorded_.test(c.number)) {
                text += "\ncpu" + std::to_string(c.number) + " " + c.name + " " + c.original;
            }
        }
        state_.write(text);
    }


    std::string root_;
    std::vector<Core> list_;
    std::string governors_;
    CoreSet cores_;
    CoreSet touched_;   // written low and not restored since
    CoreSet recorded_;  // in the state file
    StateFile state_;
};

}  // namespace

std::unique_ptr<CpuBackend> make_cpufreq_cpu_backend(const CpuBackendConfig& config)
{
    const std::string& root = config.sysfs_root;
    auto refuse             = [&](const std::string            &why) {
        return CpuBackendError("cpufreq CPU backend: " + why);
    };
    DIR *dir = ::opendir(root.c_str());
    if (dir == nullptr) {
        throw refuse(root + ": " + errno_text(errno));
    }
    std::vector<unsigned> numbers;
    while (const dirent *e = ::readdir(dir)) {
        const std::string n = e->d_name;
        if (n.size() > 3 && n.compare(0, 3, "cpu") == 0 && is_number(n.substr(3))) {
            const unsigned long number = std::stoul(n.substr(3));
            if (number < service::kMaxCpus) {
                numbers.push_back(static_cast<unsigned>(number));
            }
        }
    }
    ::closedir(dir);
    std::sort(numbers.begin(), numbers.end());

    std::vector<Core> cores;
    std::string governors;
    for (const unsigned number : numbers) {
        const std::string base = root + "/cpu" + std::to_string(number) + "/cpufreq";
        struct stat st {};
        if (::stat(base.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
            continue;  // an offline core, or one no cpufreq driver handles
        }
        std::string why;
        const std::optional<std::string> governor = read_line(base + "/scaling_governor", why);
        if (!governor) {
            throw refuse(why + " (the core has cpufreq but no governor to read: the frequency "
                               "cannot be set safely)");
        }
        Core c;
        c.number            = number;
        c.dir               = base;
        c.name              = *governor == "userspace" ? kSetspeed : kMaxFreq;
        c.file              = base + "/" + c.name;
        const auto original = read_line(c.file, why);
        if (!original) {
            throw refuse(why);
        }
        if (!is_number(*original)) {
            throw refuse(c.file + " holds '" + original->substr(0, 32) +
                         "', not a frequency in kHz");
        }
        c.original = *original;
        if (config.low_khz != 0) {
            c.low = std::to_string(config.low_khz);
        } else {
            const auto min = read_line(base + "/cpuinfo_min_freq", why);
            if (!min || !is_number(*min)) {
                throw refuse(min ? base + "/cpuinfo_min_freq holds '" + min->substr(0, 32) +
                                             "', not a frequency in kHz"
                                 : why + " (the low frequency is unknown; give --cpu-low-khz)");
            }
            c.low = *min;
        }
        // A file without write bits is read-only even for root: sysfs
        // (kernfs) refuses to open it for writing whatever the caller's
        // capabilities, so a tree is judged as the kernel would judge it.
        struct stat fst {};
        if (::stat(c.file.c_str(), &fst) == 0 &&
            (fst.st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0) {
            throw refuse(c.file + " cannot be written: it is read-only (mode " +
                         std::to_string((fst.st_mode >> 6) & 7) +
                         std::to_string((fst.st_mode >> 3) & 7) + std::to_string(fst.st_mode & 7) +
                         ")");
        }
        // Opened for writing, not written: a file we may not write is found
        // now, before any core has changed.
        const int fd = ::open(c.file.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0) {
            const int err = errno;
            throw refuse(c.file + " cannot be written: " + errno_text(err) +
                         (err == EACCES || err == EPERM || err == EROFS
                                  ? " (slimlinkd needs root or CAP_SYS_ADMIN for cpufreq, and "
                                    "a writable sysfs)"
                                  : ""));
        }
        ::close(fd);
        if (governors.find(*governor) == std::string::npos) {
            governors.append(governors.empty() ? "governor " : ", ").append(*governor);
        }
        cores.push_back(std::move(c));
    }
    if (cores.empty()) {
        throw refuse(root + "/cpu0/cpufreq" +
                     " is absent: no core has a cpufreq driver here (a virtual machine often "
                     "has none); use --cpu emulated");
    }
    return std::make_unique<CpufreqBackend>(root, std::move(cores), governors);
}

}  // namespace slim::link

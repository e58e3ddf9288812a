// SPDX-License-Identifier: BSD-3-Clause
// The "exec" CPU backend: one site command per change, e.g.
//   /usr/local/sbin/set-cores {level} {cores} {khz}
// with {cores} the changed cores as a list ("0,2-3"), {level} low or full,
// {khz} the low frequency (or 0 for full: the site's own maximum).
// The conventions of the link's exec backend (backend_exec.cpp), stricter:
// - never a shell: the template is split at blanks and run with
//   posix_spawn; a template with shell syntax is refused (write a script).
//   Substituted values are digits, commas, dashes and low/full only;
// - bounded: a command that has not ended within the timeout is killed
//   with its process group (each command leads its own), and is a failure;
// - no inherited output: stdin, stdout and stderr are /dev/null;
// - synchronous: the service waits for each command (at most the
//   timeout), so that cores never change in an order the commands did not;
// - the state file (CpuBackend::use_state_file), as the port's exec
//   backend has one: before a command lowers cores not recorded yet, the
//   line "exec CORES TEMPLATE" names every core it may have lowered; the
//   file goes once they are all back at full. A new service runs the full
//   form for the cores a killed one left, with its own command, or, under
//   another --cpu, with the one the line records (restore_left_cores).
#include "service/cpu_backend.h"

#include "base/log.h"
#include "service/site_command.h"
#include "service/state_file.h"
#include "trace/trace.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <exception>
#include <thread>

extern char **environ;

namespace slim::link {

namespace {

using site_command::describe_wait_status;
using site_command::executable_file;
using site_command::split_words;

// Replaces {cores}, {level}, {khz}; false on any other {...}.
bool substitute(const std::string& word, const std::string& cores, const std::string& level,
                const std::string& khz, std::string& out)
{
    return site_command::substitute(word, {{"cores", cores}, {"level", level}, {"khz", khz}}, out);
}

class ExecCpuBackend final : public CpuBackend {
public:
    ExecCpuBackend(std::vector<std::string> words, std::uint32_t low_khz,
                   std::chrono::milliseconds timeout)
        : words_(std::move(words)), low_khz_(low_khz), timeout_(timeout)
    {
        const long n = ::sysconf(_SC_NPROCESSORS_CONF);
        for (long c = 0; c < std::min<long>(n > 0 ? n : 1, service::kMaxCpus); ++c) {
            cores_.set(static_cast<std::size_t>(c));
        }
    }

    ~ExecCpuBackend() override { (void)restore(0); }

    std::string name() const override { return "exec"; }
    std::string describe() const override
    {
        std::string text;
        for (const std::string& w : words_) {
            text.append(text.empty() ? "" : " ").append(w);
        }
        return "exec CPU backend: runs '" + text + "' per change (timeout " +
               std::to_string(timeout_.count()) + " ms)";
    }
    CoreSet cores() const override { return cores_; }

    void set(const CoreSet& cores, bool low, TimeNs) override
    {
        const CoreSet changed = cores & cores_;
        if (changed.none()) {
            return;
        }
        touched_ |= changed;
        if ((touched_ & ~recorded_).any()) {
            // Before the command: a service killed while it runs leaves
            // the cores it may have lowered named.
            recorded_ |= touched_;
            write_state();
        }
        if (std::string bad = run(changed, low); !bad.empty()) {
            throw CpuBackendError(bad);
        }
        if (!low) {
            touched_ &= ~changed;
            forget_if_full();
        }
    }

    std::string restore(TimeNs) noexcept override
    {
        if (touched_.none()) {
            return {};
        }
        std::string bad = run(touched_, false);
        if (bad.empty()) {
            touched_.reset();
            forget_if_full();
        }
        return bad;
    }

    void use_state_file(const std::string& path) override
    {
        const std::optional<std::vector<CpuStateLine>> left_lines =
                adopt_cpu_state_file(state_, path);
        if (!left_lines) {
            return;
        }
        CoreSet left;
        std::vector<std::string> lines;
        for (const CpuStateLine& l : *left_lines) {
            CoreSet cores;
            const std::size_t end = l.text.find(' ', 5);
            if (l.kind == "cpufreq") {
                // Another backend's: restore_left_cores tried it first.
                state_.keep(l.text, l.not_restored);
            } else if (l.kind != "exec" ||
                       !parse_cpu_list(l.text.substr(5, end == std::string::npos ? end : end - 5),
                                       cores)
                                .empty() ||
                       cores.none()) {
                logger().warn("slimlinkd: CPU: state file {}: line '{}' names no cores to "
                              "restore; ignored",
                              path, predict::escape_for_message(l.text, 80));
            } else {
                left |= cores;
                lines.push_back(l.text);
            }
        }
        if (left.any()) {
            if (std::string bad = run(left, false); bad.empty()) {
                logger().warn("slimlinkd: CPU: a previous slimlinkd left cores low ({}); restored "
                              "first: cores {} with '{}'",
                              path, format_cpu_list(left), command_text(left, false));
            } else {
                logger().error("slimlinkd: CPU: restoring what a previous slimlinkd left low "
                               "failed: {}; kept in {}",
                               bad, path);
                for (const std::string& l : lines) {
                    state_.keep(l, bad);
                }
            }
        }
        state_.remove();  // leaves only what was kept, if anything
    }

private:
    std::vector<std::string> argv_of(const CoreSet& cores, bool low) const
    {
        std::vector<std::string> argv;
        std::string word;
        for (const std::string& w : words_) {
            substitute(w, format_cpu_list(cores), low ? "low" : "full",
                       std::to_string(low ? low_khz_ : 0), word);
            argv.push_back(word);
        }
        return argv;
    }

    std::string command_text(const CoreSet& cores, bool low) const
    {
        std::string text;
        for (const std::string& a : argv_of(cores, low)) {
            text.append(text.empty() ? "" : " ").append(a);
        }
        return text;
    }

    // The template as --cpu-exec gave it, its words one blank apart (it has
    // no quoting, so this is the same command).
    std::string template_text() const
    {
        std::string text;
        for (const std::string& w : words_) {
            text.append(text.empty() ? "" : " ").append(w);
        }
        return text;
    }

    void write_state()
    {
        if (state_.path().empty()) {
            return;
        }
        std::string text = "# slimlinkd pid " + std::to_string(::getpid()) +
                           " --cpu exec: cores it may have lowered and its command; the command "
                           "with {level} full restores them";
        if (recorded_.any()) {
            text += "\nexec " + format_cpu_list(recorded_) + " " + template_text();
        }
        state_.write(text);
    }

    // Every core back at full: the file goes (kept lines stay).
    void forget_if_full() noexcept
    {
        if (touched_.any() || recorded_.none()) {
            return;
        }
        recorded_.reset();
        try {
            state_.remove();
        } catch (const std::exception& e) {
            // remove() logs its own failures; this is an allocation failing
            // under restore(), which may not throw.
            note_swallowed("exec CPU backend: removing the cores' state file", e);
        }
    }

    // Runs the command for `cores` at `low`; empty, or why it failed.
    std::string run(const CoreSet& cores, bool low) const noexcept
    {
        std::vector<std::string> argv = argv_of(cores, low);
        std::string text;
        std::vector<char *> pointers;
        for (std::string& a : argv) {
            text.append(text.empty() ? "" : " ").append(a);
            pointers.push_back(a.data());
        }
        pointers.push_back(nullptr);

        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sigset_t none;
        sigemptyset(&none);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
        posix_spawn_file_actions_t files;
        posix_spawn_file_actions_init(&files);
        posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&files, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        pid_t pid    = 0;
        const int rc = ::posix_spawn(&pid, pointers[0], &files, &attr, pointers.data(), environ);
        posix_spawn_file_actions_destroy(&files);
        posix_spawnattr_destroy(&attr);
        if (rc != 0) {
            return "exec CPU backend: cannot run '" + text + "': " + std::strerror(rc);
        }
        const auto deadline = std::chrono::steady_clock::now() + timeout_;
        int status          = 0;
        for (;;) {
            const pid_t r = ::waitpid(pid, &status, WNOHANG);
            if (r == pid) {
                break;
            }
            if (r < 0 && errno != EINTR) {
                return "exec CPU backend: waitpid for '" + text + "': " + std::strerror(errno);
            }
            if (std::chrono::steady_clock::now() >= deadline) {
                ::kill(-pid, SIGKILL);
                ::kill(pid, SIGKILL);
                while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
                return "exec CPU backend: '" + text + "' did not end within " +
                       std::to_string(timeout_.count()) + " ms and was killed";
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            return "exec CPU backend: '" + text + "' " + describe_wait_status(status);
        }
        return {};
    }

    std::vector<std::string> words_;
    std::uint32_t low_khz_;
    std::chrono::milliseconds timeout_;
    CoreSet cores_;
    CoreSet touched_;   // set low by a command and not restored since
    CoreSet recorded_;  // in the state file
    StateFile state_;
};

}  // namespace

std::unique_ptr<CpuBackend> make_exec_cpu_backend(const CpuBackendConfig& config)
{
    const std::string& text = config.exec_template;
    auto refuse             = [&](const std::string            &why) {
        return CpuBackendError("exec CPU backend: --cpu-exec '" + text + "' " + why);
    };
    if (text.find_first_of("|&;<>()$`\\\"'*?[]#~%!") != std::string::npos) {
        throw refuse("has shell syntax; the command runs without a shell (put it in a script)");
    }
    if (text.find("{level}") == std::string::npos) {
        throw refuse("must contain {level} (and may use {cores}, {khz})");
    }
    std::vector<std::string> words = split_words(text);
    if (words.empty()) {
        throw refuse("is empty");
    }
    std::string check;
    for (const std::string& w : words) {
        if (!substitute(w, "", "", "", check)) {
            throw refuse("may substitute only {cores}, {level} and {khz}");
        }
    }
    if (words.front().find('{') != std::string::npos) {
        throw refuse("may not have a placeholder in the command's name");
    }
    if (words.front().find('/') != std::string::npos ? !executable_file(words.front()) : true) {
        // Only an absolute or relative path: the service may run as root,
        // and PATH is whatever started it.
        throw refuse("must name an executable file by its path ('" + words.front() +
                     "' is not one)");
    }
    std::uint32_t low_khz = config.low_khz;
    if (low_khz == 0) {
        low_khz = low_khz_of(config.table);
    }
    return std::make_unique<ExecCpuBackend>(std::move(words), low_khz, config.exec_timeout);
}

}  // namespace slim::link

// SPDX-License-Identifier: BSD-3-Clause
// The "exec" backend: one site command per width change, for vendor tools
// (e.g. a wrapper around mlxlink or a switch CLI). UCX_SLIM_LINK_EXEC is a
// template such as "/usr/local/sbin/set-width {device} {port} {width}".
//
// - No shell unless the template needs one: it is split into words at blanks
//   and run with posix_spawn; only a template with shell syntax (| ; & < > $
//   quotes ...) runs under /bin/sh -c. Substituted values are checked
//   ({device} is [A-Za-z0-9_.:-]), so they cannot inject shell syntax.
// - Asynchronous: set_width starts the command and returns; poll() reaps it.
//   One command at a time; requests made meanwhile are merged (the last
//   wins) and run when it ends, so commands never race on the port.
// - A command that does not end within the timeout (2 s) is killed with its
//   whole process group (each command leads its own); that, a spawn error or
//   a non-zero exit is an error, and the controller then goes to full width.
// - Commands inherit no stdout/stderr (both /dev/null; stdin too): a command
//   left behind must never hold an MPI launcher's output pipes open, which
//   kept a 1 s job alive for as long as a hung command ran.
// - At exit the full-width command replaces (kills) a lower one still
//   running and is waited for, at most the timeout.
// - For fatal signals the full-width command line is built at start, so the
//   handler only needs fork/execve/waitpid/nanosleep/kill (async-signal-safe).
#include "service/backend_registry.h"
#include "service/site_command.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char **environ;

namespace slim::link {

namespace {

using site_command::describe_wait_status;
using site_command::executable_file;
using site_command::split_words;

using SteadyClock = std::chrono::steady_clock;

bool needs_shell(const std::string& text)
{
    return text.find_first_of("|&;<>()$`\\\"'*?[]#~%!") != std::string::npos;
}

bool valid_device(const std::string& device)
{
    for (const char c : device) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':' || c == '-';
        if (!ok) {
            return false;
        }
    }
    return true;
}

// Replaces {device}, {port} and {width}; any other {...} is an error (the
// configuration checks this too, but the backend may be made directly).
bool substitute(const std::string& word, const std::string& device, unsigned port, unsigned width,
                std::string& out)
{
    return site_command::substitute(
            word,
            {{"device", device}, {"port", std::to_string(port)}, {"width", std::to_string(width)}},
            out);
}

// Absolute path of `program` (searched in PATH when it has no '/'), or "".
std::string resolve_program(const std::string& program)
{
    if (program.find('/') != std::string::npos) {
        return executable_file(program) ? program : std::string();
    }
    const char *path  = std::getenv("PATH");
    std::string dirs  = path ? path : "/usr/local/bin:/usr/bin:/bin";
    std::size_t start = 0;
    while (start <= dirs.size()) {
        const std::size_t end       = std::min(dirs.find(':', start), dirs.size());
        const std::string dir       = end > start ? dirs.substr(start, end - start) : ".";
        const std::string candidate = dir + "/" + program;
        if (executable_file(candidate)) {
            return candidate;
        }
        start = end + 1;
    }
    return {};
}

// Argument vector with stable char* pointers (execve wants char* const[]).
struct Argv {
    std::vector<std::string> words;
    std::vector<char *> pointers;

    void seal()
    {
        pointers.clear();
        for (std::string& w : words) {
            pointers.push_back(w.data());
        }
        pointers.push_back(nullptr);
    }
    std::string text() const
    {
        std::string t;
        for (const std::string& w : words) {
            t.append(t.empty() ? "" : " ").append(w);
        }
        return t;
    }
};

// Kills the command and everything it started (its process group), then
// reaps it. Async-signal-safe.
void kill_and_reap(pid_t pid) noexcept
{
    ::kill(-pid, SIGKILL);
    ::kill(pid, SIGKILL);  // in case it left its group
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
}

class ExecBackend final : public LinkBackend {
public:
    ExecBackend(const BackendConfig& config, std::string program, bool shell)
        : template_(config.exec_template), program_(std::move(program)), shell_(shell),
          device_(config.device), port_(config.port), lanes_(config.link.lanes),
          timeout_(config.exec_timeout)
    {}

    ~ExecBackend() override { (void)drain(); }

    std::string name() const override { return "exec"; }
    unsigned full_width() const override { return lanes_; }
    std::string describe() const override
    {
        return "exec link backend: runs '" + template_ + "' per width change (timeout " +
               std::to_string(timeout_.count()) + " ms)";
    }

    Status set_width(unsigned width) override
    {
        Status status = poll();
        if (inflight_pid_.load() > 0) {
            pending_width_ = width;  // merged: the last request wins
            return status;
        }
        if (!status) {
            return status;
        }
        return spawn(width);
    }

    Status poll() override
    {
        const pid_t pid = inflight_pid_.load();
        if (pid <= 0) {
            return start_pending();
        }
        int wait_status = 0;
        const pid_t r   = ::waitpid(pid, &wait_status, WNOHANG);
        if (r == 0) {
            if (SteadyClock::now() - started_ < timeout_) {
                return Status::success();
            }
            kill_and_reap(pid);
            inflight_pid_.store(0);
            pending_width_   = 0;
            confirmed_.width = 0;  // killed half-way: the port's width is unknown
            return Status::error("exec link backend: '" + inflight_text_ + "' did not end within " +
                                 std::to_string(timeout_.count()) + " ms and was killed");
        }
        inflight_pid_.store(0);
        if (r < 0) {
            // ECHILD: reaped elsewhere (a fatal-signal restore, or SIGCHLD
            // ignored by the application); the outcome is unknown, not an error.
            return errno == ECHILD ? start_pending()
                                   : Status::error(std::string("exec link backend: waitpid: ") +
                                                   std::strerror(errno));
        }
        if (!WIFEXITED(wait_status) || WEXITSTATUS(wait_status) != 0) {
            pending_width_   = 0;
            confirmed_.width = 0;
            return Status::error("exec link backend: '" + inflight_text_ + "' " +
                                 describe_wait_status(wait_status));
        }
        confirm(last_width_);
        return start_pending();
    }

    std::optional<Confirmed> confirmed() const override
    {
        Confirmed c = confirmed_;
        c.in_flight = inflight_pid_.load() > 0 || pending_width_ != 0;
        return c;
    }

    Status drain() override
    {
        for (;;) {
            Status status = poll();
            if (!status || (inflight_pid_.load() <= 0 && pending_width_ == 0)) {
                return status;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }

    Status restore_full_width() override
    {
        Status status = poll();  // the outcome of a command that has ended
        // Already there only if a command said so: the last one started for
        // full width may have failed (a restore being retried), and a
        // service stopping then must try once more, not report success and
        // remove the port's state file.
        if (status && inflight_pid_.load() <= 0 && pending_width_ == 0 &&
            confirmed_.width == lanes_) {
            return status;
        }
        const pid_t inflight = inflight_pid_.exchange(0);
        if (inflight > 0) {
            kill_and_reap(inflight);  // a lower width, now moot: never raced
            confirmed_.width = 0;
        }
        pending_width_       = 0;
        const Status spawned = spawn(lanes_);
        if (!spawned) {
            return spawned;
        }
        const Status drained = drain();
        return !drained ? drained : status;
    }

private:
    void confirm(unsigned width)
    {
        if (width != confirmed_.width && confirmed_.width != 0) {
            ++confirmed_.changes;
        }
        confirmed_.width = width;
    }

    void build_argv(unsigned width, Argv& argv) const
    {
        argv.words.clear();
        std::string word;
        if (shell_) {
            substitute(template_, device_, port_, width, word);
            argv.words = {"/bin/sh", "-c", word};
            return;
        }
        bool first = true;
        for (const std::string& w : split_words(template_)) {
            substitute(w, device_, port_, width, word);
            argv.words.push_back(first ? program_ : word);
            first = false;
        }
    }

    Status start_pending()
    {
        if (pending_width_ == 0) {
            return Status::success();
        }
        const unsigned width = pending_width_;
        pending_width_       = 0;
        return spawn(width);
    }

    Status spawn(unsigned width)
    {
        Argv argv;
        build_argv(width, argv);
        argv.seal();
        inflight_text_ = argv.text();

        posix_spawnattr_t attr;
        posix_spawnattr_init(&attr);
        sigset_t none;
        sigemptyset(&none);
        // The caller's thread may block signals (MPI progress threads do);
        // the command should not inherit that.
        posix_spawnattr_setsigmask(&attr, &none);
        // Its own process group, so a timeout kills what it started too.
        posix_spawnattr_setpgroup(&attr, 0);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETPGROUP);
        posix_spawn_file_actions_t files;
        posix_spawn_file_actions_init(&files);
        posix_spawn_file_actions_addopen(&files, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&files, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_addopen(&files, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
        pid_t pid = 0;
        const int rc =
                ::posix_spawn(&pid, argv.pointers[0], &files, &attr, argv.pointers.data(), environ);
        posix_spawn_file_actions_destroy(&files);
        posix_spawnattr_destroy(&attr);
        if (rc != 0) {
            return Status::error("exec link backend: cannot run '" + inflight_text_ +
                                 "': " + std::strerror(rc));
        }
        started_    = SteadyClock::now();
        last_width_ = width;
        inflight_pid_.store(pid);
        return Status::success();
    }

    std::string template_;
    std::string program_;
    bool shell_;
    std::string device_;
    unsigned port_;
    unsigned lanes_;
    std::chrono::milliseconds timeout_;

    std::atomic<pid_t> inflight_pid_{0};
    std::string inflight_text_;
    SteadyClock::time_point started_{};
    unsigned pending_width_ = 0;  // 0: none
    unsigned last_width_    = 0;  // of the last command started; 0: none yet
    // Only commands that exited 0: one that hung or failed applied nothing
    // we know of.
    Confirmed confirmed_;
};

}  // namespace

BackendResult make_exec_backend(const BackendConfig& config)
{
    const std::string& text = config.exec_template;
    auto fail               = [](const std::string              &why) {
        return BackendResult{nullptr, Status::error("exec link backend: " + why)};
    };
    if (text.find("{width}") == std::string::npos) {
        return fail("UCX_SLIM_LINK_EXEC='" + text +
                    "' must contain {width} (and may use {device}, {port})");
    }
    std::string check;
    if (!substitute(text, "", 0, 0, check)) {
        return fail("UCX_SLIM_LINK_EXEC='" + text +
                    "': only {device}, {port} and {width} may be substituted");
    }
    if (config.device.empty() && text.find("{device}") != std::string::npos) {
        return fail("UCX_SLIM_LINK_EXEC='" + text +
                    "' uses {device}, but no device is known for this port (slim does not "
                    "yet map UCX's device to the port it drives); write the device into the "
                    "command instead");
    }
    if (!valid_device(config.device)) {
        return fail("device name '" + config.device +
                    "' has characters other than A-Z a-z 0-9 _ . : -");
    }
    const bool shell                     = needs_shell(text);
    const std::vector<std::string> words = split_words(text);
    if (words.empty()) {
        return fail("UCX_SLIM_LINK_EXEC is empty");
    }
    std::string program = shell ? std::string("/bin/sh") : words.front();
    if (!shell && program.find('{') != std::string::npos) {
        return fail("the command name itself may not contain a placeholder");
    }
    const std::string resolved = resolve_program(program);
    if (resolved.empty()) {
        return fail("'" + program + "' is not an executable file" +
                    (program.find('/') == std::string::npos ? " in PATH" : ""));
    }
    return {std::make_unique<ExecBackend>(config, resolved, shell), Status::success()};
}

}  // namespace slim::link

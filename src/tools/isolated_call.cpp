// SPDX-License-Identifier: BSD-3-Clause
#include "isolated_call.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include <csignal>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

namespace slim::tools {

namespace {

// The child's side: the answer, written whole, then _exit. noexcept: an
// exception escaping `work` ends the child in std::terminate (the parent
// then reports SIGABRT) instead of unwinding into the caller's code, which
// must not run twice.
[[noreturn]] void answer(int fd, const std::function<std::string()>& work) noexcept
{
    // A crash is the parent's to report: handlers the caller installed (a
    // test framework's, UCX's) would print a second, misleading report.
    for (const int sig : {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT})
        std::signal(sig, SIG_DFL);
    const std::string bytes = work();
    std::size_t done        = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) ::_exit(2);
        done += static_cast<std::size_t>(n);
    }
    ::_exit(0);
}

std::string describe(int status)
{
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        return "killed by signal " + std::to_string(sig) + " (" + ::strsignal(sig) + ")";
    }
    return "exited with status " + std::to_string(WEXITSTATUS(status));
}

}  // namespace

std::string run_isolated(const std::function<std::string()>& work)
{
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        throw Error(std::string("cannot create a pipe for a child process: ") +
                    std::strerror(errno));
    }
    // What the caller buffered must not be written by both processes.
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int err = errno;
        ::close(fds[0]);
        ::close(fds[1]);
        throw Error(std::string("cannot start a child process: ") + std::strerror(err));
    }
    if (pid == 0) {
        ::close(fds[0]);
        answer(fds[1], work);
    }
    ::close(fds[1]);
    std::string bytes;
    char block[1 << 16];
    int read_error = 0;
    for (;;) {
        const ssize_t n = ::read(fds[0], block, sizeof block);
        if (n > 0) {
            bytes.append(block, static_cast<std::size_t>(n));
        } else if (n == 0) {
            break;
        } else if (errno != EINTR) {
            read_error = errno;
            break;
        }
    }
    ::close(fds[0]);
    // A child whose answer is not read any more must not block on the pipe.
    if (read_error != 0) ::kill(pid, SIGKILL);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            throw Error(std::string("cannot wait for a child process: ") + std::strerror(errno));
        }
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        throw IsolatedCallFailed(describe(status));
    }
    if (read_error != 0) {
        throw IsolatedCallFailed(std::string("its answer could not be read: ") +
                                 std::strerror(read_error));
    }
    return bytes;
}

}  // namespace slim::tools

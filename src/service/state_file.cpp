// SPDX-License-Identifier: BSD-3-Clause
#include "service/state_file.h"

#include "base/log.h"
#include "base/output_file.h"
#include "link/service_protocol.h"
#include "trace/trace.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace slim::link {

// Reads only a regular file of ours: the folder is the socket's (checked
// by the server), but a state file that is anything else was not written by
// a service of ours.
std::optional<std::string> read_state_file_text(const std::string& path, std::size_t max_bytes)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) {
            logger().warn("slimlinkd: state file {}: {}; ignored", path, std::strerror(errno));
        }
        return std::nullopt;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
        logger().warn("slimlinkd: state file {} is not a regular file of uid {}; ignored", path,
                      ::geteuid());
        ::close(fd);
        return std::nullopt;
    }
    std::string text(max_bytes, '\0');
    std::size_t got = 0;
    while (got < max_bytes) {
        const ssize_t n = ::read(fd, text.data() + got, max_bytes - got);
        if (n <= 0) {
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    ::close(fd);
    text.resize(got);
    return text;
}

// Reads only a regular file of ours: the folder is the socket's (checked
// by the server), but a state file that is anything else was not written by
// a service of ours.
std::optional<std::string> read_state_file(const std::string& path)
{
    std::optional<std::string> read = read_state_file_text(path, service::kTextBytes - 1);
    if (!read) {
        return std::nullopt;
    }
    std::string& text = *read;
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
        text.pop_back();
    }
    if (text.empty()) {
        return std::string("no reason recorded");
    }
    // It goes into logs, reports and --status on a terminal: the rule of
    // every text the tree did not write itself (trace names, refusals).
    return predict::escape_for_message(text, text.size());
}

std::string StateFile::kept_text() const
{
    // Lines without a reason first: a note applies to every line after it.
    std::string text;
    for (const auto& [line, reason] : kept_) {
        text += reason.empty() ? line + "\n" : std::string();
    }
    const std::string *why = nullptr;
    for (const auto& [line, reason] : kept_) {
        if (reason.empty()) {
            continue;
        }
        if (why == nullptr || *why != reason) {
            text += kNotRestoredNote + std::to_string(::getpid()) + ": " + reason + "\n";
            why = &reason;
        }
        text += line + "\n";
    }
    return text;
}

void StateFile::keep(const std::string& line, const std::string& why)
{
    // One line: a reason that spans lines would end the note early.
    std::string reason = why;
    std::replace(reason.begin(), reason.end(), '\n', ' ');
    kept_.emplace_back(line, reason);
}

void StateFile::write(const std::string& text)
{
    if (path_.empty()) {
        return;
    }
    try {
        const int fd           = base::open_output_file(path_, base::ExistingFile::truncate, 0600);
        const std::string line = text + "\n" + kept_text();
        const ssize_t n        = ::write(fd, line.data(), line.size());
        const int err          = n < 0 ? errno : 0;
        ::close(fd);
        if (n != static_cast<ssize_t>(line.size())) {
            logger().warn("slimlinkd: writing state file {}: {}", path_,
                          err != 0 ? std::strerror(err) : "short write");
            return;
        }
        written_ = true;
    } catch (const std::exception& e) {
        logger().warn("slimlinkd: cannot write the state file {}: {}", path_, e.what());
    }
}

void StateFile::remove()
{
    if (path_.empty()) {
        return;
    }
    if (!kept_.empty()) {
        write("# slimlinkd pid " + std::to_string(::getpid()) +
              ": what a previous slimlinkd left changed and this one could not restore");
        return;
    }
    if (::unlink(path_.c_str()) != 0 && errno != ENOENT) {
        logger().warn("slimlinkd: removing state file {}: {}", path_, std::strerror(errno));
    }
    written_ = false;
}

}  // namespace slim::link

// SPDX-License-Identifier: BSD-3-Clause
#include "base/output_file.h"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace slim::base {

namespace {

[[noreturn]] void refuse(const std::string& path, const std::string& why)
{
    throw OutputFileError(path + ": " + why);
}

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

int open_output_file(const std::string& path, ExistingFile existing, mode_t mode)
{
    // O_NONBLOCK: opening a FIFO for writing waits for a reader, so another
    // user's FIFO planted at the path would hang the process (a trace opened
    // inside MPI_Init, a report at exit). Non-blocking, the open fails with
    // ENXIO or returns at once, and fstat() below refuses what it opened.
    // O_NOCTTY: a terminal must never become the controlling one.
    const int flags = O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NONBLOCK |
                      (existing == ExistingFile::append ? O_APPEND : 0);
    // O_EXCL never follows a link: a planted one makes this fail with EEXIST.
    int fd             = ::open(path.c_str(), flags | O_CREAT | O_EXCL, mode);
    const bool created = fd >= 0;
    if (!created) {
        if (errno != EEXIST) {
            refuse(path, "cannot create: " + errno_text(errno));
        }
        fd = ::open(path.c_str(), flags);
    }
    if (fd < 0) {
        if (errno == ELOOP) {
            refuse(path, "is a symbolic link; refusing to write through it (remove it, or "
                         "choose another path)");
        }
        if (errno == ENXIO) {  // a FIFO without a reader, or a device without its unit
            refuse(path, "exists and is not a regular file (a FIFO or a device); refusing it");
        }
        refuse(path, "cannot open: " + errno_text(errno));
    }
    struct stat st {};
    const auto close_and_refuse = [&](const std::string& why) {
        ::close(fd);
        refuse(path, why);
    };
    // Every check is made on the descriptor, so the file checked is the file
    // written; nothing is truncated before they all pass.
    if (::fstat(fd, &st) != 0) {
        close_and_refuse("fstat failed: " + errno_text(errno));
    }
    if (!S_ISREG(st.st_mode)) {
        close_and_refuse("exists and is not a regular file; refusing it");
    }
    if (st.st_uid != ::geteuid()) {
        close_and_refuse("exists and is owned by uid " + std::to_string(st.st_uid) +
                         ", not by this user (uid " + std::to_string(::geteuid()) +
                         "); refusing it");
    }
    // A second name for one of this user's files, planted by another user
    // where hard links to others' files are allowed (fs.protected_hardlinks
    // off): truncating it would destroy the file behind the other name.
    if (!created && st.st_nlink > 1) {
        close_and_refuse("exists with " + std::to_string(st.st_nlink) +
                         " hard links; refusing to write into a file that has other names");
    }
    // Writes block again from here: a full disk must not turn into EAGAIN.
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0 || ::fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        close_and_refuse("cannot clear O_NONBLOCK: " + errno_text(errno));
    }
    if (!created && existing == ExistingFile::truncate && ::ftruncate(fd, 0) != 0) {
        close_and_refuse("cannot truncate: " + errno_text(errno));
    }
    return fd;
}

}  // namespace slim::base

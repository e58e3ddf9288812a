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
    const int flags = O_WRONLY | O_NOFOLLOW | O_CLOEXEC |
                      (existing == ExistingFile::append ? O_APPEND : 0);
    // O_EXCL never follows a link: a planted one makes this fail with EEXIST.
    int fd = ::open(path.c_str(), flags | O_CREAT | O_EXCL, mode);
    if (fd >= 0) {
        return fd;
    }
    if (errno != EEXIST) {
        refuse(path, "cannot create: " + errno_text(errno));
    }
    fd = ::open(path.c_str(), flags);
    if (fd < 0) {
        if (errno == ELOOP) {
            refuse(path, "is a symbolic link; refusing to write through it (remove it, or "
                         "choose another path)");
        }
        refuse(path, "cannot open: " + errno_text(errno));
    }
    struct stat st {};
    const auto close_and_refuse = [&](const std::string& why) {
        ::close(fd);
        refuse(path, why);
    };
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
    if (existing == ExistingFile::truncate && ::ftruncate(fd, 0) != 0) {
        close_and_refuse("cannot truncate: " + errno_text(errno));
    }
    return fd;
}

}  // namespace slim::base

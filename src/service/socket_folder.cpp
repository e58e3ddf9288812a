// SPDX-License-Identifier: BSD-3-Clause
#include "service/socket_folder.h"

#include "link/service_client.h"
#include "link/service_io.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace slim::link {

namespace io = service_io;
using io::errno_text;

void prepare_socket_folder(const std::string& folder, bool system)
{
    const mode_t mode = system ? 0755 : 0700;
    if (::mkdir(folder.c_str(), mode) == 0) {
        // mkdir honours the umask; the mode must be exactly this.
        if (::chmod(folder.c_str(), mode) != 0) {
            throw ServiceError("chmod " + io::mode_string(mode) + " " + folder + ": " +
                               errno_text(errno));
        }
    } else if (errno != EEXIST) {
        throw ServiceError("cannot create the socket folder " + folder + ": " + errno_text(errno));
    }
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0) {
        throw ServiceError("socket folder " + folder + ": " + errno_text(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
        throw ServiceError("socket folder " + folder +
                           " is not a directory (a symbolic link is not accepted)");
    }
    const std::string state = "owned by uid " + std::to_string(st.st_uid) + " with mode " +
                              io::mode_string(st.st_mode);
    if (system) {
        if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
            throw ServiceError("socket folder " + folder + " is " + state +
                               "; a system service's folder must belong to root (uid 0) and "
                               "not be writable by group or others");
        }
        return;
    }
    if (st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
        throw ServiceError("socket folder " + folder + " is " + state +
                           "; a per-user service's folder must belong to this user (uid " +
                           std::to_string(::geteuid()) + ") with mode 0700");
    }
}

sockaddr_un socket_address(const std::string& path)
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof addr.sun_path) {
        throw ServiceError("socket path '" + path + "' is " + std::to_string(path.size()) +
                           " bytes; 1 to " + std::to_string(sizeof addr.sun_path - 1) +
                           " are accepted");
    }
    path.copy(addr.sun_path, path.size());
    return addr;
}

bool someone_listens(const sockaddr_un& addr)
{
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        return false;
    }
    const int rc  = ::connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr);
    const int err = errno;
    ::close(fd);
    // EAGAIN: a full backlog, which only a live listener has.
    return rc == 0 || err == EAGAIN;
}

}  // namespace slim::link

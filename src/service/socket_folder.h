/* SPDX-License-Identifier: BSD-3-Clause */
// Where slimlinkd's socket lives: the folder it must be in (whose owner and
// mode decide who may plant a socket under our name), its address, and
// whether a service already listens on it.
#pragma once

#include <sys/un.h>

#include <string>

namespace slim::link {

// Creates the socket's folder, or checks the one that is there: a per-user
// folder must be this user's and 0700 (another user's folder could hold a
// socket of theirs under our name); a system folder root's, not writable
// by group or others. Throws ServiceError saying what is wrong.
void prepare_socket_folder(const std::string& folder, bool system);

// The socket address of `path`. Throws ServiceError when the path does
// not fit.
sockaddr_un socket_address(const std::string& path);

// Someone is accepting connections on `addr`.
bool someone_listens(const sockaddr_un& addr);

}  // namespace slim::link

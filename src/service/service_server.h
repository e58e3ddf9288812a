/* SPDX-License-Identifier: BSD-3-Clause */
// slimlinkd's loop: the listening socket, one connection per client, the
// rings it creates for them, and the PortService it feeds (one thread,
// epoll). Separate from main() so that tests run a service in-process.
#pragma once

#include "service/port_service.h"

#include <atomic>
#include <chrono>
#include <string>

namespace slim::link {

class CpuController;

struct ServerOptions {
    std::string socket_path;  // created; its folder too (0700, or 0755 for system)
    bool system = false;      // accept every uid (root's system instance)
    // Exit this long after the last client left; also when no client came
    // at all within `first_client_wait`. Zero: never exit by itself.
    std::chrono::milliseconds grace{5000};
    std::chrono::milliseconds first_client_wait{60000};
    // The port's model as told to clients in AttachReply (low width, tau,
    // watts per lane); its lanes are the service's full width.
    LinkConfig link;
    // Connections one uid may hold at once (ranks, status queries): a
    // system instance's descriptors are shared by every user, and one user
    // must not take them all. Capped at start to what the descriptor limit
    // allows (a quarter of it for a system instance).
    unsigned max_connections_per_uid = kDefaultMaxConnectionsPerUid;
    // A connection that has not attached within this time is closed (a
    // status query is answered at once; ranks attach at once).
    std::chrono::milliseconds attach_timeout{5000};
    // The node's CPU frequency controller (the caller's, outliving the
    // server), or null: the CPU messages are then not offered.
    CpuController *cpu = nullptr;

    // Ranks of one user on one node, with room: the largest nodes run a few
    // hundred ranks.
    static constexpr unsigned kDefaultMaxConnectionsPerUid = 1024;
};

class ServiceServer {
public:
    // Binds the socket (replacing a stale one nobody listens on; refusing
    // when another service is listening). Throws ServiceError.
    ServiceServer(PortService& service, ServerOptions options);
    ~ServiceServer();  // closes every client, removes the socket
    ServiceServer(const ServiceServer&)            = delete;
    ServiceServer& operator=(const ServiceServer&) = delete;

    // Runs until `stop` is set or the grace period ends. Returns 0, or 1
    // after a fatal error (logged).
    int run(const std::atomic<bool>& stop);

    const std::string& socket_path() const { return options_.socket_path; }

    // The descriptor of the socket's lock, handed to the caller, who
    // closes it after restoring what the service drove: closed with the
    // server instead, the lock would let a new service start on the same
    // port while this one still restores it, and have its state file
    // removed under it. -1 when already taken.
    int release_lock_to_caller();

    // How long a new service waits for the lock of one that no longer
    // listens (it is restoring its port at exit) before it gives up.
    static constexpr std::chrono::milliseconds kLockWait{5000};

private:
    struct Impl;
    PortService& service_;
    ServerOptions options_;
    std::unique_ptr<Impl> impl_;
};

}  // namespace slim::link

// SPDX-License-Identifier: BSD-3-Clause
#include "link/service_io.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace slim::link::service_io {

using service::MessageHeader;
using service::MessageType;

namespace {

int poll_for(int fd, short events, std::chrono::milliseconds timeout)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
        pollfd p{fd, events, 0};
        // Rounded up: a wait of 0.4 ms is one of 1 ms, not a busy loop.
        const int ms = left.count() < 0 ? 0 : static_cast<int>(left.count()) + 1;
        const int n  = ::poll(&p, 1, ms);
        if (n > 0) {
            return 0;  // ready, or an error/hang-up the next call reports
        }
        if (n == 0) {
            if (std::chrono::steady_clock::now() >= deadline) {
                return ETIMEDOUT;
            }
            continue;
        }
        if (errno != EINTR) {
            return errno;
        }
    }
}

}  // namespace

int send_message(int fd, MessageType type, const void *part1, std::size_t bytes1, const void *part2,
                 std::size_t bytes2, int flags, int pass_fd, std::uint32_t features)
{
    MessageHeader header;
    header.type     = static_cast<std::uint16_t>(type);
    header.length   = static_cast<std::uint32_t>(bytes1 + bytes2);
    header.features = features;
    iovec iov[3]    = {{&header, sizeof header},
                       {const_cast<void *>(part1), bytes1},
                       {const_cast<void *>(part2), bytes2}};
    msghdr msg{};
    msg.msg_iov    = iov;
    msg.msg_iovlen = 1 + (bytes1 > 0 ? 1 : 0) + (bytes2 > 0 ? 1 : 0);
    if (bytes1 == 0 && bytes2 > 0) {
        iov[1] = iov[2];
    }
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    if (pass_fd >= 0) {
        msg.msg_control    = control;
        msg.msg_controllen = sizeof control;
        cmsghdr *c         = CMSG_FIRSTHDR(&msg);
        c->cmsg_level      = SOL_SOCKET;
        c->cmsg_type       = SCM_RIGHTS;
        c->cmsg_len        = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
    }
    for (;;) {
        const ssize_t n = ::sendmsg(fd, &msg, flags | MSG_NOSIGNAL);
        if (n >= 0) {
            return 0;  // SEQPACKET: all or nothing
        }
        if (errno != EINTR) {
            return errno;
        }
    }
}

int send_message_wait(int fd, MessageType type, const void *part1, std::size_t bytes1,
                      const void *part2, std::size_t bytes2, std::chrono::milliseconds timeout,
                      int pass_fd, std::uint32_t features)
{
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        const int err = send_message(fd, type, part1, bytes1, part2, bytes2, MSG_DONTWAIT, pass_fd,
                                     features);
        if (err != EAGAIN && err != EWOULDBLOCK) {
            return err;
        }
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return ETIMEDOUT;
        }
        if (const int waited = poll_for(fd, POLLOUT, left)) {
            return waited;
        }
    }
}

Received receive(int fd, void *buf, std::size_t capacity)
{
    Received r;
    iovec iov{buf, capacity};
    // Room for a few descriptors: a peer sending more than one still gets
    // all of them closed rather than leaked into this process.
    alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov        = &iov;
    msg.msg_iovlen     = 1;
    msg.msg_control    = control;
    msg.msg_controllen = sizeof control;
    for (;;) {
        r.bytes = ::recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r.bytes >= 0 || errno != EINTR) {
            break;
        }
    }
    if (r.bytes < 0 && errno == ECONNRESET) {
        // A Unix socket reports the peer's reset before the messages it
        // sent ahead of it (a refusal): those are still there to read.
        r.bytes = ::recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r.bytes < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            errno = ECONNRESET;
        }
    }
    if (r.bytes < 0) {
        r.error = errno;
        return r;
    }
    r.truncated = (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    for (cmsghdr *c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < count; ++i) {
            int passed = -1;
            std::memcpy(&passed, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
            if (r.fd < 0) {
                r.fd = passed;
            } else {
                ::close(passed);
            }
        }
    }
    return r;
}

Received receive_wait(int fd, void *buf, std::size_t capacity, std::chrono::milliseconds timeout)
{
    if (const int err = poll_for(fd, POLLIN, timeout)) {
        Received r;
        r.bytes = -1;
        r.error = err;
        return r;
    }
    Received r = receive(fd, buf, capacity);
    if (r.bytes < 0 && (r.error == EAGAIN || r.error == EWOULDBLOCK)) {
        r.error = ETIMEDOUT;  // woken by a hang-up that left nothing to read
    }
    return r;
}

std::string check_header(const void *message, std::size_t bytes, MessageHeader& header)
{
    if (bytes < sizeof(MessageHeader)) {
        return "a message of " + std::to_string(bytes) + " bytes, shorter than its " +
               std::to_string(sizeof(MessageHeader)) + "-byte header";
    }
    std::memcpy(&header, message, sizeof header);
    if (header.magic != service::kMagic) {
        char hex[16];
        std::snprintf(hex, sizeof hex, "0x%08x", header.magic);
        return std::string("bad magic ") + hex + " (not the slimlinkd protocol)";
    }
    if (header.version != service::kProtocolVersion) {
        return "protocol version " + std::to_string(header.version) + ", this side speaks " +
               std::to_string(service::kProtocolVersion);
    }
    if (header.length > service::kMaxMessageBytes ||
        header.length != bytes - sizeof(MessageHeader)) {
        return "payload length " + std::to_string(header.length) + " in a message of " +
               std::to_string(bytes) + " bytes (at most " +
               std::to_string(service::kMaxMessageBytes) + " after the header)";
    }
    if (header.type < static_cast<std::uint16_t>(MessageType::attach) ||
        header.type > static_cast<std::uint16_t>(service::kLastMessageType)) {
        return "unknown message type " + std::to_string(header.type);
    }
    return {};
}

std::string check_attach(const std::uint8_t *payload, std::size_t bytes, unsigned full_width,
                         const std::string& port, service::AttachRequest& req)
{
    if (bytes != sizeof(service::AttachRequest)) {
        return "an attach request of " + std::to_string(bytes) + " bytes; " +
               std::to_string(sizeof(service::AttachRequest)) + " are expected";
    }
    std::memcpy(&req, payload, sizeof req);
    if (std::memchr(req.job_key, '\0', sizeof req.job_key) == nullptr) {
        return "a job key that is not NUL-terminated within " +
               std::to_string(service::kJobKeyBytes) + " bytes";
    }
    // 0: any port (a client that takes the service's link profile over).
    if (req.full_width != 0 && req.full_width != full_width) {
        return "the client expects a port of " + std::to_string(req.full_width) +
               " lanes (its UCX_SLIM_LINK_PROFILE) but slimlinkd's port " + port + " has " +
               std::to_string(full_width);
    }
    if (req.local_size < 0 || req.local_size > kMaxLocalSize ||
        (req.local_size > 0 && (req.local_rank < 0 || req.local_rank >= req.local_size))) {
        return "local rank " + std::to_string(req.local_rank) + " of local size " +
               std::to_string(req.local_size) + " (accepted: size 0 to " +
               std::to_string(kMaxLocalSize) + ", rank below the size)";
    }
    return {};
}

std::string check_deposit(const std::uint8_t *payload, std::size_t bytes, service::Deposit& d)
{
    if (bytes < sizeof d) {
        return "a deposit of " + std::to_string(bytes) + " bytes, shorter than its " +
               std::to_string(sizeof d) + "-byte header";
    }
    std::memcpy(&d, payload, sizeof d);
    if (d.record_bytes != bytes - sizeof d) {
        return "a deposit announcing " + std::to_string(d.record_bytes) +
               " record bytes in a payload of " + std::to_string(bytes);
    }
    if (d.wait_ns < 0 || d.wait_ns > kMaxReportWaitNs) {
        return "a report wait of " + std::to_string(d.wait_ns) + " ns (accepted: 0 to " +
               std::to_string(kMaxReportWaitNs / 1'000'000'000) + " s)";
    }
    return {};
}

std::string mode_string(unsigned mode)
{
    char text[8];
    std::snprintf(text, sizeof text, "%04o", mode & 07777u);
    return text;
}

std::string errno_text(int err) { return std::strerror(err); }

std::string folder_of(const std::string& path)
{
    const auto slash = path.rfind('/');
    if (slash == std::string::npos) {
        return ".";
    }
    return slash == 0 ? std::string("/") : path.substr(0, slash);
}

}  // namespace slim::link::service_io

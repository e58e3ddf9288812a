/* SPDX-License-Identifier: BSD-3-Clause */
// Socket plumbing shared by slimlinkd's client and server
// (service_protocol.h): one message = one SOCK_SEQPACKET record, a
// MessageHeader and its payload, optionally with one descriptor
// (SCM_RIGHTS). Internal to src/link.
#pragma once

#include "link/service_protocol.h"

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace slim::link::service_io {

// Header + up to two payload parts (+ `pass_fd` when >= 0) as one message;
// `features` goes into the header (a service's attach_ok and status_reply).
// Returns 0 or the errno of sendmsg (EAGAIN on a full socket with
// MSG_DONTWAIT). MSG_NOSIGNAL is always added: a peer that is gone is an
// error to report, not a SIGPIPE.
int send_message(int fd, service::MessageType type, const void *part1, std::size_t bytes1,
                 const void *part2 = nullptr, std::size_t bytes2 = 0, int flags = 0,
                 int pass_fd = -1, std::uint32_t features = 0);

// The same on a non-blocking socket, waiting (poll) up to `timeout` while it
// is full. Returns 0, an errno, or ETIMEDOUT.
int send_message_wait(int fd, service::MessageType type, const void *part1, std::size_t bytes1,
                      const void *part2, std::size_t bytes2, std::chrono::milliseconds timeout,
                      int pass_fd = -1, std::uint32_t features = 0);

// One received message, not yet checked beyond its size.
struct Received {
    ssize_t bytes  = 0;      // 0: the peer closed; -1: see error
    int error      = 0;      // errno when bytes < 0
    bool truncated = false;  // larger than the buffer, or its control data was
    int fd         = -1;     // a descriptor that came with it (first one; any more are closed)
};

// recvmsg(MSG_DONTWAIT | MSG_CMSG_CLOEXEC) into `buf`. Descriptors the peer
// sent are taken: the first is returned in `fd` (the caller owns it), any
// others are closed.
Received receive(int fd, void *buf, std::size_t capacity);

// Waits (poll) up to `timeout` for a message, then receive(). error is
// ETIMEDOUT when none came.
Received receive_wait(int fd, void *buf, std::size_t capacity, std::chrono::milliseconds timeout);

// The header of a message of `bytes` bytes, checked: magic, version, length
// matching the message, known type. Empty when good, else why not.
std::string check_header(const void *message, std::size_t bytes, service::MessageHeader& header);

// An attach request's payload of `bytes` bytes, checked and copied into
// `request` for a port of `full_width` lanes named `port`: its size, a
// NUL-terminated job key, the client's lanes, its local rank and size.
// Empty when good, else the reason for the refusal.
std::string check_attach(const std::uint8_t *payload, std::size_t bytes, unsigned full_width,
                         const std::string& port, service::AttachRequest& request);

// A deposit's payload, checked: its header, record bytes matching the
// payload, a report wait within 0..kMaxReportWaitNs. The record follows
// the Deposit header in the payload.
std::string check_deposit(const std::uint8_t *payload, std::size_t bytes,
                          service::Deposit& deposit);

// Bounds on what a client says: ranks of a job on one node, and the
// longest report wait (ns).
inline constexpr std::int32_t kMaxLocalSize    = 1 << 16;
inline constexpr std::int64_t kMaxReportWaitNs = 3600LL * 1'000'000'000;

// "0755"
std::string mode_string(unsigned mode);

// strerror(err) as a string.
std::string errno_text(int err);

// The folder of a socket path ("/a/b.sock" -> "/a"; "b.sock" -> ".").
std::string folder_of(const std::string& path);

using service::text_of;

// Big enough for any message: a header and the largest payload.
inline constexpr std::size_t kReceiveBytes =
        sizeof(service::MessageHeader) + service::kMaxMessageBytes;

template <std::size_t N>
void set_text(char (&field)[N], const std::string& text)
{
    const std::size_t n = text.size() < N - 1 ? text.size() : N - 1;
    text.copy(field, n);
    field[n] = '\0';
}

}  // namespace slim::link::service_io

// SPDX-License-Identifier: BSD-3-Clause
// The rank's side of slimlinkd (service_client.h, service_protocol.h).
#include "link/service_client.h"

#include "link/service_io.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

namespace slim::link {

namespace svc = service;
namespace io  = service_io;
using io::errno_text;
using io::folder_of;

namespace {

using io::kReceiveBytes;
// The deposit's acknowledgement is immediate; the report may wait for the
// other ranks (their wait) plus this margin.
constexpr std::chrono::milliseconds kAckTimeout{2000};
constexpr std::chrono::milliseconds kReportMargin{2000};

}  // namespace

void check_service_socket(const std::string& path, bool system)
{
    const std::string folder = folder_of(path);
    const uid_t me           = ::geteuid();
    struct stat st {};
    if (::lstat(folder.c_str(), &st) != 0) {
        throw ServiceError("slimlinkd socket folder " + folder + ": " + errno_text(errno));
    }
    const std::string folder_state = "owned by uid " + std::to_string(st.st_uid) + " with mode " +
                                     io::mode_string(st.st_mode);
    if (!S_ISDIR(st.st_mode)) {
        throw ServiceError("slimlinkd socket folder " + folder +
                           " is not a directory (a symbolic link is not accepted)");
    }
    if (system) {
        if (st.st_uid != 0 || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
            throw ServiceError("slimlinkd socket folder " + folder + " is " + folder_state +
                               "; a system service's folder must belong to root (uid 0) and "
                               "not be writable by group or others");
        }
    } else if (st.st_uid != me || (st.st_mode & 077) != 0) {
        throw ServiceError("slimlinkd socket folder " + folder + " is " + folder_state +
                           "; a per-user service's folder must belong to this user (uid " +
                           std::to_string(me) + ") with mode 0700");
    }
    if (::lstat(path.c_str(), &st) != 0) {
        const int err = errno;
        throw ServiceError("no slimlinkd is listening on " + path + " (" + errno_text(err) + ")");
    }
    if (!S_ISSOCK(st.st_mode)) {
        throw ServiceError("slimlinkd socket " + path + " is not a socket");
    }
    const uid_t owner = system ? 0 : me;
    if (st.st_uid != owner) {
        throw ServiceError("slimlinkd socket " + path + " is owned by uid " +
                           std::to_string(st.st_uid) + " with mode " + io::mode_string(st.st_mode) +
                           "; it must belong to " +
                           (system ? std::string("root (uid 0)")
                                   : "this user (uid " + std::to_string(me) + ")"));
    }
}

int connect_service_socket(const std::string& path, std::chrono::milliseconds timeout)
{
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) {
        throw ServiceError("slimlinkd socket path " + path + " is " + std::to_string(path.size()) +
                           " bytes; at most " + std::to_string(sizeof addr.sun_path - 1) +
                           " are accepted");
    }
    path.copy(addr.sun_path, path.size());
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        throw ServiceError("slimlinkd socket " + path + ": socket(): " + errno_text(errno));
    }
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    for (;;) {
        if (::connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) == 0) {
            return fd;
        }
        const int err = errno;
        if (err == EINTR) {
            continue;
        }
        if ((err == EAGAIN || err == EINPROGRESS) && std::chrono::steady_clock::now() < deadline) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
            continue;
        }
        ::close(fd);
        if (err == EAGAIN || err == EINPROGRESS) {
            throw ServiceError("slimlinkd at " + path + " did not accept the connection within " +
                               std::to_string(timeout.count()) +
                               " ms (its backlog is full: nothing accepts on it)");
        }
        if (err == ECONNREFUSED || err == ENOENT) {
            throw ServiceError("no slimlinkd is listening on " + path + " (" + errno_text(err) +
                               ")");
        }
        throw ServiceError("cannot connect to slimlinkd at " + path + ": " + errno_text(err));
    }
}

namespace {

// Closes a descriptor when leaving scope (connect's error paths).
struct FdGuard {
    int fd = -1;
    ~FdGuard()
    {
        if (fd >= 0) {
            ::close(fd);
        }
    }
    int release()
    {
        const int f = fd;
        fd          = -1;
        return f;
    }
};

// Receives one message of any type, checked header. Throws ServiceError
// naming `path` and `step`.
svc::MessageHeader receive_checked(int fd, std::vector<std::uint8_t>& buf, const std::string& path,
                                   const char *step, std::chrono::milliseconds timeout,
                                   int *passed_fd = nullptr)
{
    buf.resize(kReceiveBytes);
    const io::Received r = io::receive_wait(fd, buf.data(), buf.size(), timeout);
    FdGuard passed{r.fd};
    if (r.bytes == 0) {
        throw ServiceError("slimlinkd at " + path + " closed the connection (" + step + ")");
    }
    if (r.bytes < 0) {
        if (r.error == ETIMEDOUT) {
            throw ServiceError("slimlinkd at " + path + " did not answer within " +
                               std::to_string(timeout.count()) + " ms (" + step + ")");
        }
        throw ServiceError("slimlinkd at " + path + ": receiving (" + step +
                           "): " + errno_text(r.error));
    }
    if (r.truncated) {
        throw ServiceError("slimlinkd at " + path + " sent a message larger than the protocol's " +
                           std::to_string(kReceiveBytes) + " bytes (" + step + ")");
    }
    svc::MessageHeader header;
    const std::string bad = io::check_header(buf.data(), static_cast<std::size_t>(r.bytes), header);
    if (!bad.empty()) {
        throw ServiceError("slimlinkd at " + path + " answered garbage (" + step + "): " + bad);
    }
    if (header.type == static_cast<std::uint16_t>(svc::MessageType::refused)) {
        svc::Refusal refusal;
        std::memcpy(&refusal, buf.data() + sizeof header,
                    std::min<std::size_t>(header.length, sizeof refusal));
        refusal.reason[sizeof refusal.reason - 1] = '\0';
        throw ServiceError("slimlinkd at " + path + " refused us: " + io::text_of(refusal.reason));
    }
    if (passed_fd != nullptr) {
        *passed_fd = passed.release();
    }
    return header;
}

}  // namespace

// ------------------------------------------------------------ paths

std::string service_port_name(const std::string& raw)
{
    std::string name = raw.empty() ? std::string("_") : raw;
    for (char& c : name) {
        const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok) {
            c = '_';
        }
    }
    // "." and ".." are names of folders, not ports.
    if (name.find_first_not_of('.') == std::string::npos) {
        std::replace(name.begin(), name.end(), '.', '_');
    }
    return name;
}

std::string system_socket_path(const std::string& port_name)
{
    return "/run/slimlink/" + service_port_name(port_name) + ".sock";
}

std::string user_socket_dir()
{
    const char *xdg = std::getenv("XDG_RUNTIME_DIR");
    if (xdg != nullptr && xdg[0] == '/') {
        return std::string(xdg) + "/slimlink";
    }
    return "/tmp/slimlink-" + std::to_string(::geteuid());
}

std::string user_socket_path(const std::string& port_name)
{
    return user_socket_dir() + "/" + service_port_name(port_name) + ".sock";
}

namespace {

// The service's link spec (kFeatureLinkProfile), asked right after the
// attach, before anything else is on the connection.
std::string ask_link_spec(int fd, const std::string& socket_path, std::chrono::milliseconds timeout)
{
    const int err = io::send_message_wait(fd, svc::MessageType::link_profile, nullptr, 0, nullptr,
                                          0, timeout);
    if (err != 0) {
        throw ServiceError("slimlinkd at " + socket_path +
                           ": asking for the link profile: " + errno_text(err));
    }
    std::vector<std::uint8_t> buf;
    const svc::MessageHeader header =
            receive_checked(fd, buf, socket_path, "link profile", timeout);
    if (header.type != static_cast<std::uint16_t>(svc::MessageType::link_profile_reply) ||
        header.length != sizeof(svc::LinkProfileReply)) {
        throw ServiceError("slimlinkd at " + socket_path +
                           " answered link_profile with message type " +
                           std::to_string(header.type) + " of " + std::to_string(header.length) +
                           " bytes, not link_profile_reply of " +
                           std::to_string(sizeof(svc::LinkProfileReply)));
    }
    svc::LinkProfileReply reply;
    std::memcpy(&reply, buf.data() + sizeof header, sizeof reply);
    return svc::text_of(reply.spec);
}

}  // namespace

// ------------------------------------------------------------ ServiceClient

std::unique_ptr<ServiceClient> ServiceClient::connect(const std::string& socket_path, bool system,
                                                      const svc::AttachRequest& request,
                                                      std::chrono::milliseconds timeout)
{
    check_service_socket(socket_path, system);
    FdGuard sock{connect_service_socket(socket_path, timeout)};

    int err = io::send_message_wait(sock.fd, svc::MessageType::attach, &request, sizeof request,
                                    nullptr, 0, timeout);
    if (err != 0) {
        throw ServiceError("slimlinkd at " + socket_path + ": sending attach: " + errno_text(err));
    }
    std::vector<std::uint8_t> buf;
    int ring_fd = -1;
    const svc::MessageHeader header =
            receive_checked(sock.fd, buf, socket_path, "attach", timeout, &ring_fd);
    FdGuard ring_guard{ring_fd};
    if (header.type != static_cast<std::uint16_t>(svc::MessageType::attach_ok) ||
        header.length != sizeof(svc::AttachReply)) {
        throw ServiceError("slimlinkd at " + socket_path + " answered attach with message type " +
                           std::to_string(header.type) + " of " + std::to_string(header.length) +
                           " bytes, not attach_ok of " + std::to_string(sizeof(svc::AttachReply)));
    }
    if (ring_fd < 0) {
        throw ServiceError("slimlinkd at " + socket_path + " sent attach_ok without its ring");
    }
    svc::AttachReply reply;
    std::memcpy(&reply, buf.data() + sizeof header, sizeof reply);
    reply.backend[sizeof reply.backend - 1] = '\0';
    reply.port[sizeof reply.port - 1]       = '\0';
    if (reply.ring_bytes != sizeof(svc::DemandRing) || reply.ring_capacity != svc::kRingCapacity) {
        throw ServiceError("slimlinkd at " + socket_path + " offers a ring of " +
                           std::to_string(reply.ring_bytes) + " bytes and " +
                           std::to_string(reply.ring_capacity) + " records; this library expects " +
                           std::to_string(sizeof(svc::DemandRing)) + " and " +
                           std::to_string(svc::kRingCapacity));
    }
    if (request.full_width != 0 && reply.full_width != request.full_width) {
        throw ServiceError("slimlinkd at " + socket_path + " drives a port of " +
                           std::to_string(reply.full_width) + " lanes; we asked for " +
                           std::to_string(request.full_width));
    }
    struct stat st {};
    if (::fstat(ring_fd, &st) != 0 || static_cast<std::uint64_t>(st.st_size) < reply.ring_bytes) {
        throw ServiceError("slimlinkd at " + socket_path + " sent a ring smaller than " +
                           std::to_string(reply.ring_bytes) + " bytes");
    }
    void *const mem =
            ::mmap(nullptr, reply.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, ring_fd, 0);
    if (mem == MAP_FAILED) {
        throw ServiceError("slimlinkd at " + socket_path +
                           ": mapping its ring: " + errno_text(errno));
    }
    auto *const ring = static_cast<svc::DemandRing *>(mem);
    if (ring->magic != svc::kRingMagic || ring->capacity != svc::kRingCapacity) {
        ::munmap(mem, reply.ring_bytes);
        throw ServiceError("slimlinkd at " + socket_path + " sent a ring without its magic");
    }

    std::unique_ptr<ServiceClient> client(new ServiceClient());
    client->fd_                = sock.release();
    client->path_              = socket_path;
    client->reply_             = reply;
    client->ring_              = ring;
    client->ring_bytes_        = reply.ring_bytes;
    client->head_              = ring->head.load(std::memory_order_relaxed);
    client->nudged_head_       = client->head_;
    client->nudge_every_round_ = !client->port_emulated();
    client->features_          = header.features;
    if ((header.features & svc::kFeatureLinkProfile) != 0) {
        client->link_spec_ = ask_link_spec(client->fd_, socket_path, timeout);
    }
    return client;
}

std::unique_ptr<ServiceClient> ServiceClient::connect_any(const std::string& port_name,
                                                          const svc::AttachRequest& request,
                                                          std::chrono::milliseconds timeout)
{
    const std::string system_path = system_socket_path(port_name);
    std::string system_why;
    try {
        return connect(system_path, true, request, timeout);
    } catch (const ServiceError& e) {
        system_why = e.what();
    }
    try {
        return connect(user_socket_path(port_name), false, request, timeout);
    } catch (const ServiceError& e) {
        throw ServiceError("no slimlinkd for port " + service_port_name(port_name) +
                           ": system service: " + system_why + "; per-user service: " + e.what());
    }
}

ServiceClient::~ServiceClient() { detach(); }

bool ServiceClient::publish(const svc::DemandRecord& record) noexcept
{
    if (ring_ == nullptr || lost_) {
        return false;
    }
    // The capacity is ours (the protocol's constant), not read from shared
    // memory: the index mask must not depend on anything another process
    // can write.
    const std::uint64_t tail = ring_->tail.load(std::memory_order_acquire);
    if (head_ - tail >= svc::kRingCapacity) {
        ring_->overflowed.store(1, std::memory_order_release);
        return false;
    }
    ring_->records[head_ & (svc::kRingCapacity - 1)] = record;
    ++head_;
    ring_->head.store(head_, std::memory_order_release);
    return true;
}

void ServiceClient::set_through(TimeNs t) noexcept
{
    if (ring_ == nullptr) {
        return;
    }
    // Never back: the service drops a client whose through_ns goes back.
    if (t > ring_->through_ns.load(std::memory_order_relaxed)) {
        ring_->through_ns.store(t, std::memory_order_release);
    }
}

TimeNs ServiceClient::through() const noexcept
{
    return ring_ == nullptr ? 0 : ring_->through_ns.load(std::memory_order_acquire);
}

int ServiceClient::send_cpu(svc::MessageType type, const void *payload, std::size_t bytes) noexcept
{
    const int err = io::send_message(fd_, type, payload, bytes, nullptr, 0, MSG_DONTWAIT);
    if (err == 0 || err == EAGAIN || err == EWOULDBLOCK) {
        return err == 0 ? 0 : EAGAIN;
    }
    lost_ = true;  // EPIPE, ECONNRESET: the service is gone
    return err;
}

bool ServiceClient::request_cpu(svc::CpuLevel level, TimeNs t_ns) noexcept
{
    if (!cpu_supported() || fd_ < 0) {
        return false;
    }
    const int wanted = static_cast<int>(level);
    if (wanted == cpu_sent_ && cpu_pending_ < 0) {
        return true;
    }
    if (!cpu_affinity_sent_) {
        // Where this thread may run; the service narrows what it reads in
        // /proc with it, never widens it.
        svc::CpuAffinity affinity;
        cpu_set_t set;
        CPU_ZERO(&set);
        if (::sched_getaffinity(0, sizeof set, &set) == 0) {
            for (std::uint32_t c = 0; c < svc::kMaxCpus && c < CPU_SETSIZE; ++c) {
                if (CPU_ISSET(c, &set)) {
                    affinity.mask[c / 64] |= std::uint64_t{1} << (c % 64);
                }
            }
            const int err = send_cpu(svc::MessageType::cpu_affinity, &affinity, sizeof affinity);
            if (err != 0 && err != EAGAIN) {
                return false;
            }
            cpu_affinity_sent_ = err == 0;
        } else {
            cpu_affinity_sent_ = true;  // the service's /proc reading stands alone
        }
    }
    svc::CpuRequest request;
    request.level = static_cast<std::uint32_t>(level);
    request.t_ns  = t_ns;
    const int err = send_cpu(svc::MessageType::cpu_request, &request, sizeof request);
    if (err == 0) {
        cpu_sent_    = wanted;
        cpu_pending_ = -1;
        return true;
    }
    if (err == EAGAIN) {
        cpu_pending_    = wanted;
        cpu_pending_ns_ = t_ns;
    }
    return false;
}

bool ServiceClient::sync() noexcept
{
    if (lost_ || fd_ < 0 || ring_ == nullptr) {
        return false;
    }
    if (cpu_pending_ >= 0) {
        request_cpu(static_cast<svc::CpuLevel>(cpu_pending_), cpu_pending_ns_);
    }
    const bool nudge_due = nudge_every_round_ ? head_ != nudged_head_
                                              : head_ - nudged_head_ >= svc::kRingCapacity / 4;
    if (nudge_due) {
        const int err = io::send_message(fd_, svc::MessageType::nudge, nullptr, 0, nullptr, 0,
                                         MSG_DONTWAIT);
        if (err == 0 || err == EAGAIN || err == EWOULDBLOCK) {
            // A full socket already holds nudges: the service will look.
            nudged_head_ = head_;
        } else {
            lost_ = true;  // EPIPE, ECONNRESET: the service is gone
            return false;
        }
    }
    if (ring_->closed.load(std::memory_order_acquire) != 0) {
        lost_ = true;
        return false;
    }
    pollfd p{fd_, POLLIN, 0};
    const int n = ::poll(&p, 1, 0);
    if (n > 0) {
        if ((p.revents & (POLLHUP | POLLERR | POLLNVAL)) != 0) {
            lost_ = true;
            return false;
        }
        if ((p.revents & POLLIN) != 0) {
            char byte         = 0;
            const ssize_t got = ::recv(fd_, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
            if (got == 0) {
                lost_ = true;  // end of file: the service closed or died
                return false;
            }
            // A message waiting (a refusal before the service closes) is
            // read by whoever expects one; the closed flag says the rest.
        }
    }
    return true;
}

unsigned ServiceClient::port_width() const noexcept
{
    if (lost_ || ring_ == nullptr) {
        return 0;
    }
    return ring_->port_width.load(std::memory_order_relaxed);
}

std::optional<ReceivedReport> ServiceClient::deposit(std::uint32_t record_version,
                                                     const void *record, std::size_t bytes,
                                                     std::chrono::nanoseconds wait)
{
    if (fd_ < 0 || lost_) {
        throw ServiceError("slimlinkd at " + path_ +
                           " is gone: the rank's record is not deposited");
    }
    if (bytes > svc::kMaxMessageBytes - sizeof(svc::Deposit)) {
        throw ServiceError("a rank record of " + std::to_string(bytes) +
                           " bytes does not fit a slimlinkd message (at most " +
                           std::to_string(svc::kMaxMessageBytes - sizeof(svc::Deposit)) + ")");
    }
    svc::Deposit d;
    d.record_version = record_version;
    d.record_bytes   = static_cast<std::uint32_t>(bytes);
    d.wait_ns        = std::max<std::int64_t>(0, wait.count());
    // The report in parts, from a service that sends them: all of a
    // node's ranks, however many.
    const bool parts = (features_ & svc::kFeatureReportParts) != 0;
    int err = io::send_message_wait(fd_, svc::MessageType::deposit, &d, sizeof d, record, bytes,
                                    kAckTimeout, -1, parts ? svc::kFeatureReportParts : 0u);
    if (err != 0) {
        lost_ = true;
        throw ServiceError("slimlinkd at " + path_ +
                           ": sending the rank's record: " + errno_text(err));
    }
    std::vector<std::uint8_t> buf;
    svc::MessageHeader header;
    try {
        header = receive_checked(fd_, buf, path_, "deposit", kAckTimeout);
    } catch (const ServiceError&) {
        lost_ = true;
        throw;
    }
    if (header.type != static_cast<std::uint16_t>(svc::MessageType::deposit_ack) ||
        header.length != sizeof(svc::DepositAck)) {
        throw ServiceError("slimlinkd at " + path_ + " answered the deposit with message type " +
                           std::to_string(header.type) + " of " + std::to_string(header.length) +
                           " bytes, not deposit_ack");
    }
    svc::DepositAck ack;
    std::memcpy(&ack, buf.data() + sizeof header, sizeof ack);
    if (ack.reporter == 0) {
        return std::nullopt;
    }

    const auto report_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(
                                        std::max(wait, decltype(wait){0})) +
                                kReportMargin;
    header = receive_checked(fd_, buf, path_, "node report", report_timeout);
    if (header.type != static_cast<std::uint16_t>(svc::MessageType::node_report)) {
        throw ServiceError("slimlinkd at " + path_ + " sent message type " +
                           std::to_string(header.type) + " where the node report was due");
    }
    // Every length is checked against what is left of the message.
    const std::uint8_t *p   = buf.data() + sizeof header;
    const std::uint8_t *end = p + header.length;
    auto garbage            = [&](const std::string           &what) {
        return ServiceError("slimlinkd at " + path_ + " sent a malformed node report: " + what);
    };
    if (static_cast<std::size_t>(end - p) < sizeof(svc::NodeReportHeader)) {
        throw garbage(std::to_string(header.length) + " bytes, shorter than its header");
    }
    svc::NodeReportHeader rh;
    std::memcpy(&rh, p, sizeof rh);
    p += sizeof rh;
    rh.port.backend[sizeof rh.port.backend - 1] = '\0';
    rh.port.port[sizeof rh.port.port - 1]       = '\0';
    ReceivedReport report;
    report.link_spec      = link_spec_;
    report.port           = rh.port;
    report.record_version = rh.record_version;
    // The entries of one message: `count` announced, from p to end.
    const auto read_entries = [&](std::uint32_t count) {
        if (count > static_cast<std::size_t>(end - p) / sizeof(svc::NodeReportEntry)) {
            throw garbage(std::to_string(count) + " entries announced, room for fewer");
        }
        if (report.entries.size() + count > static_cast<std::size_t>(io::kMaxLocalSize)) {
            throw garbage("more than " + std::to_string(io::kMaxLocalSize) + " entries");
        }
        for (std::uint32_t i = 0; i < count; ++i) {
            const std::size_t n = report.entries.size();
            if (static_cast<std::size_t>(end - p) < sizeof(svc::NodeReportEntry)) {
                throw garbage("entry " + std::to_string(n) + " cut short");
            }
            ReceivedReport::Entry e;
            std::memcpy(&e.entry, p, sizeof e.entry);
            p += sizeof e.entry;
            if (e.entry.record_bytes > static_cast<std::size_t>(end - p)) {
                throw garbage("entry " + std::to_string(n) + " announces " +
                              std::to_string(e.entry.record_bytes) + " record bytes, " +
                              std::to_string(end - p) + " are left");
            }
            e.record.assign(p, p + e.entry.record_bytes);
            p += e.entry.record_bytes;
            report.entries.push_back(std::move(e));
        }
        if (p != end) {
            throw garbage(std::to_string(end - p) + " bytes after the last entry");
        }
    };
    report.entries.reserve(rh.entries);
    read_entries(rh.entries);
    for (bool last = !parts; !last;) {
        header = receive_checked(fd_, buf, path_, "node report's next part", kAckTimeout);
        if (header.type != static_cast<std::uint16_t>(svc::MessageType::node_report_part) ||
            header.length < sizeof(svc::NodeReportPart)) {
            throw garbage("message type " + std::to_string(header.type) + " of " +
                          std::to_string(header.length) + " bytes where its next part was due");
        }
        svc::NodeReportPart part;
        std::memcpy(&part, buf.data() + sizeof header, sizeof part);
        p    = buf.data() + sizeof header + sizeof part;
        end  = buf.data() + sizeof header + header.length;
        last = part.last != 0;
        read_entries(part.entries);
    }
    if (rh.port.cpu_section != 0) {
        header = receive_checked(fd_, buf, path_, "node report's CPU section", kAckTimeout);
        const std::size_t n = header.length;
        if (header.type != static_cast<std::uint16_t>(svc::MessageType::node_report_cpu) ||
            n < sizeof(svc::CpuSection)) {
            throw garbage("message type " + std::to_string(header.type) + " of " +
                          std::to_string(n) + " bytes where its CPU section was due");
        }
        svc::CpuSection cpu;
        std::memcpy(&cpu, buf.data() + sizeof header, sizeof cpu);
        cpu.backend[sizeof cpu.backend - 1] = '\0';
        cpu.problem[sizeof cpu.problem - 1] = '\0';
        if (n != sizeof cpu + std::size_t{cpu.cores} * sizeof(svc::CpuSectionCore)) {
            throw garbage("a CPU section of " + std::to_string(n) + " bytes announcing " +
                          std::to_string(cpu.cores) + " cores");
        }
        report.cpu_cores.resize(cpu.cores);
        if (cpu.cores > 0) {
            std::memcpy(report.cpu_cores.data(), buf.data() + sizeof header + sizeof cpu,
                        n - sizeof cpu);
        }
        report.cpu = cpu;
    }
    return report;
}

void ServiceClient::detach() noexcept
{
    if (fd_ >= 0) {
        if (!lost_) {
            io::send_message(fd_, svc::MessageType::detach, nullptr, 0, nullptr, 0, MSG_DONTWAIT);
        }
        ::close(fd_);
        fd_ = -1;
    }
    if (ring_ != nullptr) {
        ::munmap(ring_, ring_bytes_);
        ring_ = nullptr;
    }
    lost_ = true;
}

// ------------------------------------------------------------ ServiceBackend

namespace {

class ServiceBackend final : public LinkBackend {
public:
    // Records start at the ring's through_ns: the service set it to its
    // clock at the attach, and refuses a client whose first record is
    // older. The live loop's first records can be (its drain publishes
    // events recorded before the attach completed): a rank attaching to a
    // running slimlinkd was refused as "garbage in the ring" and fell back
    // to a report of its own.
    ServiceBackend(std::shared_ptr<ServiceClient> client, Clock clock)
        : client_(std::move(client)), clock_(clock ? std::move(clock) : steady_clock_ns()),
          through_(client_->through())
    {}

    std::string name() const override { return "service:" + io::text_of(client_->info().backend); }
    unsigned full_width() const override { return client_->info().full_width; }
    std::string describe() const override
    {
        return "node service slimlinkd at " + client_->socket_path() + " (" +
               io::text_of(client_->info().backend) + " port " + io::text_of(client_->info().port) +
               ", " + std::to_string(full_width()) +
               " lanes; this rank publishes its demand, the port is the maximum over the "
               "node's ranks)";
    }

    Status set_width(unsigned width) override { return set_width_at(width, clock_()); }
    Status set_width_at(unsigned width, TimeNs at_ns) override
    {
        return publish(width, at_ns, 0, 0);
    }
    Status set_width_until(unsigned width, TimeNs at_ns, TimeNs until_ns) override
    {
        return publish(width, at_ns, until_ns, 0);
    }

    bool sync(TimeNs through_ns) override
    {
        through_ = std::max(through_, through_ns);
        client_->set_through(through_);
        return client_->sync();
    }

    TimeNs traffic(unsigned width) override
    {
        // The service counts late wake-ups; a failure is reported by poll().
        publish(width, clock_(), 0, svc::kTraffic);
        return 0;
    }

    Status poll() override { return failure_; }

    Status restore_full_width() override
    {
        // Full ring: the service holds this rank at full width (overflowed
        // flag). Lost service: nobody can say what the port is at.
        const TimeNs now = clock_();
        if (publish(full_width(), now, 0, 0)) {
            // Complete past it (the horizon is exclusive), and said now:
            // the last request does not wait for a drain round.
            sync(last_ + 1);
        }
        if (client_->service_lost()) {
            return Status::error("the node service slimlinkd at " + client_->socket_path() +
                                 " is gone; it restores full width at its next start");
        }
        return Status::success();
    }

private:
    Status publish(unsigned width, TimeNs at_ns, TimeNs until_ns, std::uint32_t flags)
    {
        const unsigned low = client_->info().low_width;  // 0: an EEE port's LPI
        if (width < low || width > full_width()) {
            return Status::error("slimlinkd backend: width " + std::to_string(width) +
                                 " is outside the port's " + std::to_string(low) + ".." +
                                 std::to_string(full_width()));
        }
        // The service drops a client whose times go back (before its last
        // record or its through_ns): clamp, as a port that acts late would.
        at_ns = std::max({at_ns, last_, through_});
        last_ = at_ns;
        if (until_ns != 0 && until_ns <= at_ns) {
            // A "low until t" whose t has passed already is full width.
            width    = full_width();
            until_ns = 0;
        }
        const svc::DemandRecord record{at_ns, until_ns, width, flags};
        if (client_->publish(record)) {
            return Status::success();
        }
        if (failure_.ok()) {
            failure_ = Status::error(
                    client_->service_lost()
                            ? "slimlinkd at " + client_->socket_path() +
                                      " is gone: this rank can no longer lower the link"
                            : "slimlinkd at " + client_->socket_path() +
                                      ": the demand ring is full (the service is not "
                                      "consuming); the service holds this rank at full width");
        }
        return failure_;
    }

    std::shared_ptr<ServiceClient> client_;
    Clock clock_;
    TimeNs last_    = 0;
    TimeNs through_ = 0;
    Status failure_ = Status::success();
};

}  // namespace

std::unique_ptr<LinkBackend> make_service_backend(std::shared_ptr<ServiceClient> client,
                                                  Clock clock)
{
    return std::make_unique<ServiceBackend>(std::move(client), std::move(clock));
}

}  // namespace slim::link

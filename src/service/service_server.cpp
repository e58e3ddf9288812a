// SPDX-License-Identifier: BSD-3-Clause
// slimlinkd's loop (service_server.h): one thread, epoll over the listening
// socket, the clients' sockets and a timerfd for deadlines (a timerfd, not
// epoll_wait's milliseconds: a client's "low until t" is acted on within
// microseconds of t, and epoll_pwait2 needs Linux 5.11).
#include "service/service_server.h"

#include "base/log.h"
#include "link/service_client.h"
#include "link/service_io.h"
#include "predict/link_profile.h"
#include "service/cpu_controller.h"
#include "service/log_throttle.h"
#include "service/socket_folder.h"
#include "trace/trace.h"

#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <map>
#include <new>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

namespace slim::link {

namespace svc = service;
namespace io  = service_io;
using io::errno_text;
using io::folder_of;

namespace {

using io::kReceiveBytes;
// Ring records that came without a nudge are applied at least this often.
constexpr TimeNs kTickNs = 50'000'000;
// A client that does not read its replies for this long is dropped.
constexpr std::chrono::milliseconds kSendTimeout{1000};
// Out of descriptors (EMFILE, ENFILE): the listening socket stays readable
// and accept keeps failing, so the loop would spin and log each turn. The
// listener is left alone this long instead; connections wait in the
// backlog meanwhile.
constexpr TimeNs kAcceptPauseNs = 250'000'000;
// Connections taken per wake: one user connecting as fast as it can must
// not keep the loop from the others' messages.
constexpr int kAcceptsPerWake = 64;
// Descriptors the service needs besides its clients' sockets (standard
// streams, log, listener, epoll, timer, lock, a ring's memfd being sent).
constexpr rlim_t kReservedDescriptors = 16;

// The descriptor limit, the soft one raised to the hard one: a system
// instance holds a socket per rank of every user on the node.
rlim_t raise_descriptor_limit()
{
    rlimit rl{};
    if (::getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return 1024;
    }
    if (rl.rlim_cur < rl.rlim_max) {
        rlimit raised   = rl;
        raised.rlim_cur = rl.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) {
            rl = raised;
        }
    }
    return rl.rlim_cur;
}

}  // namespace

struct ServiceServer::Impl {
    struct Conn {
        int fd                 = -1;
        std::int32_t uid       = -1;
        std::int64_t pid       = 0;
        bool attached          = false;
        std::uint32_t id       = 0;
        svc::DemandRing *ring  = nullptr;  // our mapping of the memfd we made
        std::uint64_t consumed = 0;        // records taken from the ring
        TimeNs through         = 0;        // last through_ns passed on
        bool overflow_seen     = false;
        std::int32_t rank      = -1;
        TimeNs accepted_ns     = 0;
        bool reads_parts       = false;  // its deposit asked kFeatureReportParts
    };

    PortService& service;
    const ServerOptions& options;
    int listen_fd = -1;
    int epoll_fd  = -1;
    int timer_fd  = -1;
    int lock_fd   = -1;
    bool bound    = false;
    std::map<int, Conn> conns;                   // by socket
    std::map<std::uint32_t, int> by_id;          // client id -> socket
    std::uint64_t dropped                  = 0;  // refused or dropped for bad input
    std::vector<svc::DemandRecord> scratch = std::vector<svc::DemandRecord>(svc::kRingCapacity);
    std::vector<std::uint8_t> buffer       = std::vector<std::uint8_t>(kReceiveBytes);
    bool ever_attached                     = false;
    TimeNs started_ns                      = 0;
    TimeNs last_left_ns                    = 0;
    std::map<std::int32_t, unsigned> per_uid;  // open connections by uid
    unsigned max_per_uid = 0;
    std::optional<TimeNs> accept_paused_until;  // out of descriptors
    LogThrottle throttle;
    bool trim_pending = false;  // a long queue was let go

    // Memory a dropped client's queue held goes back to the system, not
    // only to malloc: the service may run for months.
    void trim_memory()
    {
        if (!trim_pending) {
            return;
        }
        trim_pending = false;
#if defined(__GLIBC__)
        ::malloc_trim(0);
#endif
    }

    Impl(PortService& s, const ServerOptions& o) : service(s), options(o) {}
    ~Impl();

    void bind_socket();
    std::size_t attached_count() const;
    void accept_all(TimeNs now);
    void pause_accepting(int err, TimeNs now);
    // Resumes accepting after a pause; closes connections that never
    // attached in time. Returns the next time either is due.
    std::optional<TimeNs> expire(TimeNs now);
    void on_readable(int fd, TimeNs now);
    void handle(Conn& c, const svc::MessageHeader& h, const std::uint8_t *payload, TimeNs now);
    void attach(Conn& c, const std::uint8_t *payload, std::size_t bytes, TimeNs now);
    void status(Conn& c);
    // The CPU extension: the cores a client may run on (from /proc, never
    // from the client alone), its requests, the controller's status.
    void cpu_register(Conn& c, const svc::CpuAffinity *claimed, TimeNs now);
    void cpu_message(Conn& c, const svc::MessageHeader& h, const std::uint8_t *payload, TimeNs now);
    void cpu_status(Conn& c, TimeNs now);
    std::uint32_t features() const
    {
        return svc::kFeatureLinkProfile | svc::kFeatureReportParts |
               (options.cpu != nullptr ? static_cast<std::uint32_t>(svc::kFeatureCpu) : 0u);
    }
    void deposit(Conn& c, const std::uint8_t *payload, std::size_t bytes, TimeNs now);
    // False: the client was dropped for what its ring holds.
    bool consume(Conn& c, TimeNs now);
    void consume_all(TimeNs now);
    void publish_widths();
    void send_reports(TimeNs now);
    // Refuses (with `reason`, sent and logged), drops, closes.
    void refuse(Conn& c, const std::string& reason, TimeNs now);
    void close_conn(int fd, bool died, TimeNs now);
    // The peer closed (or its socket failed) without a detach: its last
    // records count, then its demand is dropped at once.
    void hang_up(int fd, TimeNs now);
    void arm_timer(std::optional<TimeNs> at);
    std::string who(const Conn& c) const;
};

namespace {

// Takes the lock at once, or, when its holder no longer listens (a service
// restoring its port on the way out keeps the lock until it is done),
// waits for it at most `wait`. A holder that listens is a running service:
// no wait.
bool lock_within(int lock_fd, const sockaddr_un& addr, std::chrono::milliseconds wait)
{
    const auto deadline = std::chrono::steady_clock::now() + wait;
    while (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            return false;
        }
        if (someone_listens(addr) || std::chrono::steady_clock::now() >= deadline) {
            return false;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return true;
}

}  // namespace

ServiceServer::Impl::~Impl()
{
    std::vector<int> fds;
    for (const auto& [fd, c] : conns) {
        fds.push_back(fd);
    }
    const TimeNs now = steady_now_ns();
    for (const int fd : fds) {
        close_conn(fd, false, now);
    }
    if (bound) {
        ::unlink(options.socket_path.c_str());
    }
    for (const int fd : {listen_fd, epoll_fd, timer_fd, lock_fd}) {
        if (fd >= 0) {
            ::close(fd);
        }
    }
}

void ServiceServer::Impl::bind_socket()
{
    const std::string& path = options.socket_path;
    const sockaddr_un addr  = socket_address(path);
    prepare_socket_folder(folder_of(path), options.system);

    // Two services starting at once both find no listener: the lock, held
    // for the service's life, lets only one of them replace the socket.
    const std::string lock_path = path + ".lock";
    lock_fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lock_fd < 0) {
        throw ServiceError("cannot open the lock " + lock_path + ": " + errno_text(errno));
    }
    if (!lock_within(lock_fd, addr, ServiceServer::kLockWait)) {
        if (someone_listens(addr)) {
            throw ServiceError("another slimlinkd is listening on " + path + " (it holds " +
                               lock_path + ")");
        }
        throw ServiceError("another slimlinkd holds " + lock_path + " and has not released it in " +
                           std::to_string(ServiceServer::kLockWait.count()) +
                           " ms (still restoring its port?)");
    }
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            throw ServiceError(path +
                               " exists and is not a socket; remove it or choose another --socket");
        }
        if (someone_listens(addr)) {
            throw ServiceError("another slimlinkd is listening on " + path);
        }
        logger().info("slimlinkd: replacing the stale socket {} (nobody listens on it)", path);
        ::unlink(path.c_str());
    }

    listen_fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (listen_fd < 0) {
        throw ServiceError("socket(): " + errno_text(errno));
    }
    if (::bind(listen_fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) != 0) {
        const int err = errno;
        throw ServiceError(err == EADDRINUSE ? "another slimlinkd is listening on " + path
                                             : "bind " + path + ": " + errno_text(err));
    }
    bound             = true;
    const mode_t mode = options.system ? 0666 : 0600;
    if (::chmod(path.c_str(), mode) != 0) {
        throw ServiceError("chmod " + io::mode_string(mode) + " " + path + ": " +
                           errno_text(errno));
    }
    if (::listen(listen_fd, 128) != 0) {
        throw ServiceError("listen " + path + ": " + errno_text(errno));
    }

    epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    timer_fd = ::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (epoll_fd < 0 || timer_fd < 0) {
        throw ServiceError("epoll/timerfd: " + errno_text(errno));
    }
    for (const int fd : {listen_fd, timer_fd}) {
        epoll_event ev{};
        ev.events  = EPOLLIN;
        ev.data.fd = fd;
        if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            throw ServiceError("epoll_ctl: " + errno_text(errno));
        }
    }

    const rlim_t limit  = raise_descriptor_limit();
    const rlim_t usable = limit > kReservedDescriptors ? limit - kReservedDescriptors : 1;
    // A system instance keeps three quarters of its descriptors for other
    // users than any one; a per-user instance has one user.
    const rlim_t cap = options.system ? std::max<rlim_t>(1, limit / 4) : usable;
    max_per_uid      = static_cast<unsigned>(
            std::min<rlim_t>(std::max(options.max_connections_per_uid, 1u), cap));
    if (max_per_uid < options.max_connections_per_uid) {
        logger().warn("slimlinkd: at most {} connections per uid, not {}: the descriptor limit is "
                      "{} (raise it, e.g. LimitNOFILE= in the systemd unit)",
                      max_per_uid, options.max_connections_per_uid,
                      static_cast<std::uint64_t>(limit));
    }
}

std::string ServiceServer::Impl::who(const Conn& c) const
{
    std::string s = "client";
    if (c.attached) {
        s += " " + std::to_string(c.id);
    }
    s += " (pid " + std::to_string(c.pid) + ", uid " + std::to_string(c.uid);
    if (c.rank >= 0) {
        s += ", rank " + std::to_string(c.rank);
    }
    return s + ")";
}

std::size_t ServiceServer::Impl::attached_count() const
{
    return static_cast<std::size_t>(std::count_if(conns.begin(), conns.end(),
                                                  [](const auto& e) { return e.second.attached; }));
}

void ServiceServer::Impl::accept_all(TimeNs now)
{
    for (int taken = 0; taken < kAcceptsPerWake; ++taken) {
        const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            const int err = errno;
            if (err == EINTR || err == ECONNABORTED) {
                continue;
            }
            if (err == EAGAIN || err == EWOULDBLOCK) {
                return;
            }
            if (err == EMFILE || err == ENFILE || err == ENOBUFS || err == ENOMEM) {
                return pause_accepting(err, now);
            }
            if (throttle.allow("accept", now)) {
                logger().warn("slimlinkd: accept on {}: {}", options.socket_path, errno_text(err));
            }
            return;
        }
        ucred cred{};
        socklen_t len = sizeof cred;
        if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
            if (throttle.allow("accept", now)) {
                logger().warn("slimlinkd: SO_PEERCRED: {}; connection closed", errno_text(errno));
            }
            ::close(fd);
            continue;
        }
        Conn c;
        c.fd          = fd;
        c.uid         = static_cast<std::int32_t>(cred.uid);
        c.pid         = cred.pid;
        c.accepted_ns = now;
        epoll_event ev{};
        ev.events  = EPOLLIN | EPOLLRDHUP;
        ev.data.fd = fd;
        if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev) != 0) {
            if (throttle.allow("accept", now)) {
                logger().warn("slimlinkd: epoll_ctl: {}; connection closed", errno_text(errno));
            }
            ::close(fd);
            continue;
        }
        Conn& added         = conns.emplace(fd, c).first->second;
        const unsigned held = ++per_uid[c.uid];
        if (!options.system && cred.uid != ::geteuid()) {
            refuse(added,
                   "this slimlinkd serves uid " + std::to_string(::geteuid()) +
                           " only (a per-user service); uid " + std::to_string(cred.uid) +
                           " is refused",
                   now);
        } else if (held > max_per_uid) {
            refuse(added,
                   "uid " + std::to_string(c.uid) + " has " + std::to_string(held - 1) +
                           " connections to this slimlinkd already; at most " +
                           std::to_string(max_per_uid) +
                           " per uid are accepted (slimlinkd --max-connections-per-uid)",
                   now);
        }
    }
}

void ServiceServer::Impl::pause_accepting(int err, TimeNs now)
{
    epoll_event ev{};
    ev.events  = 0;
    ev.data.fd = listen_fd;
    ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);
    accept_paused_until = now + kAcceptPauseNs;
    if (throttle.allow("accept", now)) {
        logger().warn("slimlinkd: accept on {}: {}; not accepting for {} ms ({} connections open, "
                      "at most {} per uid)",
                      options.socket_path, errno_text(err), kAcceptPauseNs / 1'000'000,
                      conns.size(), max_per_uid);
    }
}

std::optional<TimeNs> ServiceServer::Impl::expire(TimeNs now)
{
    std::optional<TimeNs> next;
    if (accept_paused_until) {
        if (now >= *accept_paused_until) {
            epoll_event ev{};
            ev.events  = EPOLLIN;
            ev.data.fd = listen_fd;
            ::epoll_ctl(epoll_fd, EPOLL_CTL_MOD, listen_fd, &ev);
            accept_paused_until.reset();
        } else {
            next = accept_paused_until;
        }
    }
    const TimeNs timeout_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(options.attach_timeout).count();
    std::vector<int> late;
    for (const auto& [fd, c] : conns) {
        if (c.attached) {
            continue;
        }
        const TimeNs due = c.accepted_ns + timeout_ns;
        if (now >= due) {
            late.push_back(fd);
        } else if (!next || due < *next) {
            next = due;
        }
    }
    for (const int fd : late) {
        const Conn& c = conns.at(fd);
        if (throttle.allow("timeout", now)) {
            logger().info("slimlinkd: {} did not attach within {} ms: closed", who(c),
                          options.attach_timeout.count());
        }
        close_conn(fd, false, now);
    }
    throttle.flush(now);
    return next;
}

void ServiceServer::Impl::refuse(Conn& c, const std::string& reason, TimeNs now)
{
    if (throttle.allow("refused", now)) {
        logger().warn("slimlinkd: refused {}: {}", who(c), reason);
    }
    ++dropped;
    svc::Refusal r;
    io::set_text(r.reason, reason);
    io::send_message(c.fd, svc::MessageType::refused, &r, sizeof r, nullptr, 0, MSG_DONTWAIT);
    // A close with unread input resets the peer (ECONNRESET), which may
    // then miss the reason: read what came first.
    for (int i = 0; i < 64; ++i) {
        const io::Received left = io::receive(c.fd, buffer.data(), buffer.size());
        if (left.fd >= 0) {
            ::close(left.fd);
        }
        if (left.bytes <= 0) {
            break;
        }
    }
    close_conn(c.fd, true, now);
}

void ServiceServer::Impl::close_conn(int fd, bool died, TimeNs now)
{
    const auto it = conns.find(fd);
    if (it == conns.end()) {
        return;
    }
    Conn& c = it->second;
    if (c.attached) {
        const bool long_queue = service.queued(c.id) > svc::kRingCapacity;
        service.drop(c.id, now, died);
        if (options.cpu != nullptr && options.cpu->knows(c.id)) {
            options.cpu->drop(c.id, now);
            // One line per node's worth of ranks, not one per rank.
            if (options.cpu->ranks() == 0) {
                logger().info("slimlinkd: CPU after the last rank left: {}",
                              options.cpu->summary(now));
            }
        }
        c.ring->closed.store(1, std::memory_order_release);
        ::munmap(c.ring, sizeof(svc::DemandRing));
        by_id.erase(c.id);
        last_left_ns = now;
        trim_pending = trim_pending || long_queue;
    }
    if (const auto held = per_uid.find(c.uid); held != per_uid.end() && --held->second == 0) {
        per_uid.erase(held);
    }
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    ::close(fd);
    conns.erase(it);
}

void ServiceServer::Impl::hang_up(int fd, TimeNs now)
{
    const auto it = conns.find(fd);
    if (it == conns.end()) {
        return;
    }
    Conn& c = it->second;
    if (c.attached) {
        if (!consume(c, now)) {
            return;  // dropped for what its ring held
        }
        logger().info("slimlinkd: {} closed without detaching: its demand is dropped", who(c));
    }
    close_conn(fd, true, now);
}

void ServiceServer::Impl::on_readable(int fd, TimeNs now)
{
    // Every message waiting, then the end of file if that is what is left:
    // a detach right before a close is a detach.
    for (;;) {
        const auto it = conns.find(fd);
        if (it == conns.end()) {
            return;  // closed while handling a message
        }
        Conn& c              = it->second;
        const io::Received r = io::receive(fd, buffer.data(), buffer.size());
        if (r.fd >= 0) {
            ::close(r.fd);  // clients send no descriptors
        }
        if (r.bytes == 0) {
            hang_up(fd, now);
            return;
        }
        if (r.bytes < 0) {
            if (r.error == EAGAIN || r.error == EWOULDBLOCK) {
                return;
            }
            logger().info("slimlinkd: {}: {}", who(c), errno_text(r.error));
            hang_up(fd, now);
            return;
        }
        svc::MessageHeader h;
        std::string bad =
                r.truncated ? "a message larger than " + std::to_string(kReceiveBytes) + " bytes"
                            : io::check_header(buffer.data(), static_cast<std::size_t>(r.bytes), h);
        if (bad.empty() && r.fd >= 0) {
            bad = "a descriptor sent with message type " + std::to_string(h.type);
        }
        if (!bad.empty()) {
            refuse(c, "garbage message: " + bad, now);
            return;
        }
        handle(c, h, buffer.data() + sizeof h, now);
    }
}

void ServiceServer::Impl::handle(Conn& c, const svc::MessageHeader& h, const std::uint8_t *payload,
                                 TimeNs now)
{
    using T = svc::MessageType;
    switch (static_cast<T>(h.type)) {
    case T::attach:
        if (c.attached) {
            return refuse(c, "a second attach on one connection", now);
        }
        return attach(c, payload, h.length, now);
    case T::status:
        if (h.length != 0) {
            return refuse(c, "a status request with a payload", now);
        }
        if (attached_count() == 0) {
            // A launcher (slimlink-run) checking that a service is there
            // before it starts its job: the job gets a whole grace period
            // (or first-client wait) to attach, not what is left of one.
            last_left_ns = now;
            started_ns   = now;
        }
        return status(c);
    case T::nudge:
        if (!c.attached || h.length != 0) {
            return refuse(c, c.attached ? "a nudge with a payload" : "a nudge before attach", now);
        }
        // The ring is read after every wake (consume_all).
        return;
    case T::deposit:
        if (!c.attached) {
            return refuse(c, "a deposit before attach", now);
        }
        c.reads_parts = (h.features & svc::kFeatureReportParts) != 0;
        return deposit(c, payload, h.length, now);
    case T::detach:
        if (h.length != 0) {
            return refuse(c, "a detach with a payload", now);
        }
        if (c.attached) {
            // Its records up to now still count; garbage among them drops it.
            if (!consume(c, now)) {
                return;
            }
            logger().info("slimlinkd: {} detached", who(c));
        }
        close_conn(c.fd, false, now);
        return;
    case T::cpu_affinity:
    case T::cpu_request:
    case T::cpu_status: return cpu_message(c, h, payload, now);
    case T::link_profile: {
        if (!c.attached || h.length != 0) {
            return refuse(c,
                          c.attached ? "a link profile request with a payload"
                                     : "a link profile request before attach",
                          now);
        }
        svc::LinkProfileReply reply;
        io::set_text(reply.spec, link::link_spec(options.link));
        io::send_message_wait(c.fd, svc::MessageType::link_profile_reply, &reply, sizeof reply,
                              nullptr, 0, kSendTimeout);
        return;
    }
    default:
        return refuse(c, "message type " + std::to_string(h.type) + " is the service's to send",
                      now);
    }
}

void ServiceServer::Impl::cpu_register(Conn& c, const svc::CpuAffinity *claimed, TimeNs now)
{
    // The service reads where the peer may run: a rank can ask only for
    // its own cores, whatever it claims. Its claim may only narrow that
    // (a rank pinned narrower than its main thread).
    std::string why;
    const std::optional<CoreSet> allowed = read_allowed_cores(c.pid, why);
    CoreSet cores;
    if (allowed) {
        cores = *allowed;
    } else {
        // Unknown: it may run anywhere, so it holds every core at full.
        cores.set();
        if (throttle.allow("cpu", now)) {
            logger().warn("slimlinkd: CPU: the cores of {} are unknown ({}): it holds every "
                          "core at full",
                          who(c), why);
        }
    }
    if (claimed != nullptr && allowed) {
        CoreSet claim;
        for (std::size_t w = 0; w < svc::kCpuMaskWords; ++w) {
            for (std::size_t b = 0; b < 64; ++b) {
                if ((claimed->mask[w] >> b) & 1u) {
                    claim.set(w * 64 + b);
                }
            }
        }
        const CoreSet outside = claim & ~cores;
        if (outside.any() && throttle.allow("cpu", now)) {
            logger().warn("slimlinkd: CPU: {} claims cores {} it may not run on (its "
                          "Cpus_allowed_list is {}): ignored",
                          who(c), format_cpu_list(outside), format_cpu_list(cores));
        }
        if ((claim & cores).any()) {
            cores &= claim;
        }
    }
    options.cpu->set_cores(c.id, cores, now, service.job_serial(c.id));
    logger().debug("slimlinkd: CPU: {} may run on cores {}", who(c), format_cpu_list(cores));
}

void ServiceServer::Impl::cpu_message(Conn& c, const svc::MessageHeader& h,
                                      const std::uint8_t *payload, TimeNs now)
{
    using T      = svc::MessageType;
    const T type = static_cast<T>(h.type);
    if (options.cpu == nullptr) {
        return refuse(c, "the CPU messages are not offered by this slimlinkd (--cpu off)", now);
    }
    if (type == T::cpu_status) {
        if (h.length != 0) {
            return refuse(c, "a CPU status request with a payload", now);
        }
        return cpu_status(c, now);
    }
    if (!c.attached) {
        return refuse(c, "a CPU message before attach", now);
    }
    if (type == T::cpu_affinity) {
        if (h.length != sizeof(svc::CpuAffinity)) {
            return refuse(c,
                          "a CPU affinity of " + std::to_string(h.length) + " bytes; " +
                                  std::to_string(sizeof(svc::CpuAffinity)) + " are expected",
                          now);
        }
        svc::CpuAffinity claimed;
        std::memcpy(&claimed, payload, sizeof claimed);
        return cpu_register(c, &claimed, now);
    }
    if (h.length != sizeof(svc::CpuRequest)) {
        return refuse(c,
                      "a CPU request of " + std::to_string(h.length) + " bytes; " +
                              std::to_string(sizeof(svc::CpuRequest)) + " are expected",
                      now);
    }
    svc::CpuRequest r;
    std::memcpy(&r, payload, sizeof r);
    if (r.level != static_cast<std::uint32_t>(svc::CpuLevel::full) &&
        r.level != static_cast<std::uint32_t>(svc::CpuLevel::low)) {
        return refuse(c, "a CPU request for level " + std::to_string(r.level) + " (0 or 1)", now);
    }
    options.cpu->request(c.id, r.level == static_cast<std::uint32_t>(svc::CpuLevel::low), now);
}

void ServiceServer::Impl::cpu_status(Conn& c, TimeNs now)
{
    // Counts and cores only: which rank asks what is not told to other
    // users, as for the link's status.
    const svc::CpuStatusReply s = options.cpu->status(now);
    const std::size_t room      = (svc::kMaxMessageBytes - sizeof s) / sizeof(svc::CpuStatusCore);
    const std::vector<svc::CpuStatusCore> cores = options.cpu->core_status(room);
    io::send_message_wait(c.fd, svc::MessageType::cpu_status_reply, &s, sizeof s, cores.data(),
                          cores.size() * sizeof(svc::CpuStatusCore), kSendTimeout);
}

void ServiceServer::Impl::attach(Conn& c, const std::uint8_t *payload, std::size_t bytes,
                                 TimeNs now)
{
    svc::AttachRequest req;
    const unsigned full = service.full_width();
    if (std::string bad = io::check_attach(payload, bytes, full, service.port_name(), req);
        !bad.empty()) {
        return refuse(c, bad, now);
    }

    // The ring lives in a memfd this service made: the client can write
    // its records, but sealed against shrinking (a client truncating it
    // would make our reads fault) and growing.
    const int memfd = ::memfd_create("slimlink-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (memfd < 0) {
        logger().error("slimlinkd: memfd_create: {}", errno_text(errno));
        return refuse(c, "the service could not create a ring: " + errno_text(errno), now);
    }
    void *mem = MAP_FAILED;
    if (::ftruncate(memfd, sizeof(svc::DemandRing)) == 0 &&
        ::fcntl(memfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) == 0) {
        mem = ::mmap(nullptr, sizeof(svc::DemandRing), PROT_READ | PROT_WRITE, MAP_SHARED, memfd,
                     0);
    }
    if (mem == MAP_FAILED) {
        const int err = errno;
        ::close(memfd);
        logger().error("slimlinkd: ring for {}: {}", who(c), errno_text(err));
        return refuse(c, "the service could not create a ring: " + errno_text(err), now);
    }
    auto *ring       = new (mem) svc::DemandRing();
    ring->full_width = full;
    // The service counts the client's timeline complete from its attach:
    // a ring's through_ns starts there, not at 0, which would go back.
    ring->through_ns.store(now, std::memory_order_relaxed);
    ring->port_width.store(service.width(), std::memory_order_relaxed);

    ClientInfo info;
    info.rank       = req.rank;
    info.local_rank = req.local_rank;
    info.local_size = req.local_size;
    info.pid        = c.pid;  // SO_PEERCRED, not what the client says
    info.uid        = c.uid;  // with the key, the job: see PortService::attach
    // Escaped once here, as every text from outside is: it goes into the
    // log and refusals. The escape is one-to-one, so jobs stay distinct.
    info.job_key = predict::escape_for_message(svc::text_of(req.job_key), svc::kJobKeyBytes);
    std::string why;
    c.id = service.attach(info, now, &why);
    if (c.id == 0) {
        ::munmap(mem, sizeof(svc::DemandRing));
        ::close(memfd);
        return refuse(c, why, now);
    }
    c.attached    = true;
    c.ring        = ring;
    c.rank        = req.rank;
    c.through     = now;
    by_id[c.id]   = c.fd;
    ever_attached = true;

    svc::AttachReply reply;
    reply.client_id     = c.id;
    reply.full_width    = full;
    reply.low_width     = options.link.low_width;
    reply.ring_capacity = svc::kRingCapacity;
    reply.ring_bytes    = sizeof(svc::DemandRing);
    reply.tau_ns        = options.link.tau_ns;
    reply.lane_watts    = options.link.lane_watts;
    io::set_text(reply.backend, service.backend().name());
    io::set_text(reply.port, service.port_name());
    if (options.cpu != nullptr) {
        // Every rank holds its cores at full from its attach, whether it
        // ever asks for low or not (an older client never does).
        cpu_register(c, nullptr, now);
    }
    const int err = io::send_message_wait(c.fd, svc::MessageType::attach_ok, &reply, sizeof reply,
                                          nullptr, 0, kSendTimeout, memfd, features());
    ::close(memfd);
    if (err != 0) {
        logger().info("slimlinkd: {}: sending attach_ok: {}; dropped", who(c), errno_text(err));
        close_conn(c.fd, true, now);
        return;
    }
    logger().info("slimlinkd: {} attached (job '{}', local rank {} of {})", who(c), info.job_key,
                  req.local_rank, req.local_size);
}

void ServiceServer::Impl::status(Conn& c)
{
    svc::StatusReply s;
    io::set_text(s.backend, service.backend().name());
    io::set_text(s.port, service.port_name());
    s.full_width      = service.full_width();
    s.width           = service.width();
    s.live_clients    = static_cast<std::uint32_t>(service.live_clients());
    s.pid             = ::getpid();
    s.clients_dropped = dropped;
    s.backend_errors  = service.backend_errors();
    s.backend_failed  = service.backend_failed() ? 1 : 0;
    s.width_unknown   = service.width_unknown() ? 1 : 0;
    io::set_text(s.problem, service.problem());
    // On a system instance any user may ask: each sees the pids and ranks
    // of its own clients only (the uid is the socket's, not a claim), and
    // how many clients other users have. The port's facts are everyone's:
    // they describe the hardware all of them share.
    const bool sees_all = c.uid == 0 || static_cast<uid_t>(c.uid) == ::geteuid();
    std::size_t others  = 0;
    std::vector<svc::StatusClient> clients =
            service.clients(sees_all ? std::nullopt : std::optional<std::int32_t>(c.uid), &others);
    s.other_users_clients  = static_cast<std::uint32_t>(others);
    const std::size_t room = (svc::kMaxMessageBytes - sizeof s) / sizeof(svc::StatusClient);
    if (clients.size() > room) {
        clients.resize(room);
    }
    io::send_message_wait(c.fd, svc::MessageType::status_reply, &s, sizeof s, clients.data(),
                          clients.size() * sizeof(svc::StatusClient), kSendTimeout, -1, features());
}

void ServiceServer::Impl::deposit(Conn& c, const std::uint8_t *payload, std::size_t bytes,
                                  TimeNs now)
{
    svc::Deposit d;
    if (std::string bad = io::check_deposit(payload, bytes, d); !bad.empty()) {
        return refuse(c, bad, now);
    }
    // Its demand up to now counts in its job's report.
    if (!consume(c, now)) {
        return;
    }
    std::vector<std::uint8_t> record(payload + sizeof d, payload + bytes);
    svc::DepositAck ack;
    ack.reporter =
            service.deposit(c.id, d.record_version, std::move(record), now, d.wait_ns) ? 1 : 0;
    const int err = io::send_message_wait(c.fd, svc::MessageType::deposit_ack, &ack, sizeof ack,
                                          nullptr, 0, kSendTimeout);
    if (err != 0) {
        logger().info("slimlinkd: {}: sending deposit_ack: {}", who(c), errno_text(err));
    }
}

bool ServiceServer::Impl::consume(Conn& c, TimeNs now)
{
    svc::DemandRing& ring = *c.ring;
    // through_ns before head: every record published before the client
    // set this through_ns is then within head, so the service never sees
    // a through_ns ahead of records it has not read yet.
    const TimeNs through     = ring.through_ns.load(std::memory_order_acquire);
    const std::uint64_t head = ring.head.load(std::memory_order_acquire);
    if (ring.overflowed.load(std::memory_order_acquire) != 0 && !c.overflow_seen) {
        c.overflow_seen = true;
        logger().warn("slimlinkd: {} filled its ring: held at full width from now on", who(c));
        service.overflowed(c.id);
    }
    const std::uint64_t count = head - c.consumed;  // modulo 2^64: a head gone back is huge
    if (count > svc::kRingCapacity) {
        refuse(c,
               "garbage in the ring: head " + std::to_string(head) + " with " +
                       std::to_string(c.consumed) + " records consumed (capacity " +
                       std::to_string(svc::kRingCapacity) + ")",
               now);
        return false;
    }
    if (count == 0 && through == c.through) {
        return true;
    }
    // Copied out before anything is checked: the client may be writing the
    // ring while we read it. Indexes come from our own counter.
    const std::size_t first = static_cast<std::size_t>(c.consumed & (svc::kRingCapacity - 1));
    const std::size_t n     = static_cast<std::size_t>(count);
    const std::size_t part  = std::min(n, svc::kRingCapacity - first);
    std::memcpy(scratch.data(), &ring.records[first], part * sizeof(svc::DemandRecord));
    std::memcpy(scratch.data() + part, &ring.records[0], (n - part) * sizeof(svc::DemandRecord));
    std::string why;
    bool queue_full = false;
    if (!service.publish(c.id, scratch.data(), n, through, &why, &queue_full)) {
        refuse(c, queue_full ? why : "garbage in the ring: " + why, now);
        return false;
    }
    c.consumed = head;
    c.through  = through;
    ring.tail.store(head, std::memory_order_release);
    return true;
}

void ServiceServer::Impl::consume_all(TimeNs now)
{
    std::vector<int> fds;
    for (const auto& [fd, c] : conns) {
        if (c.attached) {
            fds.push_back(fd);
        }
    }
    for (const int fd : fds) {
        const auto it = conns.find(fd);
        if (it != conns.end()) {
            consume(it->second, now);
        }
    }
}

void ServiceServer::Impl::publish_widths()
{
    const unsigned width = service.width();
    for (auto& [fd, c] : conns) {
        if (c.attached) {
            c.ring->port_width.store(width, std::memory_order_relaxed);
        }
    }
}

namespace {

// A node report's entries laid out in messages: the first after the
// node_report's header, the rest after a NodeReportPart's (when the client
// reads parts; otherwise what does not fit the first is left out).
struct ReportMessages {
    struct Body {
        std::vector<std::uint8_t> bytes;
        std::uint32_t entries = 0;
    };
    std::vector<Body> bodies;
    std::size_t cut = 0;  // entries left out, or sent without their record
};

ReportMessages lay_out_report(const std::vector<JobReport::Entry>& entries, bool parts)
{
    ReportMessages out;
    out.bodies.emplace_back();
    const auto room_in = [&out] {
        const std::size_t head = out.bodies.size() == 1 ? sizeof(svc::NodeReportHeader)
                                                        : sizeof(svc::NodeReportPart);
        return svc::kMaxMessageBytes - head - out.bodies.back().bytes.size();
    };
    for (const JobReport::Entry& e : entries) {
        svc::NodeReportEntry entry = e.entry;
        if (parts && out.bodies.back().entries > 0 && room_in() < sizeof entry + e.record.size()) {
            out.bodies.emplace_back();
        }
        const std::size_t room = room_in();
        if (room < sizeof entry) {
            ++out.cut;
            continue;
        }
        // A record larger than a message travels without its bytes.
        entry.record_bytes = e.record.size() <= room - sizeof entry
                                     ? static_cast<std::uint32_t>(e.record.size())
                                     : 0;
        out.cut += entry.record_bytes != e.record.size() ? 1 : 0;
        std::vector<std::uint8_t>& body = out.bodies.back().bytes;
        const auto *p                   = reinterpret_cast<const std::uint8_t *>(&entry);
        body.insert(body.end(), p, p + sizeof entry);
        body.insert(body.end(), e.record.begin(), e.record.begin() + entry.record_bytes);
        ++out.bodies.back().entries;
    }
    return out;
}

}  // namespace

void ServiceServer::Impl::send_reports(TimeNs now)
{
    for (auto& [client, report] : service.ready_reports(now)) {
        const auto id = by_id.find(client);
        if (id == by_id.end()) {
            logger().warn("slimlinkd: the node report for client {} is dropped: it is gone",
                          client);
            continue;
        }
        Conn& c = conns.at(id->second);
        svc::NodeReportHeader h;
        h.port                      = report.port;
        h.record_version            = report.record_version;
        const ReportMessages layout = lay_out_report(report.entries, c.reads_parts);
        h.entries                   = layout.bodies.front().entries;
        if (layout.cut > 0) {
            logger().error("slimlinkd: the node report for {} exceeds {} bytes{}: {} entries or "
                           "records are left out",
                           who(c), svc::kMaxMessageBytes,
                           c.reads_parts ? " in one entry" : " and its client reads no parts",
                           layout.cut);
        }
        // The CPU section travels in a message of its own, announced in the
        // header, so that a client that does not read it is not confused.
        std::optional<CpuController::JobSection> cpu;
        if (options.cpu != nullptr) {
            const std::size_t room =
                    (svc::kMaxMessageBytes - sizeof(svc::CpuSection)) / sizeof(svc::CpuSectionCore);
            cpu = options.cpu->job_section(report.job_serial, now, room);
        }
        h.port.cpu_section                     = cpu ? 1 : 0;
        const std::vector<std::uint8_t>& first = layout.bodies.front().bytes;
        int err = io::send_message_wait(c.fd, svc::MessageType::node_report, &h, sizeof h,
                                        first.data(), first.size(), kSendTimeout);
        if (c.reads_parts) {
            // Each body after the first in a part of its own; one part at
            // least, so that the client knows where the rows end.
            static const ReportMessages::Body kNone;
            const std::size_t parts = std::max<std::size_t>(layout.bodies.size() - 1, 1);
            for (std::size_t i = 1; err == 0 && i <= parts; ++i) {
                const ReportMessages::Body& b = i < layout.bodies.size() ? layout.bodies[i] : kNone;
                svc::NodeReportPart part;
                part.entries = b.entries;
                part.last    = i == parts ? 1 : 0;
                err = io::send_message_wait(c.fd, svc::MessageType::node_report_part, &part,
                                            sizeof part, b.bytes.data(), b.bytes.size(),
                                            kSendTimeout);
            }
        }
        if (err == 0 && cpu) {
            if (cpu->totals.cores < cpu->totals.cores_mapped) {
                logger().warn("slimlinkd: the node report's CPU section for {} lists {} of its "
                              "{} cores (the sums cover all)",
                              who(c), cpu->totals.cores, cpu->totals.cores_mapped);
            }
            err = io::send_message_wait(c.fd, svc::MessageType::node_report_cpu, &cpu->totals,
                                        sizeof cpu->totals, cpu->cores.data(),
                                        cpu->cores.size() * sizeof(svc::CpuSectionCore),
                                        kSendTimeout);
        }
        if (err != 0) {
            logger().warn("slimlinkd: sending the node report to {}: {}", who(c), errno_text(err));
        }
    }
}

void ServiceServer::Impl::arm_timer(std::optional<TimeNs> at)
{
    itimerspec spec{};
    if (at) {
        // 0 would disarm: a deadline already passed fires at once.
        const TimeNs t        = std::max<TimeNs>(*at, 1);
        spec.it_value.tv_sec  = static_cast<time_t>(t / 1'000'000'000);
        spec.it_value.tv_nsec = static_cast<long>(t % 1'000'000'000);
    }
    ::timerfd_settime(timer_fd, TFD_TIMER_ABSTIME, &spec, nullptr);
}

// ------------------------------------------------------------ ServiceServer

ServiceServer::ServiceServer(PortService& service, ServerOptions options)
    : service_(service), options_(std::move(options)),
      impl_(std::make_unique<Impl>(service_, options_))
{
    impl_->bind_socket();
    logger().info("slimlinkd: listening on {} ({} service; port {}, {} lanes, backend {})",
                  options_.socket_path, options_.system ? "system" : "per-user",
                  service_.port_name(), service_.full_width(), service_.backend().name());
}

ServiceServer::~ServiceServer() = default;

int ServiceServer::release_lock_to_caller() { return std::exchange(impl_->lock_fd, -1); }

int ServiceServer::run(const std::atomic<bool>& stop)
{
    Impl& s = *impl_;
    const TimeNs grace_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(options_.grace).count();
    const TimeNs first_ns =
            std::chrono::duration_cast<std::chrono::nanoseconds>(options_.first_client_wait)
                    .count();
    const bool deadlines = service_.backend().stats() == nullptr;
    s.started_ns         = steady_now_ns();
    epoll_event events[64];

    while (!stop.load(std::memory_order_relaxed)) {
        TimeNs now = steady_now_ns();
        s.consume_all(now);
        service_.advance();
        s.trim_memory();
        std::optional<TimeNs> wake;
        auto earliest = [&wake](std::optional<TimeNs> t) {
            if (t && (!wake || *t < *wake)) {
                wake = t;
            }
        };
        if (deadlines) {
            earliest(service_.act_on_deadlines(now));
        }
        s.publish_widths();
        s.send_reports(now);
        earliest(service_.next_report_deadline());
        earliest(s.expire(now));

        const std::size_t attached = s.attached_count();
        if (attached > 0) {
            earliest(now + kTickNs);
        } else if (s.ever_attached && grace_ns > 0) {
            if (now - s.last_left_ns >= grace_ns) {
                logger().info("slimlinkd: no client for {} ms: exiting", options_.grace.count());
                return 0;
            }
            earliest(s.last_left_ns + grace_ns);
        } else if (!s.ever_attached && first_ns > 0) {
            if (now - s.started_ns >= first_ns) {
                logger().info("slimlinkd: no client came within {} ms: exiting",
                              options_.first_client_wait.count());
                return 0;
            }
            earliest(s.started_ns + first_ns);
        }
        s.arm_timer(wake);
        // The stop flag is set by a signal handler or another thread; a
        // wait bounded at 100 ms notices it without a self-pipe.
        const int n = ::epoll_wait(s.epoll_fd, events, 64, 100);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            logger().error("slimlinkd: epoll_wait: {}", errno_text(errno));
            return 1;
        }
        now = steady_now_ns();
        for (int i = 0; i < n; ++i) {
            const int fd = events[i].data.fd;
            if (fd == s.listen_fd) {
                s.accept_all(now);
            } else if (fd == s.timer_fd) {
                std::uint64_t expirations = 0;
                [[maybe_unused]] const ssize_t r =
                        ::read(s.timer_fd, &expirations, sizeof expirations);
            } else {
                // Readable, or hung up: on_readable reads what is left, then
                // the end of file drops the client (SIGKILL included).
                s.on_readable(fd, now);
                // An error or hang-up that left nothing to read (recv said
                // EAGAIN) would wake us forever.
                if ((events[i].events & (EPOLLHUP | EPOLLERR)) != 0) {
                    s.hang_up(fd, now);
                }
            }
        }
    }
    logger().info("slimlinkd: stopping");
    return 0;
}

}  // namespace slim::link

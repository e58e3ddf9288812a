// SPDX-License-Identifier: BSD-3-Clause
// service-hostile: slimlinkd clients that misbehave, for the regression
// tests of tests/service/slimlinkd-hostile.test (the protocol is
// src/link/service_protocol.h). Modes:
//   member SOCKET KEY LOCAL_RANK LOCAL_SIZE MARKER DELAY_MS WAIT_MS
//       attach to job KEY as that local rank, deposit the record MARKER
//       after DELAY_MS (report wait WAIT_MS) and, as the job's reporter,
//       print each entry of the node report: "entry L state S record R".
//       Exit 3 when refused (the reason on standard output).
//   flood SOCKET SECONDS
//       one client attached and silent (it holds the merge horizon back),
//       another publishing records 1000 s ahead as fast as it can; prints
//       "dropped after N records" when the service drops it, and the
//       service's resident memory at the end ("rss_kb N").
//   idle SOCKET COUNT HOLD_MS
//       COUNT connections that never send; after HOLD_MS prints how many
//       the service accepted and later closed ("connected N closed M").
// Every wait is bounded.
#include "link/service_io.h"
#include "link/service_protocol.h"

#include <poll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace svc = slim::link::service;
namespace io  = slim::link::service_io;
using namespace std::chrono_literals;

namespace {

std::string socket_path;

long long now_ns()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
                   std::chrono::steady_clock::now().time_since_epoch())
            .count();
}

int connect_socket()
{
    const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, socket_path.c_str(), sizeof a.sun_path - 1);
    if (fd < 0 || ::connect(fd, reinterpret_cast<const sockaddr *>(&a), sizeof a) != 0) {
        if (fd >= 0) {
            ::close(fd);
        }
        return -1;
    }
    return fd;
}

struct Attached {
    int fd                = -1;
    svc::DemandRing *ring = nullptr;
};

// Attaches; on refusal prints the reason and returns fd -1.
Attached attach(const std::string& key, int local_rank, int local_size)
{
    Attached a;
    a.fd = connect_socket();
    if (a.fd < 0) {
        std::printf("connect: %s\n", std::strerror(errno));
        return a;
    }
    svc::AttachRequest r;
    r.full_width = 4;
    r.rank       = local_rank;
    r.local_rank = local_rank;
    r.local_size = local_size;
    r.pid        = ::getpid();
    io::set_text(r.job_key, key);
    io::send_message(a.fd, svc::MessageType::attach, &r, sizeof r);
    std::vector<std::uint8_t> buf(io::kReceiveBytes);
    const io::Received got = io::receive_wait(a.fd, buf.data(), buf.size(), 3000ms);
    svc::MessageHeader h;
    if (got.bytes <= 0 || !io::check_header(buf.data(), got.bytes, h).empty()) {
        std::printf("attach: no answer\n");
    } else if (h.type == static_cast<std::uint16_t>(svc::MessageType::refused)) {
        svc::Refusal why;
        std::memcpy(&why, buf.data() + sizeof h, std::min<std::size_t>(sizeof why, h.length));
        std::printf("refused: %s\n", io::text_of(why.reason).c_str());
    } else if (h.type == static_cast<std::uint16_t>(svc::MessageType::attach_ok) && got.fd >= 0) {
        svc::AttachReply reply;
        std::memcpy(&reply, buf.data() + sizeof h, sizeof reply);
        void *mem =
                ::mmap(nullptr, reply.ring_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, got.fd, 0);
        ::close(got.fd);
        if (mem != MAP_FAILED) {
            a.ring = static_cast<svc::DemandRing *>(mem);
            return a;
        }
    }
    ::close(a.fd);
    a.fd = -1;
    return a;
}

int member(const std::string& key, int local_rank, int local_size, const std::string& marker,
           int delay_ms, int wait_ms)
{
    const Attached a = attach(key, local_rank, local_size);
    if (a.fd < 0) {
        return 3;
    }
    const long long until = now_ns() + delay_ms * 1'000'000LL;
    while (now_ns() < until) {
        a.ring->through_ns.store(now_ns());
        std::this_thread::sleep_for(10ms);
    }
    a.ring->through_ns.store(now_ns());
    svc::Deposit d;
    d.record_version = 1;
    d.record_bytes   = static_cast<std::uint32_t>(marker.size());
    d.wait_ns        = wait_ms * 1'000'000LL;
    io::send_message(a.fd, svc::MessageType::deposit, &d, sizeof d, marker.data(), marker.size());
    std::vector<std::uint8_t> buf(io::kReceiveBytes);
    io::Received got = io::receive_wait(a.fd, buf.data(), buf.size(), 3000ms);
    svc::MessageHeader h;
    if (got.bytes <= 0 || !io::check_header(buf.data(), got.bytes, h).empty() ||
        h.type != static_cast<std::uint16_t>(svc::MessageType::deposit_ack)) {
        std::printf("no deposit_ack\n");
        return 1;
    }
    svc::DepositAck ack;
    std::memcpy(&ack, buf.data() + sizeof h, sizeof ack);
    std::printf("reporter %u\n", ack.reporter);
    if (ack.reporter == 0) {
        return 0;
    }
    const long long give_up = now_ns() + (wait_ms + 3000) * 1'000'000LL;
    for (;;) {
        a.ring->through_ns.store(now_ns());
        got = io::receive_wait(a.fd, buf.data(), buf.size(), 50ms);
        if (got.bytes != -1 || got.error != ETIMEDOUT || now_ns() > give_up) {
            break;
        }
    }
    if (got.bytes <= 0 || !io::check_header(buf.data(), got.bytes, h).empty() ||
        h.type != static_cast<std::uint16_t>(svc::MessageType::node_report)) {
        std::printf("no node report\n");
        return 1;
    }
    svc::NodeReportHeader report;
    std::memcpy(&report, buf.data() + sizeof h, sizeof report);
    std::size_t off = sizeof h + sizeof report;
    for (std::uint32_t i = 0; i < report.entries; ++i) {
        svc::NodeReportEntry e;
        if (off + sizeof e > static_cast<std::size_t>(got.bytes)) {
            break;
        }
        std::memcpy(&e, buf.data() + off, sizeof e);
        off += sizeof e;
        const std::size_t n = std::min<std::size_t>(e.record_bytes, got.bytes - off);
        std::printf("entry %d state %u record %s\n", e.local_rank, e.state,
                    std::string(reinterpret_cast<const char *>(buf.data() + off), n).c_str());
        off += n;
    }
    return 0;
}

long rss_kb(long long pid)
{
    const std::string path = "/proc/" + std::to_string(pid) + "/status";
    FILE *f                = std::fopen(path.c_str(), "r");
    if (!f) {
        return -1;
    }
    char line[256];
    long kb = -1;
    while (std::fgets(line, sizeof line, f)) {
        if (std::strncmp(line, "VmRSS:", 6) == 0) {
            kb = std::atol(line + 6);
        }
    }
    std::fclose(f);
    return kb;
}

long long service_pid()
{
    const int fd = connect_socket();
    if (fd < 0) {
        return -1;
    }
    io::send_message(fd, svc::MessageType::status, nullptr, 0);
    std::vector<std::uint8_t> buf(io::kReceiveBytes);
    const io::Received got = io::receive_wait(fd, buf.data(), buf.size(), 3000ms);
    ::close(fd);
    svc::MessageHeader h;
    if (got.bytes <= 0 || !io::check_header(buf.data(), got.bytes, h).empty() ||
        h.type != static_cast<std::uint16_t>(svc::MessageType::status_reply)) {
        return -1;
    }
    svc::StatusReply s;
    std::memcpy(&s, buf.data() + sizeof h, sizeof s);
    return s.pid;
}

int flood(int seconds)
{
    const Attached silent = attach("flood-silent", -1, 0);
    const Attached b      = attach("flood", -1, 0);
    if (silent.fd < 0 || b.fd < 0) {
        return 1;
    }
    const long long pid   = service_pid();
    const long long base  = now_ns() + 1000LL * 1'000'000'000;
    const long long start = now_ns();
    std::uint64_t head    = 0;
    bool dropped          = false;
    while (now_ns() - start < seconds * 1'000'000'000LL) {
        const std::uint64_t tail = b.ring->tail.load();
        while (head - tail < svc::kRingCapacity) {
            b.ring->records[head & (svc::kRingCapacity - 1)] =
                    svc::DemandRecord{base + static_cast<long long>(head), 0,
                                      static_cast<std::uint32_t>(1 + (head & 3)), 0};
            ++head;
        }
        b.ring->through_ns.store(base + static_cast<long long>(head));
        b.ring->head.store(head);
        if (b.ring->closed.load() != 0 || io::send_message(b.fd, svc::MessageType::nudge, nullptr,
                                                           0, nullptr, 0, MSG_DONTWAIT) == EPIPE) {
            dropped = true;
            break;
        }
        std::this_thread::sleep_for(200us);
    }
    if (dropped) {
        std::printf("dropped after %llu records\n", static_cast<unsigned long long>(head));
    }
    std::this_thread::sleep_for(300ms);  // the service lets the queue go
    std::printf("rss_kb %ld\n", rss_kb(pid));
    return 0;
}

int idle(int count, int hold_ms)
{
    rlimit rl{};
    ::getrlimit(RLIMIT_NOFILE, &rl);
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
    std::vector<int> fds;
    for (int i = 0; i < count; ++i) {
        const int fd = connect_socket();
        if (fd >= 0) {
            fds.push_back(fd);
        }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(hold_ms));
    int closed = 0;
    for (const int fd : fds) {
        pollfd p{fd, POLLIN, 0};
        char c = 0;
        if (::poll(&p, 1, 0) == 1 && ::recv(fd, &c, 1, MSG_DONTWAIT | MSG_PEEK) <= 0) {
            ++closed;
        } else if (p.revents & POLLIN) {
            // A refusal message, then the close.
            ++closed;
        }
        ::close(fd);
    }
    std::printf("connected %zu closed %d\n", fds.size(), closed);
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    if (argc < 3) {
        std::fprintf(stderr, "usage: service-hostile member|flood|idle SOCKET ...\n");
        return 2;
    }
    const std::string mode = argv[1];
    socket_path            = argv[2];
    if (mode == "member" && argc == 9) {
        return member(argv[3], std::atoi(argv[4]), std::atoi(argv[5]), argv[6], std::atoi(argv[7]),
                      std::atoi(argv[8]));
    }
    if (mode == "flood" && argc == 4) {
        return flood(std::atoi(argv[3]));
    }
    if (mode == "idle" && argc == 5) {
        return idle(std::atoi(argv[3]), std::atoi(argv[4]));
    }
    std::fprintf(stderr, "service-hostile: bad arguments\n");
    return 2;
}

// SPDX-License-Identifier: BSD-3-Clause
// NodeArbiter and PortMap (thesis §4.5.4): the port's width is the maximum
// requested by the local processes; low power only when all are idle.
#include <cstdio>
#include "link/node_arbiter.h"
#include "link/node_arbiter_segment.h"
#include "link/port_map.h"

#include <catch2/catch.hpp>

#include <cerrno>
#include <csignal>
#include <exception>
#include <string>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using slim::link::ArbiterError;
using slim::link::ArbiterOptions;
using slim::link::monotonic_now_ns;
using slim::link::NodeArbiter;
using slim::link::PortMap;
using slim::link::PortMapError;

namespace {

constexpr unsigned kFull = 4;
constexpr slim::link::TimeNs kSecond = 1'000'000'000;

// A segment name unique to this test process and case; unlinked at the end
// whatever the test did.
struct TestSegment {
    ArbiterOptions options;
    TestSegment()
    {
        static int counter = 0;
        options.segment_name = "/slimlink-test-" + std::to_string(getpid()) + "-" +
                               std::to_string(++counter);
        shm_unlink(options.segment_name.c_str());
    }
    ~TestSegment() { shm_unlink(options.segment_name.c_str()); }
    std::string path() const { return "/dev/shm" + options.segment_name; }
    NodeArbiter join() const { return NodeArbiter::join("test0", 1, kFull, options); }
};

}  // namespace

TEST_CASE("the port runs at the widest width any live local process requests", "[arbiter]")
{
    const TestSegment seg;
    auto a = seg.join();
    auto b = seg.join();
    const auto now = monotonic_now_ns();
    CHECK(a.slot() != b.slot());
    CHECK(a.effective_width(now) == kFull);  // both joined at full width

    a.request(1, now);
    b.request(2, now);
    CHECK(a.effective_width(now) == 2);
    CHECK(b.effective_width(now) == 2);

    b.request(kFull, now);
    CHECK(a.effective_width(now) == kFull);

    SECTION("requests are clamped to 1..full width")
    {
        b.request(99, now);
        CHECK(b.requested_width() == kFull);
        b.request(0, now);
        a.request(0, now);
        CHECK(a.effective_width(now) == 1);
    }
}

TEST_CASE("the port drops to low power only when every local process is idle", "[arbiter]")
{
    const TestSegment seg;
    auto a = seg.join();
    auto b = seg.join();
    auto c = seg.join();
    const auto now = monotonic_now_ns();
    a.request(1, now);
    b.request(1, now);
    CHECK(a.effective_width(now) == kFull);  // c still busy
    c.request(1, now);
    CHECK(a.effective_width(now) == 1);
    b.request(kFull, now);
    CHECK(c.effective_width(now) == kFull);
}

TEST_CASE("a process killed while holding its slot is ignored and its slot reclaimed",
          "[arbiter]")
{
    const TestSegment seg;
    auto parent = seg.join();
    parent.request(1, monotonic_now_ns());

    int ready[2];
    REQUIRE(pipe(ready) == 0);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(ready[0]);
        int slot = -1;
        try {
            auto mine = seg.join();
            mine.request(kFull, monotonic_now_ns());
            slot = mine.slot();
            (void)!write(ready[1], &slot, sizeof slot);
            for (;;) {
                pause();  // holds the slot until SIGKILL: no destructor runs
            }
        } catch (...) {
            (void)!write(ready[1], &slot, sizeof slot);
        }
        _exit(1);
    }
    close(ready[1]);
    int child_slot = -1;
    REQUIRE(read(ready[0], &child_slot, sizeof child_slot) == sizeof child_slot);
    close(ready[0]);
    REQUIRE(child_slot >= 0);

    CHECK(parent.effective_width(monotonic_now_ns()) == kFull);
    CHECK(parent.live_peers(monotonic_now_ns()) == 1);

    REQUIRE(kill(child, SIGKILL) == 0);
    SECTION("while it is a zombie (kill(pid, 0) still succeeds)")
    {
        // Wait for the kernel to make it a zombie, without reaping it.
        siginfo_t info{};
        REQUIRE(waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT) == 0);
        CHECK(kill(child, 0) == 0);
        CHECK(parent.effective_width(monotonic_now_ns()) == 1);
        CHECK(parent.live_peers(monotonic_now_ns()) == 0);
    }
    SECTION("once reaped (kill(pid, 0) == ESRCH)")
    {
        int status = 0;
        REQUIRE(waitpid(child, &status, 0) == child);
        CHECK(kill(child, 0) == -1);
        CHECK(errno == ESRCH);
        CHECK(parent.effective_width(monotonic_now_ns()) == 1);
        CHECK(parent.is_last_out(monotonic_now_ns()));
    }
    waitpid(child, nullptr, 0);

    // The first free slot is the child's again.
    auto next = seg.join();
    CHECK(next.slot() == child_slot);
}

TEST_CASE("a process killed while holding the segment's lock does not block the others",
          "[arbiter]")
{
    const TestSegment seg;
    auto parent = seg.join();
    parent.request(1, monotonic_now_ns());

    int ready[2];
    REQUIRE(pipe(ready) == 0);
    const pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        // Plays a process that dies inside a critical section.
        close(ready[0]);
        char ok = 0;
        const int fd = shm_open(seg.options.segment_name.c_str(), O_RDWR, 0);
        void* addr = fd < 0 ? MAP_FAILED
                            : mmap(nullptr, sizeof(slim::link::arbiter_segment::Segment),
                                   PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (addr != MAP_FAILED) {
            auto* s = static_cast<slim::link::arbiter_segment::Segment*>(addr);
            ok = pthread_mutex_lock(&s->mutex) == 0 ? 1 : 0;
        }
        (void)!write(ready[1], &ok, 1);
        for (;;) {
            pause();
        }
    }
    close(ready[1]);
    char ok = 0;
    REQUIRE(read(ready[0], &ok, 1) == 1);
    close(ready[0]);
    REQUIRE(ok == 1);
    REQUIRE(kill(child, SIGKILL) == 0);
    REQUIRE(waitpid(child, nullptr, 0) == child);

    alarm(10);  // a deadlock fails the run instead of hanging it
    CHECK(parent.effective_width(monotonic_now_ns()) == 1);
    auto other = seg.join();
    CHECK(other.effective_width(monotonic_now_ns()) == kFull);
    alarm(0);
}

TEST_CASE("a slot whose heartbeat is older than the stale limit is ignored", "[arbiter]")
{
    const TestSegment seg;
    auto a = seg.join();
    auto b = seg.join();
    const auto t0 = monotonic_now_ns();
    a.request(1, t0);
    b.request(kFull, t0);
    CHECK(a.effective_width(t0 + kSecond / 2) == kFull);

    a.heartbeat(t0 + 2 * kSecond);
    CHECK(a.effective_width(t0 + 2 * kSecond) == 1);  // b silent for 2 s
    CHECK(a.live_peers(t0 + 2 * kSecond) == 0);

    SECTION("the stale process takes a new slot when it speaks again")
    {
        b.request(kFull, t0 + 2 * kSecond);
        CHECK(b.joined());
        CHECK(a.effective_width(t0 + 2 * kSecond) == kFull);
    }
}

TEST_CASE("the last process out is told to restore full width", "[arbiter]")
{
    const TestSegment seg;
    auto a = seg.join();
    auto b = seg.join();
    const auto now = monotonic_now_ns();
    CHECK_FALSE(a.is_last_out(now));
    CHECK_FALSE(b.leave(now));
    CHECK_FALSE(b.joined());
    CHECK(a.is_last_out(now));
    CHECK(a.leave(now));
    CHECK_FALSE(a.leave(now));  // idempotent

    struct stat st{};
    CHECK(stat(seg.path().c_str(), &st) == -1);  // last out removed the segment

    SECTION("leaving is RAII")
    {
        {
            auto c = seg.join();
            CHECK(stat(seg.path().c_str(), &st) == 0);
        }
        CHECK(stat(seg.path().c_str(), &st) == -1);
    }
}

TEST_CASE("processes joining and leaving concurrently never lose the segment", "[arbiter]")
{
    // Exercises the race between the last process out unlinking the segment
    // and a newcomer opening it (the `closed` flag).
    const TestSegment seg;
    constexpr int kChildren = 6;
    constexpr int kRounds   = 150;
    pid_t children[kChildren];
    for (pid_t& child : children) {
        child = fork();
        REQUIRE(child >= 0);
        if (child == 0) {
            int failures = 0;
            for (int round = 0; round < kRounds; ++round) {
                try {
                    auto mine = seg.join();
                    mine.request(1 + static_cast<unsigned>(round) % kFull, monotonic_now_ns());
                    if (mine.effective_width(monotonic_now_ns()) == 0) {
                        std::fprintf(stderr, "round %d: effective width 0\n", round);
                        ++failures;
                    }
                } catch (const std::exception& e) {
                    // Said, so that a failure names its cause.
                    std::fprintf(stderr, "round %d: %s\n", round, e.what());
                    ++failures;
                }
            }
            _exit(failures == 0 ? 0 : 1);
        }
    }
    for (const pid_t child : children) {
        int status = -1;
        REQUIRE(waitpid(child, &status, 0) == child);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    struct stat st{};
    CHECK(stat(seg.path().c_str(), &st) == -1);  // the last one out removed it
}

TEST_CASE("the segment is private to the user: mode 0600 whatever the umask", "[arbiter]")
{
    const TestSegment seg;
    const mode_t old = umask(0);
    auto a = seg.join();
    umask(old);
    struct stat st{};
    REQUIRE(stat(seg.path().c_str(), &st) == 0);
    CHECK((st.st_mode & 07777) == 0600);
    CHECK(st.st_uid == geteuid());
}

TEST_CASE("a segment with the wrong owner or mode is refused with a clear error", "[arbiter]")
{
    const TestSegment seg;
    const int fd = shm_open(seg.options.segment_name.c_str(), O_RDWR | O_CREAT | O_EXCL, 0600);
    REQUIRE(fd >= 0);

    SECTION("owned by another uid")
    {
        if (geteuid() != 0) {
            WARN("skipped: needs root to fchown a segment to another uid");
            close(fd);
            return;
        }
        REQUIRE(fchown(fd, 12345, 12345) == 0);
        close(fd);
        CHECK_THROWS_AS(seg.join(), ArbiterError);
        CHECK_THROWS_WITH(seg.join(), Catch::Matchers::Contains("owned by uid 12345") &&
                                 Catch::Matchers::Contains("refusing"));
    }
    SECTION("readable by others")
    {
        REQUIRE(fchmod(fd, 0644) == 0);
        close(fd);
        CHECK_THROWS_AS(seg.join(), ArbiterError);
        CHECK_THROWS_WITH(seg.join(), Catch::Matchers::Contains("mode 0644, not 0600"));
    }
}

TEST_CASE("a process asking for another full width than the segment's is refused", "[arbiter]")
{
    const TestSegment seg;
    auto a = seg.join();
    CHECK_THROWS_AS(NodeArbiter::join("test0", 1, 8, seg.options), ArbiterError);
    CHECK_THROWS_WITH(NodeArbiter::join("test0", 1, 8, seg.options), Catch::Matchers::Contains("full width 4"));
}

TEST_CASE("segment names hold the uid, device and port, sanitised", "[arbiter]")
{
    CHECK(NodeArbiter::segment_name(1000, "mlx5_0", 1) == "/slimlink-1000-mlx5_0-1");
    CHECK(NodeArbiter::segment_name(0, "a/b:c d", 2) == "/slimlink-0-a_b_c_d-2");
}

TEST_CASE("port map: a tcp netdev has no IB port, an unknown device is an error", "[arbiter]")
{
    const PortMap map;
    SECTION("lo")
    {
        const auto info = map.resolve("lo");
        CHECK_FALSE(info.is_ib);
        CHECK(info.port == 0);
        CHECK_THAT(info.no_ib_reason, Catch::Matchers::StartsWith("no IB port"));
        CHECK(info.local_cores >= 1);
        CHECK(info.local_pus >= info.local_cores);
    }
    SECTION("unknown device")
    {
        CHECK_THROWS_AS(map.resolve("nosuchdev0"), PortMapError);
        CHECK_THROWS_WITH(map.resolve("nosuchdev0"), Catch::Matchers::Contains("unknown device 'nosuchdev0'"));
        CHECK_THROWS_AS(map.resolve("nosuchhca_9:1"), PortMapError);
        CHECK_THROWS_WITH(map.resolve("nosuchhca_9:1"), Catch::Matchers::Contains("unknown device 'nosuchhca_9:1'"));
    }
}

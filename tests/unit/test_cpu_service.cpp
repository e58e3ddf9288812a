// SPDX-License-Identifier: BSD-3-Clause
// slimlinkd's CPU side end to end in one process: a ServiceServer with a
// CpuController on a thread, real ServiceClients asking for their cores.
// The cores of a client are what /proc says of this process (the service
// reads them, whatever the client claims); the backend drives 64 cores,
// more than this process may run on, so the client is pinned.
#include "json_check.h"
#include "link/backend.h"
#include "link/service_client.h"
#include "link/service_io.h"
#include "link/service_protocol.h"
#include "service/cpu_controller.h"
#include "service/port_service.h"
#include "service/service_server.h"
#include "runtime/node_report.h"

#include <catch2/catch.hpp>

#include <sched.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>

using namespace slim::link;
namespace svc = slim::link::service;
namespace io  = slim::link::service_io;
using namespace std::chrono_literals;

namespace {

constexpr unsigned kCores = 64;

// Cores 0..63 as bits, readable from the test's thread.
struct CoresState {
    std::atomic<std::uint64_t> low{0};
    std::atomic<bool> restored{false};
};

class AtomicCpuBackend final : public CpuBackend {
public:
    explicit AtomicCpuBackend(std::shared_ptr<CoresState> s) : s_(std::move(s)) {}
    std::string name() const override { return "recording"; }
    std::string describe() const override { return "recording"; }
    CoreSet cores() const override
    {
        CoreSet all;
        for (unsigned c = 0; c < kCores; ++c) {
            all.set(c);
        }
        return all;
    }
    void set(const CoreSet& cores, bool low, TimeNs) override
    {
        std::uint64_t bits = s_->low.load();
        for (unsigned c = 0; c < kCores; ++c) {
            if (cores.test(c)) {
                bits = low ? bits | (std::uint64_t{1} << c) : bits & ~(std::uint64_t{1} << c);
            }
        }
        s_->low.store(bits);
    }
    std::string restore(TimeNs) noexcept override
    {
        s_->low.store(0);
        s_->restored.store(true);
        return {};
    }

private:
    std::shared_ptr<CoresState> s_;
};

class FullBackend final : public LinkBackend {
public:
    std::string name() const override { return "recording"; }
    unsigned full_width() const override { return 4; }
    Status set_width(unsigned) override { return Status::success(); }
};

struct TempDir {
    std::string path;
    TempDir()
    {
        char tmpl[] = "/tmp/slimcpu-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        path = tmpl;
    }
    ~TempDir()
    {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
    }
    std::string socket() const { return path + "/port.sock"; }
};

struct RunningService {
    std::shared_ptr<CoresState> cores = std::make_shared<CoresState>();
    std::unique_ptr<CpuController> cpu;
    std::unique_ptr<PortService> service;
    std::unique_ptr<ServiceServer> server;
    std::atomic<bool> stop{false};
    std::thread thread;

    RunningService(const std::string& socket_path, bool with_cpu)
    {
        if (with_cpu) {
            cpu = std::make_unique<CpuController>(std::make_unique<AtomicCpuBackend>(cores));
        }
        service = std::make_unique<PortService>(std::make_unique<FullBackend>());
        ServerOptions options;
        options.socket_path       = socket_path;
        options.grace             = 0ms;
        options.first_client_wait = 0ms;
        options.cpu               = cpu.get();
        server                    = std::make_unique<ServiceServer>(*service, options);
        thread                    = std::thread([this] { server->run(stop); });
    }
    ~RunningService()
    {
        stop = true;
        thread.join();
        server.reset();
        cpu.reset();
    }
};

svc::AttachRequest request(std::int32_t rank)
{
    svc::AttachRequest r;
    r.full_width = 4;
    r.rank       = rank;
    r.pid        = ::getpid();
    std::string("cpu-job").copy(r.job_key, 7);
    return r;
}

bool eventually(const std::function<bool()>& done, std::chrono::milliseconds limit = 2000ms)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (done()) {
            return true;
        }
        std::this_thread::sleep_for(200us);
    }
    return done();
}

// What /proc says this process may run on, as bits (cores below 64).
std::uint64_t my_cores()
{
    std::string why;
    const auto cores = read_allowed_cores(::getpid(), why);
    REQUIRE(cores);
    std::uint64_t bits = 0;
    for (unsigned c = 0; c < kCores; ++c) {
        bits |= cores->test(c) ? std::uint64_t{1} << c : 0;
    }
    return bits;
}

}  // namespace

TEST_CASE("a rank asks slimlinkd for its cores low and full; a second one holds them", "[cpu]")
{
    TempDir dir;
    RunningService s(dir.socket(), true);
    const std::uint64_t mine = my_cores();
    REQUIRE(mine != 0);

    auto a = ServiceClient::connect(dir.socket(), false, request(0));
    REQUIRE(a->cpu_supported());
    REQUIRE(a->request_cpu(svc::CpuLevel::low, steady_now_ns()));
    REQUIRE(eventually([&] { return s.cores->low.load() == mine; }));

    // A second rank of this process (the same cores) that works: every
    // core back at full, and kept there while it works.
    auto b = ServiceClient::connect(dir.socket(), false, request(1));
    REQUIRE(eventually([&] { return s.cores->low.load() == 0; }));
    REQUIRE(b->request_cpu(svc::CpuLevel::low, steady_now_ns()));
    REQUIRE(eventually([&] { return s.cores->low.load() == mine; }));
    REQUIRE(a->request_cpu(svc::CpuLevel::full, steady_now_ns()));
    REQUIRE(eventually([&] { return s.cores->low.load() == 0; }));
    REQUIRE(a->request_cpu(svc::CpuLevel::low, steady_now_ns()));
    REQUIRE(eventually([&] { return s.cores->low.load() == mine; }));

    // A client that leaves: its cores are the other's, still low; the
    // other leaves: every core back.
    b->detach();
    std::this_thread::sleep_for(20ms);
    CHECK(s.cores->low.load() == mine);
    a->detach();
    REQUIRE(eventually([&] { return s.cores->low.load() == 0; }));
}

TEST_CASE("a rank's claimed affinity only narrows what /proc says", "[cpu]")
{
    TempDir dir;
    RunningService s(dir.socket(), true);
    const std::uint64_t mine = my_cores();
    REQUIRE(mine != 0);
    const unsigned first = static_cast<unsigned>(__builtin_ctzll(mine));

    SECTION("a claim of a core it may not run on is ignored")
    {
        // Core 63 is none of ours on any machine this runs on with fewer
        // cores; a raw client claims it.
        REQUIRE((mine >> 63) == 0);
        auto a = ServiceClient::connect(dir.socket(), false, request(0));
        // The honest client's affinity goes first; this one sends its own.
        int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        REQUIRE(fd >= 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        dir.socket().copy(addr.sun_path, dir.socket().size());
        REQUIRE(::connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) == 0);
        svc::AttachRequest r = request(1);
        REQUIRE(io::send_message(fd, svc::MessageType::attach, &r, sizeof r) == 0);
        std::vector<std::uint8_t> buf(io::kReceiveBytes);
        io::Received got = io::receive_wait(fd, buf.data(), buf.size(), 2000ms);
        REQUIRE(got.bytes > 0);
        if (got.fd >= 0) {
            ::close(got.fd);
        }
        svc::CpuAffinity claim;
        claim.mask[0] = std::uint64_t{1} << 63;
        REQUIRE(io::send_message(fd, svc::MessageType::cpu_affinity, &claim, sizeof claim) == 0);
        svc::CpuRequest low;
        low.level = static_cast<std::uint32_t>(svc::CpuLevel::low);
        REQUIRE(io::send_message(fd, svc::MessageType::cpu_request, &low, sizeof low) == 0);
        REQUIRE(a->request_cpu(svc::CpuLevel::low, steady_now_ns()));
        // Both low: the raw client's cores are this process's, not core 63.
        REQUIRE(eventually([&] { return s.cores->low.load() == mine; }));
        CHECK((s.cores->low.load() >> 63) == 0);
        ::close(fd);
    }
    SECTION("a claim inside it narrows the rank to it")
    {
        if (mine == (std::uint64_t{1} << first)) {
            WARN("skipped: this process may run on one core only");
            return;
        }
        cpu_set_t set;
        CPU_ZERO(&set);
        REQUIRE(::sched_getaffinity(0, sizeof set, &set) == 0);
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(first, &one);
        REQUIRE(::sched_setaffinity(0, sizeof one, &one) == 0);
        auto a          = ServiceClient::connect(dir.socket(), false, request(0));
        const bool sent = a->request_cpu(svc::CpuLevel::low, steady_now_ns());
        REQUIRE(::sched_setaffinity(0, sizeof set, &set) == 0);
        REQUIRE(sent);
        // /proc reads the process's main thread: this thread is it.
        REQUIRE(eventually([&] { return s.cores->low.load() == (std::uint64_t{1} << first); }));
    }
}

TEST_CASE("garbage CPU messages drop the client; an older service offers no CPU side", "[cpu]")
{
    TempDir dir;
    SECTION("a request for level 7 is refused")
    {
        RunningService s(dir.socket(), true);
        auto a       = ServiceClient::connect(dir.socket(), false, request(0));
        const int fd = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        dir.socket().copy(addr.sun_path, dir.socket().size());
        REQUIRE(::connect(fd, reinterpret_cast<const sockaddr *>(&addr), sizeof addr) == 0);
        svc::CpuRequest bad;
        bad.level = 7;
        // Before attach, and with a bad level: both refused, the connection closed.
        REQUIRE(io::send_message(fd, svc::MessageType::cpu_request, &bad, sizeof bad) == 0);
        std::vector<std::uint8_t> buf(io::kReceiveBytes);
        const io::Received r = io::receive_wait(fd, buf.data(), buf.size(), 2000ms);
        REQUIRE(r.bytes > 0);
        svc::MessageHeader h;
        REQUIRE(io::check_header(buf.data(), static_cast<std::size_t>(r.bytes), h).empty());
        CHECK(h.type == static_cast<std::uint16_t>(svc::MessageType::refused));
        ::close(fd);
        CHECK(a->sync());  // the honest client is not affected
    }
    SECTION("a service without a CPU controller: the client sends nothing")
    {
        RunningService s(dir.socket(), false);
        auto a = ServiceClient::connect(dir.socket(), false, request(0));
        CHECK_FALSE(a->cpu_supported());
        CHECK_FALSE(a->request_cpu(svc::CpuLevel::low, steady_now_ns()));
        std::this_thread::sleep_for(20ms);
        CHECK(a->sync());  // still attached: nothing it does not know was sent
    }
}

TEST_CASE("the node report carries the job's CPU section to its reporter", "[cpu]")
{
    TempDir dir;
    RunningService s(dir.socket(), true);
    const std::uint64_t mine = my_cores();
    REQUIRE(mine != 0);
    svc::AttachRequest r = request(0);
    r.local_rank         = 0;
    r.local_size         = 1;
    auto a               = ServiceClient::connect(dir.socket(), false, r);
    // Low, full, low, full: every core of this process twice low.
    for (int i = 0; i < 2; ++i) {
        REQUIRE(a->request_cpu(svc::CpuLevel::low, steady_now_ns()));
        REQUIRE(eventually([&] { return s.cores->low.load() == mine; }));
        REQUIRE(a->request_cpu(svc::CpuLevel::full, steady_now_ns()));
        REQUIRE(eventually([&] { return s.cores->low.load() == 0; }));
    }
    const TimeNs now = steady_now_ns();
    REQUIRE(a->publish(svc::DemandRecord{now, 0, 4, 0}));
    a->set_through(now + 1);
    REQUIRE(a->sync());
    const std::uint8_t record                  = 0;
    const std::optional<ReceivedReport> report = a->deposit(1, &record, sizeof record, 2000ms);
    REQUIRE(report);
    REQUIRE(report->cpu);
    const svc::CpuSection& cpu = *report->cpu;
    const auto count           = static_cast<std::uint32_t>(__builtin_popcountll(mine));
    CHECK(std::string(cpu.backend) == "recording");
    CHECK(cpu.has_energy == 0);  // a backend without a table cannot say
    CHECK(cpu.cores_mapped == count);
    CHECK(cpu.cores == count);
    CHECK(cpu.low_requests == 2);
    CHECK(cpu.full_requests == 2);
    CHECK(cpu.cores_refused == 0);
    CHECK(cpu.transitions == 4 * count);  // low, full, low, full on each core
    REQUIRE(report->cpu_cores.size() == count);
    for (const svc::CpuSectionCore& c : report->cpu_cores) {
        CHECK(((mine >> c.core) & 1) == 1);
        CHECK(c.ranks == 1);
        CHECK(c.low_requests == 2);
        CHECK(c.transitions == 4);
        CHECK(c.time_low_ns > 0);
    }
    a->detach();
}

TEST_CASE("the node report's CPU section in text and JSON", "[cpu]")
{
    slim::NodeCollection collection;
    const slim::NodeInfo node{"node7", slim::LocalJob{0, 1, "hydra", "job-1"}};
    CHECK(format_node_text(node, collection).find("cpu") == std::string::npos);
    CHECK_FALSE(slim_test::parse_json(format_node_json(node, collection)).contains("cpu"));

    // One core, 0.1 s: low 40 ms (39 ms beyond a 1 ms tau) at 6 W full,
    // 2 W low: 0.6 J always at full, 0.6 - 4 x 0.039 = 0.444 J, 26.0 % saved.
    svc::CpuSection c;
    io::set_text(c.backend, "emulated");
    c.cores = c.cores_mapped = 1;
    c.cores_refused          = 1;
    c.has_energy             = 1;
    c.low_requests           = 2;
    c.full_requests          = 2;
    c.transitions            = 4;
    c.span_ns                = 100'000'000;
    c.time_low_ns            = 40'000'000;
    c.penalty_ns             = 4'000;
    c.energy_joules          = 0.444;
    c.baseline_joules        = 0.6;
    svc::CpuSectionCore core;
    core.core            = 3;
    core.ranks           = 1;
    core.low_requests    = 2;
    core.full_requests   = 2;
    core.refused         = 1;
    core.transitions     = 4;
    core.span_ns         = c.span_ns;
    core.time_low_ns     = c.time_low_ns;
    core.penalty_ns      = c.penalty_ns;
    core.energy_joules   = c.energy_joules;
    core.baseline_joules = c.baseline_joules;
    collection.cpu       = c;
    collection.cpu_cores = {core};

    const std::string text = format_node_text(node, collection);
    CHECK_THAT(text,
               Catch::Matchers::Contains(
                       "  cpu (emulated, driven by slimlinkd) over 0.100 s: 1 cores mapped, 1 "
                       "kept at full because shared; 2 low and 2 full requests, 4 "
                       "transitions, 0.040000 s low; energy 0.444000 J of 0.600000 J always "
                       "at full (saved 26.0%), modelled penalty 4.0 us\n"));
    CHECK_THAT(text, Catch::Matchers::Contains("         3      1        2        2        1"));

    const slim_test::Json j = slim_test::parse_json(format_node_json(node, collection));
    REQUIRE(j.contains("cpu"));
    const slim_test::Json& cpu = j["cpu"];
    CHECK(cpu["owner"] == "slimlinkd");
    CHECK(cpu["backend"] == "emulated");
    CHECK(cpu["cores_mapped"] == 1);
    CHECK(cpu["cores_refused"] == 1);
    CHECK(cpu["low_requests"] == 2);
    CHECK(cpu["penalty_ns"] == 4000);
    CHECK(cpu["energy_joules"].get<double>() == Approx(0.444));
    CHECK(cpu["energy_savings_pct"].get<double>() == Approx(26.0));
    CHECK(cpu["backend_failed"] == false);
    CHECK(cpu["problem"].is_null());
    REQUIRE(cpu["cores"].size() == 1);
    CHECK(cpu["cores"][0]["core"] == 3);
    CHECK(cpu["cores"][0]["refused"] == 1);
    CHECK(cpu["cores"][0]["time_low_ns"] == 40'000'000);

    SECTION("a backend that cannot say the energy: null, and said in text")
    {
        collection.cpu->has_energy = 0;
        io::set_text(collection.cpu->backend, "cpufreq");
        CHECK_THAT(
                format_node_text(node, collection),
                Catch::Matchers::Contains("0.040000 s low; energy not measured by this backend"));
        const slim_test::Json k = slim_test::parse_json(format_node_json(node, collection));
        CHECK(k["cpu"]["energy_joules"].is_null());
        CHECK(k["cpu"]["penalty_ns"].is_null());
        CHECK(k["cpu"]["cores"][0]["energy_joules"].is_null());
    }
}

// SPDX-License-Identifier: BSD-3-Clause
// slimlinkd's CPU side (cpu_controller.h, cpu_backend.h): the sharing rule
// (a core goes low only when every rank that may run on it waits, and at
// least one of them is pinned), a failing backend restoring every core,
// the emulated backend's energy on a hand-worked example, and the cpufreq
// backend against a fake sysfs tree in a temporary folder. Time is passed
// by hand.
#include "service/cpu_backend.h"
#include "service/cpu_controller.h"

#include "base/parse.h"
#include "service/state_file.h"
#include "predict/cpu_model.h"

#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

using Catch::Matchers::Contains;
using namespace slim::link;
namespace svc = slim::link::service;

namespace {

constexpr TimeNs kMs = 1'000'000;

CoreSet cores_of(std::initializer_list<unsigned> list)
{
    CoreSet s;
    for (const unsigned c : list) {
        s.set(c);
    }
    return s;
}

// A backend that records what it was told, on `count` cores; it can be
// told to fail on the n-th set().
struct Recorded {
    CoreSet low;  // cores set low now
    std::vector<std::string> calls;
    int fail_at   = -1;  // set() number that throws (0-based), -1: never
    int sets      = 0;
    bool restored = false;
};

class RecordingCpuBackend final : public CpuBackend {
public:
    RecordingCpuBackend(std::shared_ptr<Recorded> r, unsigned count) : r_(std::move(r))
    {
        for (unsigned c = 0; c < count; ++c) {
            cores_.set(c);
        }
    }
    std::string name() const override { return "recording"; }
    std::string describe() const override { return "recording"; }
    CoreSet cores() const override { return cores_; }
    void set(const CoreSet& cores, bool low, TimeNs) override
    {
        const int n = r_->sets++;
        // A partial failure: the first core of the set changes, then the
        // write of the next one fails.
        for (std::size_t c = 0; c < cores.size(); ++c) {
            if (cores.test(c)) {
                r_->low.set(c, low);
                if (n == r_->fail_at) {
                    throw CpuBackendError("cpu" + std::to_string(c + 1) + ": Permission denied");
                }
            }
        }
        r_->calls.push_back(std::string(low ? "low " : "full ") + format_cpu_list(cores));
    }
    std::string restore(TimeNs) noexcept override
    {
        r_->restored = true;
        r_->low.reset();
        return {};
    }

private:
    std::shared_ptr<Recorded> r_;
    CoreSet cores_;
};

struct Fixture {
    std::shared_ptr<Recorded> rec = std::make_shared<Recorded>();
    CpuController cpu;
    explicit Fixture(unsigned cores = 4) : cpu(std::make_unique<RecordingCpuBackend>(rec, cores)) {}
};

// A temporary folder laid out like /sys/devices/system/cpu.
struct FakeSysfs {
    std::string root;
    FakeSysfs()
    {
        char tmpl[] = "/tmp/slim-cpufreq-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        root = tmpl;
    }
    ~FakeSysfs()
    {
        const std::string command = "chmod -R u+w '" + root + "' && rm -rf '" + root + "'";
        if (std::system(command.c_str()) != 0) {
            WARN("could not remove " << root);
        }
    }
    std::string dir(unsigned cpu) const { return root + "/cpu" + std::to_string(cpu) + "/cpufreq"; }
    void write(const std::string& path, const std::string& text) const
    {
        std::ofstream(path) << text << "\n";
    }
    // A core under `governor` at full frequency 2000000 kHz, min 800000.
    void add(unsigned cpu, const std::string& governor = "userspace") const
    {
        const std::string d = dir(cpu);
        REQUIRE(::mkdir((root + "/cpu" + std::to_string(cpu)).c_str(), 0755) == 0);
        REQUIRE(::mkdir(d.c_str(), 0755) == 0);
        if (!governor.empty()) {
            write(d + "/scaling_governor", governor);
        }
        write(d + "/scaling_setspeed", governor == "userspace" ? "2000000" : "<unsupported>");
        write(d + "/scaling_max_freq", "2000000");
        write(d + "/cpuinfo_min_freq", "800000");
    }
    std::string read(const std::string& path) const
    {
        std::ifstream in(path);
        std::string line;
        std::getline(in, line);
        return line;
    }
};

}  // namespace

TEST_CASE("a core shared by two ranks goes low only when both wait", "[cpu]")
{
    Fixture f(4);
    f.cpu.set_cores(1, cores_of({0, 1}), 0);  // rank A on cores 0-1
    f.cpu.set_cores(2, cores_of({1, 2}), 0);  // rank B on cores 1-2: core 1 is shared
    CHECK(f.rec->calls.empty());

    f.cpu.request(1, true, 1 * kMs);  // A waits: only its own core 0
    CHECK(f.cpu.cores_low() == cores_of({0}));
    CHECK(f.rec->low == cores_of({0}));

    f.cpu.request(2, true, 2 * kMs);  // both wait: cores 0, 1, 2
    CHECK(f.cpu.cores_low() == cores_of({0, 1, 2}));

    f.cpu.request(1, false, 3 * kMs);  // A works: its cores 0 and 1 back at full
    CHECK(f.cpu.cores_low() == cores_of({2}));
    CHECK(f.rec->low == cores_of({2}));
    CHECK(f.rec->calls.back() == "full 0-1");

    SECTION("a rank that leaves holds nothing any more")
    {
        f.cpu.drop(1, 4 * kMs);
        CHECK(f.cpu.cores_low() == cores_of({1, 2}));
    }
    SECTION("a rank that leaves while low: its own cores back to full")
    {
        f.cpu.request(1, true, 4 * kMs);
        CHECK(f.cpu.cores_low() == cores_of({0, 1, 2}));
        f.cpu.drop(2, 5 * kMs);  // B dies: core 2 is nobody's, core 1 A's alone
        CHECK(f.cpu.cores_low() == cores_of({0, 1}));
        f.cpu.drop(1, 6 * kMs);
        CHECK(f.cpu.cores_low().none());
        CHECK(f.rec->low.none());
    }
    CHECK(f.cpu.requests() >= 3);
}

TEST_CASE("a rank allowed on every core lowers nothing and holds every core while it works",
          "[cpu]")
{
    Fixture f(4);
    f.cpu.set_cores(1, cores_of({0, 1, 2, 3}), 0);  // not pinned
    f.cpu.request(1, true, 1 * kMs);
    CHECK(f.cpu.cores_low().none());  // alone, it lowers nothing

    f.cpu.set_cores(2, cores_of({3}), 1 * kMs);  // pinned to core 3, works
    f.cpu.request(2, true, 2 * kMs);
    CHECK(f.cpu.cores_low() == cores_of({3}));  // both wait: the pinned rank's core

    f.cpu.request(1, false, 3 * kMs);  // the unpinned rank works: it may run on core 3
    CHECK(f.cpu.cores_low().none());

    SECTION("cores outside the backend's are ignored")
    {
        f.cpu.set_cores(3, cores_of({7, 9}), 4 * kMs);
        f.cpu.request(3, true, 4 * kMs);
        f.cpu.request(1, true, 4 * kMs);
        CHECK(f.cpu.cores_low() == cores_of({3}));
    }
}

TEST_CASE("a rank that works holds its cores; an unknown client's request changes nothing", "[cpu]")
{
    Fixture f(2);
    f.cpu.set_cores(1, cores_of({0}), 0);
    f.cpu.request(9, true, 1 * kMs);  // never attached
    CHECK(f.cpu.cores_low().none());
    f.cpu.request(1, true, 1 * kMs);
    f.cpu.request(1, true, 2 * kMs);  // asked twice: one change
    CHECK(f.rec->calls.size() == 1);
    f.cpu.set_cores(1, cores_of({1}), 3 * kMs);  // re-pinned while low: follows
    CHECK(f.cpu.cores_low() == cores_of({1}));
}

TEST_CASE("a backend that fails restores every core and is no longer driven", "[cpu]")
{
    Fixture f(4);
    f.cpu.set_cores(1, cores_of({0}), 0);
    f.cpu.set_cores(2, cores_of({1, 2}), 0);
    f.cpu.request(1, true, 1 * kMs);
    REQUIRE(f.rec->low == cores_of({0}));
    f.rec->fail_at = f.rec->sets;  // the next set() fails half-way
    f.cpu.request(2, true, 2 * kMs);
    CHECK(f.cpu.failed());
    CHECK_THAT(f.cpu.problem(), Contains("Permission denied"));
    CHECK(f.rec->restored);
    CHECK(f.rec->low.none());  // core 0 and the half-set core 1 back at full
    CHECK(f.cpu.cores_low().none());
    // No longer driven: requests are counted and change nothing.
    const int sets = f.rec->sets;
    f.cpu.request(2, false, 3 * kMs);
    f.cpu.request(2, true, 4 * kMs);
    CHECK(f.rec->sets == sets);
    CHECK(f.cpu.status(4 * kMs).failed == 1);
}

TEST_CASE("stopping the controller restores every core", "[cpu]")
{
    auto rec = std::make_shared<Recorded>();
    {
        CpuController cpu(std::make_unique<RecordingCpuBackend>(rec, 2));
        cpu.set_cores(1, cores_of({0}), 0);
        cpu.request(1, true, 1 * kMs);
        REQUIRE(rec->low == cores_of({0}));
    }
    CHECK(rec->restored);
    CHECK(rec->low.none());
}

TEST_CASE("emulated CPU energy on a hand-worked example", "[cpu]")
{
    // Two cores; full 2 GHz at 6 W, low 0.8 GHz at 2 W, 1 ms to switch, and
    // 1 ms of work after an arrival that runs at the low frequency.
    CpuBackendConfig config;
    config.emulated_cores = 2;
    config.table = slim::cpu::parse_cpu_config("f=2,P=6,f_low=0.8,P_low=2,tau=1ms,handle=1ms");
    auto backend = make_cpu_backend("emulated", config, 0);
    CHECK(backend->cores() == cores_of({0, 1}));

    backend->set(cores_of({0}), true, 10 * kMs);   // core 0 low at 10 ms
    backend->set(cores_of({0}), false, 60 * kMs);  // back to full at 60 ms
    const std::optional<CpuEnergy> e = backend->energy(100 * kMs);
    REQUIRE(e);
    // Core 0:  0-10 ms full        10 ms x 6 W = 0.060 J
    //         10-11 ms switching    1 ms x 6 W = 0.006 J
    //         11-60 ms low         49 ms x 2 W = 0.098 J
    //         60-100 ms full       40 ms x 6 W = 0.240 J   -> 0.404 J
    // Core 1: 100 ms full         100 ms x 6 W = 0.600 J
    // Total 1.004 J; always at full: 2 x 100 ms x 6 W = 1.2 J (0.196 J saved).
    CHECK(e->span_ns == 100 * kMs);
    CHECK(e->joules == Approx(1.004).epsilon(1e-9));
    CHECK(e->baseline_joules == Approx(1.2).epsilon(1e-9));
    CHECK(e->time_low_ns == 49 * kMs);
    // One raise, charged as the replay's model charges a wake: tau, plus
    // the handling at 0.8 GHz, 1 ms x (2 / 0.8 - 1) = 1.5 ms: 2.5 ms.
    CHECK(e->penalty_ns == 2'500'000);
    CHECK(e->transitions == 2);

    SECTION("a core still low is accounted up to now")
    {
        backend->set(cores_of({1}), true, 90 * kMs);
        const std::optional<CpuEnergy> later = backend->energy(100 * kMs);
        // Core 1: 0-90 ms full 0.540 J, 90-91 switching 0.006 J, 91-100 low 0.018 J.
        CHECK(later->joules == Approx(0.404 + 0.540 + 0.006 + 0.018).epsilon(1e-9));
        CHECK(later->time_low_ns == (49 + 9) * kMs);
        CHECK(backend->restore(100 * kMs).empty());
        CHECK(backend->energy(100 * kMs)->penalty_ns == 2 * 2'500'000);
    }
}

TEST_CASE("the service's emulated table is slim-replay's", "[cpu]")
{
    // The defaults are the replay's (an AMD EPYC 7763 core, P0 and P2).
    const CpuBackendConfig config;
    const slim::cpu::CpuConfig replay;
    CHECK(config.table.full.ghz == replay.full.ghz);
    CHECK(config.table.full.watts == replay.full.watts);
    CHECK(config.table.low.ghz == replay.low.ghz);
    CHECK(config.table.low.watts == replay.low.watts);
    CHECK(config.table.tau_ns == replay.tau_ns);
    CHECK(config.table.handle_ns == replay.handle_ns);
    CHECK(config.table.full.ghz == 2.45);
    CHECK(config.table.low.watts == 1.4);
    CHECK(low_khz_of(config.table) == 1'500'000);  // exec's {khz} by default

    CpuBackendConfig two;
    two.emulated_cores = 2;
    const auto backend = make_cpu_backend("emulated", two, 0);
    CHECK_THAT(backend->describe(),
               Contains("2 cores, f=2.45,P=3,f_low=1.5,P_low=1.4,tau=20us,handle=5us"));

    SECTION("one default raise: tau 20 us + 5 us x (2.45 / 1.5 - 1) = 23.1667 us")
    {
        auto b = make_cpu_backend("emulated", two, 0);
        b->set(cores_of({0}), true, 0);
        b->set(cores_of({0}), false, 1 * kMs);
        // 5000 x 0.63333... = 3166.67 ns, rounded: 3167 ns.
        CHECK(b->energy(1 * kMs)->penalty_ns == 20'000 + 3'167);
    }
}

TEST_CASE("core lists as the kernel writes them", "[cpu]")
{
    CoreSet s;
    CHECK(parse_cpu_list("0-3,8,10-11\n", s).empty());
    CHECK(s == cores_of({0, 1, 2, 3, 8, 10, 11}));
    CHECK(format_cpu_list(s) == "0-3,8,10-11");
    CHECK(parse_cpu_list("", s).empty());
    CHECK(s.none());
    CHECK_FALSE(parse_cpu_list("3-1", s).empty());
    CHECK_FALSE(parse_cpu_list("0,x", s).empty());
    CHECK_FALSE(parse_cpu_list("4096", s).empty());

    std::string why;
    const std::optional<CoreSet> mine = read_allowed_cores(::getpid(), why);
    REQUIRE(mine);
    CHECK(mine->any());
    CHECK_FALSE(read_allowed_cores(0, why));  // no /proc/0
    CHECK_THAT(why, Contains("/proc/0/status"));
}

TEST_CASE("cpufreq backend against a fake sysfs tree", "[cpu]")
{
    FakeSysfs sys;
    CpuBackendConfig config;
    config.sysfs_root = sys.root;

    SECTION("userspace governor: scaling_setspeed lowered, then restored")
    {
        sys.add(0);
        sys.add(1);
        auto b = make_cpu_backend("cpufreq", config, 0);
        CHECK(b->cores() == cores_of({0, 1}));
        b->set(cores_of({1}), true, 0);
        CHECK(sys.read(sys.dir(1) + "/scaling_setspeed") == "800000");
        CHECK(sys.read(sys.dir(0) + "/scaling_setspeed") == "2000000");
        b->set(cores_of({1}), false, 0);
        CHECK(sys.read(sys.dir(1) + "/scaling_setspeed") == "2000000");
        b->set(cores_of({0, 1}), true, 0);
        CHECK(b->restore(0).empty());
        CHECK(sys.read(sys.dir(0) + "/scaling_setspeed") == "2000000");
        CHECK(sys.read(sys.dir(1) + "/scaling_setspeed") == "2000000");
    }
    SECTION("another governor: scaling_max_freq capped, then restored; --cpu-low-khz")
    {
        sys.add(0, "schedutil");
        config.low_khz = 1'200'000;
        auto b         = make_cpu_backend("cpufreq", config, 0);
        CHECK_THAT(b->describe(), Contains("schedutil"));
        b->set(cores_of({0}), true, 0);
        CHECK(sys.read(sys.dir(0) + "/scaling_max_freq") == "1200000");
        CHECK(sys.read(sys.dir(0) + "/scaling_setspeed") == "<unsupported>");
        b.reset();  // destroyed: restored
        CHECK(sys.read(sys.dir(0) + "/scaling_max_freq") == "2000000");
    }
    SECTION("the cores' state file: recorded before a core goes low, restored by the next "
            "service")
    {
        sys.add(0);
        sys.add(1);
        const std::string state = sys.root + "/slimlinkd.sock.cpu-state";
        std::string left;
        {
            auto b = make_cpu_backend("cpufreq", config, 0);
            b->use_state_file(state);  // none yet: nothing to restore
            b->set(cores_of({1}), true, 0);
            REQUIRE(sys.read(sys.dir(1) + "/scaling_setspeed") == "800000");
            std::ifstream in(state);
            left.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
            CHECK_THAT(left, Contains("\ncpu1 scaling_setspeed 2000000"));
            CHECK_THAT(left, !Contains("cpu0"));  // never lowered
            CHECK(b->restore(0).empty());
            CHECK(::access(state.c_str(), F_OK) != 0);  // every core restored: gone
        }
        // A service SIGKILLed while core 1 was low leaves both behind.
        sys.write(sys.dir(1) + "/scaling_setspeed", "800000");
        std::ofstream(state) << left;
        auto next = make_cpu_backend("cpufreq", config, 0);  // reads 800000 as found
        next->use_state_file(state);
        CHECK(sys.read(sys.dir(1) + "/scaling_setspeed") == "2000000");
        CHECK(::access(state.c_str(), F_OK) != 0);
        // Full is the recorded value, not the low one the new service found.
        next->set(cores_of({1}), true, 0);
        next->set(cores_of({1}), false, 0);
        CHECK(sys.read(sys.dir(1) + "/scaling_setspeed") == "2000000");

        SECTION("a line naming no core of the tree, or another file, is ignored")
        {
            CHECK(next->restore(0).empty());
            std::ofstream(state) << "cpu7 scaling_setspeed 1\ncpu0 ../../x 5\ncpu0 "
                                    "scaling_setspeed 1900000\n";
            auto third = make_cpu_backend("cpufreq", config, 0);
            third->use_state_file(state);
            CHECK(sys.read(sys.dir(0) + "/scaling_setspeed") == "1900000");
            CHECK(::access(state.c_str(), F_OK) != 0);
        }
    }
    SECTION("no cpufreq at all: refused, naming the path")
    {
        REQUIRE(::mkdir((sys.root + "/cpu0").c_str(), 0755) == 0);
        CHECK_THROWS_WITH(make_cpu_backend("cpufreq", config, 0),
                          Contains(sys.root + "/cpu0/cpufreq is absent"));
    }
    SECTION("a missing governor: refused, naming the file")
    {
        sys.add(0);
        sys.add(1, "");
        CHECK_THROWS_WITH(make_cpu_backend("cpufreq", config, 0),
                          Contains(sys.dir(1) + "/scaling_governor") && Contains("no governor"));
        CHECK(sys.read(sys.dir(0) + "/scaling_setspeed") == "2000000");
    }
    SECTION("a read-only file (root too, as sysfs): refused before any core changed")
    {
        sys.add(0);
        sys.add(1);
        REQUIRE(::chmod((sys.dir(1) + "/scaling_setspeed").c_str(), 0444) == 0);
        CHECK_THROWS_WITH(make_cpu_backend("cpufreq", config, 0),
                          Contains(sys.dir(1) + "/scaling_setspeed cannot be written") &&
                                  Contains("read-only (mode 444)"));
        CHECK(sys.read(sys.dir(0) + "/scaling_setspeed") == "2000000");
    }
    SECTION("a file that cannot be written any more: the controller restores every core")
    {
        sys.add(0);
        sys.add(1);
        CpuController cpu(make_cpu_backend("cpufreq", config, 0));
        cpu.set_cores(1, cores_of({0}), 0);
        cpu.set_cores(2, cores_of({1}), 0);
        cpu.request(1, true, 1 * kMs);
        REQUIRE(sys.read(sys.dir(0) + "/scaling_setspeed") == "800000");
        // Gone from under the service, a folder in its place: no caller,
        // root included, opens that for writing.
        const std::string file = sys.dir(1) + "/scaling_setspeed";
        REQUIRE(::unlink(file.c_str()) == 0);
        REQUIRE(::mkdir(file.c_str(), 0755) == 0);
        cpu.request(2, true, 2 * kMs);
        CHECK(cpu.failed());
        CHECK_THAT(cpu.problem(), Contains(file));
        CHECK(sys.read(sys.dir(0) + "/scaling_setspeed") == "2000000");
        CHECK(cpu.cores_low().none());
    }
}

TEST_CASE("the real cpufreq backend, where this machine has cpufreq", "[cpu]")
{
    struct stat st {};
    if (::stat("/sys/devices/system/cpu/cpu0/cpufreq", &st) != 0) {
        WARN("skipped: /sys/devices/system/cpu/cpu0/cpufreq is absent, this machine has no "
             "cpufreq driver (a virtual machine often has none)");
        // What a site starting --cpu cpufreq here is told.
        CHECK_THROWS_WITH(make_cpu_backend("cpufreq", CpuBackendConfig{}, 0),
                          Contains("/sys/devices/system/cpu/cpu0/cpufreq is absent"));
        return;
    }
    // Nothing is written: the start alone is checked (root or not).
    try {
        auto b = make_cpu_backend("cpufreq", CpuBackendConfig{}, 0);
        CHECK(b->cores().any());
    } catch (const CpuBackendError& e) {
        CHECK_THAT(e.what(), Contains("/sys/devices/system/cpu/"));
    }
}

TEST_CASE("the exec CPU backend runs a command without a shell, bounded", "[cpu]")
{
    CpuBackendConfig config;
    config.exec_template = "/bin/true {level} {cores}";
    auto ok              = make_cpu_backend("exec", config, 0);
    ok->set(cores_of({0}), true, 0);
    CHECK(ok->restore(0).empty());

    config.exec_template = "/bin/false {level}";
    auto failing         = make_cpu_backend("exec", config, 0);
    CHECK_THROWS_WITH(failing->set(cores_of({0}), true, 0), Contains("exited with status 1"));

    FakeSysfs dir;  // a temporary folder for a command that hangs
    const std::string hang = dir.root + "/hang";
    std::ofstream(hang) << "#!/bin/sh\nexec sleep 5\n";
    REQUIRE(::chmod(hang.c_str(), 0755) == 0);
    config.exec_template = hang + " {level}";
    config.exec_timeout  = std::chrono::milliseconds(100);
    auto hanging         = make_cpu_backend("exec", config, 0);
    CHECK_THROWS_WITH(hanging->set(cores_of({0}), true, 0),
                      Contains("did not end within 100 ms and was killed"));

    config.exec_template = "set-cores {level} | tee";
    CHECK_THROWS_WITH(make_cpu_backend("exec", config, 0), Contains("shell syntax"));
    config.exec_template = "/bin/true {cores}";
    CHECK_THROWS_WITH(make_cpu_backend("exec", config, 0), Contains("{level}"));
    config.exec_template = "true {level}";
    CHECK_THROWS_WITH(make_cpu_backend("exec", config, 0), Contains("by its path"));
}

namespace {

std::string file_text(const std::string& path)
{
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

}  // namespace

TEST_CASE("the cores' state file reads back what the backends write", "[cpu]")
{
    const std::string text = "# slimlinkd pid 4242 --cpu exec: cores it may have lowered\n"
                             "exec 0,2-3 /usr/sbin/set-cores {level} {cores}\n"
                             "# not restored by slimlinkd pid 7: cpufreq CPU backend: absent\n"
                             "cpu1 scaling_setspeed 2000000\r\n"
                             "\n"
                             "something else\n";
    const CpuStateFile f   = parse_cpu_state_file(text);
    CHECK(f.writer_pid == 4242);
    CHECK(f.not_restored == "cpufreq CPU backend: absent");
    REQUIRE(f.lines.size() == 3);
    CHECK(f.lines[0].kind == "exec");
    CHECK(f.lines[0].text == "exec 0,2-3 /usr/sbin/set-cores {level} {cores}");
    CHECK(f.lines[0].not_restored.empty());
    CHECK(f.lines[1].kind == "cpufreq");
    CHECK(f.lines[1].text == "cpu1 scaling_setspeed 2000000");
    CHECK(f.lines[1].not_restored == "cpufreq CPU backend: absent");
    CHECK(f.lines[2].kind.empty());
    CHECK(parse_cpu_state_file("cpu0 scaling_max_freq 1").writer_pid == 0);  // an older file

    SECTION("kept lines go after the writer's own, under their reason, and outlive remove()")
    {
        FakeSysfs dir;
        const std::string path = dir.root + "/s.sock.cpu-state";
        StateFile file;
        file.set_path(path);
        file.keep("cpu1 scaling_setspeed 2000000", "it failed");
        file.keep("exec 0 /bin/true {level}", "");
        file.write("# slimlinkd pid 1 --cpu exec: own\nexec 3 /bin/x {level}");
        const CpuStateFile back = parse_cpu_state_file(file_text(path));
        REQUIRE(back.lines.size() == 3);
        CHECK(back.lines[0].text == "exec 3 /bin/x {level}");
        CHECK(back.lines[0].not_restored.empty());
        CHECK(back.lines[1].text == "exec 0 /bin/true {level}");  // no reason: before any note
        CHECK(back.lines[1].not_restored.empty());
        CHECK(back.lines[2].not_restored == "it failed");
        file.remove();
        const CpuStateFile left = parse_cpu_state_file(file_text(path));
        CHECK(left.writer_pid == ::getpid());
        REQUIRE(left.lines.size() == 2);
        CHECK(left.not_restored == "it failed");
    }
}

TEST_CASE("the exec CPU backend records the cores it lowers; the next service restores them",
          "[cpu]")
{
    FakeSysfs dir;
    const std::string calls  = dir.root + "/calls";
    const std::string script = dir.root + "/cores";
    std::ofstream(script) << "#!/bin/sh\necho \"$1 $2\" >>" << calls << "\n";
    REQUIRE(::chmod(script.c_str(), 0755) == 0);
    const std::string state = dir.root + "/s.sock.cpu-state";
    const std::string line  = "exec 0 " + script + " {level} {cores}";
    CpuBackendConfig config;
    config.exec_template = script + " {level} {cores}";
    auto last_call       = [&] {
        std::istringstream in(file_text(calls));
        std::string l, last;
        while (std::getline(in, l)) {
            last = l;
        }
        return last;
    };

    std::string left;
    {
        auto b = make_cpu_backend("exec", config, 0);
        b->use_state_file(state);  // none yet
        CHECK_FALSE(exists(state));
        b->set(cores_of({0}), true, 0);
        CHECK(last_call() == "low 0");
        left = file_text(state);
        CHECK_THAT(left, Contains("\n" + line + "\n"));
        CHECK(parse_cpu_state_file(left).writer_pid == ::getpid());
        b->set(cores_of({0}), false, 0);
        CHECK(last_call() == "full 0");
        CHECK_FALSE(exists(state));  // back at full: gone
        b->set(cores_of({0}), true, 0);
        CHECK(exists(state));
    }  // destroyed: restored, and the file with it
    CHECK(last_call() == "full 0");
    CHECK_FALSE(exists(state));

    SECTION("a service killed with core 0 low: the next exec service runs the full form first")
    {
        std::ofstream(calls, std::ios::trunc).flush();
        std::ofstream(state) << left;
        auto next = make_cpu_backend("exec", config, 0);
        restore_left_cores(state, config, next.get(), 0);
        CHECK(last_call() == "full 0");
        CHECK_FALSE(exists(state));
    }
    SECTION("--cpu off and emulated restore with the command the file records")
    {
        for (const bool off : {true, false}) {
            std::ofstream(calls, std::ios::trunc).flush();
            std::ofstream(state) << left;
            CpuBackendConfig other;  // no --cpu-exec
            auto emulated = off ? nullptr : make_cpu_backend("emulated", other, 0);
            restore_left_cores(state, other, emulated.get(), 0);
            CHECK(last_call() == "full 0");
            CHECK_FALSE(exists(state));
        }
    }
    SECTION("a restore that fails keeps the line with the reason, until one succeeds")
    {
        std::ofstream(state) << left;
        CpuBackendConfig failing;
        failing.exec_template = "/bin/false {level}";
        {
            CpuController cpu(make_cpu_backend("exec", failing, 0));
            cpu.use_state_file(state, failing, 0);
            const CpuStateFile kept = parse_cpu_state_file(file_text(state));
            REQUIRE(kept.lines.size() == 1);
            CHECK(kept.lines[0].text == line);
            CHECK_THAT(kept.not_restored, Contains("exited with status 1"));
        }  // stopped: the file stays
        REQUIRE(exists(state));
        restore_left_cores(state, CpuBackendConfig{}, nullptr, 0);
        CHECK(last_call() == "full 0");
        CHECK_FALSE(exists(state));
    }
    SECTION("a cpufreq line where there is no cpufreq is kept, with why; exec's are restored")
    {
        std::ofstream(calls, std::ios::trunc).flush();
        std::ofstream(state) << left << "cpu0 scaling_setspeed 2000000\n";
        CpuBackendConfig none;
        none.sysfs_root = dir.root + "/none";
        REQUIRE(::mkdir(none.sysfs_root.c_str(), 0755) == 0);
        restore_left_cores(state, none, nullptr, 0);
        CHECK(last_call() == "full 0");
        const CpuStateFile kept = parse_cpu_state_file(file_text(state));
        REQUIRE(kept.lines.size() == 1);
        CHECK(kept.lines[0].text == "cpu0 scaling_setspeed 2000000");
        CHECK_THAT(kept.not_restored, Contains("cpufreq CPU backend"));

        // A running exec service keeps it in its own records.
        auto b = make_cpu_backend("exec", config, 0);
        restore_left_cores(state, none, b.get(), 0);
        b->set(cores_of({0}), true, 0);
        const CpuStateFile both = parse_cpu_state_file(file_text(state));
        REQUIRE(both.lines.size() == 2);
        CHECK(both.lines[0].text == line);
        CHECK(both.lines[1].text == "cpu0 scaling_setspeed 2000000");
        CHECK(b->restore(0).empty());
        CHECK(parse_cpu_state_file(file_text(state)).lines.size() == 1);  // not ours to drop

        // Where the tree is, it is restored.
        FakeSysfs sys;
        sys.add(0);
        sys.write(sys.dir(0) + "/scaling_setspeed", "800000");
        CpuBackendConfig tree;
        tree.sysfs_root = sys.root;
        restore_left_cores(state, tree, nullptr, 0);
        CHECK(sys.read(sys.dir(0) + "/scaling_setspeed") == "2000000");
        CHECK_FALSE(exists(state));
    }
}

TEST_CASE("a job's CPU section: per core, against a hand computation", "[cpu]")
{
    // Four emulated cores; full 2 GHz at 6 W, low 1 GHz at 2 W, tau 1 ms,
    // handle 1 ms: a raise costs 1 ms + 1 ms x (2 / 1 - 1) = 2 ms of penalty.
    CpuBackendConfig config;
    config.emulated_cores = 4;
    config.table = slim::cpu::parse_cpu_config("f=2,P=6,f_low=1,P_low=2,tau=1ms,handle=1ms");
    CpuController cpu(make_cpu_backend("emulated", config, 0));
    // Job 7: rank 1 on core 0, rank 2 on core 1; job 9: rank 3 on core 1 too.
    cpu.set_cores(1, cores_of({0}), 0, 7);
    cpu.set_cores(2, cores_of({1}), 0, 7);
    cpu.set_cores(3, cores_of({1}), 0, 9);
    cpu.request(1, true, 10 * kMs);  // core 0 low from 10 ms
    cpu.request(2, true, 20 * kMs);  // core 1 held by rank 3 (works): refused
    CHECK(cpu.cores_low() == cores_of({0}));
    cpu.request(3, true, 30 * kMs);   // both wait: core 1 low from 30 ms
    cpu.request(1, false, 50 * kMs);  // core 0 full at 50 ms
    cpu.request(2, false, 60 * kMs);  // core 1 full at 60 ms

    const auto s = cpu.job_section(7, 100 * kMs, 16);
    REQUIRE(s);
    REQUIRE(s->cores.size() == 2);
    const svc::CpuSectionCore& c0 = s->cores[0];
    const svc::CpuSectionCore& c1 = s->cores[1];
    // Core 0: low 10-50 ms = 40 ms, of which 39 ms beyond the first tau;
    // 0.1 s x 6 W = 0.6 J always at full, 0.6 - (6 - 2) W x 0.039 s = 0.444 J.
    CHECK(c0.core == 0);
    CHECK(c0.ranks == 1);
    CHECK(c0.low_requests == 1);
    CHECK(c0.full_requests == 1);
    CHECK(c0.refused == 0);
    CHECK(c0.transitions == 2);
    CHECK(c0.span_ns == 100 * kMs);
    CHECK(c0.time_low_ns == 40 * kMs);
    CHECK(c0.penalty_ns == 2 * kMs);
    CHECK(c0.baseline_joules == Approx(0.6).epsilon(1e-12));
    CHECK(c0.energy_joules == Approx(0.444).epsilon(1e-12));
    // Core 1: rank 2's low at 20 ms refused (rank 3 of job 9 worked there);
    // low 30-60 ms = 30 ms, 29 ms beyond tau: 0.6 - 4 x 0.029 = 0.484 J.
    CHECK(c1.core == 1);
    CHECK(c1.ranks == 1);  // job 9's rank is not job 7's
    CHECK(c1.low_requests == 1);
    CHECK(c1.refused == 1);
    CHECK(c1.transitions == 2);
    CHECK(c1.time_low_ns == 30 * kMs);
    CHECK(c1.penalty_ns == 2 * kMs);
    CHECK(c1.energy_joules == Approx(0.484).epsilon(1e-12));
    // Sums.
    const svc::CpuSection& t = s->totals;
    CHECK(std::string(t.backend) == "emulated");
    CHECK(t.has_energy == 1);
    CHECK(t.cores == 2);
    CHECK(t.cores_mapped == 2);
    CHECK(t.cores_refused == 1);
    CHECK(t.low_requests == 2);
    CHECK(t.full_requests == 2);
    CHECK(t.transitions == 4);
    CHECK(t.span_ns == 100 * kMs);
    CHECK(t.time_low_ns == 70 * kMs);
    CHECK(t.penalty_ns == 4 * kMs);
    CHECK(t.baseline_joules == Approx(1.2).epsilon(1e-12));
    CHECK(t.energy_joules == Approx(0.928).epsilon(1e-12));
    // The backend's own account agrees: cores 2 and 3 at full, 2 x 0.6 J.
    CHECK(cpu.backend().energy(100 * kMs)->joules == Approx(0.928 + 1.2).epsilon(1e-12));

    SECTION("cut to a limit: the sums still cover every core")
    {
        const auto cut = cpu.job_section(7, 100 * kMs, 1);
        REQUIRE(cut);
        CHECK(cut->cores.size() == 1);
        CHECK(cut->totals.cores == 1);
        CHECK(cut->totals.cores_mapped == 2);
        CHECK(cut->totals.energy_joules == Approx(0.928).epsilon(1e-12));
    }
    SECTION("a job is forgotten when its last rank leaves; another job is its own")
    {
        const auto other = cpu.job_section(9, 100 * kMs, 16);
        REQUIRE(other);
        CHECK(other->totals.cores_mapped == 1);
        CHECK(other->totals.low_requests == 1);
        CHECK(other->totals.cores_refused == 0);
        cpu.drop(1, 100 * kMs);
        CHECK(cpu.job_section(7, 100 * kMs, 16));
        cpu.drop(2, 100 * kMs);
        CHECK_FALSE(cpu.job_section(7, 100 * kMs, 16));
        CHECK_FALSE(cpu.job_section(42, 100 * kMs, 16));
    }
    SECTION("a core still low at the report is counted up to it")
    {
        cpu.request(1, true, 80 * kMs);  // core 0 low again, 80-100 ms: 19 ms beyond tau
        const auto later = cpu.job_section(7, 100 * kMs, 16);
        CHECK(later->cores[0].time_low_ns == 60 * kMs);
        CHECK(later->cores[0].transitions == 3);
        CHECK(later->cores[0].energy_joules == Approx(0.6 - 4 * (0.039 + 0.019)).epsilon(1e-12));
    }
}

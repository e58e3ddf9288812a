// SPDX-License-Identifier: BSD-3-Clause
// The live link Controller and its backends: merging of
// width requests, "any error -> full width, reported once", the exec and
// ibmad backends.
#include "link/backend.h"
#include "link/controller.h"
#include "service/backend_ibmad.h"
#include "service/backend_registry.h"

#include "slimlink_config.h"

#ifdef HAVE_IBMAD
#include <infiniband/mad.h>
#endif

#include <catch2/catch.hpp>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using namespace slim::link;

namespace {

// A clock the test moves by hand.
struct ManualClock {
    std::shared_ptr<TimeNs> now = std::make_shared<TimeNs>(0);
    Clock clock() const
    {
        auto n = now;
        return [n] { return *n; };
    }
    void set(TimeNs t) const { *now = t; }
};

// Records every command; fails set_width for widths in `fail_below`.
struct Recording {
    std::vector<std::pair<unsigned, TimeNs>> commands;  // width, at
    unsigned fail_below = 0;
    unsigned calls      = 0;
};

class RecordingBackend final : public LinkBackend {
public:
    explicit RecordingBackend(std::shared_ptr<Recording> r) : r_(std::move(r)) {}
    std::string name() const override { return "recording"; }
    unsigned full_width() const override { return 4; }
    Status set_width(unsigned width) override { return set_width_at(width, -1); }
    Status set_width_at(unsigned width, TimeNs at) override
    {
        ++r_->calls;
        if (width < r_->fail_below) {
            return Status::error("recording backend: cannot set " + std::to_string(width));
        }
        r_->commands.emplace_back(width, at);
        return Status::success();
    }

private:
    std::shared_ptr<Recording> r_;
};

struct Errors {
    std::shared_ptr<std::vector<std::string>> list = std::make_shared<std::vector<std::string>>();
    ErrorReporter reporter() const
    {
        auto l = list;
        return [l](const std::string& m) { l->push_back(m); };
    }
};

ControllerOptions options(const ManualClock& clock, const Errors& errors)
{
    ControllerOptions o;
    o.clock    = clock.clock();
    o.on_error = errors.reporter();
    return o;
}

// A scratch directory removed at the end of the test.
struct TempDir {
    std::string path;
    TempDir()
    {
        char tmpl[] = "/tmp/slim-ctl-XXXXXX";
        path        = ::mkdtemp(tmpl);
    }
    ~TempDir() { (void)std::system(("rm -rf '" + path + "'").c_str()); }
};

// Writes an executable shell script.
std::string write_script(const std::string& path, const std::string& body)
{
    std::ofstream(path) << "#!/bin/sh\n" << body << "\n";
    ::chmod(path.c_str(), 0755);
    return path;
}

std::vector<std::string> lines_of(const std::string& path)
{
    std::ifstream in(path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        lines.push_back(line);
    }
    return lines;
}

BackendConfig exec_config(const std::string& command, std::chrono::milliseconds timeout)
{
    BackendConfig c;
    c.device        = "mlx5_0";
    c.port          = 1;
    c.exec_template = command + " {device} {port} {width}";
    c.exec_timeout  = timeout;
    return c;
}

}  // namespace

TEST_CASE("requests merge: the highest demanded width wins, none means full width", "[controller]")
{
    ManualClock clock;
    Errors errors;
    auto rec = std::make_shared<Recording>();
    Controller c(std::make_unique<RecordingBackend>(rec), options(clock, errors));
    REQUIRE(c.width() == 4);

    SECTION("low power until t, then back to full at t, dated t")
    {
        c.low_power_until(100'000);
        CHECK(c.width() == 1);
        clock.set(50'000);
        c.tick();
        CHECK(c.width() == 1);
        clock.set(250'000);
        c.tick();
        CHECK(c.width() == 4);
        REQUIRE(rec->commands.size() == 2);
        CHECK(rec->commands[1] == std::make_pair(4u, TimeNs{100'000}));
    }
    SECTION("a burst at ratio r uses max(1, ceil(L*r)) lanes and outranks low power")
    {
        c.low_power_until(1'000'000);
        c.burst(0.5);
        CHECK(c.width() == 2);
        c.burst(0.3);  // ceil(1.2)
        CHECK(c.width() == 2);
        c.burst(0.01);
        CHECK(c.width() == 1);
        c.burst(0.8);  // ceil(3.2)
        CHECK(c.width() == 4);
        c.end_burst();
        CHECK(c.width() == 1);
    }
    SECTION("a burst with a meaningless ratio runs at full width")
    {
        c.burst(0.0);
        CHECK(c.width() == 4);
        c.burst(1.7);
        CHECK(c.width() == 4);
    }
    SECTION("traffic wakes the link")
    {
        c.low_power_until(1'000'000);
        clock.set(10);
        c.traffic();
        CHECK(c.width() == 4);
    }
    SECTION("a request already expired changes nothing")
    {
        clock.set(500);
        c.low_power_until(400);
        CHECK(c.width() == 4);
        CHECK(rec->commands.empty());
    }
    CHECK(errors.list->empty());
}

TEST_CASE("a backend that fails sends the controller to full width and reports once",
          "[controller]")
{
    ManualClock clock;
    Errors errors;
    auto rec        = std::make_shared<Recording>();
    rec->fail_below = 4;
    Controller c(std::make_unique<RecordingBackend>(rec), options(clock, errors));

    c.low_power_until(1'000);
    CHECK(c.failed());
    CHECK(c.width() == 4);
    REQUIRE(errors.list->size() == 1);
    CHECK_THAT(errors.list->front(), StartsWith("recording backend: cannot set 1") &&
                                             Contains("set to full width (4 lanes)"));
    REQUIRE_FALSE(rec->commands.empty());
    CHECK(rec->commands.back().first == 4);

    // Later requests are ignored: full width for good, nothing reported again.
    c.low_power_until(2'000);
    c.burst(0.25);
    c.traffic();
    c.tick();
    CHECK(c.width() == 4);
    CHECK(errors.list->size() == 1);
    CHECK(rec->commands.back().first == 4);
}

TEST_CASE("a node service that is gone leaves the port's width unknown, not full", "[controller]")
{
    // What the node service's client backend does once the service died
    // (SIGKILL): it can no longer act, and a restore cannot be confirmed.
    class GoneBackend final : public LinkBackend {
    public:
        std::string name() const override { return "service:exec"; }
        unsigned full_width() const override { return 4; }
        Status set_width(unsigned) override { return Status::success(); }
        bool sync(TimeNs) override { return false; }
        Status restore_full_width() override
        {
            return Status::error("the node service slimlinkd at /run/x.sock is gone; it "
                                 "restores full width at its next start");
        }
    };
    ManualClock clock;
    Errors errors;
    Controller c(std::make_unique<GoneBackend>(), options(clock, errors));
    c.low_power_until(1'000);
    c.sync(1'000);
    CHECK(c.failed());
    REQUIRE(errors.list->size() == 1);
    CHECK_THAT(c.error(), Contains("the node service is gone") &&
                                  Contains("the port's width is unknown (the node service "
                                           "slimlinkd at /run/x.sock is gone; it restores full "
                                           "width at its next start)"));
    CHECK_THAT(c.error(), !Contains("set to full width"));
    CHECK(errors.list->front() == c.error());
}

TEST_CASE("the emulated backend accounts late wake-ups in live time", "[controller]")
{
    ManualClock clock;
    Errors errors;
    BackendConfig config;
    config.clock       = clock.clock();
    BackendResult made = make_backend("emulated", config);
    REQUIRE(made.status);
    Controller c(std::move(made.backend), options(clock, errors));

    SECTION("traffic during low power waits and is counted")
    {
        c.low_power_until(1'000'000);
        clock.set(100'000);  // long after the 10 us fall
        const TimeNs wait = c.traffic();
        CHECK(wait == 10'000);
        CHECK(c.backend().stats()->late_wakeups == 1);
    }
    SECTION("an expired request is applied at its expiry, so later traffic does not wait")
    {
        c.low_power_until(50'000);
        clock.set(200'000);
        c.tick();
        CHECK(c.traffic() == 0);
        CHECK(c.backend().stats()->late_wakeups == 0);
        CHECK(c.backend().stats()->transitions == 2);
    }
}

TEST_CASE("with delay injection a late wake-up really waits", "[controller]")
{
    ManualClock clock;
    Errors errors;
    BackendConfig config;
    config.clock        = clock.clock();
    config.inject_delay = true;
    config.link.tau_ns  = 2'000'000;  // 2 ms: measurable
    Controller c(std::move(make_backend("emulated", config).backend), options(clock, errors));
    c.low_power_until(100'000'000);
    clock.set(50'000'000);
    const auto start  = std::chrono::steady_clock::now();
    const TimeNs wait = c.traffic();
    const auto waited = std::chrono::steady_clock::now() - start;
    CHECK(wait == 2'000'000);
    CHECK(waited >= std::chrono::nanoseconds(wait));
}

TEST_CASE("unknown backends and the registry", "[controller]")
{
    const BackendResult r = make_backend("nosuch", BackendConfig{});
    CHECK_FALSE(r.status);
    CHECK(r.status.message() ==
          "link backend 'nosuch' is unknown (known: emulated, ibmad, exec, ethtool)");
    const auto names = backend_names();
    REQUIRE(names.size() >= 3);
    CHECK(names[0] == "emulated");
}

TEST_CASE("the exec backend runs the site command per width change", "[controller]")
{
    TempDir dir;
    const std::string log = dir.path + "/widths";
    ManualClock clock;
    Errors errors;

    SECTION("widths are recorded in order, with device and port substituted")
    {
        const std::string cmd =
                write_script(dir.path + "/set-width", "echo \"$1 $2 $3\" >> '" + log + "'");
        BackendResult made = make_backend("exec", exec_config(cmd, std::chrono::seconds(2)));
        REQUIRE(made.status);
        Controller c(std::move(made.backend), options(clock, errors));
        c.low_power_until(1'000);
        c.burst(0.5);  // merged with the command still running, or run after it
        c.wait_idle();
        c.end_burst();
        c.wait_idle();
        clock.set(2'000);
        c.traffic();
        c.wait_idle();
        const auto lines = lines_of(log);
        REQUIRE(lines.size() >= 3);
        CHECK(lines.front() == "mlx5_0 1 1");
        CHECK(lines[lines.size() - 2] == "mlx5_0 1 1");
        CHECK(lines.back() == "mlx5_0 1 4");
        CHECK(errors.list->empty());
    }
    SECTION("a failing command -> full width, the error reported once")
    {
        const std::string cmd = write_script(dir.path + "/set-width",
                                             "echo $3 >> '" + log + "'; [ $3 = 4 ] || exit 3");
        Controller c(
                std::move(make_backend("exec", exec_config(cmd, std::chrono::seconds(2))).backend),
                options(clock, errors));
        c.low_power_until(1'000'000);
        REQUIRE(c.width() == 1);
        c.wait_idle();
        c.tick();
        CHECK(c.failed());
        CHECK(c.width() == 4);
        REQUIRE(errors.list->size() == 1);
        CHECK_THAT(errors.list->front(), Contains("mlx5_0 1 1' exited with status 3"));
        c.low_power_until(2'000'000);
        c.tick();
        c.wait_idle();
        CHECK(errors.list->size() == 1);
        CHECK(lines_of(log).back() == "4");
    }
    SECTION("only commands that exited 0 are confirmed; a killed one leaves the width unknown")
    {
        const std::string cmd = write_script(
                dir.path + "/set-width", "[ $3 = 2 ] && exec sleep 30; echo $3 >> '" + log + "'");
        auto backend = std::move(
                make_backend("exec", exec_config(cmd, std::chrono::milliseconds(200))).backend);
        REQUIRE(backend->confirmed());
        CHECK(backend->confirmed()->width == 0);  // nothing confirmed yet
        REQUIRE(backend->set_width(1));
        CHECK(backend->confirmed()->in_flight);
        REQUIRE(backend->drain());
        CHECK(backend->confirmed()->width == 1);
        CHECK(backend->confirmed()->changes == 0);  // the first width known is no change
        REQUIRE(backend->set_width(4));
        REQUIRE(backend->drain());
        CHECK(backend->confirmed()->width == 4);
        CHECK(backend->confirmed()->changes == 1);
        REQUIRE(backend->set_width(2));  // started; hangs
        CHECK_FALSE(backend->drain());
        CHECK(backend->confirmed()->width == 0);    // killed half-way: unknown
        CHECK(backend->confirmed()->changes == 1);  // requested, never confirmed
        CHECK_FALSE(backend->confirmed()->in_flight);
    }
    SECTION("a command that hangs is killed after the timeout -> full width")
    {
        const std::string cmd = write_script(
                dir.path + "/set-width", "[ $3 = 4 ] || exec sleep 30; echo $3 >> '" + log + "'");
        Controller c(
                std::move(make_backend("exec", exec_config(cmd, std::chrono::milliseconds(200)))
                                  .backend),
                options(clock, errors));
        const auto start = std::chrono::steady_clock::now();
        c.low_power_until(1'000'000);
        while (!c.failed() && std::chrono::steady_clock::now() - start < std::chrono::seconds(5)) {
            c.tick();
            usleep(1000);
        }
        CHECK(c.failed());
        CHECK(c.width() == 4);
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
        REQUIRE(errors.list->size() == 1);
        CHECK_THAT(errors.list->front(), Contains("did not end within 200 ms and was killed"));
        c.wait_idle();
        CHECK(lines_of(log) == std::vector<std::string>{"4"});
    }
    SECTION("a command that cannot run is refused at start")
    {
        const BackendResult r =
                make_backend("exec", exec_config(dir.path + "/missing", std::chrono::seconds(2)));
        CHECK_FALSE(r.status);
        CHECK_THAT(r.status.message(), Contains("is not an executable file"));
        BackendConfig no_width;
        no_width.exec_template = "/bin/true {device}";
        CHECK_THAT(make_backend("exec", no_width).status.message(),
                   Contains("must contain {width}"));
        BackendConfig no_device;  // device unknown: {device} would be empty
        no_device.exec_template = "/bin/true {device} {width}";
        CHECK_THAT(make_backend("exec", no_device).status.message(),
                   Contains("uses {device}, but no device is known for this port"));
        no_device.exec_template = "/bin/true mlx5_0 {port} {width}";
        CHECK(make_backend("exec", no_device).status);
    }
}

TEST_CASE("PortInfo LinkWidthEnabled is encoded as libibmad encodes it", "[controller]")
{
    CHECK(ib::width_bit(1) == 1);
    CHECK(ib::width_bit(2) == 16);
    CHECK(ib::width_bit(4) == 2);
    CHECK(ib::width_bit(8) == 4);
    CHECK(ib::width_bit(12) == 8);
    CHECK(ib::width_bit(3) == 0);
    CHECK(ib::widest(1 | 2) == 4);
    CHECK(ib::widest(1 | 2 | 8) == 12);
    CHECK(ib::widest(16 | 1) == 2);
#ifndef HAVE_IBMAD
    WARN("skipped the comparison with libibmad: not built with libibmad "
         "(install libibmad-dev libibumad-dev and rerun configure)");
#else
    for (const std::uint32_t value : {0u, 1u, 2u, 3u, 4u, 8u, 15u, 16u, 17u, 255u}) {
        CAPTURE(value);
        std::array<std::uint8_t, IB_SMP_DATA_SIZE> ours{};
        std::array<std::uint8_t, IB_SMP_DATA_SIZE> theirs{};
        std::uint32_t v = value;
        ib::set_link_width_enabled(ours.data(), static_cast<std::uint8_t>(value));
        mad_encode_field(theirs.data(), IB_PORT_LINK_WIDTH_ENABLED_F, &v);
        CHECK(ours == theirs);
    }
    std::mt19937 random(42);
    std::array<std::uint8_t, IB_SMP_DATA_SIZE> portinfo{};
    for (int round = 0; round < 100; ++round) {
        for (auto& b : portinfo) {
            b = static_cast<std::uint8_t>(random());
        }
        std::uint32_t enabled = 0, supported = 0, active = 0;
        mad_decode_field(portinfo.data(), IB_PORT_LINK_WIDTH_ENABLED_F, &enabled);
        mad_decode_field(portinfo.data(), IB_PORT_LINK_WIDTH_SUPPORTED_F, &supported);
        mad_decode_field(portinfo.data(), IB_PORT_LINK_WIDTH_ACTIVE_F, &active);
        CHECK(ib::link_width_enabled(portinfo.data()) == enabled);
        CHECK(ib::link_width_supported(portinfo.data()) == supported);
        CHECK(ib::link_width_active(portinfo.data()) == active);
    }
#endif
}

TEST_CASE("without InfiniBand the ibmad backend fails at init and the link stays at full width",
          "[controller]")
{
    BackendConfig config;
    config.device         = "mlx5_0:1";
    const BackendResult r = make_backend("ibmad", config);
    if (r.status) {
        WARN("an InfiniBand port is usable here; the clean-failure check does not apply");
        return;
    }
    CHECK_THAT(r.status.message(), StartsWith("ibmad link backend: "));
    CHECK(r.status.message().find('\n') == std::string::npos);

    Errors errors;
    std::unique_ptr<LinkBackend> b = make_backend_or_emulated("ibmad", config, errors.reporter());
    REQUIRE(b);
    CHECK(b->name() == "emulated");
    REQUIRE(errors.list->size() == 1);
    CHECK_THAT(errors.list->front(),
               StartsWith("ibmad link backend: ") && Contains("stays at full width"));
}

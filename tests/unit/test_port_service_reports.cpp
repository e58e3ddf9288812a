// SPDX-License-Identifier: BSD-3-Clause
// The node service's reports say only what was confirmed (port_service.h):
// a stalled client of another job (a suspended job, one that attached and
// never published) neither starts a job's span at the replay clock's 0 nor
// cuts it to nothing; what the port's numbers do not cover, records applied
// late, a failed backend and a width nobody confirmed are in the report; a
// real port left narrow is remembered in a state file. Time is passed by
// hand, at uptime-like values, as CLOCK_MONOTONIC gives them.
#include "link/backend.h"
#include "predict/link_model.h"
#include "link/service_protocol.h"
#include "service/port_service.h"
#include "service/state_file.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

using Catch::Matchers::Contains;
using namespace slim::link;
using service::DemandRecord;

namespace {

constexpr TimeNs kMs = 1'000'000;
constexpr TimeNs kS  = 1'000 * kMs;
// A node that has been up for a while: the replay clock starts at 0.
constexpr TimeNs kUptime = 1689 * kS;

std::unique_ptr<PortService> emulated_service()
{
    return std::make_unique<PortService>([](Clock clock) {
        BackendConfig config;
        config.clock = std::move(clock);
        return make_emulated_backend(config).backend;
    });
}

DemandRecord needs(TimeNs t, unsigned width)
{
    DemandRecord r;
    r.t_ns  = t;
    r.width = width;
    return r;
}

void publish(PortService& service, std::uint32_t client, std::vector<DemandRecord> records,
             TimeNs through)
{
    std::string why;
    INFO("client " << client << " through " << through);
    REQUIRE(service.publish(client, records.data(), records.size(), through, &why));
}

ClientInfo rank(std::int32_t r, std::int32_t local, std::int32_t local_size, const std::string& job)
{
    ClientInfo info;
    info.rank       = r;
    info.local_rank = local;
    info.local_size = local_size;
    info.pid        = 2000 + r;
    info.job_key    = job;
    return info;
}

// A real port whose commands finish later (as exec's do): what it
// confirmed, and what poll() says, are set by the test.
struct AsyncPort {
    std::vector<unsigned> requested;
    LinkBackend::Confirmed confirmed;
    Status poll    = Status::success();
    bool fail_full = false;  // full-width commands fail at once
};

class AsyncBackend final : public LinkBackend {
public:
    explicit AsyncBackend(std::shared_ptr<AsyncPort> p) : p_(std::move(p)) {}
    std::string name() const override { return "async"; }
    unsigned full_width() const override { return 4; }
    Status set_width(unsigned width) override
    {
        if (p_->fail_full && width == 4) {
            return Status::error("async backend: cannot set 4");
        }
        p_->requested.push_back(width);
        p_->confirmed.in_flight = true;
        return Status::success();
    }
    Status poll() override
    {
        Status s = p_->poll;
        p_->poll = Status::success();
        return s;
    }
    Status restore_full_width() override { return set_width(4); }
    std::optional<Confirmed> confirmed() const override { return p_->confirmed; }

private:
    std::shared_ptr<AsyncPort> p_;
};

// A folder of our own for state files, removed at the end.
struct TempDir {
    std::string path;
    TempDir()
    {
        char t[] = "/tmp/slim-state.XXXXXX";
        REQUIRE(::mkdtemp(t) != nullptr);
        path = t;
    }
    ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

bool exists(const std::string& path)
{
    struct stat st {};
    return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace

// ------------------------------------------------------------- stalled clients

TEST_CASE("a client that attached and published nothing does not start a job's span at 0",
          "[port_service][reports]")
{
    auto service = emulated_service();
    service->attach(rank(0, 0, 1, "idle"), kUptime);  // silent from here on

    const TimeNs start = kUptime + 10 * kS;
    const auto r0      = service->attach(rank(0, 0, 2, "job"), start);
    const auto r1      = service->attach(rank(1, 1, 2, "job"), start);
    const TimeNs first = start + kMs;
    const TimeNs end   = first + 430 * kMs;
    publish(*service, r0, {needs(first, 1), needs(first + 400 * kMs, 4)}, end);
    publish(*service, r1, {needs(first, 1), needs(first + 400 * kMs, 4)}, end);
    CHECK(service->deposit(r0, 1, {1}, end, 10 * kS));
    CHECK_FALSE(service->deposit(r1, 1, {2}, end, 10 * kS));

    // The silent client holds the merge at most kMaxHorizonLag behind now:
    // the report waits that long for the job's end, not for ever.
    CHECK(service->ready_reports(end).empty());
    REQUIRE(service->next_report_deadline());
    CHECK(*service->next_report_deadline() <= end + kMaxHorizonLag);
    auto reports = service->ready_reports(end + kMaxHorizonLag);
    REQUIRE(reports.size() == 1);
    const service::PortSection& p = reports[0].second.port;

    // From the job's first record, not from the replay clock's 0.
    CHECK(p.span_ns == 430 * kMs);
    CHECK(p.job_span_ns == 430 * kMs);
    CHECK(p.uncovered_ns == 0);
    // The silent client still needs full width (it said nothing else), so
    // the port stayed there: the job's 0.43 s always on, not the node's
    // uptime (1689 s, 3379 J).
    LinkModel port{LinkConfig{}};
    CHECK(p.baseline_joules == Approx(port.always_on_joules(430 * kMs)));
    CHECK(p.energy_joules == Approx(p.baseline_joules));
    CHECK(p.transitions == 0);
    CHECK(p.stalled_clients == 1);
    CHECK(p.other_jobs == 1);
}

TEST_CASE("a suspended job does not cut another job's report to nothing; its late records count",
          "[port_service][reports]")
{
    auto service = emulated_service();
    const auto a = service->attach(rank(0, 0, 1, "suspended"), kUptime);
    publish(*service, a, {needs(kUptime + kMs, 1)}, kUptime + 2 * kMs);
    // ... and then SIGSTOP: nothing more from it.

    const TimeNs start = kUptime + kS;
    const auto b       = service->attach(rank(0, 0, 1, "job"), start);
    publish(*service, b, {needs(start + kMs, 2), needs(start + 600 * kMs, 1)}, start + kS);
    CHECK(service->deposit(b, 1, {1}, start + kS, 10 * kS));
    CHECK(service->ready_reports(start + kS).empty());
    auto reports = service->ready_reports(start + kS + kMaxHorizonLag);
    REQUIRE(reports.size() == 1);
    const service::PortSection& p = reports[0].second.port;
    CHECK(p.span_ns == kS - kMs);
    CHECK(p.uncovered_ns == 0);
    CHECK(p.transitions == 2);  // a holds 1 lane: b's 2 from 1 ms, b's 1 from 600 ms
    CHECK(p.energy_joules > 0.0);
    CHECK(p.stalled_clients == 1);
    CHECK(p.late_records == 0);

    // SIGCONT: its records are older than where the merge is; applied now,
    // late, and counted, never in the past.
    const TimeNs resumed = start + 3 * kS;
    publish(*service, a, {needs(kUptime + 5 * kMs, 4), needs(kUptime + 6 * kMs, 1)}, resumed);
    service->ready_reports(resumed);
    CHECK(service->late_records() == 2);
    CHECK(service->demand(a) == 1);
    CHECK(service->width() == 1);
}

TEST_CASE("a report due before the merge reached the job's end says what it does not cover",
          "[port_service][reports]")
{
    auto service = emulated_service();
    service->attach(rank(0, 0, 1, "idle"), kUptime);

    SECTION("the merge passed the job's start: cut at the horizon")
    {
        const TimeNs start = kUptime + 10 * kS;
        const auto r0      = service->attach(rank(0, 0, 2, "job"), start);
        const auto r1      = service->attach(rank(1, 1, 2, "job"), start);
        const TimeNs end   = start + 800 * kMs;
        publish(*service, r0, {needs(start + kMs, 2)}, end);
        publish(*service, r1, {needs(start + kMs, 2)}, end);
        // r1 never deposits; r0 waits 0 s for it.
        CHECK(service->deposit(r0, 1, {1}, end, 0));
        auto reports = service->ready_reports(end);
        REQUIRE(reports.size() == 1);
        const service::PortSection& p = reports[0].second.port;
        CHECK(p.job_span_ns == end - (start + kMs));
        CHECK(p.uncovered_ns == kMaxHorizonLag);
        CHECK(p.span_ns == p.job_span_ns - kMaxHorizonLag);
    }
    SECTION("the merge had not reached the job's first attach: nothing covered")
    {
        const TimeNs start = kUptime + 10 * kS;
        const auto r0      = service->attach(rank(0, 0, 2, "job"), start);
        service->attach(rank(1, 1, 2, "job"), start);
        const TimeNs end = start + 200 * kMs;
        publish(*service, r0, {needs(start + kMs, 2)}, end);
        CHECK(service->deposit(r0, 1, {1}, end, 0));
        auto reports = service->ready_reports(end);
        REQUIRE(reports.size() == 1);
        const service::PortSection& p = reports[0].second.port;
        CHECK(p.span_ns == 0);
        CHECK(p.job_span_ns == 200 * kMs);
        CHECK(p.uncovered_ns == 200 * kMs);
        CHECK(p.has_energy == 0);  // no energy claimed for time not accounted
    }
}

// ------------------------------------------------------------- failed backends

TEST_CASE("a backend that never confirmed: no transitions claimed, the failure in the report",
          "[port_service][reports]")
{
    auto port     = std::make_shared<AsyncPort>();
    auto service  = std::make_unique<PortService>(std::make_unique<AsyncBackend>(port));
    const auto r0 = service->attach(rank(0, 0, 1, "job"), kUptime);
    for (int i = 1; i <= 20; ++i) {
        const TimeNs t = kUptime + i * kMs;
        publish(*service, r0, {needs(t, i % 2 == 0 ? 4 : 1)}, t + kMs / 2);
        service->advance();
        service->act_on_deadlines(t + kMs / 2);
    }
    CHECK(port->requested.size() > 10);  // requested, merged, never confirmed

    // The first command hangs and is killed; so does the full-width one.
    port->poll = Status::error("async backend: 'set 4' did not end within 2000 ms and was killed");
    service->act_on_deadlines(kUptime + 3 * kS);
    CHECK(service->backend_failed());
    CHECK(service->width_unknown());  // the restore is not confirmed yet
    port->poll = Status::error("async backend: 'set 4' did not end within 2000 ms and was killed");
    service->act_on_deadlines(kUptime + 5 * kS);
    CHECK(service->width_unknown());
    CHECK_THAT(service->problem(), Contains("restoring full width failed"));

    CHECK(service->deposit(r0, 1, {1}, kUptime + 5 * kS, 0));
    auto reports = service->ready_reports(kUptime + 5 * kS);
    REQUIRE(reports.size() == 1);
    const service::PortSection& p = reports[0].second.port;
    CHECK(p.transitions == 0);
    CHECK(p.backend_failed == 1);
    CHECK(p.width_unknown == 1);
    CHECK_THAT(service::text_of(p.problem), Contains("did not end within 2000 ms"));
    CHECK(p.has_energy == 0);
}

TEST_CASE("transitions are the changes the backend confirmed, not the widths requested",
          "[port_service][reports]")
{
    auto port     = std::make_shared<AsyncPort>();
    auto service  = std::make_unique<PortService>(std::make_unique<AsyncBackend>(port));
    const auto r0 = service->attach(rank(0, 0, 1, "job"), kUptime);
    publish(*service, r0, {needs(kUptime + kMs, 1), needs(kUptime + 2 * kMs, 4)},
            kUptime + 3 * kMs);
    service->advance();
    port->confirmed = LinkBackend::Confirmed{1, 4, false};  // one change confirmed
    CHECK(service->deposit(r0, 1, {1}, kUptime + 3 * kMs, 0));
    auto reports = service->ready_reports(kUptime + 3 * kMs);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].second.port.transitions == 1);
    CHECK(reports[0].second.port.backend_failed == 0);
    CHECK(reports[0].second.port.width_unknown == 0);
}

// ------------------------------------------------------------- the state file

TEST_CASE("a real port left narrow is remembered next to the socket until a restore succeeds",
          "[port_service][reports]")
{
    TempDir dir;
    const std::string state = dir.path + "/port.sock" + kStateFileSuffix;
    auto port               = std::make_shared<AsyncPort>();

    SECTION("narrow: the file is there (what a SIGKILL leaves); a clean exit removes it")
    {
        auto service = std::make_unique<PortService>(std::make_unique<AsyncBackend>(port));
        service->use_state_file(state);
        CHECK_FALSE(exists(state));
        const auto r0 = service->attach(rank(0, 0, 1, "job"), kUptime);
        publish(*service, r0, {needs(kUptime + kMs, 1)}, kUptime + 2 * kMs);
        service->advance();
        REQUIRE(service->width() == 1);
        CHECK(exists(state));
        const auto text = read_state_file(state);
        REQUIRE(text);
        CHECK_THAT(*text, Contains("below full width"));
        service.reset();
        CHECK_FALSE(exists(state));
    }
    SECTION("the next service restores full width and forgets it once the backend confirms")
    {
        std::ofstream(state) << "slimlinkd pid 1 drove port emulated (exec) below full width\n";
        auto service = std::make_unique<PortService>(std::make_unique<AsyncBackend>(port));
        service->use_state_file(state);
        CHECK(service->width_unknown());
        CHECK_THAT(service->problem(), Contains("a previous slimlinkd left the port"));
        // In every report of a job while the restore is not confirmed.
        const auto r0 = service->attach(rank(0, 0, 1, "job"), kUptime);
        CHECK(service->deposit(r0, 1, {1}, kUptime, 0));
        auto reports = service->ready_reports(kUptime);
        REQUIRE(reports.size() == 1);
        CHECK(reports[0].second.port.width_unknown == 1);
        CHECK_THAT(service::text_of(reports[0].second.port.problem),
                   Contains("a previous slimlinkd left the port"));

        port->confirmed = LinkBackend::Confirmed{0, 4, false};
        service->act_on_deadlines(kUptime + kMs);
        CHECK_FALSE(service->width_unknown());
        CHECK_FALSE(exists(state));
    }
    SECTION("a restore that fails keeps the file, with the reason")
    {
        std::ofstream(state) << "slimlinkd pid 1 drove port emulated (exec) below full width\n";
        auto service = std::make_unique<PortService>(std::make_unique<AsyncBackend>(port));
        service->use_state_file(state);
        port->poll = Status::error("async backend: 'set 4' exited with status 1");
        service->act_on_deadlines(kUptime);
        CHECK(service->width_unknown());
        CHECK(service->backend_failed());
        REQUIRE(exists(state));
        const auto text = read_state_file(state);
        REQUIRE(text);
        CHECK_THAT(*text, Contains("exited with status 1"));
    }
    SECTION("a state file's text is escaped as every text from outside is")
    {
        // Another tool, or a hand, may have written it: it goes into logs,
        // reports and --status on a terminal.
        std::ofstream(state) << "set \x1b]0;owned\x07 failed\\\r\n";
        const auto text = read_state_file(state);
        REQUIRE(text);
        CHECK(*text == "set \\x1b]0;owned\\x07 failed\\x5c");
    }
    SECTION("a state file that is a link is not followed")
    {
        const std::string target = dir.path + "/target";
        std::ofstream(target) << "not ours\n";
        REQUIRE(::symlink(target.c_str(), state.c_str()) == 0);
        CHECK_FALSE(read_state_file(state));
        auto service = std::make_unique<PortService>(std::make_unique<AsyncBackend>(port));
        service->use_state_file(state);
        CHECK_FALSE(service->width_unknown());
    }
}

TEST_CASE("a failed restore is retried while the service runs, backing off, and forgotten once "
          "it succeeds",
          "[port_service][reports]")
{
    TempDir dir;
    const std::string state = dir.path + "/port.sock" + kStateFileSuffix;
    auto port               = std::make_shared<AsyncPort>();
    std::ofstream(state) << "slimlinkd pid 1 drove port emulated (exec) below full width\n";
    auto service = std::make_unique<PortService>(std::make_unique<AsyncBackend>(port));
    service->use_state_file(state);
    const std::size_t asked = port->requested.size();

    // The restore at start fails: remembered, and nothing is retried at once.
    port->poll                 = Status::error("async backend: 'set 4' exited with status 3");
    std::optional<TimeNs> next = service->act_on_deadlines(kUptime);
    REQUIRE(service->width_unknown());
    CHECK_THAT(service->problem(), Contains("restoring full width failed"));
    REQUIRE(exists(state));
    REQUIRE(next);
    CHECK(*next == kUptime + PortService::kRestoreRetryFirstNs);
    CHECK(port->requested.size() == asked);

    // Each retry fails too: the waits double from 1 s and stop at 60 s.
    std::vector<TimeNs> waits;
    TimeNs failed_at = kUptime;
    for (int i = 0; i < 9; ++i) {
        REQUIRE(next);
        CHECK(service->act_on_deadlines(*next - 1) == next);  // not before it is due
        const std::size_t before = port->requested.size();
        const TimeNs t           = *next;
        service->act_on_deadlines(t);
        REQUIRE(port->requested.size() == before + 1);
        CHECK(port->requested.back() == 4);
        waits.push_back(t - failed_at);
        port->poll = Status::error("async backend: 'set 4' exited with status 3");
        failed_at  = t + kMs;
        next       = service->act_on_deadlines(failed_at);
        CHECK(service->width_unknown());
        CHECK(exists(state));
    }
    CHECK(waits == std::vector<TimeNs>{1 * kS, 2 * kS, 4 * kS, 8 * kS, 16 * kS, 32 * kS, 60 * kS,
                                       60 * kS, 60 * kS});
    CHECK(service->restore_retries() == 9);

    // The next retry succeeds: the width is known again, the state file
    // gone, and reports and --status no longer say the restore failed.
    REQUIRE(next);
    service->act_on_deadlines(*next);
    port->confirmed = LinkBackend::Confirmed{0, 4, false};
    CHECK_FALSE(service->act_on_deadlines(*next + kMs).has_value());
    CHECK_FALSE(service->width_unknown());
    CHECK_FALSE(exists(state));
    CHECK_THAT(service->problem(), !Contains("restoring full width failed"));
    CHECK(service->restore_retries() == 0);
    const std::size_t settled = port->requested.size();
    service->act_on_deadlines(*next + 120 * kS);
    CHECK(port->requested.size() == settled);  // no more retries
}

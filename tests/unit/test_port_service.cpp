// SPDX-License-Identifier: BSD-3-Clause
// The node service's decisions (port_service.h): the port at the
// maximum demand over a node's clients, merged in time order up to the
// horizon, its energy accounted once, and the end-of-job reports. Time is
// passed by hand; the emulated port (L = 4 lanes, 0.5 W per lane, low = 1
// lane, tau = 10 us) reads the service's replay clock, and every expected
// number comes from a separate LinkModel fed the steps worked out by hand.
#include "link/backend.h"
#include "predict/link_model.h"
#include "link/service_protocol.h"
#include "service/port_service.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

using Catch::Matchers::Contains;
using namespace slim::link;
using service::DemandRecord;
using service::EntryState;

namespace {

constexpr TimeNs kUs  = 1'000;
constexpr TimeNs kTau = 10 * kUs;

std::unique_ptr<PortService> emulated_service()
{
    return std::make_unique<PortService>([](Clock clock) {
        BackendConfig config;
        config.clock = std::move(clock);
        return make_emulated_backend(config).backend;
    });
}

DemandRecord low_until(TimeNs t, unsigned width, TimeNs until)
{
    DemandRecord r;
    r.t_ns     = t;
    r.width    = width;
    r.until_ns = until;
    return r;
}

DemandRecord needs(TimeNs t, unsigned width) { return low_until(t, width, 0); }

DemandRecord traffic(TimeNs t, unsigned width)
{
    DemandRecord r = needs(t, width);
    r.flags        = service::kTraffic;
    return r;
}

void publish(PortService& service, std::uint32_t client, std::vector<DemandRecord> records,
             TimeNs through)
{
    std::string why;
    INFO("client " << client << " through " << through);
    REQUIRE(service.publish(client, records.data(), records.size(), through, &why));
}

ClientInfo rank(std::int32_t r, std::int32_t local, std::int32_t local_size = 0,
                const std::string& job = "job")
{
    ClientInfo info;
    info.rank       = r;
    info.local_rank = local;
    info.local_size = local_size;
    info.pid        = 1000 + r;
    info.job_key    = job;
    return info;
}

LinkStats port_stats(PortService& service) { return *service.backend().stats(); }
TimeNs replay_now(PortService& service) { return service.replay_clock()(); }

// The same numbers, one by one, so a failure names the one that differs.
void check_same(const LinkStats& got, const LinkStats& want)
{
    CHECK(got.energy_joules == want.energy_joules);
    CHECK(got.transitions == want.transitions);
    CHECK(got.late_wakeups == want.late_wakeups);
    CHECK(got.added_delay_ns == want.added_delay_ns);
    CHECK(got.time_in_transition_ns == want.time_in_transition_ns);
    for (unsigned w = 0; w <= kMaxLanes; ++w) {
        INFO("width " << w);
        CHECK(got.time_at_width_ns[w] == want.time_at_width_ns[w]);
    }
}

// Records every command; fails widths below `fail_below`. No stats: a
// stand-in for real hardware.
struct Commands {
    std::vector<std::pair<unsigned, TimeNs>> widths;  // width, at (-1: now)
    unsigned fail_below = 0;
    unsigned restores   = 0;
};

class RecordingBackend final : public LinkBackend {
public:
    explicit RecordingBackend(std::shared_ptr<Commands> c) : c_(std::move(c)) {}
    std::string name() const override { return "recording"; }
    unsigned full_width() const override { return 4; }
    Status set_width(unsigned width) override { return set_width_at(width, -1); }
    Status set_width_at(unsigned width, TimeNs at) override
    {
        if (width < c_->fail_below) {
            return Status::error("recording backend: cannot set " + std::to_string(width));
        }
        c_->widths.emplace_back(width, at);
        return Status::success();
    }
    Status restore_full_width() override
    {
        ++c_->restores;
        return set_width(4);
    }

private:
    std::shared_ptr<Commands> c_;
};

}  // namespace

// ------------------------------------------------------------------ merging

TEST_CASE("two clients: the port follows the maximum demand, its energy accounted once",
          "[port_service]")
{
    auto service = emulated_service();
    const auto a = service->attach(rank(0, 0), 0);
    const auto b = service->attach(rank(1, 1), 0);
    CHECK(service->width() == 4);
    CHECK(service->live_clients() == 2);

    // Records at exactly the horizon wait: a client may still publish there.
    publish(*service, a, {low_until(100 * kUs, 1, 500 * kUs)}, 100 * kUs);
    publish(*service, b, {needs(100 * kUs, 2)}, 100 * kUs);
    CHECK(service->advance() == 100 * kUs);
    CHECK(service->width() == 4);

    publish(*service, a, {}, 200 * kUs);
    publish(*service, b, {}, 200 * kUs);
    CHECK(service->advance() == 200 * kUs);
    CHECK(service->demand(a) == 1);
    CHECK(service->demand(b) == 2);
    CHECK(service->width() == 2);

    publish(*service, b, {needs(300 * kUs, 1)}, 400 * kUs);
    publish(*service, a, {}, 400 * kUs);
    service->advance();
    CHECK(service->width() == 1);

    // a's "low until 500 us" runs out: full width without a word from a.
    publish(*service, a, {}, 600 * kUs);
    publish(*service, b, {}, 600 * kUs);
    service->advance();
    CHECK(service->demand(a) == 4);
    CHECK(service->width() == 4);

    // b's traffic while a holds full width: no late wake-up.
    publish(*service, a, {needs(700 * kUs, 1)}, 800 * kUs);
    publish(*service, b, {traffic(650 * kUs, 3)}, 800 * kUs);
    service->advance();
    CHECK(service->width() == 3);
    CHECK(service->late_wakeups(a) == 0);
    CHECK(service->late_wakeups(b) == 0);

    LinkModel port{LinkConfig{}};
    port.request_width(100 * kUs, 2);
    port.request_width(300 * kUs, 1);
    port.request_width(500 * kUs, 4);
    CHECK(port.traffic(650 * kUs, 3) == 0);
    port.request_width(700 * kUs, 3);
    REQUIRE(replay_now(*service) == 700 * kUs);
    check_same(port_stats(*service), port.stats_at(700 * kUs));
}

TEST_CASE("four clients: the maximum at every step, late wake-ups only on the one waiting",
          "[port_service]")
{
    auto service = emulated_service();
    std::vector<std::uint32_t> c;
    for (int r = 0; r < 4; ++r) {
        c.push_back(service->attach(rank(r, r), 0));
    }
    const auto step = [&](TimeNs through) {
        for (const auto id : c) {
            publish(*service, id, {}, through);
        }
        service->advance();
    };

    publish(*service, c[0], {low_until(10 * kUs, 1, 200 * kUs)}, 10 * kUs);
    publish(*service, c[1], {needs(10 * kUs, 2)}, 10 * kUs);
    publish(*service, c[2], {needs(20 * kUs, 1)}, 20 * kUs);
    step(25 * kUs);
    CHECK(service->width() == 4);  // c[3] still at full width
    publish(*service, c[3], {low_until(30 * kUs, 1, 60 * kUs)}, 30 * kUs);
    step(40 * kUs);
    CHECK(service->width() == 2);  // 1, 2, 1, 1
    step(70 * kUs);
    CHECK(service->width() == 4);  // c[3]'s low ran out at 60 us
    publish(*service, c[3], {needs(80 * kUs, 1)}, 80 * kUs);
    step(90 * kUs);
    CHECK(service->width() == 2);
    publish(*service, c[1], {needs(100 * kUs, 1)}, 100 * kUs);
    step(120 * kUs);
    CHECK(service->width() == 1);
    publish(*service, c[2], {traffic(150 * kUs, 4)}, 150 * kUs);
    step(160 * kUs);
    CHECK(service->width() == 4);
    CHECK(service->late_wakeups(c[2]) == 1);
    CHECK(service->late_wakeups(c[0]) == 0);
    CHECK(service->late_wakeups(c[1]) == 0);
    CHECK(service->late_wakeups(c[3]) == 0);
    publish(*service, c[2], {needs(250 * kUs, 1)}, 250 * kUs);
    publish(*service, c[0], {needs(250 * kUs, 1)}, 250 * kUs);
    step(300 * kUs);
    CHECK(service->width() == 1);

    LinkModel port{LinkConfig{}};
    port.request_width(30 * kUs, 2);
    port.request_width(60 * kUs, 4);
    port.request_width(80 * kUs, 2);
    port.request_width(100 * kUs, 1);
    port.request_width(150 * kUs, 4);
    CHECK(port.traffic(150 * kUs, 4) == kTau);
    port.request_width(250 * kUs, 1);
    REQUIRE(replay_now(*service) == 250 * kUs);
    check_same(port_stats(*service), port.stats_at(250 * kUs));
    CHECK(port_stats(*service).late_wakeups == 1);
}

TEST_CASE("records arriving late and out of order between clients give the same port",
          "[port_service]")
{
    const auto run = [](bool in_order) {
        auto service                         = emulated_service();
        const auto a                         = service->attach(rank(0, 0), 0);
        const auto b                         = service->attach(rank(1, 1), 0);
        const std::vector<DemandRecord> of_a = {needs(10 * kUs, 1), traffic(50 * kUs, 4),
                                                low_until(70 * kUs, 1, 120 * kUs)};
        const std::vector<DemandRecord> of_b = {needs(20 * kUs, 2), needs(40 * kUs, 1),
                                                traffic(90 * kUs, 2), needs(95 * kUs, 1)};
        if (in_order) {
            for (TimeNs t = 0; t <= 200 * kUs; t += 5 * kUs) {
                std::vector<DemandRecord> ra, rb;
                for (const auto& r : of_a) {
                    if (r.t_ns >= t && r.t_ns < t + 5 * kUs) ra.push_back(r);
                }
                for (const auto& r : of_b) {
                    if (r.t_ns >= t && r.t_ns < t + 5 * kUs) rb.push_back(r);
                }
                publish(*service, a, ra, t + 5 * kUs);
                publish(*service, b, rb, t + 5 * kUs);
                service->advance();
            }
        } else {
            // b publishes its whole timeline first; the horizon (a's
            // through_ns) holds it back until a catches up, late.
            publish(*service, b, of_b, 205 * kUs);
            CHECK(service->advance() == 0);
            CHECK(service->width() == 4);
            publish(*service, a, {of_a[0]}, 30 * kUs);
            CHECK(service->advance() == 30 * kUs);
            CHECK(service->width() == 2);  // b's 2 at 20 us, not yet its 1 at 40 us
            publish(*service, a, {of_a[1], of_a[2]}, 205 * kUs);
            service->advance();
        }
        CHECK(service->width() == 4);  // a's low ran out at 120 us
        CHECK(replay_now(*service) == 120 * kUs);
        return std::make_pair(port_stats(*service),
                              std::make_pair(service->late_wakeups(a), service->late_wakeups(b)));
    };
    const auto in_order = run(true);
    const auto late     = run(false);
    check_same(late.first, in_order.first);
    CHECK(late.second == in_order.second);
    CHECK(in_order.second.first == 1);   // a's traffic at 50 us met 1 lane
    CHECK(in_order.second.second == 1);  // b's at 90 us met 1 lane
}

TEST_CASE("a client dropped while low: its demand ends at its drop; the last one gone, full width",
          "[port_service]")
{
    auto service = emulated_service();
    const auto a = service->attach(rank(0, 0), 0);
    const auto b = service->attach(rank(1, 1), 0);
    publish(*service, a, {needs(100 * kUs, 1)}, 200 * kUs);
    publish(*service, b, {needs(100 * kUs, 2)}, 250 * kUs);
    service->advance();
    CHECK(service->width() == 2);

    // b closes at 300 us, its timeline complete to 250 us: it leaves at 250.
    service->drop(b, 300 * kUs, true);
    CHECK(service->live_clients() == 1);
    CHECK(service->advance() == 200 * kUs);
    CHECK(service->width() == 2);  // a's horizon is still before 250 us
    publish(*service, a, {}, 400 * kUs);
    service->advance();
    CHECK(service->width() == 1);
    CHECK(service->demand(b) == 0);

    service->drop(a, 500 * kUs, false);
    CHECK(service->live_clients() == 0);
    service->advance();
    CHECK(service->width() == 4);
    CHECK(replay_now(*service) == 400 * kUs);  // a left at its through_ns

    LinkModel port{LinkConfig{}};
    port.request_width(100 * kUs, 2);
    port.request_width(250 * kUs, 1);
    port.request_width(400 * kUs, 4);
    check_same(port_stats(*service), port.stats_at(400 * kUs));
}

// ------------------------------------------------------------------ garbage

TEST_CASE("garbage records are refused with a message and change nothing", "[port_service]")
{
    auto service = emulated_service();
    const auto a = service->attach(rank(0, 0), 0);
    publish(*service, a, {needs(100 * kUs, 2)}, 200 * kUs);
    service->advance();
    REQUIRE(service->width() == 2);
    const LinkStats before = port_stats(*service);

    struct Case {
        const char *name;
        std::vector<DemandRecord> records;
        TimeNs through;
        const char *message;
    };
    DemandRecord unknown_flag     = needs(300 * kUs, 1);
    unknown_flag.flags            = 1u << 5;
    const std::vector<Case> cases = {
            {"width 0", {needs(300 * kUs, 0)}, 400 * kUs, "width 0"},
            {"width above full", {needs(300 * kUs, 5)}, 400 * kUs, "width 5"},
            {"time before through", {needs(150 * kUs, 1)}, 400 * kUs, "t_ns 150000"},
            {"time going back",
             {needs(300 * kUs, 1), needs(250 * kUs, 1)},
             400 * kUs,
             "t_ns 250000"},
            {"until not after t",
             {low_until(300 * kUs, 1, 300 * kUs)},
             400 * kUs,
             "until_ns 300000"},
            {"unknown flags", {unknown_flag}, 400 * kUs, "flags 32"},
            {"through going back", {needs(300 * kUs, 1)}, 150 * kUs, "through_ns 150000"},
            // A good record before the bad one is not taken either.
            {"good then bad", {needs(300 * kUs, 1), needs(310 * kUs, 9)}, 400 * kUs, "width 9"},
    };
    for (const auto& c : cases) {
        SECTION(c.name)
        {
            std::string why;
            CHECK_FALSE(service->publish(a, c.records.data(), c.records.size(), c.through, &why));
            CHECK_THAT(why, Contains(c.message));
            // Nothing was taken: the horizon did not move and nothing waits.
            CHECK(service->advance() == 200 * kUs);
            publish(*service, a, {}, 500 * kUs);
            service->advance();
            CHECK(service->width() == 2);
            check_same(port_stats(*service), before);
        }
    }
    SECTION("too many records at once")
    {
        std::vector<DemandRecord> many(service::kRingCapacity + 1, needs(300 * kUs, 1));
        std::string why;
        CHECK_FALSE(service->publish(a, many.data(), many.size(), 400 * kUs, &why));
        CHECK_THAT(why, Contains("count"));
    }
    SECTION("a client that is not attached")
    {
        std::string why;
        CHECK_FALSE(service->publish(a + 7, nullptr, 0, 400 * kUs, &why));
        CHECK_THAT(why, Contains("not attached"));
    }
}

// --------------------------------------------------------- backend failure

TEST_CASE("a backend error sends the port to full width for good, counted", "[port_service]")
{
    auto commands        = std::make_shared<Commands>();
    commands->fail_below = 2;
    PortService service(std::make_unique<RecordingBackend>(commands));
    const auto a = service.attach(rank(0, 0), 0);
    publish(service, a, {needs(10 * kUs, 2)}, 20 * kUs);
    service.advance();
    CHECK(service.width() == 2);
    CHECK(service.backend_errors() == 0);

    publish(service, a, {needs(30 * kUs, 1)}, 40 * kUs);
    service.advance();
    CHECK(service.backend_errors() == 1);
    CHECK(service.width() == 4);
    // Full width is asked for, not waited for (a hung command must not stop
    // the service's loop): a plain set_width(4), no blocking restore.
    CHECK(commands->restores == 0);
    REQUIRE(!commands->widths.empty());
    CHECK(commands->widths.back().first == 4);

    // Later demand is ignored: no command below full width any more.
    const auto sent = commands->widths.size();
    publish(service, a, {needs(50 * kUs, 2), needs(60 * kUs, 3)}, 70 * kUs);
    service.advance();
    CHECK(service.width() == 4);
    CHECK(commands->widths.size() == sent);
    CHECK(service.backend_errors() == 1);
}

// ------------------------------------------------------------------ reports

TEST_CASE("a rank that dies after the others deposited does not cost the job its report",
          "[port_service]")
{
    auto service  = emulated_service();
    const auto r0 = service->attach(rank(10, 0, 3), 0);
    const auto r1 = service->attach(rank(11, 1, 3), 0);
    const auto r2 = service->attach(rank(12, 2, 3), 0);
    publish(*service, r0, {}, 100 * kUs);
    publish(*service, r1, {}, 100 * kUs);
    publish(*service, r2, {}, 100 * kUs);
    CHECK(service->deposit(r0, 7, {1}, 110 * kUs, 1000 * kUs));
    CHECK_FALSE(service->deposit(r2, 7, {3}, 120 * kUs, 1000 * kUs));
    service->drop(r2, 125 * kUs, false);
    CHECK(service->ready_reports(126 * kUs).empty());  // r1 still runs
    service->drop(r1, 130 * kUs, true);                // and dies
    auto reports = service->ready_reports(131 * kUs);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].first == r0);
    const JobReport& report = reports[0].second;
    REQUIRE(report.entries.size() == 3);
    CHECK(report.entries[1].entry.state == static_cast<std::uint32_t>(EntryState::died));
    CHECK(report.entries[2].record == std::vector<std::uint8_t>{3});
}

TEST_CASE("a two-rank job's node report: one reporter, entries in local-rank order",
          "[port_service]")
{
    auto service  = emulated_service();
    const auto r1 = service->attach(rank(11, 1, 2), 0);
    const auto r0 = service->attach(rank(10, 0, 2), 0);
    publish(*service, r0, {needs(50 * kUs, 1)}, 60 * kUs);
    publish(*service, r1, {needs(50 * kUs, 1), traffic(100 * kUs, 4), needs(200 * kUs, 1)},
            250 * kUs);
    publish(*service, r0, {}, 300 * kUs);
    publish(*service, r1, {}, 300 * kUs);  // each rank's last sync, before it deposits
    service->advance();

    // The first to deposit reports, and waits for the others.
    CHECK(service->deposit(r1, 7, {1, 2, 3}, 310 * kUs, 1000 * kUs));
    CHECK(service->next_report_deadline() == 1310 * kUs);
    CHECK(service->ready_reports(320 * kUs).empty());  // r0 has not deposited
    CHECK_FALSE(service->deposit(r0, 7, {4, 5}, 330 * kUs, 1000 * kUs));
    service->drop(r0, 335 * kUs, false);  // a non-reporter leaves at once

    auto reports = service->ready_reports(340 * kUs);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].first == r1);
    const JobReport& report = reports[0].second;
    CHECK(report.record_version == 7);
    REQUIRE(report.entries.size() == 2);
    CHECK(report.entries[0].entry.rank == 10);
    CHECK(report.entries[0].entry.local_rank == 0);
    CHECK(report.entries[0].entry.state == static_cast<std::uint32_t>(EntryState::reported));
    CHECK(report.entries[0].record == std::vector<std::uint8_t>{4, 5});
    CHECK(report.entries[0].entry.record_bytes == 2);
    CHECK(report.entries[1].entry.rank == 11);
    CHECK(report.entries[1].record == std::vector<std::uint8_t>{1, 2, 3});
    CHECK(report.entries[1].entry.late_wakeups == 1);
    CHECK(report.entries[1].entry.wakeup_delay_ns == kTau);
    CHECK(report.entries[0].entry.late_wakeups == 0);

    // The port from the first record (50 us) to the last through_ns (300 us).
    LinkModel port{LinkConfig{}};
    const LinkStats at_start = port.stats_at(50 * kUs);
    port.request_width(50 * kUs, 1);
    port.request_width(100 * kUs, 4);
    port.traffic(100 * kUs, 4);
    port.request_width(200 * kUs, 1);
    const LinkStats at_end = port.stats_at(300 * kUs);
    const auto& p          = report.port;
    CHECK(std::string(p.backend) == "emulated");
    CHECK(std::string(p.port) == "emulated");
    CHECK(p.lanes == 4);
    CHECK(p.has_energy == 1);
    CHECK(p.span_ns == 250 * kUs);
    CHECK(p.energy_joules == at_end.energy_joules - at_start.energy_joules);
    CHECK(p.baseline_joules == port.always_on_joules(250 * kUs));
    CHECK(p.transitions == 3);  // down at 50 us, up at 100 us, down at 200 us
    CHECK(p.late_wakeups == 1);
    CHECK(p.wakeup_delay_ns == kTau);
    CHECK(p.time_in_transition_ns == at_end.time_in_transition_ns - at_start.time_in_transition_ns);
    for (unsigned w = 0; w <= kMaxLanes; ++w) {
        CHECK(p.time_at_width_ns[w] == at_end.time_at_width_ns[w] - at_start.time_at_width_ns[w]);
    }
    CHECK(p.clients_seen == 0);
    CHECK(p.other_jobs == 0);
    CHECK(service->ready_reports(400 * kUs).empty());  // returned once
    CHECK_FALSE(service->next_report_deadline());
}

TEST_CASE("a rank that died is listed as died; the report does not wait for it", "[port_service]")
{
    auto service  = emulated_service();
    const auto r0 = service->attach(rank(0, 0, 2), 0);
    const auto r1 = service->attach(rank(1, 1, 2), 0);
    service->drop(r1, 10 * kUs, true);
    publish(*service, r0, {}, 20 * kUs);
    CHECK(service->deposit(r0, 1, {9}, 20 * kUs, 1000 * kUs));
    auto reports = service->ready_reports(20 * kUs);
    REQUIRE(reports.size() == 1);
    const auto& e = reports[0].second.entries;
    REQUIRE(e.size() == 2);
    CHECK(e[0].entry.state == static_cast<std::uint32_t>(EntryState::reported));
    CHECK(e[1].entry.state == static_cast<std::uint32_t>(EntryState::died));
    CHECK(e[1].entry.rank == 1);
    CHECK(e[1].record.empty());
}

TEST_CASE("after the wait a rank still running times out and one never seen never started",
          "[port_service]")
{
    auto service     = emulated_service();
    const auto other = service->attach(rank(0, 0, 1, "other job"), 0);
    const auto r0    = service->attach(rank(0, 0, 3), 0);
    publish(*service, other, {}, 1000 * kUs);
    publish(*service, r0, {}, 100 * kUs);
    CHECK(service->deposit(r0, 1, {1}, 100 * kUs, 500 * kUs));  // alone: it reports
    const auto r1 = service->attach(rank(1, 1, 3), 150 * kUs);
    CHECK(service->next_report_deadline() == 600 * kUs);
    CHECK(service->ready_reports(599 * kUs).empty());

    auto reports = service->ready_reports(600 * kUs);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].first == r0);
    const auto& report = reports[0].second;
    REQUIRE(report.entries.size() == 3);
    CHECK(report.entries[0].entry.state == static_cast<std::uint32_t>(EntryState::reported));
    CHECK(report.entries[1].entry.state == static_cast<std::uint32_t>(EntryState::timed_out));
    CHECK(report.entries[1].entry.rank == 1);
    CHECK(report.entries[2].entry.state == static_cast<std::uint32_t>(EntryState::never_started));
    CHECK(report.entries[2].entry.local_rank == 2);
    CHECK(report.port.clients_seen == 1);
    CHECK(report.port.other_jobs == 1);
    // The job is gone: a late deposit of r1 reports nothing.
    CHECK_FALSE(service->deposit(r1, 1, {2}, 700 * kUs, 500 * kUs));
    CHECK(service->ready_reports(700 * kUs).empty());
}

// --------------------------------------------------------------- real ports

TEST_CASE("a real port is raised at a published deadline while the horizon lags", "[port_service]")
{
    auto commands = std::make_shared<Commands>();
    PortService service(std::make_unique<RecordingBackend>(commands));
    const auto a = service.attach(rank(0, 0), 0);
    const auto b = service.attach(rank(1, 1), 0);
    publish(service, a, {low_until(10 * kUs, 1, 100 * kUs)}, 20 * kUs);
    publish(service, b, {needs(10 * kUs, 1)}, 20 * kUs);
    service.advance();
    REQUIRE(service.width() == 1);

    // b says nothing more: the horizon stays at 20 us.
    CHECK(service.act_on_deadlines(50 * kUs) == 100 * kUs);
    CHECK(service.width() == 1);
    const auto sent = commands->widths.size();
    CHECK_FALSE(service.act_on_deadlines(100 * kUs));
    CHECK(service.width() == 4);
    CHECK(service.demand(a) == 4);
    REQUIRE(commands->widths.size() == sent + 1);
    CHECK(commands->widths.back() == std::make_pair(4u, TimeNs{-1}));  // now, not in the past
    CHECK(service.act_on_deadlines(110 * kUs) == std::nullopt);
    CHECK(commands->widths.size() == sent + 1);  // once

    // The replay catching up does not lower it again; a's next record does.
    publish(service, b, {}, 300 * kUs);
    publish(service, a, {}, 120 * kUs);
    service.advance();
    CHECK(service.width() == 4);
    publish(service, a, {needs(150 * kUs, 1)}, 300 * kUs);
    service.advance();
    CHECK(service.demand(a) == 1);
    CHECK(service.width() == 1);
}

TEST_CASE("a raise reaches a real port at once, whatever the horizon", "[port_service]")
{
    auto commands = std::make_shared<Commands>();
    PortService service(std::make_unique<RecordingBackend>(commands));
    const auto a = service.attach(rank(0, 0), 0);
    const auto b = service.attach(rank(1, 1), 0);
    publish(service, a, {needs(10 * kUs, 1)}, 20 * kUs);
    publish(service, b, {needs(10 * kUs, 1)}, 20 * kUs);
    service.advance();
    REQUIRE(service.width() == 1);

    // a is quiet (its through_ns stays at 20 us); b's burst at 2 lanes,
    // then its traffic at 50 us, cannot wait for a's next drain round.
    const auto sent = commands->widths.size();
    publish(service, b, {needs(40 * kUs, 2)}, 45 * kUs);
    CHECK(service.width() == 2);  // the width it needs, not more
    publish(service, b, {traffic(50 * kUs, 4)}, 60 * kUs);
    CHECK(service.width() == 4);
    REQUIRE(commands->widths.size() == sent + 2);
    CHECK(commands->widths.back() == std::make_pair(4u, TimeNs{-1}));  // now
    CHECK(service.demand(b) == 4);

    // The replay catching up does not lower it again; b's next record does.
    publish(service, a, {}, 100 * kUs);
    service.advance();
    CHECK(service.width() == 4);
    publish(service, b, {needs(80 * kUs, 1)}, 100 * kUs);
    publish(service, a, {}, 120 * kUs);
    service.advance();
    CHECK(service.demand(b) == 1);
    CHECK(service.width() == 1);

    // A record that needs no more than the port has changes nothing now.
    const auto quiet = commands->widths.size();
    publish(service, b, {needs(130 * kUs, 1)}, 140 * kUs);
    CHECK(commands->widths.size() == quiet);
}

TEST_CASE("the emulated port is left to the replay by act_on_deadlines", "[port_service]")
{
    auto service = emulated_service();
    const auto a = service->attach(rank(0, 0), 0);
    const auto b = service->attach(rank(1, 1), 0);
    publish(*service, a, {low_until(10 * kUs, 1, 100 * kUs)}, 20 * kUs);
    publish(*service, b, {needs(10 * kUs, 1)}, 20 * kUs);
    service->advance();
    REQUIRE(service->width() == 1);
    CHECK_FALSE(service->act_on_deadlines(200 * kUs));
    CHECK(service->width() == 1);
    CHECK(replay_now(*service) == 10 * kUs);
}

TEST_CASE("a client whose ring overflowed needs full width from its last record, for good",
          "[port_service]")
{
    auto service = emulated_service();
    const auto a = service->attach(rank(0, 0), 0);
    const auto b = service->attach(rank(1, 1), 0);
    publish(*service, a, {needs(10 * kUs, 1)}, 20 * kUs);
    publish(*service, b, {needs(10 * kUs, 1)}, 20 * kUs);
    service->advance();
    REQUIRE(service->width() == 1);

    publish(*service, a, {needs(30 * kUs, 2)}, 30 * kUs);
    service->overflowed(a);
    publish(*service, b, {}, 100 * kUs);
    // a's through_ns no longer holds the horizon back.
    CHECK(service->advance() == 100 * kUs);
    CHECK(service->demand(a) == 4);
    CHECK(service->width() == 4);
    publish(*service, a, {needs(120 * kUs, 1)}, 200 * kUs);
    publish(*service, b, {}, 300 * kUs);
    service->advance();
    CHECK(service->width() == 4);

    LinkModel port{LinkConfig{}};
    port.request_width(10 * kUs, 1);
    port.request_width(30 * kUs, 4);
    REQUIRE(replay_now(*service) == 30 * kUs);
    check_same(port_stats(*service), port.stats_at(30 * kUs));
}

// ------------------------------------------------------------ hostile clients

namespace {

ClientInfo of_uid(ClientInfo info, std::int32_t uid)
{
    info.uid = uid;
    return info;
}

bool has_record(const JobReport& report, const std::vector<std::uint8_t>& record)
{
    for (const auto& e : report.entries) {
        if (e.record == record) {
            return true;
        }
    }
    return false;
}

}  // namespace

TEST_CASE("a client of another uid naming a job's key starts a job of its own and never "
          "receives the job's records",
          "[port_service][security]")
{
    // The key is readable from /proc by anyone; the uid comes from the
    // socket. The intruder attaches first as local rank 0 and deposits
    // first, as a hijacker would.
    auto service        = emulated_service();
    const auto intruder = service->attach(of_uid(rank(0, 0, 2, "hydra-42-7"), 4242), 0);
    const auto v0       = service->attach(of_uid(rank(0, 0, 2, "hydra-42-7"), 65534), 0);
    const auto v1       = service->attach(of_uid(rank(1, 1, 2, "hydra-42-7"), 65534), 0);
    REQUIRE(intruder != 0);
    REQUIRE(v0 != 0);  // its local rank 0 is not the intruder's
    REQUIRE(v1 != 0);
    for (const auto id : {intruder, v0, v1}) {
        publish(*service, id, {}, 100 * kUs);
    }
    CHECK(service->deposit(intruder, 1, {0xee}, 100 * kUs, 1000 * kUs));  // its own job's
    CHECK(service->deposit(v1, 1, {1}, 110 * kUs, 1000 * kUs));           // the victim's reporter
    CHECK_FALSE(service->deposit(v0, 1, {0}, 120 * kUs, 1000 * kUs));

    auto reports = service->ready_reports(130 * kUs);
    REQUIRE(reports.size() == 1);  // the victim's job is complete; the intruder's waits
    CHECK(reports[0].first == v1);
    CHECK(has_record(reports[0].second, {0}));
    CHECK(has_record(reports[0].second, {1}));
    CHECK_FALSE(has_record(reports[0].second, {0xee}));

    // The intruder's own report, at its deadline: its record and a rank 1
    // that never came; nothing of the victim's.
    reports = service->ready_reports(1100 * kUs);
    REQUIRE(reports.size() == 1);
    CHECK(reports[0].first == intruder);
    const JobReport& own = reports[0].second;
    REQUIRE(own.entries.size() == 2);
    CHECK(own.entries[0].record == std::vector<std::uint8_t>{0xee});
    CHECK(own.entries[1].entry.state == static_cast<std::uint32_t>(EntryState::never_started));
}

TEST_CASE("a status request lists the asker's own clients and counts the others",
          "[port_service][security]")
{
    auto service = emulated_service();
    const auto a = service->attach(of_uid(rank(0, 0, 2, "job-a"), 1000), 0);
    const auto b = service->attach(of_uid(rank(1, 1, 2, "job-a"), 1000), 0);
    const auto c = service->attach(of_uid(rank(0, 0, 1, "job-c"), 2000), 0);
    REQUIRE((a != 0 && b != 0 && c != 0));

    std::size_t others = 99;
    const auto own     = service->clients(1000, &others);
    REQUIRE(own.size() == 2);
    CHECK(own[0].uid == 1000);
    CHECK(own[1].uid == 1000);
    CHECK(others == 1);

    const auto stranger = service->clients(3000, &others);
    CHECK(stranger.empty());
    CHECK(others == 3);

    const auto all = service->clients(std::nullopt, &others);
    CHECK(all.size() == 3);
    CHECK(others == 0);

    // A client gone is neither listed nor counted.
    service->drop(c, 10 * kUs, true);
    service->clients(1000, &others);
    CHECK(others == 0);
}

TEST_CASE("a second live client claiming a local rank of its job is refused, naming both",
          "[port_service][security]")
{
    auto service     = emulated_service();
    const auto first = service->attach(of_uid(rank(0, 0, 2), 1000), 0);
    REQUIRE(first != 0);
    std::string why;
    CHECK(service->attach(of_uid(rank(5, 0, 2), 1000), 10 * kUs, &why) == 0);
    CHECK_THAT(why, Contains("local rank 0 of job 'job'") && Contains("attached already") &&
                            Contains("client " + std::to_string(first)));
    // Another job, or another uid, may use local rank 0.
    CHECK(service->attach(of_uid(rank(0, 0, 2, "other"), 1000), 10 * kUs) != 0);
    CHECK(service->attach(of_uid(rank(0, 0, 2), 2000), 10 * kUs) != 0);
    // Once the first is gone, its local rank may come back.
    service->drop(first, 20 * kUs, true);
    CHECK(service->attach(of_uid(rank(0, 0, 2), 1000), 30 * kUs) != 0);
}

TEST_CASE("a client flooding its queue while another holds the horizon is refused at the "
          "bound, and its queue is let go",
          "[port_service][security]")
{
    auto service      = emulated_service();
    const auto silent = service->attach(rank(0, 0), 0);
    const auto flood  = service->attach(rank(1, 1), 0);
    (void)silent;
    const TimeNs ahead = 1000LL * 1'000'000'000;  // 1000 s in the future
    std::vector<DemandRecord> batch(service::kRingCapacity);
    std::size_t published = 0;
    std::string why;
    bool queue_full = false;
    for (;;) {
        for (std::size_t i = 0; i < batch.size(); ++i) {
            batch[i] = needs(ahead + static_cast<TimeNs>(published + i), 1 + (i & 3));
        }
        const TimeNs through = ahead + static_cast<TimeNs>(published + batch.size());
        if (!service->publish(flood, batch.data(), batch.size(), through, &why, &queue_full)) {
            break;
        }
        published += batch.size();
        service->advance();
        REQUIRE(published <= PortService::kMaxQueuedRecords);
    }
    CHECK(queue_full);
    CHECK(published == PortService::kMaxQueuedRecords);
    CHECK(service->queued(flood) == PortService::kMaxQueuedRecords);
    CHECK_THAT(why, Contains("more than the " + std::to_string(PortService::kMaxQueuedRecords)));
    // Garbage is still garbage, not a full queue.
    const DemandRecord bad = needs(ahead * 2, 9);
    CHECK_FALSE(service->publish(flood, &bad, 1, ahead * 2, &why, &queue_full));
    CHECK_FALSE(queue_full);

    service->drop(flood, 1'000'000, false);  // the caller drops it
    CHECK(service->queued(flood) == 0);      // its future records are gone
    CHECK(service->width() >= 1);
    CHECK(service->width() <= 4);
}

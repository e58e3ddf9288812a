// SPDX-License-Identifier: BSD-3-Clause
// The per-node report: what each rank hands over (RankRecord), the node's
// totals, its table and JSON line, and the shared-memory exchange between
// the ranks of a node, including ranks that die without reporting.
#include "json_check.h"
#include "node_report.h"
#include "packing_monitor.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <cmath>
#include <string>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace std::chrono_literals;
using Catch::Matchers::Contains;
using slim::MissingRank;
using slim::NodeCollection;
using slim::RankRecord;
using slim_test::Json;
using slim_test::keys;
using slim_test::parse_json;
using Strings = std::vector<std::string>;

namespace {

slim::ProcessIdentity process(int rank, int local_rank)
{
    slim::ProcessIdentity who;
    who.rank             = rank;
    who.pid              = 1000 + rank;
    who.host             = "node7";
    who.local.local_rank = local_rank;
    who.local.local_size = 3;
    who.local.launcher   = "hydra";
    who.local.key        = "hydra-77-1234";
    return who;
}

slim::live::LiveSummary live(double energy, double baseline, double penalty, std::uint64_t events,
                             std::uint64_t hits)
{
    slim::live::LiveSummary l;
    l.predictor           = "spps";
    l.backend             = "emulated";
    l.lanes               = 4;
    l.events              = events;
    l.span_ns             = 2'000'000'000;
    l.energy_joules       = energy;
    l.baseline_joules     = baseline;
    l.energy_savings_pct  = 100.0 * (1.0 - energy / baseline);
    l.time_penalty_pct    = penalty;
    l.late_wakeups        = 2;
    l.wakeup_delay_ns     = 3000;
    l.predictions         = events / 2;
    l.hits                = hits;
    l.restarts            = 1;
    l.gt_ns               = 12'500;
    l.time_at_width_ns[1] = 500'000'000;
    l.time_at_width_ns[4] = 1'500'000'000;
    return l;
}

RankRecord record(int rank, int local_rank, double energy, double baseline, double penalty,
                  std::uint64_t events, std::uint64_t hits, int error_bits = 0)
{
    slim_traffic_t traffic{};
    traffic.op[SLIM_OP_AM_BCOPY][SLIM_DIR_SEND] = {10, 4096};
    slim_packing_stats_t packing{};
    packing.payload_bytes           = 8000;
    packing.wire_bytes              = 5000;
    packing.packed_bytes            = 7992;
    packing.missed_bytes            = 64;
    const slim::live::LiveSummary l = live(energy, baseline, penalty, events, hits);
    return slim::make_rank_record(process(rank, local_rank), traffic, packing,
                                  slim::ErrorBound{error_bits}, &l);
}

NodeCollection two_of_three()
{
    NodeCollection c;
    c.reported.push_back(record(0, 0, 6.0, 10.0, 0.5, 100, 80, 20));
    c.reported.push_back(record(2, 2, 2.0, 10.0, 1.5, 300, 150, 29));
    MissingRank m;
    m.local_rank = 1;
    m.rank       = 1;
    m.pid        = 1001;
    m.reason     = MissingRank::Reason::died;
    c.missing.push_back(m);
    return c;
}

slim::NodeInfo node() { return slim::NodeInfo{"node7", process(0, 0).local}; }

// What a node service returns for the job of two_of_three(): the records
// as opaque bytes, the dead rank, and the port over the job.
slim::link::ReceivedReport from_service()
{
    using namespace slim::link::service;
    slim::link::ReceivedReport received;
    received.record_version = slim::rank_record_version;
    PortSection& p          = received.port;
    std::snprintf(p.backend, sizeof p.backend, "emulated");
    std::snprintf(p.port, sizeof p.port, "emulated");
    p.lanes                     = 4;
    p.has_energy                = 1;
    p.span_ns                   = 2'000'000'000;
    p.energy_joules             = 1.0;
    p.baseline_joules           = 4.0;
    p.transitions               = 12;
    p.late_wakeups              = 3;
    p.wakeup_delay_ns           = 30'000;
    p.time_at_width_ns[1]       = 1'500'000'000;
    p.time_at_width_ns[4]       = 400'000'000;
    const NodeCollection c      = two_of_three();
    const RankRecord *records[] = {&c.reported[0], nullptr, &c.reported[1]};
    for (int local = 0; local < 3; ++local) {
        slim::link::ReceivedReport::Entry e;
        e.entry.local_rank = local;
        e.entry.rank       = local;
        e.entry.pid        = 1000 + local;
        if (records[local] != nullptr) {
            const auto *bytes = reinterpret_cast<const std::uint8_t *>(records[local]);
            e.record.assign(bytes, bytes + sizeof(RankRecord));
            e.entry.state           = static_cast<std::uint32_t>(EntryState::reported);
            e.entry.record_bytes    = sizeof(RankRecord);
            e.entry.late_wakeups    = local == 0 ? 1 : 2;
            e.entry.wakeup_delay_ns = local == 0 ? 10'000 : 20'000;
        } else {
            e.entry.state = static_cast<std::uint32_t>(EntryState::died);
        }
        received.entries.push_back(std::move(e));
    }
    return received;
}

}  // namespace

// ---- records, totals, formats ----------------------------------------------

TEST_CASE("a rank record carries the numbers of the rank's report")
{
    const RankRecord r = record(2, 1, 2.0, 10.0, 1.5, 300, 150, 29);
    CHECK(r.rank == 2);
    CHECK(r.local_rank == 1);
    CHECK(r.pid == 1002);
    CHECK(r.has_link);
    CHECK(r.has_savings);
    CHECK(r.energy_savings_pct == Approx(80.0));
    CHECK(r.time_penalty_pct == 1.5);
    CHECK(r.events == 300);
    CHECK(r.hits == 150);
    CHECK(r.gt_ns == 12'500);
    CHECK(r.time_at_width_ns[4] == 1'500'000'000);
    CHECK(r.bytes_sent == 4096);
    CHECK(r.saved_bytes() == 3000);
    CHECK(r.missed_bytes == 64);
    CHECK(r.error_bound_bits == 29);

    const RankRecord no_link = slim::make_rank_record(process(0, 0), slim_traffic_t{},
                                                      slim_packing_stats_t{}, {}, nullptr);
    CHECK(!no_link.has_link);
    CHECK(no_link.events == 0);
}

TEST_CASE("node totals sum the ranks and derive savings from the sums")
{
    const slim::NodeTotals t = slim::node_totals(two_of_three().reported);
    CHECK(t.ranks_with_link == 2);
    CHECK(t.events == 400);
    CHECK(t.energy_joules == Approx(8.0));
    CHECK(t.baseline_joules == Approx(20.0));
    // 1 - 8/20, not the mean of 40% and 80%.
    CHECK(*t.energy_savings_pct == Approx(60.0));
    CHECK(*t.time_penalty_pct_max == Approx(1.5));
    CHECK(*t.time_penalty_pct_mean == Approx(1.0));
    CHECK(t.late_wakeups == 4);
    CHECK(t.hits == 230);
    // Hits per event, as in the per-rank report.
    CHECK(*t.hit_rate_pct == Approx(57.5));
    CHECK(t.restarts == 2);
    CHECK(t.time_at_width_ns[1] == 1'000'000'000);
    CHECK(t.bytes_sent == 8192);
    CHECK(t.saved_bytes == 6000);
    CHECK(t.missed_bytes == 128);
    // The coarsest precision of any rank: 2^-20.
    CHECK(t.error_bound.min_bits == 20);
}

TEST_CASE("node totals of ranks without a link or without packing stay empty")
{
    const slim::NodeTotals none = slim::node_totals({});
    CHECK(!none.energy_savings_pct);
    CHECK(!none.time_penalty_pct_max);
    CHECK(!none.hit_rate_pct);
    CHECK(!none.error_bound.packed());

    const RankRecord no_link = slim::make_rank_record(process(0, 0), slim_traffic_t{},
                                                      slim_packing_stats_t{}, {}, nullptr);
    const slim::NodeTotals t = slim::node_totals({no_link, record(1, 1, 5, 10, 0.0, 10, 5)});
    CHECK(t.ranks_with_link == 1);
    CHECK(*t.energy_savings_pct == Approx(50.0));
    CHECK(!t.error_bound.packed());
}

TEST_CASE("the node JSON line has the documented schema and lists missing ranks")
{
    const std::string line = slim::format_node_json(node(), two_of_three());
    REQUIRE(!line.empty());
    CHECK(line.back() == '\n');
    CHECK(line.find('\n') == line.size() - 1);
    const Json j = parse_json(line);
    CHECK(keys(j) == Strings{"schema", "host", "job", "launcher", "local_size", "ranks_reported",
                             "ranks_missing", "totals", "ranks", "port"});
    CHECK(j.at("port").is_null());  // no node service drove this port
    CHECK(j.at("schema").get<std::string>() == "slimlink.node.v1");
    CHECK(j.at("host").get<std::string>() == "node7");
    CHECK(j.at("job").get<std::string>() == "hydra-77-1234");
    CHECK(j.at("local_size").get<std::int64_t>() == 3);
    CHECK(j.at("ranks_reported").get<std::int64_t>() == 2);
    REQUIRE(j.at("ranks_missing").size() == 1);
    const Json& missing = j.at("ranks_missing")[0];
    CHECK(missing.at("rank").get<std::int64_t>() == 1);
    CHECK(missing.at("local_rank").get<std::int64_t>() == 1);
    CHECK(missing.at("pid").get<std::int64_t>() == 1001);
    CHECK(missing.at("reason").get<std::string>() == "died");

    const Json& t = j.at("totals");
    CHECK(t.at("energy_savings_pct").get<double>() == Approx(60.0));
    CHECK(t.at("time_penalty_pct_max").get<double>() == Approx(1.5));
    CHECK(t.at("time_penalty_pct_mean").get<double>() == Approx(1.0));
    CHECK(t.at("hit_rate_pct").get<double>() == Approx(57.5));
    CHECK(keys(t.at("time_at_width_ns")) == Strings{"1", "2", "3", "4"});
    CHECK(t.at("time_at_width_ns").at("4").get<std::int64_t>() == 3'000'000'000);
    CHECK(t.at("saved_bytes").get<std::int64_t>() == 6000);
    CHECK(t.at("max_rel_error_bound").get<double>() == std::ldexp(1.0, -20));

    REQUIRE(j.at("ranks").size() == 2);
    const Json& r2 = j.at("ranks")[1];
    CHECK(r2.at("rank").get<std::int64_t>() == 2);
    CHECK(r2.at("local_rank").get<std::int64_t>() == 2);
    CHECK(r2.at("gt_ns").get<std::int64_t>() == 12'500);
    CHECK(r2.at("hit_rate_pct").get<double>() == Approx(50.0));
    CHECK(r2.at("max_rel_error_bound").get<double>() == std::ldexp(1.0, -29));
}

TEST_CASE("a node where nobody reported still gives valid JSON with nulls")
{
    NodeCollection c;
    MissingRank m;
    m.local_rank = 0;
    c.missing.push_back(m);
    const Json j = parse_json(slim::format_node_json(node(), c));
    CHECK(j.at("ranks_reported").get<std::int64_t>() == 0);
    CHECK(j.at("ranks_missing")[0].at("rank").is_null());
    CHECK(j.at("ranks_missing")[0].at("reason").get<std::string>() == "never_started");
    CHECK(j.at("totals").at("energy_savings_pct").is_null());
    CHECK(j.at("totals").at("max_rel_error_bound").is_null());
    CHECK(j.at("ranks").empty());
}

TEST_CASE("the node table has a row per reported rank, a total row and the missing ranks")
{
    const std::string text = slim::format_node_text(node(), two_of_three());
    CHECK_THAT(text, Contains("slimlink node report: host node7, job hydra-77-1234, 3 local "
                              "ranks, 2 reported, 1 missing"));
    CHECK_THAT(text, Contains("missing: rank 1 (local 1, pid 1001): ended without a report"));
    CHECK_THAT(text, Contains("max rel error"));
    CHECK_THAT(text, Contains("2^-29 (1.9e-09)"));
    CHECK_THAT(text, Contains("max 1.50"));
    CHECK_THAT(text, Contains("mean 1.00%"));
    CHECK_THAT(text, Contains("time at width (all ranks): 1x 1.000 s 4x 3.000 s"));
    // Header, two rank rows and the total row share one layout.
    std::size_t rows = 0;
    for (std::size_t pos = 0; (pos = text.find("\n      ", pos)) != std::string::npos; ++pos) {
        ++rows;
    }
    CHECK(rows >= 2);
    CHECK_THAT(text, Contains("  total "));
}

// ---- the node report through the node service -----------------------------

TEST_CASE("the service's report: the port's energy once, each rank's late wake-ups its own")
{
    const NodeCollection c = slim::collection_from_service(from_service());
    REQUIRE(c.reported.size() == 2);
    REQUIRE(c.missing.size() == 1);
    CHECK(c.missing[0].rank == 1);
    CHECK(c.missing[0].reason == MissingRank::Reason::died);
    REQUIRE(c.port);
    // Each rank's late wake-ups and penalty are the shared port's on its traffic.
    CHECK(c.reported[0].late_wakeups == 1);
    CHECK(c.reported[1].wakeup_delay_ns == 20'000);
    CHECK(c.reported[1].time_penalty_pct == Approx(100.0 * 20'000 / 2e9));
    CHECK_FALSE(c.reported[0].has_savings);  // per-rank energy is not the port's

    // Totals: the port's energy (1 of 4 J), not the sum of the ranks' (8 of 20 J).
    const slim::NodeTotals t = slim::node_totals(c.reported, c.port);
    CHECK(t.energy_joules == 1.0);
    CHECK(t.baseline_joules == 4.0);
    CHECK(*t.energy_savings_pct == Approx(75.0));
    CHECK(t.late_wakeups == 3);
    CHECK(t.time_at_width_ns[1] == 1'500'000'000);
    CHECK(t.events == 400);  // events and hits stay sums over ranks

    const Json j     = parse_json(slim::format_node_json(node(), c));
    const Json& port = j.at("port");
    CHECK(port.at("owner").get<std::string>() == "slimlinkd");
    CHECK(port.at("backend").get<std::string>() == "emulated");
    CHECK(port.at("energy_savings_pct").get<double>() == Approx(75.0));
    CHECK(port.at("transitions").get<std::int64_t>() == 12);
    CHECK(port.at("time_at_width_ns").at("4").get<std::int64_t>() == 400'000'000);
    CHECK(j.at("totals").at("energy_savings_pct").get<double>() == Approx(75.0));
    CHECK(j.at("ranks")[0].at("late_wakeups").get<std::int64_t>() == 1);

    const std::string text = slim::format_node_text(node(), c);
    CHECK_THAT(text, Contains("port emulated (emulated, 4 lanes), driven by slimlinkd for 3 "
                              "local ranks over 2.000 s: energy saved 75.0% vs always on, "
                              "12 transitions, 3 late wake-ups (30.0 us)"));
    CHECK_THAT(text, Contains("time at width (the port): 1x 1.500 s 4x 0.400 s"));
}

TEST_CASE("the service's report says what its port numbers do not cover")
{
    slim::link::ReceivedReport received = from_service();
    auto& p                             = received.port;
    p.span_ns                           = 300'000'000;
    p.job_span_ns                       = 800'000'000;
    p.uncovered_ns                      = 500'000'000;
    p.late_records                      = 7;
    p.stalled_clients                   = 1;
    const NodeCollection c              = slim::collection_from_service(received);

    const std::string text = slim::format_node_text(node(), c);
    CHECK_THAT(text, Contains("port numbers cut short: they cover 0.300 s of the job's 0.800 s; "
                              "the service's accounting had not reached the last 0.500 s"));
    CHECK_THAT(text, Contains("1 client(s) stalled during the job (more than 0.5 s behind); 7 "
                              "of their demand records were applied late"));
    CHECK_THAT(text, !Contains("FAILED") && !Contains("UNKNOWN"));

    const Json j     = parse_json(slim::format_node_json(node(), c));
    const Json& port = j.at("port");
    CHECK(port.at("job_span_ns").get<std::int64_t>() == 800'000'000);
    CHECK(port.at("uncovered_ns").get<std::int64_t>() == 500'000'000);
    CHECK(port.at("late_records").get<std::int64_t>() == 7);
    CHECK(port.at("stalled_clients").get<std::int64_t>() == 1);
    CHECK(port.at("backend_failed").get<bool>() == false);
    CHECK(port.at("width_unknown").get<bool>() == false);
    CHECK(port.at("problem").is_null());
}

TEST_CASE("a failed backend is a failure in the node report, and no energy is made up")
{
    slim::link::ReceivedReport received = from_service();
    auto& p                             = received.port;
    std::snprintf(p.backend, sizeof p.backend, "exec");
    p.has_energy      = 0;
    p.energy_joules   = 0.0;
    p.baseline_joules = 0.0;
    p.transitions     = 0;
    for (auto& w : p.time_at_width_ns) {
        w = 0;
    }
    p.backend_failed = 1;
    p.width_unknown  = 1;
    std::snprintf(p.problem, sizeof p.problem, "%s",
                  "exec link backend: 'sleep 20 4' did not end within 2000 ms and was killed; "
                  "restoring full width failed: the port's width is unknown");
    const NodeCollection c = slim::collection_from_service(received);

    const std::string text = slim::format_node_text(node(), c);
    CHECK_THAT(text, Contains("energy not measured by this backend, 0 transitions"));
    CHECK_THAT(text, Contains("port backend FAILED: the service stopped driving the port: exec "
                              "link backend: 'sleep 20 4' did not end within 2000 ms"));
    CHECK_THAT(text, Contains("port width UNKNOWN"));
    // Nothing measured, nothing printed: no "0.000000 J of 0.000000 J".
    CHECK_THAT(text, !Contains(" J always on") && !Contains("time at width"));
    CHECK_THAT(text, Contains("time penalty max"));

    const Json j     = parse_json(slim::format_node_json(node(), c));
    const Json& port = j.at("port");
    CHECK(port.at("backend_failed").get<bool>());
    CHECK(port.at("width_unknown").get<bool>());
    CHECK_THAT(port.at("problem").get<std::string>(), Contains("did not end within 2000 ms"));
    CHECK(port.at("energy_joules").is_null());
    CHECK(j.at("totals").at("energy_joules").is_null());
    CHECK(j.at("totals").at("baseline_joules").is_null());
    CHECK(j.at("totals").at("energy_savings_pct").is_null());
}

TEST_CASE("a record of another build is listed as missing, never misread")
{
    slim::link::ReceivedReport received = from_service();
    received.entries[2].record.pop_back();
    NodeCollection c = slim::collection_from_service(received);
    CHECK(c.reported.size() == 1);
    CHECK(c.missing.size() == 2);
    received                = from_service();
    received.record_version = slim::rank_record_version + 1;
    c                       = slim::collection_from_service(received);
    CHECK(c.reported.empty());
    CHECK(c.missing.size() == 3);
}

// ---- the ranks' CPU side ---------------------------------------------------

namespace {

// A rank with UCX_SLIM_CPU=on: `waits` waits over `wait_ns`, and (unless
// `low_ns` is negative: no live plans) the plans low for `low_ns` with
// `penalty_ns` of penalty over `span_ns`, on the default core (P_full 3 W,
// P_low 1.4 W), the oracle saving `oracle_joules`.
RankRecord cpu_record(int rank, std::uint64_t waits, std::int64_t wait_ns, std::int64_t low_ns,
                      std::int64_t penalty_ns, std::int64_t span_ns, double oracle_joules)
{
    slim::live::LiveSummary l = live(6.0, 10.0, 0.5, 100, 80);
    l.cpu                     = true;
    l.waits                   = waits;
    l.wait_ns                 = wait_ns;
    l.wait_blocked_ns         = wait_ns / 4;
    l.wait_blocks             = waits / 2;
    if (low_ns >= 0) {
        const slim::cpu::CpuConfig core;
        slim::cpu::CpuTally plans;
        plans.waits       = waits;
        plans.wait_ns     = wait_ns;
        plans.low_ns      = low_ns;
        plans.transitions = 2 * waits;
        plans.late_wakes  = penalty_ns > 0 ? 1 : 0;
        plans.penalty_ns  = penalty_ns;
        slim::live::LiveCpuSummary c;
        c.policy              = "adaptive";
        c.requests_enabled    = true;
        c.requests_low        = waits;
        c.requests_full       = waits;
        c.waits_lowered       = waits;
        c.model               = slim::cpu::cpu_result(core, plans, span_ns);
        c.oracle.saved_joules = oracle_joules;
        l.cpu_live            = c;
    }
    return slim::make_rank_record(process(rank, rank), slim_traffic_t{}, slim_packing_stats_t{}, {},
                                  &l);
}

// Worked by hand on the default core, (P_full - P_low) = 1.6 W:
//   rank 0: span 1 s, baseline 3 J; low 0.5 s, penalty 1 ms:
//           saved 1.6 * 0.5 - 3 * 0.001 = 0.797 J
//   rank 1: span 2 s, baseline 6 J; low 0.25 s, no penalty: saved 0.4 J
//   rank 2: waits counted, no live plans; rank 3: no CPU side at all.
// Node: baseline 9 J, saved 1.197 J: 13.3 % (not the ranks' mean, 16.6 %);
// penalty 1 ms of 3 s; oracle 1.0 + 0.5 J, planned 79.8 % of it.
std::vector<RankRecord> cpu_ranks()
{
    return {cpu_record(0, 10, 600'000'000, 500'000'000, 1'000'000, 1'000'000'000, 1.0),
            cpu_record(1, 4, 300'000'000, 250'000'000, 0, 2'000'000'000, 0.5),
            cpu_record(2, 6, 100'000'000, -1, 0, 0, 0.0), record(3, 3, 6.0, 10.0, 0.5, 100, 80)};
}

}  // namespace

TEST_CASE("a rank record carries the rank's CPU side")
{
    const RankRecord r = cpu_ranks()[0];
    CHECK(r.cpu.has_waits);
    CHECK(r.cpu.has_live);
    CHECK(r.cpu.waits == 10);
    CHECK(r.cpu.wait_ns == 600'000'000);
    CHECK(r.cpu.blocked_ns == 150'000'000);
    CHECK(r.cpu.low_ns == 500'000'000);
    CHECK(r.cpu.baseline_joules == Approx(3.0));
    CHECK(r.cpu.saved_joules == Approx(0.797));
    CHECK(r.cpu.energy_joules == Approx(2.203));
    CHECK(!record(3, 3, 6.0, 10.0, 0.5, 100, 80).cpu.has_waits);
    CHECK(!cpu_ranks()[2].cpu.has_live);
}

TEST_CASE("node CPU totals sum the ranks' CPU side and derive percentages from the sums")
{
    const std::optional<slim::NodeCpuTotals> t = slim::node_cpu_totals(cpu_ranks());
    REQUIRE(t);
    CHECK(t->ranks == 3);
    CHECK(t->live_ranks == 2);
    CHECK(t->requesting_ranks == 2);
    CHECK(t->sum.waits == 20);
    CHECK(t->sum.wait_ns == 1'000'000'000);
    CHECK(t->sum.blocked_ns == 250'000'000);
    CHECK(t->sum.waits_lowered == 14);
    CHECK(t->sum.low_ns == 750'000'000);
    CHECK(t->sum.transitions == 28);
    CHECK(t->sum.late_wakes == 1);
    CHECK(t->sum.penalty_ns == 1'000'000);
    CHECK(t->sum.span_ns == 3'000'000'000);
    CHECK(t->sum.requests_low == 14);
    CHECK(t->sum.baseline_joules == Approx(9.0));
    CHECK(t->sum.saved_joules == Approx(1.197));
    CHECK(t->sum.energy_joules == Approx(7.803));
    CHECK(*t->saved_pct == Approx(13.3));
    CHECK(*t->penalty_pct == Approx(100.0 / 3000.0));
    CHECK(*t->of_oracle_pct == Approx(79.8));

    CHECK(!slim::node_cpu_totals(two_of_three().reported));
    CHECK(!slim::node_cpu_totals({}));
}

TEST_CASE("the node report shows the ranks' CPU side only when a rank had one")
{
    NodeCollection c;
    c.reported      = cpu_ranks();
    const Json j    = parse_json(slim::format_node_json(node(), c));
    const Json& cpu = j.at("totals").at("cpu");
    CHECK(keys(cpu) == Strings{"ranks", "waits", "wait_ns", "blocked_ns", "blocks", "live"});
    CHECK(cpu.at("ranks").get<std::int64_t>() == 3);
    CHECK(cpu.at("waits").get<std::int64_t>() == 20);
    const Json& live = cpu.at("live");
    CHECK(keys(live) == Strings{"ranks", "requests", "waits_lowered", "low_ns", "transitions",
                                "late_wakes", "penalty_ns", "span_ns", "baseline_joules",
                                "energy_joules", "saved_joules", "saved_pct", "penalty_pct",
                                "oracle_saved_joules", "of_oracle_pct"});
    CHECK(live.at("ranks").get<std::int64_t>() == 2);
    CHECK(live.at("requests").at("full").get<std::int64_t>() == 14);
    CHECK(live.at("saved_joules").get<double>() == Approx(1.197));
    CHECK(live.at("baseline_joules").get<double>() == Approx(9.0));
    CHECK(live.at("saved_pct").get<double>() == Approx(13.3));
    CHECK(live.at("of_oracle_pct").get<double>() == Approx(79.8));

    const std::string text = slim::format_node_text(node(), c);
    CHECK_THAT(text, Contains("cpu of the ranks (3 ranks): 20 waits, 1.000000 s in waits, "
                              "0.250000 s of it yielded (10 blocks)"));
    CHECK_THAT(text, Contains("cpu as planned (2 ranks, emulated core): 14 waits lowered, "
                              "0.750000 s low, 28 transitions; energy 7.803000 J of 9.000000 J "
                              "always at full (saved 1.197000 J, 13.30%), modelled penalty "
                              "1000.0 us (0.03%); oracle saved 1.500000 J (planned 79.8% of it)"));

    // Waits counted, nothing planned: no live sums.
    c.reported = {cpu_ranks()[2]};
    CHECK(parse_json(slim::format_node_json(node(), c))
                  .at("totals")
                  .at("cpu")
                  .at("live")
                  .is_null());
    CHECK_THAT(slim::format_node_text(node(), c), !Contains("cpu as planned"));

    // No CPU side: neither the key nor the line.
    const std::string off = slim::format_node_json(node(), two_of_three());
    CHECK(!parse_json(off).at("totals").contains("cpu"));
    CHECK_THAT(slim::format_node_text(node(), two_of_three()), !Contains("cpu of the ranks"));
}

// ---- the packing error bound -----------------------------------------------

TEST_CASE("guaranteed bits follow the codec's bounds and order precisions")
{
    using slim::pack::Rounding;
    CHECK(slim::guaranteed_bits({2, Rounding::truncate}) == 4);
    CHECK(slim::guaranteed_bits({7, Rounding::truncate}) == 44);
    CHECK(slim::guaranteed_bits({7, Rounding::nearest_even}) == 45);
    CHECK(slim::guaranteed_bits({3, Rounding::truncate}) <
          slim::guaranteed_bits({3, Rounding::nearest_even}));
    CHECK(slim::guaranteed_bits({3, Rounding::nearest_even}) <
          slim::guaranteed_bits({4, Rounding::truncate}));
}

TEST_CASE("the packing monitor keeps the coarsest precision it packed with")
{
    slim::PackingMonitor monitor;
    CHECK(!monitor.error_bound().packed());
    CHECK(monitor.error_bound().relative() == 0.0);
    monitor.packed_with({8, slim::pack::Rounding::truncate});  // not packing: ignored
    CHECK(!monitor.error_bound().packed());
    monitor.packed_with({5, slim::pack::Rounding::nearest_even});
    CHECK(monitor.error_bound().min_bits == 29);
    monitor.packed_with({3, slim::pack::Rounding::truncate});
    monitor.packed_with({6, slim::pack::Rounding::truncate});
    CHECK(monitor.error_bound().min_bits == 12);
    CHECK(monitor.error_bound().relative() == std::ldexp(1.0, -12));
}

TEST_CASE("the bound holds for values packed at the coarsest precision")
{
    // A check of codec.h's statement that the bound is built on.
    for (const slim::pack::Precision p :
         {slim::pack::Precision{2, slim::pack::Rounding::truncate},
          slim::pack::Precision{3, slim::pack::Rounding::nearest_even},
          slim::pack::Precision{7, slim::pack::Rounding::truncate}}) {
        const double bound = std::ldexp(1.0, -slim::guaranteed_bits(p));
        for (const double x : {1.0, 1.9999999, 3.14159265358979, -2.718281828, 1e-300, 6.02e23}) {
            const double y = slim::pack::round_trip(x, p);
            CHECK(std::fabs(y - x) / std::fabs(x) <= bound);
        }
    }
}

// SPDX-License-Identifier: BSD-3-Clause
// The JSON reports against golden files: the same inputs must give the same
// fields, in the same order, with the same values (numbers compared as
// numbers, so "12.50" and 12.5 agree). The golden files in tests/data/ were
// written by the hand-built JSON writers that nlohmann/json replaced; a
// change of the report's contract shows up here as a failing test.
//
// To write them anew after a deliberate change of the schema:
//   SLIM_WRITE_GOLDEN=1 tests/unit/slim-unit-tests "[golden]"
// (in the build tree, with abs_top_srcdir pointing at the source tree).
#include "golden_file.h"
#include "node_report.h"
#include "report.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>

using nlohmann::ordered_json;

namespace {

// Compares `line` with the golden file `name`, or writes it there under
// SLIM_WRITE_GOLDEN=1.
void check_golden(const std::string& name, const std::string& line)
{
    const std::string path = slim_test::data_path(name);
    const auto golden      = slim_test::golden_or_write(path, line);
    if (!golden) {
        return;
    }
    INFO("golden file " << path);
    REQUIRE(!line.empty());
    CHECK(line.back() == '\n');
    CHECK(line.find('\n') == line.size() - 1);
    // ordered_json compares keys in order: a reordered field fails too.
    CHECK(ordered_json::parse(line) == ordered_json::parse(*golden));
}

slim::ProcessIdentity process(int rank, int local_rank)
{
    slim::ProcessIdentity who;
    who.rank             = rank;
    who.pid              = 5000 + rank;
    who.host             = "node\"7\\\t\xc3\xa9";  // a quote, a backslash, a tab, UTF-8
    who.local.local_rank = local_rank;
    who.local.local_size = 3;
    who.local.launcher   = "hydra";
    who.local.key        = "hydra-77-1234";
    return who;
}

slim_traffic_t traffic()
{
    slim_traffic_t t{};
    t.op[SLIM_OP_AM_SHORT][SLIM_DIR_SEND] = {10, 640};
    t.op[SLIM_OP_AM_BCOPY][SLIM_DIR_SEND] = {7, 57344};
    t.op[SLIM_OP_AM_ANY][SLIM_DIR_RECV]   = {12, 70000};
    t.op[SLIM_OP_PUT][SLIM_DIR_SEND]      = {1, 1u << 20};
    t.op[SLIM_OP_GET][SLIM_DIR_RECV]      = {2, std::uint64_t{1} << 40};  // past 2^32
    return t;
}

slim_packing_stats_t packing()
{
    slim_packing_stats_t p{};
    p.frames_sent     = 3;
    p.payload_bytes   = 8000;
    p.wire_bytes      = 4100;
    p.marked_bytes    = 8192;
    p.packed_bytes    = 7992;
    p.edge_bytes      = 8;
    p.missed_bytes    = 64;
    p.frames_received = 2;
    p.frames_rejected = 1;
    return p;
}

slim::live::LiveSummary live(double energy, double baseline, double penalty, std::uint64_t events,
                             std::uint64_t hits)
{
    slim::live::LiveSummary l;
    l.predictor           = "adaptive";
    l.backend             = "emulated";
    l.lanes               = 4;
    l.events              = events;
    l.span_ns             = 2'000'000'123;
    l.energy_joules       = energy;
    l.baseline_joules     = baseline;
    l.energy_savings_pct  = 100.0 * (1.0 - energy / baseline);
    l.time_penalty_pct    = penalty;
    l.max_slowdown_pct    = 2.5;
    l.link_profile        = "ib-hdr,L=4,P=0.5,low=1,tau=10us,lowP=0.43";
    l.late_wakeups        = 2;
    l.wakeup_delay_ns     = 3000;
    l.transitions         = 41;
    l.predictions         = events / 2;
    l.hits                = hits;
    l.restarts            = 1;
    l.gt_ns               = 12'500;
    l.policy_in_force     = "timeout 100us";
    l.policy_switches     = 7;
    l.burst_gap_ns        = 20'000;
    l.widest_burst_gap_ns = 160'000;
    l.time_at_width_ns[1] = 500'000'000;
    l.time_at_width_ns[2] = 7;
    l.time_at_width_ns[4] = 1'500'000'000;
    l.trace_path          = "/tmp/trace \"1\".txt";
    l.trace_events        = 99;
    l.drain.wakeups       = 123;
    l.drain.late          = 3;
    l.drain.records       = 4567;
    l.ops_dropped         = 3;
    l.ops_logged          = 890;
    return l;
}

slim::RankRecord record(int rank, int local_rank, double energy, double baseline, double penalty,
                        std::uint64_t events, std::uint64_t hits, int error_bits)
{
    const slim::live::LiveSummary l = live(energy, baseline, penalty, events, hits);
    return slim::make_rank_record(process(rank, local_rank), traffic(), packing(),
                                  slim::ErrorBound{error_bits}, &l);
}

slim::NodeInfo node() { return slim::NodeInfo{"node7", process(0, 0).local}; }

}  // namespace

TEST_CASE("the rank report's JSON keeps every field and value of the golden file", "[golden]")
{
    SECTION("with packing and a link")
    {
        // 1/3 and a rounding-level negative: the writers' decimals and "no -0".
        slim::live::LiveSummary l = live(1.0 / 3.0, 1.0, -1e-9, 1001, 333);
        check_golden("golden-report-link.json",
                     slim::format_json_report(process(3, 1), traffic(), packing(), &l,
                                              slim::ErrorBound{29}));
    }
    SECTION("a link whose backend accounts no energy, a failed controller, no trace")
    {
        slim::live::LiveSummary l = live(0.0, 0.0, 0.0, 0, 0);
        l.energy_savings_pct.reset();
        l.time_penalty_pct.reset();
        l.gt_ns.reset();
        l.policy_in_force.clear();
        l.max_slowdown_pct.reset();  // a predictor other than adaptive
        l.link_profile.clear();      // a report from before profiles were named
        l.trace_path.clear();
        l.controller_failed = true;
        l.controller_error  = "width 1 refused";
        check_golden("golden-report-nolink-energy.json",
                     slim::format_json_report(process(-1, 0), slim_traffic_t{}, {}, &l, {}));
    }
    SECTION("without a link")
    {
        check_golden("golden-report-plain.json",
                     slim::format_json_report(process(0, 0), traffic(), {}, nullptr, {}));
    }
}

TEST_CASE("the node report's JSON keeps every field and value of the golden file", "[golden]")
{
    SECTION("two of three ranks reported")
    {
        slim::NodeCollection c;
        c.reported.push_back(record(0, 0, 6.0, 10.0, 0.5, 100, 80, 20));
        c.reported.push_back(record(2, 2, 2.0 / 3.0, 10.0, 1.25, 300, 150, 29));
        slim::MissingRank died;
        died.local_rank = 1;
        died.rank       = 1;
        died.pid        = 1001;
        died.reason     = slim::MissingRank::Reason::died;
        c.missing.push_back(died);
        slim::MissingRank late;
        late.local_rank = 3;
        late.reason     = slim::MissingRank::Reason::timed_out;
        c.missing.push_back(late);
        check_golden("golden-node-two-of-three.json", slim::format_node_json(node(), c));
    }
    SECTION("a port whose exec backend failed, its numbers cut short by a stalled client")
    {
        slim::NodeCollection c;
        c.reported.push_back(record(0, 0, 6.0, 10.0, 0.5, 100, 80, 20));
        slim::link::service::PortSection p;
        std::snprintf(p.backend, sizeof p.backend, "exec");
        std::snprintf(p.port, sizeof p.port, "emulated");
        p.lanes           = 4;
        p.span_ns         = 300'000'000;
        p.job_span_ns     = 800'000'000;
        p.uncovered_ns    = 500'000'000;
        p.late_records    = 3;
        p.stalled_clients = 1;
        p.other_jobs      = 1;
        p.clients_seen    = 2;
        p.backend_failed  = 1;
        p.width_unknown   = 1;
        std::snprintf(p.problem, sizeof p.problem, "%s",
                      "exec link backend: 'sleep 20 4' did not end within 2000 ms and was "
                      "killed; restoring full width failed: the port's width is unknown");
        c.port         = p;
        c.link_profile = "L=4,P=0.5,low=1,tau=10us";
        check_golden("golden-node-port-failed.json", slim::format_node_json(node(), c));
    }
    SECTION("ranks with a CPU side (UCX_SLIM_CPU=on), one without live plans")
    {
        slim::NodeCollection c;
        slim::RankRecord r0        = record(0, 0, 6.0, 10.0, 0.5, 100, 80, 20);
        r0.cpu.has_waits           = true;
        r0.cpu.has_live            = true;
        r0.cpu.waits               = 40;
        r0.cpu.wait_ns             = 120'000'000;
        r0.cpu.blocked_ns          = 30'000'000;
        r0.cpu.blocks              = 12;
        r0.cpu.waits_lowered       = 38;
        r0.cpu.low_ns              = 100'000'000;
        r0.cpu.transitions         = 76;
        r0.cpu.late_wakes          = 2;
        r0.cpu.penalty_ns          = 50'000;
        r0.cpu.span_ns             = 2'000'000'123;
        r0.cpu.baseline_joules     = 6.000000369;
        r0.cpu.saved_joules        = 1.0 / 6.0;
        r0.cpu.energy_joules       = r0.cpu.baseline_joules - r0.cpu.saved_joules;
        r0.cpu.oracle_saved_joules = 0.2;
        r0.cpu.requests_enabled    = true;
        r0.cpu.requests_low        = 38;
        r0.cpu.requests_full       = 38;
        c.reported.push_back(r0);
        slim::RankRecord r1 = record(1, 1, 2.0 / 3.0, 10.0, 1.25, 300, 150, 29);
        r1.cpu.has_waits    = true;
        r1.cpu.waits        = 3;
        r1.cpu.wait_ns      = 7'000;
        c.reported.push_back(r1);
        check_golden("golden-node-cpu.json", slim::format_node_json(node(), c));
    }
    SECTION("nobody reported")
    {
        slim::NodeCollection c;
        slim::MissingRank m;
        m.local_rank = 0;
        c.missing.push_back(m);
        check_golden("golden-node-empty.json", slim::format_node_json(node(), c));
    }
}

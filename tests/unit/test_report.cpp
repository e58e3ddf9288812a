// SPDX-License-Identifier: BSD-3-Clause
#include "json_check.h"
#include "report.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

using Catch::Matchers::Contains;
using slim_test::Json;
using slim_test::keys;
using slim_test::parse_json;
using Strings = std::vector<std::string>;

namespace {

slim::ProcessIdentity sample_process()
{
    slim::ProcessIdentity who;
    who.rank = 3;
    who.pid  = 4242;
    who.host = "node\"7\\x";
    return who;
}

slim_traffic_t sample_traffic()
{
    slim_traffic_t t{};
    t.op[SLIM_OP_AM_SHORT][SLIM_DIR_SEND] = {10, 640};
    t.op[SLIM_OP_AM_ANY][SLIM_DIR_RECV]   = {12, 70000};
    t.op[SLIM_OP_PUT][SLIM_DIR_SEND]      = {1, 1u << 20};
    return t;
}

std::size_t count_lines(const std::string& s)
{
    std::size_t n = 0;
    for (const char c : s) {
        n += c == '\n';
    }
    return n;
}

}  // namespace

TEST_CASE("the JSON report is one valid JSON line with the documented schema")
{
    const std::string line = slim::format_json_report(sample_process(), sample_traffic());
    REQUIRE(!line.empty());
    CHECK(line.back() == '\n');
    CHECK(count_lines(line) == 1);

    const Json j = parse_json(line);
    REQUIRE(j.is_object());
    CHECK(keys(j) ==
          Strings{"schema", "rank", "host", "pid", "traffic", "totals", "packing", "link"});
    CHECK(j.at("schema").get<std::string>() == "slimlink.report.v1");
    CHECK(j.at("rank").get<std::int64_t>() == 3);
    CHECK(j.at("host").get<std::string>() == "node\"7\\x");
    CHECK(j.at("pid").get<std::int64_t>() == 4242);
}

TEST_CASE("packed puts add a line and a JSON object only when there were any")
{
    slim_packing_stats_t packing{};
    packing.frames_sent     = 2;
    packing.payload_bytes   = 1000;
    packing.wire_bytes      = 500;
    packing.marked_bytes    = 1000;
    packing.packed_bytes    = 1000;
    const std::string quiet = slim::format_text_report(sample_process(), sample_traffic(), packing);
    CHECK(quiet.find("puts packed") == std::string::npos);
    CHECK(parse_json(slim::format_json_report(sample_process(), sample_traffic(), packing))
                  .at("packing")
                  .count("puts") == 0);

    slim::PackingMonitor::PutCounts puts;
    puts.puts_packed       = 2;
    puts.notices_rejected  = 1;
    puts.bounce_empty      = 3;
    puts.bounce_buffers    = 16;
    puts.bounce_bytes      = 16 * (std::uint64_t{516} << 10);
    const std::string text = slim::format_text_report(sample_process(), sample_traffic(), packing,
                                                      nullptr, {}, puts);
    CHECK_THAT(text, Contains("of those, puts packed 2; expand notices rejected 1; puts unpacked "
                              "for want of a bounce buffer 3"));
    CHECK_THAT(text, Contains("bounce buffers 16 (8.1 MiB registered)"));
    const Json j = parse_json(slim::format_json_report(sample_process(), sample_traffic(), packing,
                                                       nullptr, {}, puts));
    CHECK(j.at("packing").at("puts").at("packed").get<std::uint64_t>() == 2);
    CHECK(j.at("packing").at("puts").at("notices_rejected").get<std::uint64_t>() == 1);
    CHECK(j.at("packing").at("puts").at("bounce_empty").get<std::uint64_t>() == 3);
    CHECK(j.at("packing").at("puts").at("bounce_buffers").get<std::uint64_t>() == 16);
    CHECK(j.at("packing").at("puts").at("bounce_bytes").get<std::uint64_t>() == 16 * 528384);
}

TEST_CASE("synchronous sends slim could not see add a line and a JSON object only when any")
{
    slim::RankReportData data;
    data.who     = sample_process();
    data.traffic = sample_traffic();
    CHECK(slim::format_text_report(data).find("not seen by slim") == std::string::npos);
    CHECK(parse_json(slim::format_json_report(data)).at("packing").count("unseen") == 0);

    // Nothing marked went through slim: the packing block is there for them
    // alone, and its marked bytes stay zero (slim cannot tell any).
    data.unseen.sync_sends = 8;
    data.unseen.sync_bytes = 4800000;
    const std::string text = slim::format_text_report(data);
    CHECK_THAT(text, Contains("marked 0 bytes: packed 0, edge 0, missed 0"));
    CHECK_THAT(text, Contains("not seen by slim: 8 synchronous sends of 4800000 bytes, copied by "
                              "UCP itself (am_bcopy"));
    const Json j = parse_json(slim::format_json_report(data));
    CHECK(j.at("packing").at("unseen").at("sync_sends").get<std::uint64_t>() == 8);
    CHECK(j.at("packing").at("unseen").at("sync_bytes").get<std::uint64_t>() == 4800000);
    CHECK(j.at("packing").at("marked_bytes").get<std::uint64_t>() == 0);
}

TEST_CASE("the packing monitor counts unseen synchronous sends apart from marked bytes")
{
    slim::PackingMonitor monitor;
    monitor.frame_sent(100, 60, 80, 80);
    monitor.sync_unseen(4000);
    monitor.sync_unseen(24);
    CHECK(monitor.unseen().sync_sends == 2);
    CHECK(monitor.unseen().sync_bytes == 4024);
    const slim_packing_stats_t s = monitor.snapshot();
    CHECK(s.marked_bytes == 80);
    CHECK(s.marked_bytes == s.packed_bytes + s.edge_bytes + s.missed_bytes);
}

TEST_CASE("the JSON report lists every operation kind with its counters")
{
    const Json j        = parse_json(slim::format_json_report(sample_process(), sample_traffic()));
    const Json& traffic = j.at("traffic");
    CHECK(keys(traffic) ==
          Strings{"am_short", "am_bcopy", "am_zcopy", "am_any", "put", "get", "atomic"});
    CHECK(traffic.at("am_short").at("sent").at("count").get<std::int64_t>() == 10);
    CHECK(traffic.at("am_short").at("sent").at("bytes").get<std::int64_t>() == 640);
    CHECK(traffic.at("am_short").at("received").at("count").get<std::int64_t>() == 0);
    CHECK(traffic.at("am_any").at("received").at("count").get<std::int64_t>() == 12);
    CHECK(traffic.at("am_any").at("received").at("bytes").get<std::int64_t>() == 70000);
    CHECK(traffic.at("put").at("sent").at("bytes").get<std::int64_t>() == 1 << 20);
    CHECK(traffic.at("atomic").at("sent").at("count").get<std::int64_t>() == 0);

    const Json& totals = j.at("totals");
    CHECK(totals.at("sent").at("count").get<std::int64_t>() == 11);
    CHECK(totals.at("sent").at("bytes").get<std::int64_t>() == 640 + (1 << 20));
    CHECK(totals.at("received").at("count").get<std::int64_t>() == 12);
    CHECK(totals.at("received").at("bytes").get<std::int64_t>() == 70000);
}

TEST_CASE("the JSON report of a process without traffic has zero totals")
{
    const Json j = parse_json(slim::format_json_report(sample_process(), slim_traffic_t{}));
    CHECK(j.at("totals").at("sent").at("count").get<std::int64_t>() == 0);
    CHECK(j.at("totals").at("received").at("bytes").get<std::int64_t>() == 0);
}

TEST_CASE("an unknown rank is reported as -1")
{
    slim::ProcessIdentity who = sample_process();
    who.rank                  = -1;
    const auto j              = parse_json(slim::format_json_report(who, slim_traffic_t{}));
    CHECK(j.at("rank").get<std::int64_t>() == -1);
    CHECK_THAT(slim::format_text_report(who, slim_traffic_t{}), Contains("rank unknown"));
}

TEST_CASE("JSON strings keep quotes, backslashes and control characters")
{
    slim::ProcessIdentity who = sample_process();
    who.host                  = std::string("a\"b\\c\n\t\x01\x1f\xc3\xa9", 12);
    const std::string line    = slim::format_json_report(who, slim_traffic_t{});
    CHECK(count_lines(line) == 1);
    CHECK(parse_json(line).at("host").get<std::string>() == who.host);
}

TEST_CASE("a host name that is not UTF-8 still gives a valid report")
{
    slim::ProcessIdentity who = sample_process();
    who.host                  = "bad\xff";
    const std::string line    = slim::format_json_report(who, slim_traffic_t{});
    CHECK(parse_json(line).at("host").get<std::string>() == "bad\xef\xbf\xbd");  // U+FFFD
}

TEST_CASE("the text report names the process and lists only non-zero rows")
{
    const std::string text = slim::format_text_report(sample_process(), sample_traffic());
    CHECK_THAT(text, Contains("rank 3"));
    CHECK_THAT(text, Contains("host node\"7\\x"));
    CHECK_THAT(text, Contains("pid 4242"));
    CHECK_THAT(text, Contains("operation"));
    CHECK_THAT(text, Contains("\n  am_short "));
    CHECK_THAT(text, Contains("\n  am_any "));
    CHECK_THAT(text, Contains("\n  put "));
    CHECK_THAT(text, !Contains("\n  am_bcopy "));
    CHECK_THAT(text, !Contains("\n  am_zcopy "));
    CHECK_THAT(text, !Contains("\n  get "));
    CHECK_THAT(text, !Contains("\n  atomic "));
    CHECK_THAT(text, Contains("\n  total "));
    CHECK(text.back() == '\n');
}

TEST_CASE("the text report rows carry the counters in column order")
{
    const std::string text = slim::format_text_report(sample_process(), sample_traffic());
    std::istringstream lines(text);
    std::string line;
    bool found_put = false, found_total = false;
    while (std::getline(lines, line)) {
        std::istringstream words(line);
        std::string name;
        unsigned long long sent_count = 0, sent_bytes = 0, recv_count = 0, recv_bytes = 0;
        words >> name >> sent_count >> sent_bytes >> recv_count >> recv_bytes;
        if (name == "put") {
            found_put = true;
            CHECK(sent_count == 1);
            CHECK(sent_bytes == 1u << 20);
            CHECK(recv_count == 0);
            CHECK(recv_bytes == 0);
        }
        if (name == "total") {
            found_total = true;
            CHECK(sent_count == 11);
            CHECK(sent_bytes == 640 + (1u << 20));
            CHECK(recv_count == 12);
            CHECK(recv_bytes == 70000);
        }
    }
    CHECK(found_put);
    CHECK(found_total);
}

TEST_CASE("the text report of a process without traffic says so")
{
    const std::string text = slim::format_text_report(sample_process(), slim_traffic_t{});
    CHECK_THAT(text, Contains("no traffic passed through slim"));
    CHECK_THAT(text, !Contains("\n  am_short "));
}

TEST_CASE("JSON reports are appended one line per write")
{
    char dir_template[] = "/tmp/slim-unit-XXXXXX";
    REQUIRE(::mkdtemp(dir_template) != nullptr);
    const std::string path = std::string(dir_template) + "/report.json";
    slim::ReportTarget target;
    target.kind = slim::ReportTarget::Kind::json_file;
    target.path = path;

    slim::write_report(target, sample_process(), sample_traffic());
    slim::write_report(target, sample_process(), slim_traffic_t{});

    std::ifstream in(path);
    std::string first, second, extra;
    REQUIRE(std::getline(in, first));
    REQUIRE(std::getline(in, second));
    CHECK_FALSE(std::getline(in, extra));
    CHECK(parse_json(first).at("totals").at("sent").at("count").get<std::int64_t>() == 11);
    CHECK(parse_json(second).at("totals").at("sent").at("count").get<std::int64_t>() == 0);

    ::unlink(path.c_str());
    ::rmdir(dir_template);
}

TEST_CASE("an unwritable JSON report path is an error, not a crash")
{
    slim::ReportTarget target;
    target.kind = slim::ReportTarget::Kind::json_file;
    target.path = "/nonexistent-dir-slim/report.json";
    CHECK_THROWS_WITH(slim::write_report(target, sample_process(), slim_traffic_t{}),
                      Catch::Contains("/nonexistent-dir-slim/report.json") &&
                              Catch::Contains("No such file or directory"));
}

namespace {

slim_packing_stats_t sample_packing()
{
    slim_packing_stats_t p{};
    p.frames_sent     = 5;
    p.payload_bytes   = 80016;
    p.wire_bytes      = 40208;
    p.marked_bytes    = 80100;
    p.packed_bytes    = 79992;
    p.edge_bytes      = 8;
    p.missed_bytes    = 100;
    p.frames_received = 4;
    p.frames_rejected = 1;
    return p;
}

}  // namespace

TEST_CASE("the JSON report carries every packing counter")
{
    const Json j = parse_json(
            slim::format_json_report(sample_process(), sample_traffic(), sample_packing()));
    const Json& p = j.at("packing");
    CHECK(keys(p) == Strings{"frames_sent", "payload_bytes", "wire_bytes", "marked_bytes",
                             "packed_bytes", "edge_bytes", "missed_bytes", "frames_received",
                             "frames_rejected", "max_rel_error_bound"});
    CHECK(p.at("frames_sent").get<std::int64_t>() == 5);
    CHECK(p.at("wire_bytes").get<std::int64_t>() == 40208);
    CHECK(p.at("missed_bytes").get<std::int64_t>() == 100);
    CHECK(p.at("frames_rejected").get<std::int64_t>() == 1);
}

TEST_CASE("the text report shows packing only when something was marked or framed")
{
    CHECK_THAT(slim::format_text_report(sample_process(), sample_traffic()), !Contains("packing"));
    const std::string text =
            slim::format_text_report(sample_process(), sample_traffic(), sample_packing());
    CHECK_THAT(text, Contains("packing: 5 frames sent, 80016 bytes -> 40208 on the wire"));
    CHECK_THAT(text, Contains("ratio 0.502"));
    CHECK_THAT(text, Contains("missed 100"));
    CHECK_THAT(text, Contains("rejected 1"));
}

TEST_CASE("the error bound is null until something is packed, then the exact power of two")
{
    CHECK(parse_json(slim::format_json_report(sample_process(), sample_traffic(), sample_packing()))
                  .at("packing")
                  .at("max_rel_error_bound")
                  .is_null());
    // keep 4 bytes, truncated: 20 mantissa bits survive.
    const slim::ErrorBound bound{slim::guaranteed_bits({4, slim::pack::Rounding::truncate})};
    REQUIRE(bound.min_bits == 20);
    const Json j = parse_json(slim::format_json_report(sample_process(), sample_traffic(),
                                                       sample_packing(), nullptr, bound));
    CHECK(j.at("packing").at("max_rel_error_bound").get<double>() == std::ldexp(1.0, -20));
}

TEST_CASE("the text report states the error bound, rounded up, as a bound")
{
    const slim::ErrorBound bound{slim::guaranteed_bits({5, slim::pack::Rounding::nearest_even})};
    REQUIRE(bound.min_bits == 29);
    const std::string text = slim::format_text_report(sample_process(), sample_traffic(),
                                                      sample_packing(), nullptr, bound);
    // 2^-29 = 1.86e-09
    CHECK_THAT(text, Contains("max relative error <= 2^-29 (1.9e-09)"));
    CHECK_THAT(text, Contains("not a measurement"));
    CHECK_THAT(slim::format_text_report(sample_process(), sample_traffic(), sample_packing()),
               !Contains("max relative error"));
    CHECK(slim::text_error_bound({}) == "-");
    CHECK(slim::text_error_bound({4}) == "2^-4 (6.3e-02)");
}

TEST_CASE("swallowed errors add a line and a JSON field only when there were any")
{
    slim::RankReportData data;
    data.who     = sample_process();
    data.traffic = sample_traffic();
    CHECK_THAT(slim::format_text_report(data), !Contains("errors swallowed"));
    CHECK(!parse_json(slim::format_json_report(data)).contains("errors_swallowed"));
    // The field-by-field form is the same report.
    CHECK(slim::format_json_report(data) ==
          slim::format_json_report(sample_process(), sample_traffic()));

    data.errors_swallowed  = 3;
    const std::string text = slim::format_text_report(data);
    CHECK_THAT(text, Contains("  errors swallowed 3 (logged as they happened)\n"));
    CHECK(text.size() - text.rfind("errors swallowed") ==
          std::string("errors swallowed 3 (logged as they happened)\n").size());
    const Json j = parse_json(slim::format_json_report(data));
    CHECK(keys(j) == Strings{"schema", "rank", "host", "pid", "traffic", "totals", "packing",
                             "link", "errors_swallowed"});
    CHECK(j.at("errors_swallowed").get<std::uint64_t>() == 3);
}

// SPDX-License-Identifier: BSD-3-Clause
// slimlink-report's merge (src/tools/job_report.h): node reports of one job
// into one slimlink.job.v1 record. The inputs are the real node and rank
// records of tests/data/report-cg-2ranks.json with their hosts, jobs and
// energies changed, so that every sum can be checked by hand.
//
// The golden files tests/data/golden-job-*.json are the merges of
// tests/data/report-two-nodes.json and of report-two-hosts.json (a real
// two-host run); to write them anew after a deliberate change of the schema:
//   SLIM_WRITE_GOLDEN=1 tests/unit/slim-unit-tests "[job-report]"
#include "golden_file.h"
#include "tools/job_report.h"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>
#include <vector>

using Catch::Matchers::Contains;
using slim::tools::JobJson;
using slim::tools::JobMerge;
using slim::tools::JobReportError;
using slim::tools::MergeRequest;

namespace {

using slim_test::data_path;

// The records of report-cg-2ranks.json: rank 1, rank 0, the node.
std::vector<nlohmann::json> real_records()
{
    std::ifstream in(data_path("report-cg-2ranks.json"));
    REQUIRE(in.good());
    std::vector<nlohmann::json> out;
    std::string line;
    while (std::getline(in, line)) {
        out.push_back(nlohmann::json::parse(line));
    }
    REQUIRE(out.size() == 3);
    REQUIRE(out[2]["schema"] == "slimlink.node.v1");
    return out;
}

// A node report of `host` in `job`, with its port's energy and baseline
// (null: not measured) and its ranks' penalties and pids.
nlohmann::json node(const std::string& host, const std::string& job, nlohmann::json energy,
                    nlohmann::json baseline, std::vector<double> penalties, int first_pid)
{
    nlohmann::json n               = real_records()[2];
    n["host"]                      = host;
    n["job"]                       = job;
    n["totals"]["energy_joules"]   = energy;
    n["totals"]["baseline_joules"] = baseline;
    nlohmann::json ranks           = nlohmann::json::array();
    const nlohmann::json one       = n["ranks"][0];
    for (std::size_t i = 0; i < penalties.size(); ++i) {
        nlohmann::json r      = one;
        r["local_rank"]       = i;
        r["rank"]             = first_pid + static_cast<int>(i);
        r["pid"]              = first_pid + static_cast<int>(i);
        r["time_penalty_pct"] = penalties[i];
        ranks.push_back(r);
    }
    n["ranks"]          = ranks;
    n["local_size"]     = penalties.size();
    n["ranks_reported"] = penalties.size();
    return n;
}

nlohmann::json rank_line(const std::string& host, int pid, std::uint64_t marked)
{
    nlohmann::json r             = real_records()[0];
    r["host"]                    = host;
    r["pid"]                     = pid;
    r["rank"]                    = pid;
    r["packing"]["marked_bytes"] = marked;
    return r;
}

std::string lines(const std::vector<nlohmann::json>& records)
{
    std::string out;
    for (const auto& r : records) {
        out += r.dump() + "\n";
    }
    return out;
}

JobMerge read(const std::string& text, const std::string& name = "job.json")
{
    JobMerge m;
    std::istringstream in(text);
    m.read(in, name);
    return m;
}

std::string refusal(const std::string& text, const MergeRequest& request = {})
{
    try {
        read(text).merge(request);
    } catch (const JobReportError& e) {
        return e.what();
    }
    FAIL("the merge accepted it");
    return {};
}

}  // namespace

TEST_CASE("the job's energy and savings are sums over its ports, not means of percentages",
          "[job-report]")
{
    // 50 % saved on a small port and 10 % on a large one: 10/12 of the
    // baseline used, 16.67 % saved (the mean of the percentages would say 30).
    const JobJson job = read(lines({node("a", "k", 1.0, 2.0, {0.5, 1.5}, 100),
                                    node("b", "k", 9.0, 10.0, {0.25}, 200)}))
                                .merge({});
    const JobJson& t = job["totals"];
    CHECK(job["schema"] == "slimlink.job.v1");
    CHECK(job["job"] == "k");
    CHECK(t["nodes"] == 2);
    CHECK(t["energy_nodes"] == 2);
    CHECK(t["energy_joules"].get<double>() == Approx(10.0));
    CHECK(t["baseline_joules"].get<double>() == Approx(12.0));
    CHECK(t["energy_savings_pct"].get<double>() == Approx(16.6667));
    // The penalty over ranks: the worst, and the mean of the three.
    CHECK(t["time_penalty_pct_max"].get<double>() == Approx(1.5));
    CHECK(t["time_penalty_pct_mean"].get<double>() == Approx(0.75));
    CHECK(t["penalty_ranks"] == 3);
    CHECK(t["ranks_reported"] == 3);
    CHECK(job["nodes"][0]["host"] == "a");
    CHECK(job["nodes"][0]["energy_savings_pct"].get<double>() == Approx(50.0));
    CHECK(job["nodes"][1]["energy_savings_pct"].get<double>() == Approx(10.0));
    // Packing: the node totals added up (each node is the real one's).
    CHECK(t["packing"]["saved_bytes"] == 2 * 3353088);
    CHECK(t["packing"]["marked_bytes"].is_null());  // no rank line was read
    CHECK(t["cpu"].is_null());
    CHECK(job["expected_nodes"].is_null());
    CHECK(job["missing_nodes"].empty());
    CHECK(job["missing_ranks"].empty());
}

TEST_CASE("a port that measures no energy leaves the sums, and says so", "[job-report]")
{
    SECTION("one of two")
    {
        const JobJson t = read(lines({node("a", "k", 1.0, 2.0, {0.1}, 100),
                                      node("b", "k", nullptr, nullptr, {0.2}, 200)}))
                                  .merge({})["totals"];
        CHECK(t["energy_nodes"] == 1);
        CHECK(t["energy_joules"].get<double>() == Approx(1.0));
        CHECK(t["energy_savings_pct"].get<double>() == Approx(50.0));
    }
    SECTION("all of them")
    {
        const JobJson job = read(lines({node("b", "k", nullptr, nullptr, {0.2}, 200)})).merge({});
        CHECK(job["totals"]["energy_joules"].is_null());
        CHECK(job["totals"]["energy_savings_pct"].is_null());
        CHECK_THAT(slim::tools::summary_line(job, slim::tools::SummaryFormat::line),
                   Contains("link energy not measured"));
    }
}

TEST_CASE("expected hosts without a node report and ranks without numbers are listed",
          "[job-report]")
{
    nlohmann::json a   = node("a", "k", 1.0, 2.0, {0.1}, 100);
    a["local_size"]    = 2;
    a["ranks_missing"] = nlohmann::json::array(
            {{{"local_rank", 1}, {"rank", 7}, {"pid", 101}, {"reason", "died"}}});
    const std::string text =
            lines({a, rank_line("a", 100, 4096), rank_line("a", 555, 1), rank_line("c", 300, 1)});
    MergeRequest request;
    request.expected_nodes = std::vector<std::string>{"a", "b"};
    const JobJson job      = read(text).merge(request);
    CHECK(job["expected_nodes"] == JobJson({"a", "b"}));
    CHECK(job["missing_nodes"] == JobJson({"b"}));
    CHECK(job["unexpected_nodes"].empty());
    const JobJson& missing = job["missing_ranks"];
    REQUIRE(missing.size() == 3);
    CHECK(missing[0]["host"] == "a");
    CHECK(missing[0]["rank"] == 7);
    CHECK(missing[0]["reason"] == "died");
    // A rank line its host's node report does not name.
    CHECK(missing[1]["pid"] == 555);
    CHECK(missing[1]["reason"] == "not_in_node_report");
    // One of a host without a node report: the input holds this job alone.
    CHECK(missing[2]["host"] == "c");
    CHECK(missing[2]["reason"] == "no_node_report");
    CHECK(job["totals"]["ranks_missing"] == 3);
    CHECK(job["nodes"][0]["ranks_missing"].size() == 1);
    // The reported rank's line gives the node its marked bytes.
    CHECK(job["nodes"][0]["packing"]["marked_bytes"] == 4096);
    CHECK_THAT(slim::tools::summary_line(job, slim::tools::SummaryFormat::line),
               Contains("1 node (1 missing), 3 ranks missing"));
}

TEST_CASE("an expected host matches a node report's by its short name", "[job-report]")
{
    // A batch system's node names are short; a node may call itself by its
    // fully qualified name, and the other way round.
    const std::string text = lines(
            {node("n1.cluster", "k", 1.0, 2.0, {0.1}, 100), node("n2", "k", 1.0, 2.0, {0.1}, 200),
             node("n3.a", "k", 1.0, 2.0, {0.1}, 300), node("n3.b", "k", 1.0, 2.0, {0.1}, 400)});
    MergeRequest request;
    request.expected_nodes = std::vector<std::string>{"n1", "n2.cluster", "n3", "n4"};
    const JobJson job      = read(text).merge(request);
    // n3 is ambiguous (two node hosts of that short name): not matched.
    CHECK(job["missing_nodes"] == JobJson({"n3", "n4"}));
    CHECK(job["unexpected_nodes"] == JobJson({"n3.a", "n3.b"}));
}

TEST_CASE("a second node report of a host in a job is refused, naming both", "[job-report]")
{
    const nlohmann::json a    = node("a", "k", 1.0, 2.0, {0.1}, 100);
    const std::string message = refusal(lines({a, node("b", "k", 1.0, 2.0, {0.1}, 200), a}));
    CHECK_THAT(message, Contains("job.json:3"));
    CHECK_THAT(message, Contains("the first: job.json:1"));
    CHECK_THAT(message, Contains("host a"));

    SECTION("also when two keys merged as one job meet on a host")
    {
        MergeRequest request;
        request.jobs        = {"k", "l"};
        const std::string m = refusal(lines({a, node("a", "l", 1.0, 2.0, {0.1}, 300)}), request);
        CHECK_THAT(m, Contains("job.json:2"));
        CHECK_THAT(m, Contains("the first: job.json:1"));
    }
}

TEST_CASE("a malformed line is refused with its file and line", "[job-report]")
{
    const std::string good = lines({node("a", "k", 1.0, 2.0, {0.1}, 100)});
    SECTION("not JSON")
    {
        CHECK_THAT(refusal(good + "{\"schema\": \"slimlink.node.v1\", \n"),
                   Contains("job.json:2: not JSON"));
    }
    SECTION("no schema")
    {
        CHECK_THAT(refusal(good + "[1, 2]\n"),
                   Contains("job.json:2: not a slimlink report record"));
    }
    SECTION("a field of the wrong type, named by its path")
    {
        nlohmann::json bad        = node("b", "k", 1.0, 2.0, {0.1, 0.2}, 200);
        bad["ranks"][1]["pid"]    = "200";
        const std::string message = refusal(good + lines({bad}));
        CHECK_THAT(message, Contains("job.json:2: slimlink.node.v1 record: 'ranks[1].pid' is not "
                                     "an integer"));
    }
    SECTION("a missing field")
    {
        nlohmann::json bad = node("b", "k", 1.0, 2.0, {0.1}, 200);
        bad["totals"].erase("bytes_sent");
        CHECK_THAT(refusal(good + lines({bad})),
                   Contains("job.json:2: slimlink.node.v1 record: 'totals.bytes_sent' is missing"));
    }
    SECTION("a rank record without its packing")
    {
        nlohmann::json bad = rank_line("a", 100, 1);
        bad.erase("packing");
        CHECK_THAT(refusal(lines({bad}) + good),
                   Contains("job.json:1: slimlink.report.v1 record: 'packing.marked_bytes' is "
                            "missing"));
    }
    SECTION("a last line cut short")
    {
        const std::string cut = lines({node("b", "k", 1.0, 2.0, {0.1}, 200)});
        CHECK_THAT(refusal(good + cut.substr(0, cut.size() - 1)),
                   Contains("job.json:2: the last line has no newline"));
    }
    SECTION("records of other schemas are skipped, not refused")
    {
        const JobJson job = read(good + "{\"schema\":\"slimlink.other.v9\"}\n\n").merge({});
        CHECK(job["sources"]["files"][0]["other_schemas"] == 1);
        CHECK(job["sources"]["files"][0]["lines"] == 3);
    }
}

TEST_CASE("several jobs without --job are refused, listing their keys", "[job-report]")
{
    const std::string text = lines({node("a", "k1", 1.0, 2.0, {0.1}, 100), rank_line("a", 100, 8),
                                    node("a", "k2", 3.0, 4.0, {0.2}, 200), rank_line("a", 200, 16),
                                    rank_line("z", 900, 1)});
    const std::string message = refusal(text);
    CHECK_THAT(message, Contains("2 jobs"));
    CHECK_THAT(message, Contains("k1, k2"));
    CHECK_THAT(refusal(text, MergeRequest{{"k3"}, {}}), Contains("no node report of job k3"));

    SECTION("with --job, the other job's records are skipped and counted")
    {
        const JobJson job = read(text).merge(MergeRequest{{"k2"}, {}});
        CHECK(job["job"] == "k2");
        CHECK(job["totals"]["energy_joules"].get<double>() == Approx(3.0));
        CHECK(job["nodes"][0]["packing"]["marked_bytes"] == 16);
        // k1's node and rank line, and rank z's, which no host of k2 ran.
        CHECK(job["sources"]["lines_skipped_other_jobs"] == 3);
        CHECK(job["sources"]["other_jobs"] == JobJson({"k1"}));
        CHECK(job["missing_ranks"].empty());
    }
    SECTION("several keys merged as one job")
    {
        nlohmann::json b  = node("b", "k2", 3.0, 4.0, {0.2}, 200);
        const JobJson job = read(lines({node("a", "k1", 1.0, 2.0, {0.1}, 100), b}))
                                    .merge(MergeRequest{{"k1", "k2"}, {}});
        CHECK(job["job"] == "k1,k2");
        CHECK(job["totals"]["nodes"] == 2);
        CHECK(job["totals"]["energy_savings_pct"].get<double>() == Approx(100.0 * (1 - 4.0 / 6.0)));
    }
}

TEST_CASE("no node report at all is refused, saying where node reports come from", "[job-report]")
{
    CHECK_THAT(refusal(lines({rank_line("a", 1, 1)})), Contains("no node report"));
}

TEST_CASE("the summary is one line under 250 characters", "[job-report]")
{
    MergeRequest request;
    request.expected_nodes = std::vector<std::string>{"a", "b"};
    const JobJson job =
            read(lines({node("a", std::string(300, 'k'), 1.0, 2.0, {0.5}, 100)})).merge(request);
    for (const auto format :
         {slim::tools::SummaryFormat::line, slim::tools::SummaryFormat::comment}) {
        const std::string s = slim::tools::summary_line(job, format);
        CHECK(s.size() < 250);
        CHECK(s.find('\n') == std::string::npos);
    }
    const JobJson small =
            read(lines({node("a", "slurm-42.0", 1.0, 2.0, {0.5}, 100)})).merge(request);
    CHECK(slim::tools::summary_line(small, slim::tools::SummaryFormat::line) ==
          "slimlink job slurm-42.0: 1 node (1 missing), link energy 1.000 J of 2.000 J always-on, "
          "saved 50.0 %, penalty 0.50 % (worst rank), packing saved 3353088 bytes");
    CHECK(slim::tools::summary_line(small, slim::tools::SummaryFormat::comment) ==
          "slimlink job=slurm-42.0 nodes=1 nodes_missing=1 ranks_missing=0 link_J=1.000 "
          "always_on_J=2.000 saved_pct=50.0 penalty_max_pct=0.50 packing_saved_B=3353088");
}

namespace {

// Merges tests/data/`input` as `request` asks and compares the record with
// tests/data/`golden` (or writes it there under SLIM_WRITE_GOLDEN=1).
void check_job_golden(const std::string& input, const MergeRequest& request,
                      const std::string& golden_name)
{
    JobMerge m;
    m.read_file(data_path(input));
    JobJson job = m.merge(request);
    // The path read is the machine's: the golden file has the name alone.
    job["sources"]["files"][0]["path"] = input;
    for (auto& n : job["nodes"]) {
        std::string where = n["source"];
        n["source"]       = where.substr(where.rfind('/') + 1);
    }
    const std::string path = data_path(golden_name);
    const auto golden      = slim_test::golden_or_write(path, job.dump() + "\n");
    if (!golden) {
        return;
    }
    INFO("golden file " << path);
    CHECK(job == JobJson::parse(*golden));
}

}  // namespace

TEST_CASE("the merge of report-two-nodes.json keeps every field and value of the golden file",
          "[job-report][golden]")
{
    MergeRequest request;
    request.jobs           = {"hydra-8744-1872191", "hydra-9100-1872300"};
    request.expected_nodes = std::vector<std::string>{"vm", "node2", "node3"};
    check_job_golden("report-two-nodes.json", request, "golden-job-two-nodes.json");
}

TEST_CASE("the merge of a real two-host run keeps every field and value of the golden file",
          "[job-report][golden]")
{
    // scripts/two-host-bed (tests/mpi/two-host.test), one rank per host
    // under hydra: a key per host.
    MergeRequest request;
    request.jobs           = {"hydra-17994-1511777", "hydra-17995-1511777"};
    request.expected_nodes = std::vector<std::string>{"slimbed-t17863-a", "slimbed-t17863-b"};
    check_job_golden("report-two-hosts.json", request, "golden-job-two-hosts.json");
}

/* SPDX-License-Identifier: BSD-3-Clause */
// slimlink-report's merge: the node reports (slimlink.node.v1) of one job,
// read from the JSON-lines files UCX_SLIM_REPORT=path.json writes, and the
// rank reports (slimlink.report.v1) beside them, made into one record,
// slimlink.job.v1 (src/tools/job.schema.json; slimlink-report(1) documents
// every field). Also the one-line summary a batch system's job output gets.
//
// Reading keeps a few numbers per record, never the records themselves, so
// that a job of 1,000 nodes of 128 ranks (a few hundred MB of JSON) merges
// in time and memory linear in its size.
#pragma once

#include "base/error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <istream>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace slim::tools {

// Input slimlink-report refuses to merge: a malformed line (named by
// FILE:LINE), a second node report of a host, several jobs and no choice.
class JobReportError : public Error {
public:
    using Error::Error;
};

using JobJson = nlohmann::ordered_json;

// What slimlink-report merge was asked: the job's keys (empty: the only
// job in the input) and the hosts expected (none: not checked).
struct MergeRequest {
    std::vector<std::string> jobs;
    std::optional<std::vector<std::string>> expected_nodes;
};

class JobMerge {
public:
    // Reads the records of one JSON-lines stream; `name` stands for it in
    // messages and in `sources`. Blank lines are skipped; records of other
    // schemas are counted and skipped (later versions may add some). Throws
    // JobReportError naming name:line for a line that is not a JSON object
    // with a "schema", or a slimlink.report.v1 / slimlink.node.v1 record
    // without a field the merge reads; and for a second node report of the
    // same host and job.
    void read(std::istream& in, const std::string& name);
    // The same for a file by its path (JobReportError when unreadable).
    void read_file(const std::string& path);

    // The job keys of the node reports read, in the order first seen.
    std::vector<std::string> jobs() const;

    // The slimlink.job.v1 record. Throws JobReportError when no node report
    // was read, when a key asked for has none, or when no key was asked for
    // and there are several (the message lists them).
    JobJson merge(const MergeRequest& request) const;

    struct Rank {
        std::int64_t rank  = -1;
        std::int64_t local = -1;
        std::int64_t pid   = -1;
        bool link          = false;
        std::optional<double> penalty_pct;
    };
    struct Missing {
        std::int64_t local_rank = -1;
        std::optional<std::int64_t> rank, pid;
        std::string reason;
    };
    struct Node {
        std::string where;  // file:line
        std::string host, job, launcher;
        std::uint64_t local_size     = 0;
        std::uint64_t ranks_reported = 0;
        std::vector<Missing> missing;
        std::vector<Rank> ranks;
        JobJson port;  // port, backend, profile, lanes: null when not said
        std::optional<double> energy, baseline;
        std::optional<double> penalty_max, penalty_mean;
        JobJson time_at_width;
        std::uint64_t bytes_sent = 0, packed = 0, saved = 0, missed = 0;
        std::optional<double> error_bound;
        JobJson cpu;  // the CPU sections' sums, null without any
    };
    struct RankLine {
        std::string where;
        std::string host;
        std::int64_t rank = -1, pid = -1;
        std::uint64_t marked = 0;
    };
    struct Source {
        std::string name;
        std::uint64_t lines = 0, node_reports = 0, rank_reports = 0, other_schemas = 0;
    };

private:
    std::vector<Node> nodes_;
    std::vector<RankLine> rank_lines_;
    std::vector<Source> sources_;
    std::map<std::pair<std::string, std::string>, std::size_t> by_job_host_;
};

// The slimlink.job.v1 record as one line of text, for a job's output:
// "slimlink job KEY: N nodes (M missing), link energy E J of B J always-on,
// saved X %, penalty Y % (worst rank), packing saved Z bytes" (under 250
// characters, no newline). `comment`: the same as key=value words, shorter,
// for a batch system's comment field.
enum class SummaryFormat { line, comment };
std::string summary_line(const JobJson& job, SummaryFormat format);

// A slimlink.job.v1 record read back (slimlink-report summary): throws
// JobReportError naming `name` when it is not one.
JobJson read_job_record(std::istream& in, const std::string& name);

}  // namespace slim::tools

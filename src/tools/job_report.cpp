// SPDX-License-Identifier: BSD-3-Clause
#include "tools/job_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <set>
#include <unordered_map>

namespace slim::tools {

namespace {

using Json = nlohmann::json;

constexpr const char *node_schema = "slimlink.node.v1";
constexpr const char *rank_schema = "slimlink.report.v1";
constexpr const char *job_schema  = "slimlink.job.v1";

// The decimals the node report writes: joules to the microjoule,
// percentages to 4 decimals.
constexpr int joule_decimals = 6;
constexpr int pct_decimals   = 4;

// The summary is meant for a batch system's comment field; Slurm's
// AdminComment and a job's output line both take it whole below this.
constexpr std::size_t summary_max     = 249;
constexpr std::size_t summary_key_max = 64;

JobJson fixed(double v, int decimals)
{
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, v);
    const double r = std::stod(text);
    return r == 0.0 ? 0.0 : r;  // no -0
}

JobJson fixed(const std::optional<double>& v, int decimals)
{
    return v ? fixed(*v, decimals) : JobJson(nullptr);
}

JobJson optional_json(const std::optional<double>& v) { return v ? JobJson(*v) : JobJson(nullptr); }

// 100 (1 - energy/baseline), from sums: never a mean of percentages.
std::optional<double> savings_pct(double energy, double baseline)
{
    if (!(baseline > 0.0)) {
        return std::nullopt;
    }
    return 100.0 * (1.0 - energy / baseline);
}

// A record's fields, read with the record's place (file:line) and the
// field's path in every message: "FILE:LINE: slimlink.node.v1 record:
// 'ranks[3].pid' is not an integer".
class Record {
public:
    Record(const Json& j, const std::string& where, const char *schema, std::string prefix = {})
        : j_(j), where_(where), schema_(schema), prefix_(std::move(prefix))
    {}

    [[noreturn]] void bad(const std::string& path, const char *expected) const
    {
        const bool absent = at(path) == nullptr;
        throw JobReportError(where_ + ": " + schema_ + " record: '" + prefix_ + path + "' is " +
                             (absent ? "missing" : std::string("not ") + expected) +
                             "; not merging a malformed report");
    }

    // The value at a dotted path ("totals.bytes_sent"), or nullptr.
    const Json *at(const std::string& path) const
    {
        const Json *v     = &j_;
        std::size_t start = 0;
        while (start <= path.size()) {
            const std::size_t dot = std::min(path.find('.', start), path.size());
            if (!v->is_object()) {
                return nullptr;
            }
            const auto it = v->find(path.substr(start, dot - start));
            if (it == v->end()) {
                return nullptr;
            }
            v     = &*it;
            start = dot + 1;
        }
        return v;
    }

    const Json& object(const std::string& path) const
    {
        const Json *v = at(path);
        if (v == nullptr || !v->is_object()) {
            bad(path, "an object");
        }
        return *v;
    }
    const Json& array(const std::string& path) const
    {
        const Json *v = at(path);
        if (v == nullptr || !v->is_array()) {
            bad(path, "an array");
        }
        return *v;
    }
    std::string text(const std::string& path) const
    {
        const Json *v = at(path);
        if (v == nullptr || !v->is_string()) {
            bad(path, "a string");
        }
        return v->get<std::string>();
    }
    std::uint64_t count(const std::string& path) const
    {
        const Json *v = at(path);
        if (v == nullptr ||
            !(v->is_number_unsigned() || (v->is_number_integer() && v->get<std::int64_t>() >= 0))) {
            bad(path, "a non-negative integer");
        }
        return v->get<std::uint64_t>();
    }
    std::int64_t integer(const std::string& path) const
    {
        const Json *v = at(path);
        if (v == nullptr || !v->is_number_integer()) {
            bad(path, "an integer");
        }
        return v->get<std::int64_t>();
    }
    std::optional<std::int64_t> integer_or_null(const std::string& path) const
    {
        const Json *v = at(path);
        if (v != nullptr && v->is_null()) {
            return std::nullopt;
        }
        return integer(path);
    }
    bool boolean(const std::string& path) const
    {
        const Json *v = at(path);
        if (v == nullptr || !v->is_boolean()) {
            bad(path, "true or false");
        }
        return v->get<bool>();
    }
    std::optional<double> number_or_null(const std::string& path) const
    {
        const Json *v = at(path);
        if (v == nullptr || !(v->is_null() || v->is_number())) {
            bad(path, "a number or null");
        }
        return v->is_null() ? std::nullopt : std::optional<double>(v->get<double>());
    }
    // A number, or null when absent too (fields older reports lack).
    std::optional<double> number_if_any(const std::string& path) const
    {
        return at(path) == nullptr ? std::nullopt : number_or_null(path);
    }
    JobJson copy(const std::string& path) const { return JobJson::parse(object(path).dump()); }

    // The element `index` of the array at `path`, read the same way.
    Record element(const std::string& path, std::size_t index) const
    {
        const Json& e          = array(path)[index];
        const std::string name = prefix_ + path + "[" + std::to_string(index) + "]";
        if (!e.is_object()) {
            throw JobReportError(where_ + ": " + schema_ + " record: '" + name +
                                 "' is not an object; not merging a malformed report");
        }
        return Record(e, where_, schema_, name + ".");
    }

private:
    const Json& j_;
    const std::string& where_;
    const char *schema_;
    std::string prefix_;
};

JobMerge::Rank read_rank(const Record& r)
{
    JobMerge::Rank out;
    out.rank        = r.integer("rank");
    out.local       = r.integer("local_rank");
    out.pid         = r.integer("pid");
    out.link        = r.boolean("link");
    out.penalty_pct = r.number_or_null("time_penalty_pct");
    return out;
}

JobMerge::Missing read_missing(const Record& r)
{
    JobMerge::Missing out;
    out.local_rank = r.integer("local_rank");
    out.rank       = r.integer_or_null("rank");
    out.pid        = r.integer_or_null("pid");
    out.reason     = r.text("reason");
    return out;
}

// The CPU sections of a node report, summed as the job record gives them:
// the ranks' own side (totals.cpu) and the cores the service drove (cpu).
JobJson read_node_cpu(const Record& r)
{
    JobJson ranks = nullptr;
    if (r.at("totals.cpu") != nullptr) {
        JobJson planned = nullptr;
        if (const Json *live = r.at("totals.cpu.live"); live != nullptr && !live->is_null()) {
            planned = {{"baseline_joules",
                        optional_json(r.number_if_any("totals.cpu.live.baseline_joules"))},
                       {"energy_joules",
                        optional_json(r.number_if_any("totals.cpu.live.energy_joules"))},
                       {"saved_joules",
                        optional_json(r.number_if_any("totals.cpu.live.saved_joules"))}};
        }
        ranks = {{"ranks", r.count("totals.cpu.ranks")},
                 {"waits", r.count("totals.cpu.waits")},
                 {"wait_ns", r.count("totals.cpu.wait_ns")},
                 {"blocked_ns", r.count("totals.cpu.blocked_ns")},
                 {"planned", planned}};
    }
    JobJson cores = nullptr;
    if (const Json *cpu = r.at("cpu"); cpu != nullptr && !cpu->is_null()) {
        cores = {{"backend", r.text("cpu.backend")},
                 {"cores_mapped", r.count("cpu.cores_mapped")},
                 {"transitions", r.count("cpu.transitions")},
                 {"time_low_ns", r.count("cpu.time_low_ns")},
                 {"penalty_ns", optional_json(r.number_or_null("cpu.penalty_ns"))},
                 {"energy_joules", optional_json(r.number_or_null("cpu.energy_joules"))},
                 {"baseline_joules", optional_json(r.number_or_null("cpu.baseline_joules"))},
                 {"energy_savings_pct", optional_json(r.number_or_null("cpu.energy_savings_pct"))},
                 {"backend_failed", r.boolean("cpu.backend_failed")}};
    }
    if (ranks.is_null() && cores.is_null()) {
        return nullptr;
    }
    return {{"ranks", ranks}, {"cores", cores}};
}

JobMerge::Node read_node(const Json& j, const std::string& where)
{
    const Record r(j, where, node_schema);
    JobMerge::Node n;
    n.where          = where;
    n.host           = r.text("host");
    n.job            = r.text("job");
    n.launcher       = r.text("launcher");
    n.local_size     = r.count("local_size");
    n.ranks_reported = r.count("ranks_reported");
    for (std::size_t i = 0, size = r.array("ranks_missing").size(); i < size; ++i) {
        n.missing.push_back(read_missing(r.element("ranks_missing", i)));
    }
    const std::size_t ranks = r.array("ranks").size();
    n.ranks.reserve(ranks);
    for (std::size_t i = 0; i < ranks; ++i) {
        n.ranks.push_back(read_rank(r.element("ranks", i)));
    }
    n.energy        = r.number_or_null("totals.energy_joules");
    n.baseline      = r.number_or_null("totals.baseline_joules");
    n.penalty_max   = r.number_or_null("totals.time_penalty_pct_max");
    n.penalty_mean  = r.number_or_null("totals.time_penalty_pct_mean");
    n.time_at_width = r.copy("totals.time_at_width_ns");
    n.bytes_sent    = r.count("totals.bytes_sent");
    n.packed        = r.count("totals.packed_bytes");
    n.saved         = r.count("totals.saved_bytes");
    n.missed        = r.count("totals.missed_bytes");
    n.error_bound   = r.number_or_null("totals.max_rel_error_bound");
    // Older node reports have no port section; a service that did not
    // say writes null.
    if (const Json *port = r.at("port"); port != nullptr && !port->is_null()) {
        const Json *profile = r.at("port.profile");
        n.port              = {{"port", r.text("port.port")},
                               {"backend", r.text("port.backend")},
                               {"profile", profile == nullptr || profile->is_null()
                                                   ? JobJson(nullptr)
                                                   : JobJson(r.text("port.profile"))},
                               {"lanes", r.count("port.lanes")}};
    }
    n.cpu = read_node_cpu(r);
    return n;
}

JobMerge::RankLine read_rank_line(const Json& j, const std::string& where)
{
    const Record r(j, where, rank_schema);
    JobMerge::RankLine l;
    l.where  = where;
    l.host   = r.text("host");
    l.rank   = r.integer("rank");
    l.pid    = r.integer("pid");
    l.marked = r.count("packing.marked_bytes");
    return l;
}

std::string join(const std::vector<std::string>& items, const char *separator)
{
    std::string out;
    for (const std::string& s : items) {
        out += (out.empty() ? "" : separator) + s;
    }
    return out;
}

std::string host_pid(const std::string& host, std::int64_t pid)
{
    return host + '\n' + std::to_string(pid);
}

// A rank line's place among the node reports: the node (index) and whether
// that node reported the rank or listed it missing.
struct Place {
    std::size_t node = 0;
    bool reported    = false;
};

JobJson missing_rank(const std::string& host, const JobMerge::Missing& m)
{
    return {{"host", host},
            {"rank", m.rank ? JobJson(*m.rank) : JobJson(nullptr)},
            {"local_rank", m.local_rank},
            {"pid", m.pid ? JobJson(*m.pid) : JobJson(nullptr)},
            {"reason", m.reason}};
}

struct Sums {
    std::uint64_t bytes_sent = 0, packed = 0, saved = 0, missed = 0;
    std::optional<std::uint64_t> marked;
    std::optional<double> error_bound;

    void add_bound(const std::optional<double>& b)
    {
        if (b) {
            error_bound = error_bound ? std::max(*error_bound, *b) : *b;
        }
    }
    JobJson json() const
    {
        return {{"bytes_sent", bytes_sent},
                {"marked_bytes", marked ? JobJson(*marked) : JobJson(nullptr)},
                {"packed_bytes", packed},
                {"saved_bytes", saved},
                {"missed_bytes", missed},
                {"max_rel_error_bound", optional_json(error_bound)}};
    }
};

std::optional<double> json_number(const JobJson& j, const char *key)
{
    if (!j.is_object()) {
        return std::nullopt;
    }
    const auto it = j.find(key);
    return it == j.end() || !it->is_number() ? std::nullopt
                                             : std::optional<double>(it->get<double>());
}

std::string short_name(const std::string& host) { return host.substr(0, host.find('.')); }

// The expected hosts against the job's node reports: a host matches by its
// name, else by its name up to the first dot when exactly one node host not
// matched yet has that short name (a batch system names nodes n001, a node
// may call itself n001.cluster). Returns the node hosts matched; `missing`
// gets the expected hosts that match none.
std::set<std::string> match_hosts(const std::vector<std::string>& expected,
                                  const std::map<std::string, std::size_t>& hosts,
                                  std::vector<std::string>& missing)
{
    std::set<std::string> matched;
    std::vector<std::string> unmatched;
    for (const std::string& h : expected) {
        if (hosts.count(h) != 0) {
            matched.insert(h);
        } else {
            unmatched.push_back(h);
        }
    }
    std::multimap<std::string, std::string> by_short;
    if (!unmatched.empty()) {
        for (const auto& [host, i] : hosts) {
            if (matched.count(host) == 0) {
                by_short.emplace(short_name(host), host);
            }
        }
    }
    for (const std::string& h : unmatched) {
        const auto [first, last] = by_short.equal_range(short_name(h));
        if (first != last && std::next(first) == last && matched.insert(first->second).second) {
            continue;
        }
        missing.push_back(h);
    }
    return matched;
}

}  // namespace

void JobMerge::read(std::istream& in, const std::string& name)
{
    Source source;
    source.name = name;
    std::string line;
    std::uint64_t number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (line.find_first_not_of(" \t\r") == std::string::npos) {
            continue;
        }
        const std::string where = name + ":" + std::to_string(number);
        if (in.eof()) {
            // A line without its newline: a report still being written,
            // or a file cut short.
            throw JobReportError(where + ": the last line has no newline (a report cut short, or "
                                         "still being written); not merging a partial file");
        }
        Json j = Json::parse(line, nullptr, false);
        if (j.is_discarded()) {
            throw JobReportError(where + ": not JSON; not merging a malformed report");
        }
        const Json *schema = j.is_object() && j.contains("schema") ? &j["schema"] : nullptr;
        if (schema == nullptr || !schema->is_string()) {
            throw JobReportError(where + ": not a slimlink report record (no \"schema\" string)");
        }
        const std::string& s = schema->get_ref<const std::string&>();
        if (s == node_schema) {
            Node n        = read_node(j, where);
            const auto at = by_job_host_.emplace(std::make_pair(n.job, n.host), nodes_.size());
            if (!at.second) {
                throw JobReportError(where + ": a second node report for host " + n.host +
                                     " of job " + n.job +
                                     " (the first: " + nodes_[at.first->second].where + ")");
            }
            nodes_.push_back(std::move(n));
            ++source.node_reports;
        } else if (s == rank_schema) {
            rank_lines_.push_back(read_rank_line(j, where));
            ++source.rank_reports;
        } else {
            ++source.other_schemas;
        }
    }
    if (in.bad()) {
        throw JobReportError(name + ": read error after line " + std::to_string(number));
    }
    source.lines = number;
    sources_.push_back(std::move(source));
}

void JobMerge::read_file(const std::string& path)
{
    std::ifstream in(path);
    if (!in) {
        throw JobReportError(path + ": cannot open it for reading");
    }
    read(in, path);
}

std::vector<std::string> JobMerge::jobs() const
{
    std::vector<std::string> keys;
    std::set<std::string> seen;
    for (const Node& n : nodes_) {
        if (seen.insert(n.job).second) {
            keys.push_back(n.job);
        }
    }
    return keys;
}

JobJson JobMerge::merge(const MergeRequest& request) const
{
    const std::vector<std::string> present = jobs();
    if (present.empty()) {
        throw JobReportError("no node report (" + std::string(node_schema) +
                             ") in the input: node reports come from a node service "
                             "(UCX_SLIM_SERVICE, slimlink-run starts one)");
    }
    std::vector<std::string> keys = request.jobs;
    if (keys.empty()) {
        if (present.size() > 1) {
            throw JobReportError(
                    "node reports of " + std::to_string(present.size()) +
                    " jobs in the input; choose one with --job KEY: " + join(present, ", "));
        }
        keys = present;
    }
    const std::set<std::string> selected(keys.begin(), keys.end());
    for (const std::string& k : keys) {
        if (std::find(present.begin(), present.end(), k) == present.end()) {
            throw JobReportError("--job: no node report of job " + k +
                                 " in the input; its jobs: " + join(present, ", "));
        }
    }

    // The job's nodes, by host; a host twice (two keys merged) is refused
    // as a duplicate would be.
    std::vector<std::size_t> mine;
    std::map<std::string, std::size_t> host_node;
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        if (selected.count(nodes_[i].job) == 0) {
            continue;
        }
        const auto at = host_node.emplace(nodes_[i].host, i);
        if (!at.second) {
            throw JobReportError(nodes_[i].where + ": a second node report for host " +
                                 nodes_[i].host + " (the first: " + nodes_[at.first->second].where +
                                 ")");
        }
        mine.push_back(i);
    }
    std::sort(mine.begin(), mine.end(),
              [&](std::size_t a, std::size_t b) { return nodes_[a].host < nodes_[b].host; });

    // Every rank any node report names, by host and pid.
    std::unordered_map<std::string, Place> places;
    places.reserve(rank_lines_.size() * 2);
    for (std::size_t i = 0; i < nodes_.size(); ++i) {
        for (const Rank& r : nodes_[i].ranks) {
            places[host_pid(nodes_[i].host, r.pid)] = {i, true};
        }
        for (const Missing& m : nodes_[i].missing) {
            if (m.pid) {
                places[host_pid(nodes_[i].host, *m.pid)] = {i, false};
            }
        }
    }
    std::set<std::string> job_hosts;
    for (const auto& [host, i] : host_node) {
        job_hosts.insert(host);
    }
    if (request.expected_nodes) {
        job_hosts.insert(request.expected_nodes->begin(), request.expected_nodes->end());
    }

    // Rank lines: marked bytes to their node; those no node report names
    // are missing ranks of this job when their host is one of its hosts (or
    // the input holds this job alone), else another job's.
    std::vector<std::optional<std::uint64_t>> marked(nodes_.size());
    std::map<std::string, std::string> line_of;  // host,pid -> where
    std::vector<const RankLine *> unreported;
    std::uint64_t skipped = 0;
    for (const Node& n : nodes_) {
        skipped += selected.count(n.job) == 0 ? 1 : 0;
    }
    for (const RankLine& l : rank_lines_) {
        const std::string key = host_pid(l.host, l.pid);
        const auto place      = places.find(key);
        if (place != places.end()) {
            const Node& n = nodes_[place->second.node];
            if (selected.count(n.job) == 0) {
                ++skipped;
                continue;
            }
            const auto first = line_of.emplace(key, l.where);
            if (!first.second) {
                throw JobReportError(l.where + ": a second rank report for pid " +
                                     std::to_string(l.pid) + " on host " + l.host +
                                     " (the first: " + first.first->second + ")");
            }
            if (place->second.reported) {
                auto& m = marked[place->second.node];
                m       = m.value_or(0) + l.marked;
            }
            continue;
        }
        if (job_hosts.count(l.host) == 0 && present.size() > 1) {
            ++skipped;
            continue;
        }
        unreported.push_back(&l);
    }
    std::sort(unreported.begin(), unreported.end(), [](const RankLine *a, const RankLine *b) {
        return std::tie(a->host, a->rank, a->pid) < std::tie(b->host, b->rank, b->pid);
    });

    JobJson nodes         = JobJson::array();
    JobJson missing_ranks = JobJson::array();
    Sums packing;
    double energy = 0.0, baseline = 0.0;
    std::uint64_t energy_nodes = 0, ranks_reported = 0;
    std::optional<double> penalty_max;
    double penalty_sum          = 0.0;
    std::uint64_t penalty_ranks = 0;
    bool any_cpu                = false;
    double cpu_energy = 0.0, cpu_baseline = 0.0;
    std::uint64_t cpu_energy_nodes = 0, cpu_nodes = 0, cpu_waits = 0, cpu_wait_ns = 0;
    std::string launcher;
    for (const std::size_t i : mine) {
        const Node& n = nodes_[i];
        if (launcher.empty()) {
            launcher = n.launcher;
        }
        Sums p;
        p.bytes_sent = n.bytes_sent;
        p.packed     = n.packed;
        p.saved      = n.saved;
        p.missed     = n.missed;
        p.marked     = marked[i];
        p.add_bound(n.error_bound);
        packing.bytes_sent += p.bytes_sent;
        packing.packed += p.packed;
        packing.saved += p.saved;
        packing.missed += p.missed;
        if (p.marked) {
            packing.marked = packing.marked.value_or(0) + *p.marked;
        }
        packing.add_bound(p.error_bound);
        if (n.energy && n.baseline) {
            energy += *n.energy;
            baseline += *n.baseline;
            ++energy_nodes;
        }
        for (const Rank& r : n.ranks) {
            if (r.penalty_pct) {
                penalty_max = penalty_max ? std::max(*penalty_max, *r.penalty_pct) : *r.penalty_pct;
                penalty_sum += *r.penalty_pct;
                ++penalty_ranks;
            }
        }
        ranks_reported += n.ranks_reported;
        JobJson node_missing = JobJson::array();
        for (const Missing& m : n.missing) {
            missing_ranks.push_back(missing_rank(n.host, m));
            node_missing.push_back(missing_rank(n.host, m));
            node_missing.back().erase("host");
        }
        if (!n.cpu.is_null()) {
            any_cpu = true;
            if (const JobJson& cores = n.cpu["cores"]; !cores.is_null()) {
                ++cpu_nodes;
                const auto e = json_number(cores, "energy_joules");
                const auto b = json_number(cores, "baseline_joules");
                if (e && b) {
                    cpu_energy += *e;
                    cpu_baseline += *b;
                    ++cpu_energy_nodes;
                }
            }
            if (const JobJson& ranks = n.cpu["ranks"]; !ranks.is_null()) {
                cpu_waits += ranks["waits"].get<std::uint64_t>();
                cpu_wait_ns += ranks["wait_ns"].get<std::uint64_t>();
            }
        }
        nodes.push_back({
                {"host", n.host},
                {"job", n.job},
                {"source", n.where},
                {"port", n.port},
                {"local_size", n.local_size},
                {"ranks_reported", n.ranks_reported},
                {"ranks_missing", node_missing},
                {"energy_joules", fixed(n.energy, joule_decimals)},
                {"baseline_joules", fixed(n.baseline, joule_decimals)},
                {"energy_savings_pct",
                 fixed(n.energy && n.baseline ? savings_pct(*n.energy, *n.baseline) : std::nullopt,
                       pct_decimals)},
                {"time_penalty_pct_max", fixed(n.penalty_max, pct_decimals)},
                {"time_penalty_pct_mean", fixed(n.penalty_mean, pct_decimals)},
                {"time_at_width_ns", n.time_at_width},
                {"packing", p.json()},
                {"cpu", n.cpu},
        });
    }
    for (const RankLine *l : unreported) {
        missing_ranks.push_back({{"host", l->host},
                                 {"rank", l->rank},
                                 {"local_rank", nullptr},
                                 {"pid", l->pid},
                                 {"reason", host_node.count(l->host) != 0 ? "not_in_node_report"
                                                                          : "no_node_report"}});
    }

    JobJson missing_nodes = JobJson::array();
    JobJson expected      = nullptr;
    JobJson unexpected    = JobJson::array();
    if (request.expected_nodes) {
        expected = *request.expected_nodes;
        std::vector<std::string> missing;
        const std::set<std::string> matched =
                match_hosts(*request.expected_nodes, host_node, missing);
        for (const std::string& h : missing) {
            missing_nodes.push_back(h);
        }
        for (const auto& [host, i] : host_node) {
            if (matched.count(host) == 0) {
                unexpected.push_back(host);
            }
        }
    }

    JobJson cpu = nullptr;
    if (any_cpu) {
        const bool measured = cpu_energy_nodes > 0;
        cpu                 = {{"nodes", cpu_nodes},
                               {"energy_nodes", cpu_energy_nodes},
                               {"energy_joules", measured ? fixed(cpu_energy, joule_decimals) : JobJson(nullptr)},
                               {"baseline_joules",
                measured ? fixed(cpu_baseline, joule_decimals) : JobJson(nullptr)},
                               {"energy_savings_pct",
                                fixed(measured ? savings_pct(cpu_energy, cpu_baseline) : std::nullopt,
                                      pct_decimals)},
                               {"waits", cpu_waits},
                               {"wait_ns", cpu_wait_ns}};
    }
    const bool measured = energy_nodes > 0;
    JobJson totals      = {
                 {"nodes", mine.size()},
                 {"ranks_reported", ranks_reported},
                 {"ranks_missing", missing_ranks.size()},
                 {"energy_nodes", energy_nodes},
                 {"energy_joules", measured ? fixed(energy, joule_decimals) : JobJson(nullptr)},
                 {"baseline_joules", measured ? fixed(baseline, joule_decimals) : JobJson(nullptr)},
                 {"energy_savings_pct",
                  fixed(measured ? savings_pct(energy, baseline) : std::nullopt, pct_decimals)},
                 {"penalty_ranks", penalty_ranks},
                 {"time_penalty_pct_max", fixed(penalty_max, pct_decimals)},
                 {"time_penalty_pct_mean",
                  fixed(penalty_ranks > 0 ? std::optional<double>(penalty_sum / penalty_ranks)
                                          : std::nullopt,
                        pct_decimals)},
                 {"packing", packing.json()},
                 {"cpu", cpu},
    };

    JobJson files = JobJson::array();
    for (const Source& s : sources_) {
        files.push_back({{"path", s.name},
                         {"lines", s.lines},
                         {"node_reports", s.node_reports},
                         {"rank_reports", s.rank_reports},
                         {"other_schemas", s.other_schemas}});
    }
    JobJson other_jobs = JobJson::array();
    for (const std::string& k : present) {
        if (selected.count(k) == 0) {
            other_jobs.push_back(k);
        }
    }
    return {{"schema", job_schema},
            {"job", join(keys, ",")},
            {"launcher", launcher},
            {"expected_nodes", expected},
            {"nodes", nodes},
            {"totals", totals},
            {"missing_nodes", missing_nodes},
            {"unexpected_nodes", unexpected},
            {"missing_ranks", missing_ranks},
            {"sources",
             {{"files", files},
              {"lines_skipped_other_jobs", skipped},
              {"other_jobs", other_jobs}}}};
}

namespace {

std::string number(const JobJson& v, const char *format)
{
    if (!v.is_number()) {
        return "-";
    }
    char text[64];
    std::snprintf(text, sizeof text, format, v.get<double>());
    return text;
}

// A key longer than the summary can hold is cut, with "..." to say so.
std::string short_key(const JobJson& job)
{
    std::string key = job["job"].get<std::string>();
    if (key.size() > summary_key_max) {
        key = key.substr(0, summary_key_max - 3) + "...";
    }
    for (char& c : key) {
        if (c == '\n' || c == '\r' || c == '\t') {
            c = ' ';
        }
    }
    return key;
}

}  // namespace

std::string summary_line(const JobJson& job, SummaryFormat format)
{
    const JobJson& t                  = job["totals"];
    const std::size_t nodes           = t["nodes"].get<std::size_t>();
    const bool expected               = !job["expected_nodes"].is_null();
    const std::size_t missing         = job["missing_nodes"].size();
    const std::uint64_t ranks_missing = t["ranks_missing"].get<std::uint64_t>();
    const bool measured               = t["energy_joules"].is_number();
    const std::uint64_t saved_bytes   = t["packing"]["saved_bytes"].get<std::uint64_t>();
    std::string line;
    if (format == SummaryFormat::comment) {
        line = "slimlink job=" + short_key(job) + " nodes=" + std::to_string(nodes) +
               " nodes_missing=" + (expected ? std::to_string(missing) : "-") +
               " ranks_missing=" + std::to_string(ranks_missing) +
               " link_J=" + number(t["energy_joules"], "%.3f") +
               " always_on_J=" + number(t["baseline_joules"], "%.3f") +
               " saved_pct=" + number(t["energy_savings_pct"], "%.1f") +
               " penalty_max_pct=" + number(t["time_penalty_pct_max"], "%.2f") +
               " packing_saved_B=" + std::to_string(saved_bytes);
    } else {
        line = "slimlink job " + short_key(job) + ": " + std::to_string(nodes) +
               (nodes == 1 ? " node" : " nodes") +
               (expected ? " (" + std::to_string(missing) + " missing)" : "") +
               (ranks_missing > 0 ? ", " + std::to_string(ranks_missing) +
                                            (ranks_missing == 1 ? " rank" : " ranks") + " missing"
                                  : "") +
               (measured ? ", link energy " + number(t["energy_joules"], "%.3f") + " J of " +
                                   number(t["baseline_joules"], "%.3f") + " J always-on, saved " +
                                   number(t["energy_savings_pct"], "%.1f") + " %"
                         : ", link energy not measured") +
               ", penalty " + number(t["time_penalty_pct_max"], "%.2f") + " % (worst rank)" +
               ", packing saved " + std::to_string(saved_bytes) + " bytes";
    }
    if (line.size() > summary_max) {
        line.resize(summary_max);
    }
    return line;
}

JobJson read_job_record(std::istream& in, const std::string& name)
{
    const std::string text(std::istreambuf_iterator<char>(in), {});
    JobJson j = JobJson::parse(text, nullptr, false);
    if (j.is_discarded()) {
        // JSON lines of the ranks and nodes are the usual mistake: say so.
        const Json first = Json::parse(text.substr(0, text.find('\n')), nullptr, false);
        if (first.is_object() && first.contains("schema") && first["schema"].is_string()) {
            throw JobReportError(name + ": not a " + std::string(job_schema) + " record but " +
                                 first["schema"].get<std::string>() +
                                 " lines (slimlink-report merge makes them one record)");
        }
        throw JobReportError(name + ": not JSON (a " + std::string(job_schema) +
                             " record is one JSON object)");
    }
    if (!j.is_object() || j.value("schema", std::string()) != job_schema) {
        throw JobReportError(name + ": not a " + std::string(job_schema) +
                             " record (slimlink-report merge writes one)");
    }
    const Json plain = Json::parse(j.dump());
    const Record r(plain, name, job_schema);
    r.text("job");
    r.count("totals.nodes");
    r.count("totals.ranks_missing");
    r.number_or_null("totals.energy_joules");
    r.number_or_null("totals.baseline_joules");
    r.number_or_null("totals.energy_savings_pct");
    r.number_or_null("totals.time_penalty_pct_max");
    r.count("totals.packing.saved_bytes");
    r.array("missing_nodes");
    if (const Json *e = r.at("expected_nodes"); e == nullptr || !(e->is_null() || e->is_array())) {
        r.bad("expected_nodes", "an array or null");
    }
    return j;
}

}  // namespace slim::tools

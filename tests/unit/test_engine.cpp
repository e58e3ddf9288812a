// SPDX-License-Identifier: BSD-3-Clause
// The Engine through the C API the module uses (slim_core.h), each scenario
// in a fresh child process with a controlled environment.
#include "engine.h"
#include "json_check.h"
#include "slim_core.h"
#include "slimlink.h"
#include "traffic_monitor.h"

#include <catch2/catch.hpp>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

using Catch::Matchers::Contains;

// ------------------------------------------------------------ child side

namespace {

// As the module's slim_log_line() does.
__attribute__((format(printf, 2, 3))) void module_log(slim_log_level_t level, const char *format,
                                                      ...)
{
    if (!slim_core_log_enabled(level)) {
        return;
    }
    va_list args;
    va_start(args, format);
    slim_core_vlog(level, format, args);
    va_end(args);
}

}  // namespace

int slim_unit_child_main(const char *scenario)
{
    const std::string name{scenario};
    if (name == "init-twice") {
        const slim_status_t first  = slim_core_init();
        const slim_status_t second = slim_core_init();
        std::printf("status %d %d\n", first, second);
        return 0;
    }
    if (name == "traffic-then-exit" || name == "traffic-report-now") {
        slim::process_traffic().record(SLIM_OP_AM_SHORT, SLIM_DIR_SEND,
                                       8);  // before init: still counted
        if (slim_core_init() != SLIM_OK) {
            return 3;
        }
        slim::process_traffic().record(SLIM_OP_AM_ANY, SLIM_DIR_RECV, 100);
        slim::process_traffic().record(SLIM_OP_AM_ANY, SLIM_DIR_RECV, 28);
        if (name == "traffic-report-now") {
            slim_core_report();
            slim_core_report();
            slim::process_traffic().record(SLIM_OP_PUT, SLIM_DIR_SEND,
                                           1);  // after the report: not in it
        }
        std::printf("app output\n");  // buffered: must precede the report
        return 0;                     // exit() runs the report hook
    }
    if (name == "mark-by-label") {
        // Statuses of marking three labels, then how many regions exist.
        static double buffer[64];
        const int halo       = slim_mark(buffer, 16 * sizeof(double), "halo");
        const int ghost      = slim_mark(buffer + 16, 16 * sizeof(double), "ghost");
        const int other      = slim_mark(buffer + 32, 16 * sizeof(double), "other");
        slim::Engine *engine = slim::Engine::get();
        std::printf("status %d %d %d regions %zu\n", halo, ghost, other,
                    engine != nullptr ? engine->regions().size() : 0);
        if (engine != nullptr) {
            slim::pack::MarkedRun runs[4];
            const std::size_t n = engine->regions().find(buffer, sizeof buffer, runs, 4);
            for (std::size_t i = 0; i < n && i < 4; ++i) {
                std::printf("run +%zu keep %d %s\n",
                            static_cast<std::size_t>(runs[i].begin -
                                                     reinterpret_cast<std::uintptr_t>(buffer)),
                            runs[i].precision.keep_bytes,
                            runs[i].precision.mode == slim::pack::Rounding::truncate ? "truncate"
                                                                                     : "round");
            }
        }
        return 0;
    }
    if (name == "recorders") {
        // Two interfaces' recorders and the shared path; one closes early.
        if (slim_core_init() != SLIM_OK) {
            return 3;
        }
        slim_core_tally_t ta{}, tb{}, tn{};
        slim_core_recorder_t *a = slim_core_recorder_open(&ta);
        slim_core_recorder_t *b = slim_core_recorder_open(&tb);
        if (a == nullptr || b == nullptr) {
            return 4;
        }
        // Tallies handed over per progress round, as the module does; one
        // that no recorder takes goes to the process's shared log.
        for (int i = 0; i < 3; ++i) {
            slim_core_tally_op(&ta, SLIM_OP_AM_SHORT, SLIM_DIR_SEND, 2, 8, 8, 1);
        }
        slim_traffic_t before{};
        slim_traffic_get(&before);
        if (before.op[SLIM_OP_AM_SHORT][SLIM_DIR_SEND].count != 3) {
            return 6;  // what a tally holds counts before it is handed over
        }
        slim_core_tally_flush(a, &ta);
        slim_core_tally_op(&tb, SLIM_OP_AM_ANY, SLIM_DIR_RECV, 2, 100, 100, 0);
        slim_core_tally_flush(b, &tb);
        slim_core_recorder_close(a);  // its counts and records stay
        slim_core_tally_op(&tb, SLIM_OP_AM_ANY, SLIM_DIR_RECV, 2, 100, 100, 0);
        slim_core_tally_flush(b, &tb);
        slim_core_tally_op(&tn, SLIM_OP_GET, SLIM_DIR_RECV, 0, 64, 64, 1);
        slim_core_tally_flush(nullptr, &tn);
        if (slim_core_tally_pending(&ta) || slim_core_tally_pending(&tb) ||
            slim_core_tally_pending(&tn) || tn.count[SLIM_OP_GET][SLIM_DIR_RECV] != 0) {
            return 5;  // a handed-over tally must be empty
        }
        slim_core_traffic(SLIM_OP_PUT, SLIM_DIR_SEND, 0, 4096, 4096, 1);
        slim_traffic_t t{};
        slim_traffic_get(&t);
        std::printf("short %llu %llu any %llu %llu put %llu get %llu\n",
                    static_cast<unsigned long long>(t.op[SLIM_OP_AM_SHORT][SLIM_DIR_SEND].count),
                    static_cast<unsigned long long>(t.op[SLIM_OP_AM_SHORT][SLIM_DIR_SEND].bytes),
                    static_cast<unsigned long long>(t.op[SLIM_OP_AM_ANY][SLIM_DIR_RECV].count),
                    static_cast<unsigned long long>(t.op[SLIM_OP_AM_ANY][SLIM_DIR_RECV].bytes),
                    static_cast<unsigned long long>(t.op[SLIM_OP_PUT][SLIM_DIR_SEND].count),
                    static_cast<unsigned long long>(t.op[SLIM_OP_GET][SLIM_DIR_RECV].count));
        slim_core_recorder_close(b);
        return 0;
    }
    if (name == "module-log") {
        // The module's lines (slim.h's slim_warn and co.) before and after
        // the configuration is parsed.
        std::printf("debug before init %d\n", slim_core_log_enabled(SLIM_LOG_DEBUG));
        module_log(SLIM_LOG_WARN, "before init %d", 1);
        slim_core_init();
        std::printf("debug after init %d\n", slim_core_log_enabled(SLIM_LOG_DEBUG));
        module_log(SLIM_LOG_DEBUG, "a debug line %s", "x");
        module_log(SLIM_LOG_ERROR, "an error line %u", 2u);
        return 0;
    }
    if (name == "report-without-init") {
        slim_core_report();
        return 0;
    }
    std::fprintf(stderr, "unknown scenario %s\n", scenario);
    return 99;
}

// ------------------------------------------------------------ parent side

namespace {

struct ChildResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

std::string slurp(const std::string& path)
{
    std::ifstream in(path);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

class TempDir {
public:
    TempDir()
    {
        char tmpl[] = "/tmp/slim-engine-XXXXXX";
        REQUIRE(::mkdtemp(tmpl) != nullptr);
        path_ = tmpl;
    }
    ~TempDir() { std::system(("rm -rf '" + path_ + "'").c_str()); }
    const std::string& path() const { return path_; }

private:
    std::string path_;
};

// Runs this binary with SLIM_UNIT_CHILD=scenario, without any UCX_SLIM_* or
// launcher rank variable from our own environment, plus `env` (and
// UCX_SLIM_SERVICE=off unless `env` says otherwise).
ChildResult run_child(const std::string& scenario, const std::map<std::string, std::string>& env)
{
    const TempDir tmp;
    std::vector<std::string> vars;
    for (char **e = environ; *e != nullptr; ++e) {
        const std::string v{*e};
        const bool ours = v.rfind("UCX_SLIM_", 0) == 0 || v.rfind("PMI_RANK=", 0) == 0 ||
                          v.rfind("OMPI_COMM_WORLD_RANK=", 0) == 0 ||
                          v.rfind("PMIX_RANK=", 0) == 0 || v.rfind("SLURM_PROCID=", 0) == 0 ||
                          v.rfind("SLIM_UNIT_CHILD=", 0) == 0;
        if (!ours) {
            vars.push_back(v);
        }
    }
    vars.push_back("SLIM_UNIT_CHILD=" + scenario);
    // A node service that another job left running on this machine would
    // take the child's link, and its node report lands in the child's
    // report file: these tests are about one process alone.
    if (env.count("UCX_SLIM_SERVICE") == 0) {
        vars.push_back("UCX_SLIM_SERVICE=off");
    }
    for (const auto& [k, v] : env) {
        vars.push_back(k + "=" + v);
    }
    std::vector<char *> envp;
    for (std::string& v : vars) {
        envp.push_back(v.data());
    }
    envp.push_back(nullptr);

    const std::string out_path = tmp.path() + "/out", err_path = tmp.path() + "/err";
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const int out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        const int err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (out < 0 || err < 0 || ::dup2(out, 1) < 0 || ::dup2(err, 2) < 0) {
            ::_exit(126);
        }
        char *argv[] = {const_cast<char *>("slim-unit-tests"), nullptr};
        ::execve("/proc/self/exe", argv, envp.data());
        ::_exit(127);
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    ChildResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out       = slurp(out_path);
    r.err       = slurp(err_path);
    return r;
}

std::size_t occurrences(const std::string& haystack, const std::string& needle)
{
    std::size_t n = 0;
    for (std::size_t at = haystack.find(needle); at != std::string::npos;
         at             = haystack.find(needle, at + 1)) {
        ++n;
    }
    return n;
}

// `out` without the lines UCX's logger writes for a refused value.
std::string without_ucx_errors(const std::string& out)
{
    std::string kept, line;
    std::istringstream in(out);
    while (std::getline(in, line)) {
        if (line.find(" UCX  ERROR Invalid value for ") == std::string::npos) {
            kept += line + "\n";
        }
    }
    return kept;
}

}  // namespace

TEST_CASE("a valid configuration initializes the engine and later calls agree")
{
    const ChildResult r = run_child("init-twice", {});
    CHECK(r.exit_code == 0);
    CHECK(r.out == "status 0 0\n");
    CHECK(r.err.empty());
}

TEST_CASE("a bad configuration is logged once and every init returns SLIM_ERR_CONFIG")
{
    const ChildResult r = run_child("init-twice", {{"UCX_SLIM_REPORT", "foo"}, {"PMI_RANK", "5"}});
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    // UCX's parser says it first, in UCX's log (stdout by default), naming
    // its field; then slimlink, once, with the full variable name.
    CHECK(without_ucx_errors(r.out) == "status " + std::to_string(SLIM_ERR_CONFIG) + " " +
                                               std::to_string(SLIM_ERR_CONFIG) + "\n");
    CHECK(occurrences(r.out, "Invalid value for REPORT: 'foo'") == 1);
    CHECK(occurrences(r.err, "\n") == 1);
    CHECK_THAT(r.err, Contains("[slim r5] error: "));
    CHECK_THAT(r.err, Contains("UCX_SLIM_REPORT='foo': accepted values are none, stdout, or a path "
                               "ending in .json"));
}

TEST_CASE("a process without a launcher rank is labelled by pid in the log")
{
    const ChildResult r = run_child("init-twice", {{"UCX_SLIM_INNER", "BAD"}});
    CHECK_THAT(r.err, Contains("[slim pid"));
    CHECK_THAT(r.err, Contains("UCX_SLIM_INNER='BAD'"));
}

TEST_CASE("log level off silences even configuration errors")
{
    // slimlink's own lines follow UCX_SLIM_LOG_LEVEL, UCX's parser's line
    // UCX_LOG_LEVEL.
    const ChildResult r = run_child("init-twice", {{"UCX_SLIM_REPORT", "foo"},
                                                   {"UCX_SLIM_LOG_LEVEL", "off"},
                                                   {"UCX_LOG_LEVEL", "fatal"}});
    CHECK(r.out == "status " + std::to_string(SLIM_ERR_CONFIG) + " " +
                           std::to_string(SLIM_ERR_CONFIG) + "\n");
    CHECK(r.err.empty());
}

TEST_CASE("the module's lines have the core's format and follow UCX_SLIM_LOG_LEVEL")
{
    const ChildResult debug =
            run_child("module-log", {{"UCX_SLIM_LOG_LEVEL", "debug"}, {"PMI_RANK", "4"}});
    CAPTURE(debug.err);
    CHECK(debug.out == "debug before init 1\ndebug after init 1\n");
    CHECK_THAT(debug.err, Contains("[slim r4] warning: before init 1\n"));
    CHECK_THAT(debug.err, Contains("[slim r4] debug: a debug line x\n"));
    CHECK_THAT(debug.err, Contains("[slim r4] error: an error line 2\n"));

    const ChildResult quiet = run_child("module-log", {{"UCX_SLIM_LOG_LEVEL", "error"}});
    CAPTURE(quiet.err);
    CHECK(quiet.out == "debug before init 0\ndebug after init 0\n");
    CHECK_THAT(quiet.err, !Contains("before init"));
    CHECK_THAT(quiet.err, !Contains("a debug line"));
    CHECK_THAT(quiet.err, Contains("error: an error line 2\n"));
}

TEST_CASE("the stdout report is written once, at exit, after the application's output")
{
    const ChildResult r =
            run_child("traffic-then-exit", {{"UCX_SLIM_REPORT", "stdout"}, {"PMI_RANK", "2"}});
    CAPTURE(r.out, r.err);
    CHECK(r.exit_code == 0);
    CHECK(occurrences(r.out, "slimlink report: rank 2") == 1);
    CHECK(r.out.rfind("app output\n", 0) == 0);
    CHECK_THAT(r.out, Contains("am_short"));
    CHECK_THAT(r.out, Contains("am_any"));
    CHECK_THAT(r.out, !Contains("\n  put "));
}

TEST_CASE("the JSON report is appended once per process with every recorded operation")
{
    const TempDir dir;
    const std::string path = dir.path() + "/report.json";
    const ChildResult first =
            run_child("traffic-then-exit", {{"UCX_SLIM_REPORT", path}, {"PMI_RANK", "0"}});
    const ChildResult second =
            run_child("traffic-report-now", {{"UCX_SLIM_REPORT", path}, {"PMI_RANK", "1"}});
    CHECK(first.exit_code == 0);
    CHECK(second.exit_code == 0);
    CAPTURE(first.err, second.err);
    CHECK(first.err.empty());
    CHECK(second.err.empty());

    std::ifstream in(path);
    std::string line0, line1, extra;
    REQUIRE(std::getline(in, line0));
    REQUIRE(std::getline(in, line1));
    CHECK_FALSE(std::getline(in, extra));

    const slim_test::Json r0 = slim_test::parse_json(line0);
    const slim_test::Json r1 = slim_test::parse_json(line1);
    CHECK(r0.at("rank").get<std::int64_t>() == 0);
    CHECK(r1.at("rank").get<std::int64_t>() == 1);
    for (const slim_test::Json *r : {&r0, &r1}) {
        CHECK(r->at("traffic").at("am_short").at("sent").at("count").get<std::int64_t>() == 1);
        CHECK(r->at("traffic").at("am_short").at("sent").at("bytes").get<std::int64_t>() == 8);
        CHECK(r->at("traffic").at("am_any").at("received").at("count").get<std::int64_t>() == 2);
        CHECK(r->at("traffic").at("am_any").at("received").at("bytes").get<std::int64_t>() == 128);
        // The early report of "traffic-report-now" precedes its put.
        CHECK(r->at("traffic").at("put").at("sent").at("count").get<std::int64_t>() == 0);
    }
}

TEST_CASE("each interface's recorder counts and logs its traffic, also after it closed")
{
    const TempDir dir;
    const std::string path = dir.path() + "/report.json";
    const ChildResult r    = run_child("recorders", {{"UCX_SLIM_REPORT", path}, {"PMI_RANK", "0"}});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out == "short 3 24 any 2 200 put 1 get 1\n");

    std::ifstream in(path);
    std::string line;
    REQUIRE(std::getline(in, line));
    const slim_test::Json report = slim_test::parse_json(line);
    CHECK(report.at("traffic").at("am_short").at("sent").at("count").get<std::int64_t>() == 3);
    CHECK(report.at("traffic").at("am_any").at("received").at("bytes").get<std::int64_t>() == 200);
    // Every operation reached the live loop: the closed recorder's too, and
    // the get of the tally no recorder took.
    CHECK(report.at("link").at("ops_recorded").get<std::int64_t>() == 7);
    CHECK(report.at("link").at("ops_dropped").get<std::int64_t>() == 0);
    // Each recorder writes a record where its run starts (and for the run's
    // first send); the rest only move its totals. One more for the shared
    // path's put. More only if this process was preempted between calls.
    CHECK(report.at("link").at("ops_logged").get<std::int64_t>() >= 3);
    CHECK(report.at("link").at("ops_logged").get<std::int64_t>() <= 6);
}

TEST_CASE("a report that cannot be written is logged and the process exits normally")
{
    const ChildResult r =
            run_child("traffic-then-exit", {{"UCX_SLIM_REPORT", "/nonexistent-slim-dir/r.json"}});
    CHECK(r.exit_code == 0);
    CHECK_THAT(r.err, Contains("cannot write the report (/nonexistent-slim-dir/r.json)"));
}

TEST_CASE("a report request before the engine exists writes nothing")
{
    const ChildResult r = run_child("report-without-init", {{"UCX_SLIM_REPORT", "stdout"}});
    CHECK(r.exit_code == 0);
    CHECK(r.out.empty());
    CHECK(r.err.empty());
}

TEST_CASE("slim_mark marks a label with the precision its UCX_SLIM_POLICY rule gives")
{
    const ChildResult r =
            run_child("mark-by-label", {{"UCX_SLIM_POLICY", "halo=keep:4:round;ghost=off"}});
    CAPTURE(r.err);
    CHECK(r.exit_code == 0);
    // ghost (off) and other (no rule, no '*') succeed without marking.
    CHECK(r.out == "status 0 0 0 regions 1\nrun +0 keep 4 round\n");
    CHECK(r.err.empty());
}

TEST_CASE("the '*' policy rule marks labels without a rule of their own")
{
    const ChildResult r = run_child("mark-by-label", {{"UCX_SLIM_POLICY", "ghost=off;*=rel:1e-3"}});
    CHECK(r.out == "status 0 0 0 regions 2\nrun +0 keep 3 truncate\nrun +256 keep 3 truncate\n");
}

TEST_CASE("without UCX_SLIM_POLICY slim_mark succeeds and marks nothing")
{
    const ChildResult r = run_child("mark-by-label", {});
    CHECK(r.out == "status 0 0 0 regions 0\n");
    CHECK(r.err.empty());
}

TEST_CASE("a malformed UCX_SLIM_POLICY is logged once; marking then fails and packs nothing")
{
    const ChildResult r   = run_child("mark-by-label", {{"UCX_SLIM_POLICY", "halo=keep:9"}});
    const std::string cfg = std::to_string(SLIM_ERR_CONFIG);
    CHECK(without_ucx_errors(r.out) == "status " + cfg + " " + cfg + " " + cfg + " regions 0\n");
    CHECK(occurrences(r.err, "\n") == 1);
    CHECK_THAT(r.err, Contains("the slim transport is disabled: UCX_SLIM_POLICY: 'halo=keep:9': "
                               "keep must be 2..7; accepted forms:"));
}

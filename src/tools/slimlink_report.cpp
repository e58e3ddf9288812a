// SPDX-License-Identifier: BSD-3-Clause
// slimlink-report: one energy figure per job. `merge` reads the JSON-lines
// reports of a job's ranks and nodes (UCX_SLIM_REPORT=path.json), one file
// or several, and writes one slimlink.job.v1 record (src/tools/job_report.h);
// `summary` prints that record as the one line a batch job's output gets.
// See slimlink-report(1).
//
// Exit status: 0 done, 1 input it will not merge (named by FILE:LINE) or an
// output it could not write, 2 bad command line.
#include "base/log.h"
#include "slimlink_config.h"
#include "tools/cli_common.h"
#include "tools/help_formatter.h"
#include "tools/job_report.h"

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

namespace {

using slim::tools::JobReportError;
using slim::tools::UsageError;

constexpr const char *program = "slimlink-report";
constexpr int exit_failure    = 1;
constexpr int exit_usage      = 2;

struct Options {
    std::string help;
    bool version = false;
    // merge
    bool merge = false;
    slim::tools::MergeRequest request;
    std::string output;
    std::vector<std::string> inputs;
    // summary
    bool summary = false;
    std::string job_file;
    slim::tools::SummaryFormat format = slim::tools::SummaryFormat::line;
};

// "a,b,c" into its items; an empty item is refused, naming the option.
std::vector<std::string> list_of(const char *option, const char *what, const std::string& v)
{
    std::vector<std::string> items;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = v.find(',', start);
        const std::string item =
                v.substr(start, comma == std::string::npos ? comma : comma - start);
        if (item.empty()) {
            throw UsageError(std::string(option) + ": '" + v + "': accepts " + what +
                             ", comma-separated, none of them empty");
        }
        items.push_back(item);
        if (comma == std::string::npos) {
            return items;
        }
        start = comma + 1;
    }
}

Options parse(int argc, char **argv)
{
    using slim::tools::value_of;
    Options o;
    CLI::App app("Merges the JSON reports of a job's ranks and nodes into one record per job "
                 "(slimlink.job.v1), and prints its summary line.",
                 program);
    app.formatter(std::make_shared<slim::tools::HelpFormatter>());
    app.set_help_flag("-h,--help", "this text");
    app.footer("Commands: merge [--expect-nodes HOSTS] [--job KEY] [-o JOB.json] FILE...; "
               "summary [--format line|comment] JOB.json. '" +
               std::string(program) +
               " COMMAND --help' describes each.\n"
               "Exit status: 0 done, 2 bad command line, 1 input not merged (named by "
               "FILE:LINE) or output not written.");
    app.add_flag("--version", o.version, "print the version and exit");
    app.require_subcommand(0, 1);
    app.allow_extras();

    CLI::App *merge = app.add_subcommand(
            "merge",
            "Reads JSON-lines reports (UCX_SLIM_REPORT=path.json: slimlink.report.v1 and "
            "slimlink.node.v1 records, of one job or several, one file or many) and writes the "
            "node reports of one job as one slimlink.job.v1 record.");
    merge->formatter(app.get_formatter());
    merge->allow_extras();
    merge->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    merge->add_option_function<std::string>(
                 "--expect-nodes",
                 [&](const std::string& v) {
                     o.request.expected_nodes = list_of("--expect-nodes", "host names",
                                                        value_of("--expect-nodes", "HOSTS", v));
                 },
                 "the hosts the job ran on, comma-separated, as the node reports name them "
                 "(their host name): those without a node report are listed as missing")
            ->type_name("HOSTS");
    merge->add_option_function<std::string>(
                 "--job",
                 [&](const std::string& v) {
                     o.request.jobs = list_of("--job", "job keys", value_of("--job", "KEY", v));
                 },
                 "the job to merge, by the key of its node reports (default: the only job in "
                 "the input); several keys, comma-separated, are merged as one job")
            ->type_name("KEY");
    merge->add_option_function<std::string>(
                 "-o,--output", [&](const std::string& v) { o.output = value_of("-o", "FILE", v); },
                 "write the record to FILE (through a temporary file renamed over it) instead "
                 "of standard output")
            ->type_name("FILE");
    merge->add_option("FILE", o.inputs, "JSON-lines reports; '-' is standard input")
            ->type_name("FILE")
            ->required();

    CLI::App *summary = app.add_subcommand(
            "summary", "Prints a slimlink.job.v1 record as one line, for a job's output.");
    summary->formatter(app.get_formatter());
    summary->allow_extras();
    summary->option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    summary->add_option_function<std::string>(
                   "--format",
                   [&](const std::string& v) {
                       if (v == "line") {
                           o.format = slim::tools::SummaryFormat::line;
                       } else if (v == "comment") {
                           o.format = slim::tools::SummaryFormat::comment;
                       } else {
                           throw UsageError("--format: '" + v +
                                            "': accepts line (default) or comment");
                       }
                   },
                   "line (default): a sentence; comment: key=value words, for a batch "
                   "system's comment field")
            ->type_name("FORMAT");
    summary->add_option("JOB", o.job_file,
                        "the record slimlink-report merge wrote; '-' is "
                        "standard input")
            ->type_name("JOB.json")
            ->required();

    try {
        if (slim::tools::parse_command_line(app, argc, argv, o.help)) {
            return o;
        }
    } catch (const CLI::CallForHelp&) {
        o.help = app.help();
        return o;
    }
    // What the command did not take: an unknown option first.
    for (CLI::App *sub : {merge, summary}) {
        for (const std::string& arg : sub->remaining()) {
            if (arg.size() > 1 && arg[0] == '-') {
                throw UsageError(sub->get_name() + ": unknown option '" +
                                 arg.substr(0, arg.find('=')) + "'");
            }
            throw UsageError(sub->get_name() + ": unexpected argument '" + arg + "'");
        }
    }
    o.merge   = merge->parsed();
    o.summary = summary->parsed();
    if (!o.version && !o.merge && !o.summary) {
        throw UsageError("a command is required: merge or summary");
    }
    return o;
}

// Writes `text` to `path` whole or not at all: a temporary file in the
// same directory, renamed over `path`, so that a reader (a batch system's
// epilog) never sees half a record.
void write_atomically(const std::string& path, const std::string& text)
{
    const std::size_t slash = path.rfind('/');
    const std::string dir   = slash == std::string::npos ? "." : path.substr(0, slash + 1);
    const std::string base  = slash == std::string::npos ? path : path.substr(slash + 1);
    if (base.empty()) {
        throw JobReportError("-o " + path + ": names a directory, not a file");
    }
    std::string tmp = dir + (slash == std::string::npos ? "/" : "") + "." + base + ".XXXXXX";
    const int fd    = mkstemp(tmp.data());
    if (fd < 0) {
        throw JobReportError("-o " + path + ": cannot create a temporary file in " + dir + ": " +
                             std::strerror(errno));
    }
    const auto fail = [&](const char *what) {
        const int error = errno;
        close(fd);
        unlink(tmp.c_str());
        throw JobReportError("-o " + path + ": " + what + ": " + std::strerror(error));
    };
    // mkstemp makes 0600; a report is for others to read, as the ranks'
    // reports are (0644 under the umask).
    const mode_t mask = umask(0);
    umask(mask);
    if (fchmod(fd, 0644 & ~mask) != 0) {
        fail("cannot set the temporary file's mode");
    }
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t n = write(fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            fail("writing the temporary file failed");
        }
        done += static_cast<std::size_t>(n);
    }
    if (fsync(fd) != 0) {
        fail("writing the temporary file failed");
    }
    if (close(fd) != 0) {
        const int error = errno;
        unlink(tmp.c_str());
        throw JobReportError("-o " + path +
                             ": writing the temporary file failed: " + std::strerror(error));
    }
    if (rename(tmp.c_str(), path.c_str()) != 0) {
        const int error = errno;
        unlink(tmp.c_str());
        throw JobReportError("-o " + path + ": cannot rename " + tmp +
                             " to it: " + std::strerror(error));
    }
}

int run_merge(const Options& o)
{
    slim::tools::JobMerge m;
    for (const std::string& f : o.inputs) {
        if (f == "-") {
            m.read(std::cin, "<stdin>");
        } else {
            m.read_file(f);
        }
    }
    const slim::tools::JobJson job = m.merge(o.request);
    for (const auto& host : job["unexpected_nodes"]) {
        slim::logger().warn("{}: node report of host {}, which --expect-nodes does not name "
                            "(is it spelled as the node reports spell their host names?)",
                            program, host.get<std::string>());
    }
    const std::string text = job.dump() + "\n";
    if (!o.output.empty()) {
        write_atomically(o.output, text);
        return 0;
    }
    std::fwrite(text.data(), 1, text.size(), stdout);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        throw JobReportError("writing to standard output failed");
    }
    return 0;
}

int run_summary(const Options& o)
{
    slim::tools::JobJson job;
    if (o.job_file == "-") {
        job = slim::tools::read_job_record(std::cin, "<stdin>");
    } else {
        std::ifstream in(o.job_file);
        if (!in) {
            throw JobReportError(o.job_file + ": cannot open it for reading");
        }
        job = slim::tools::read_job_record(in, o.job_file);
    }
    const std::string line = slim::tools::summary_line(job, o.format) + "\n";
    std::fputs(line.c_str(), stdout);
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        throw JobReportError("writing to standard output failed");
    }
    return 0;
}

}  // namespace

int main(int argc, char **argv)
{
    Options options;
    try {
        options = parse(argc, argv);
    } catch (const std::exception& e) {  // UsageError
        std::fprintf(stderr, "%s: %s\nTry '%s --help'.\n", program, e.what(), program);
        return exit_usage;
    }
    if (!options.help.empty()) {
        std::fputs(options.help.c_str(), stdout);
        return 0;
    }
    if (options.version) {
        std::printf("%s %s\n", program, PACKAGE_VERSION);
        return 0;
    }
    std::ios::sync_with_stdio(false);
    try {
        return options.merge ? run_merge(options) : run_summary(options);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", program, e.what());
        return exit_failure;
    }
}

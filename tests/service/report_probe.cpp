// SPDX-License-Identifier: BSD-3-Clause
// report-probe: a one-rank job for tests/service/slimlinkd-reports.test.
// Attaches (local rank 0 of 1), publishes widths alternating between 1 and
// full, every --step for --for, then deposits an empty record and prints
// the port section of the node report it gets back as one JSON object.
//
// Exit status: 0 a report printed, 2 bad command line, 3 could not attach
// or no report (the reason on standard error).
#include "base/parse.h"
#include "link/backend.h"
#include "link/service_client.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <iostream>
#include <thread>
#include <unistd.h>

int main(int argc, char **argv)
{
    namespace parse = slim::parse;
    namespace svc   = slim::link::service;
    using namespace std::chrono_literals;

    std::string socket;
    std::string job = "report-probe";
    std::chrono::nanoseconds run{500ms};
    std::chrono::nanoseconds step{10ms};

    CLI::App app("A one-rank slimlinkd job that prints its node report's port section.",
                 "report-probe");
    auto duration = [](const char *name, std::chrono::nanoseconds& out) {
        return [name, &out](const std::string& v) {
            out = parse::duration(name, v, 1ms, std::chrono::hours(1));
        };
    };
    app.add_option("--socket", socket, "the service's socket")->required();
    app.add_option("--job", job, "the job key");
    app.add_option_function<std::string>("--for", duration("--for", run),
                                         "how long to publish (default 500ms)");
    app.add_option_function<std::string>("--step", duration("--step", step),
                                         "time between width changes (default 10ms)");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    } catch (const slim::ConfigError& e) {
        std::cerr << "report-probe: " << e.what() << "\n";
        return 2;
    }

    svc::AttachRequest request;
    request.full_width = 4;
    request.rank       = 0;
    request.local_rank = 0;
    request.local_size = 1;
    request.pid        = ::getpid();
    job.copy(request.job_key, std::min(job.size(), sizeof request.job_key - 1));
    try {
        auto client                  = slim::link::ServiceClient::connect(socket, false, request);
        const slim::link::TimeNs end = slim::link::steady_now_ns() + run.count();
        unsigned width               = 1;
        for (slim::link::TimeNs now = slim::link::steady_now_ns(); now < end;
             now                    = slim::link::steady_now_ns()) {
            client->publish(svc::DemandRecord{now, 0, width, 0});
            client->set_through(now + 1);
            client->sync();
            width = width == 1 ? 4 : 1;
            std::this_thread::sleep_for(step);
        }
        const slim::link::TimeNs now = slim::link::steady_now_ns();
        client->publish(svc::DemandRecord{now, 0, 4, 0});
        client->set_through(now + 1);
        client->sync();
        const std::uint8_t record = 0;
        const auto report         = client->deposit(1, &record, sizeof record, 0ns);
        if (!report) {
            std::cerr << "report-probe: the service named no reporter\n";
            return 3;
        }
        const svc::PortSection& p = report->port;
        nlohmann::ordered_json j  = {
                 {"backend", svc::text_of(p.backend)},
                 {"lanes", p.lanes},
                 {"has_energy", p.has_energy != 0},
                 {"span_ns", p.span_ns},
                 {"job_span_ns", p.job_span_ns},
                 {"uncovered_ns", p.uncovered_ns},
                 {"transitions", p.transitions},
                 {"late_records", p.late_records},
                 {"stalled_clients", p.stalled_clients},
                 {"other_jobs", p.other_jobs},
                 {"backend_failed", p.backend_failed != 0},
                 {"width_unknown", p.width_unknown != 0},
                 {"problem", svc::text_of(p.problem)},
        };
        std::cout << j.dump() << std::endl;
        client->detach();
    } catch (const std::exception& e) {
        std::cerr << "report-probe: " << e.what() << "\n";
        return 3;
    }
    return 0;
}

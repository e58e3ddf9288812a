// SPDX-License-Identifier: BSD-3-Clause
// service-probe: a tiny slimlinkd client for tests/service/slimlinkd.test.
// Attaches, publishes one demand record (width W from now, optionally only
// until now + UNTIL), waits, prints the port's width as the service
// publishes it (and with --print-profile the link profile it gave at the
// attach), then detaches -- or kills itself with SIGKILL, as a rank
// that dies would.
//
// Exit status: 0 done, 2 bad command line, 3 could not attach (the
// service's message on standard error), 4 the service went away.
#include "base/parse.h"
#include "link/backend.h"
#include "link/service_client.h"

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdio>
#include <iostream>
#include <thread>
#include <unistd.h>

int main(int argc, char **argv)
{
    namespace parse = slim::parse;
    namespace svc   = slim::link::service;
    using namespace std::chrono_literals;

    std::string socket;
    unsigned lanes = 4;
    std::optional<unsigned> width;
    std::chrono::nanoseconds until{0};
    std::chrono::nanoseconds sleep{0};
    bool kill_self     = false;
    bool print_width   = false;
    bool print_profile = false;
    std::string job    = "probe";

    CLI::App app("A slimlinkd client for tests.", "service-probe");
    auto duration = [](const char *name, std::chrono::nanoseconds& out) {
        return [name, &out](const std::string& v) {
            out = parse::duration(name, v, 0ns, std::chrono::hours(1));
        };
    };
    app.add_option("--socket", socket, "the service's socket")->required();
    app.add_option_function<std::string>(
            "--lanes",
            [&](const std::string& v) {
                lanes = static_cast<unsigned>(parse::integer("--lanes", v, 0, 12));
            },
            "the full width this client expects (default 4; 0: any)");
    app.add_option_function<std::string>(
            "--width",
            [&](const std::string& v) {
                width = static_cast<unsigned>(parse::integer("--width", v, 0, 99));
            },
            "publish this width from now (0 and above the lanes are garbage, for tests)");
    app.add_option_function<std::string>("--until", duration("--until", until),
                                         "the width holds only until now + this");
    app.add_option_function<std::string>("--sleep", duration("--sleep", sleep),
                                         "wait this long after publishing");
    app.add_option("--job", job, "the job key (default probe)");
    app.add_flag("--kill", kill_self, "SIGKILL itself instead of detaching");
    app.add_flag("--print-width", print_width, "print the port's width after the wait");
    app.add_flag("--print-profile", print_profile,
                 "print the link profile the service gave at the attach");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    } catch (const slim::ConfigError& e) {
        std::cerr << "service-probe: " << e.what() << "\n";
        return 2;
    }

    svc::AttachRequest request;
    request.full_width = lanes;
    request.rank       = 0;
    request.pid        = ::getpid();
    job.copy(request.job_key, std::min(job.size(), sizeof request.job_key - 1));
    std::unique_ptr<slim::link::ServiceClient> client;
    try {
        client = slim::link::ServiceClient::connect(socket, false, request);
    } catch (const slim::link::ServiceError& e) {
        std::cerr << "service-probe: " << e.what() << "\n";
        return 3;
    }
    if (print_profile) {
        std::cout << "profile " << client->link_spec() << std::endl;
    }
    if (width) {
        const slim::link::TimeNs now = slim::link::steady_now_ns();
        const svc::DemandRecord r{now, until.count() > 0 ? now + until.count() : 0, *width, 0};
        client->publish(r);
        client->set_through(now + 1);  // the horizon is exclusive
    }
    if (!client->sync()) {
        std::cerr << "service-probe: the service went away\n";
        return 4;
    }
    std::this_thread::sleep_for(sleep);
    // Records reach the service at a nudge or its next tick (50 ms).
    if (print_width) {
        std::cout << client->port_width() << std::endl;
    }
    if (kill_self) {
        ::kill(::getpid(), SIGKILL);
    }
    const bool alive = client->sync();
    client->detach();
    return alive ? 0 : 4;
}

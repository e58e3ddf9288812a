// SPDX-License-Identifier: BSD-3-Clause
// cpu-probe: a rank asking slimlinkd for its cores, for
// tests/service/slimlinkd-cpu.test. Pins itself to one core (before it
// attaches, as a launcher binds a rank), attaches, asks for its cores low
// or full, waits, then detaches -- or kills itself with SIGKILL, as a rank
// that dies while waiting would.
//
// Prints "cpu" when the service offers the CPU extension, "no-cpu" when
// not, after the request.
//
// Exit status: 0 done, 2 bad command line, 3 could not attach (the
// service's message on standard error), 4 the service went away or the
// request could not be sent.
#include "base/parse.h"
#include "link/backend.h"
#include "link/service_client.h"

#include <CLI/CLI.hpp>

#include <sched.h>
#include <unistd.h>

#include <csignal>
#include <iostream>
#include <optional>
#include <thread>

int main(int argc, char **argv)
{
    namespace parse = slim::parse;
    namespace svc   = slim::link::service;
    using namespace std::chrono_literals;

    std::string socket;
    std::optional<unsigned> pin;
    std::string level = "low";
    std::chrono::nanoseconds sleep{0};
    bool kill_self = false;

    CLI::App app("A slimlinkd client asking for its cores, for tests.", "cpu-probe");
    app.add_option("--socket", socket, "the service's socket")->required();
    app.add_option_function<std::string>(
            "--pin",
            [&](const std::string& v) {
                pin = static_cast<unsigned>(parse::integer("--pin", v, 0, 1023));
            },
            "run on this core only");
    app.add_option("--level", level, "low (default), full, or none (ask nothing)");
    app.add_option_function<std::string>(
            "--sleep",
            [&](const std::string& v) { sleep = parse::duration("--sleep", v, 0ns, 1h); },
            "wait this long after asking");
    app.add_flag("--kill", kill_self, "SIGKILL itself instead of detaching");
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    } catch (const slim::ConfigError& e) {
        std::cerr << "cpu-probe: " << e.what() << "\n";
        return 2;
    }
    if (level != "low" && level != "full" && level != "none") {
        std::cerr << "cpu-probe: --level '" << level << "': low, full or none\n";
        return 2;
    }
    if (pin) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(*pin, &set);
        if (::sched_setaffinity(0, sizeof set, &set) != 0) {
            std::cerr << "cpu-probe: cannot pin to core " << *pin << "\n";
            return 2;
        }
    }

    svc::AttachRequest request;
    request.full_width    = 4;
    request.rank          = 0;
    request.pid           = ::getpid();
    const std::string job = "cpu-probe";
    job.copy(request.job_key, job.size());
    std::unique_ptr<slim::link::ServiceClient> client;
    try {
        client = slim::link::ServiceClient::connect(socket, false, request);
    } catch (const slim::link::ServiceError& e) {
        std::cerr << "cpu-probe: " << e.what() << "\n";
        return 3;
    }
    std::cout << (client->cpu_supported() ? "cpu" : "no-cpu") << std::endl;
    if (level != "none" && client->cpu_supported()) {
        const auto l = level == "low" ? svc::CpuLevel::low : svc::CpuLevel::full;
        if (!client->request_cpu(l, slim::link::steady_now_ns())) {
            std::cerr << "cpu-probe: the request was not sent\n";
            return 4;
        }
    }
    std::this_thread::sleep_for(sleep);
    if (kill_self) {
        ::kill(::getpid(), SIGKILL);
    }
    const bool alive = client->sync();
    client->detach();
    return alive ? 0 : 4;
}

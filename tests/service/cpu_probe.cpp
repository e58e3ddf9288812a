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
// With --cycles N it asks N times for --level, waits --sleep, asks for
// full and waits --gap. With --report it is local rank 0 of a one-rank
// job, deposits a record at the end and prints the CPU section of the node
// report it gets back as one JSON object (null when there is none).
//
// Exit status: 0 done, 2 bad command line, 3 could not attach (the
// service's message on standard error), 4 the service went away or the
// request could not be sent.
#include "base/parse.h"
#include "link/backend.h"
#include "link/service_client.h"

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

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
    std::optional<unsigned> cycles;
    std::chrono::nanoseconds gap{0};
    bool report = false;

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
    app.add_option_function<std::string>(
            "--cycles",
            [&](const std::string& v) {
                cycles = static_cast<unsigned>(parse::integer("--cycles", v, 1, 1000));
            },
            "ask for --level, wait --sleep, ask for full, wait --gap; this many times");
    app.add_option_function<std::string>(
            "--gap", [&](const std::string& v) { gap = parse::duration("--gap", v, 0ns, 1h); },
            "with --cycles: the wait at full");
    app.add_flag("--report", report,
                 "be a one-rank job, deposit at the end, print the node report's CPU section");
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
    const std::string job = report ? "cpu-report" : "cpu-probe";
    job.copy(request.job_key, job.size());
    if (report) {
        request.local_rank = 0;
        request.local_size = 1;
    }
    std::unique_ptr<slim::link::ServiceClient> client;
    try {
        client = slim::link::ServiceClient::connect(socket, false, request);
    } catch (const slim::link::ServiceError& e) {
        std::cerr << "cpu-probe: " << e.what() << "\n";
        return 3;
    }
    std::cout << (client->cpu_supported() ? "cpu" : "no-cpu") << std::endl;
    const auto ask = [&](svc::CpuLevel l) {
        if (!client->request_cpu(l, slim::link::steady_now_ns())) {
            std::cerr << "cpu-probe: the request was not sent\n";
            return false;
        }
        return true;
    };
    for (unsigned i = 0; i < cycles.value_or(1); ++i) {
        if (level != "none" && client->cpu_supported() &&
            !ask(level == "low" ? svc::CpuLevel::low : svc::CpuLevel::full)) {
            return 4;
        }
        std::this_thread::sleep_for(sleep);
        if (cycles) {
            if (client->cpu_supported() && !ask(svc::CpuLevel::full)) {
                return 4;
            }
            std::this_thread::sleep_for(gap);
        }
    }
    if (kill_self) {
        ::kill(::getpid(), SIGKILL);
    }
    if (report) {
        try {
            const slim::link::TimeNs now = slim::link::steady_now_ns();
            client->publish(svc::DemandRecord{now, 0, 4, 0});
            client->set_through(now + 1);
            client->sync();
            const std::uint8_t record = 0;
            const auto got            = client->deposit(1, &record, sizeof record, 0ns);
            if (!got) {
                std::cerr << "cpu-probe: the service named no reporter\n";
                return 4;
            }
            nlohmann::ordered_json j = nullptr;
            if (got->cpu) {
                const svc::CpuSection& c     = *got->cpu;
                nlohmann::ordered_json cores = nlohmann::ordered_json::array();
                for (const svc::CpuSectionCore& e : got->cpu_cores) {
                    cores.push_back({{"core", e.core},
                                     {"ranks", e.ranks},
                                     {"low_requests", e.low_requests},
                                     {"full_requests", e.full_requests},
                                     {"refused", e.refused},
                                     {"transitions", e.transitions},
                                     {"span_ns", e.span_ns},
                                     {"time_low_ns", e.time_low_ns},
                                     {"penalty_ns", e.penalty_ns},
                                     {"energy_joules", e.energy_joules},
                                     {"baseline_joules", e.baseline_joules}});
                }
                j = {{"backend", svc::text_of(c.backend)},
                     {"has_energy", c.has_energy != 0},
                     {"cores_mapped", c.cores_mapped},
                     {"cores_refused", c.cores_refused},
                     {"low_requests", c.low_requests},
                     {"full_requests", c.full_requests},
                     {"transitions", c.transitions},
                     {"span_ns", c.span_ns},
                     {"time_low_ns", c.time_low_ns},
                     {"penalty_ns", c.penalty_ns},
                     {"energy_joules", c.energy_joules},
                     {"baseline_joules", c.baseline_joules},
                     {"cores", cores}};
            }
            std::cout << j.dump() << std::endl;
        } catch (const slim::link::ServiceError& e) {
            std::cerr << "cpu-probe: " << e.what() << "\n";
            return 4;
        }
    }
    const bool alive = client->sync();
    client->detach();
    return alive ? 0 : 4;
}

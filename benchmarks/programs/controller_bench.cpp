// SPDX-License-Identifier: BSD-3-Clause
// controller-bench: what the link Controller + emulated backend cost per
// traffic event, in live time (steady_clock read by the controller and the
// backend, as in a real run; no delay injection).
//
// Per-event cost is measured in batches (steady_clock read once per batch of
// --batch events, so its own ~20 ns does not swamp the event); median and p99
// are over batch means. Three workloads:
//   steady  — traffic() on a port already at full width (the common case);
//   wake    — low_power_until() then traffic(): a full down/up cycle per event;
//   burst   — burst(0.5) then end_burst() around traffic().
//
// Usage: controller-bench [--events N] [--batch N]
#include "bench_options.h"
#include "link/controller.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

namespace {

using namespace slim::link;
using SteadyClock = std::chrono::steady_clock;

struct Result {
    double median_ns;
    double p99_ns;
};

Result measure(long events, long batch, const std::function<void()>& event)
{
    std::vector<double> means;
    means.reserve(static_cast<std::size_t>(events / batch) + 1);
    for (long done = 0; done < events; done += batch) {
        const auto start = SteadyClock::now();
        for (long i = 0; i < batch; ++i) {
            event();
        }
        const auto ns =
                std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now() - start);
        means.push_back(static_cast<double>(ns.count()) / static_cast<double>(batch));
    }
    std::sort(means.begin(), means.end());
    return {means[means.size() / 2], means[std::min(means.size() - 1, means.size() * 99 / 100)]};
}

std::unique_ptr<Controller> make_controller()
{
    BackendConfig config;  // emulated, default figures: 4 lanes, tau 10 us
    ControllerOptions options;
    options.on_error = [](const std::string& m) { std::fprintf(stderr, "error: %s\n", m.c_str()); };
    return std::make_unique<Controller>(std::move(make_emulated_backend(config).backend), options);
}

}  // namespace

int main(int argc, char **argv)
{
    long events = 2'000'000;
    long batch  = 1000;
    CLI::App app("Cost of the link Controller + emulated backend per traffic event (median and "
                 "p99 of batch means).",
                 "controller-bench");
    bench::add_integer(app, "--events", events, 1, 1'000'000'000'000,
                       "traffic events per workload");
    bench::add_integer(app, "--batch", batch, 1, 1'000'000'000, "events per clock reading");
    if (const int status = bench::parse(app, argc, argv); status >= 0) {
        return status;
    }

    std::printf("controller + emulated backend, %ld events, batches of %ld\n", events, batch);
    {
        auto c         = make_controller();
        const Result r = measure(events, batch, [&] { c->traffic(); });
        std::printf("steady (traffic at full width): median %.1f ns/event, p99 %.1f\n", r.median_ns,
                    r.p99_ns);
    }
    {
        auto c             = make_controller();
        const TimeNs ahead = 1'000'000'000;
        const Result r     = measure(events, batch, [&] {
            c->low_power_until(steady_clock_ns()() + ahead);
            c->traffic();
        });
        std::printf("wake (low_power_until + traffic): median %.1f ns/event, p99 %.1f\n",
                    r.median_ns, r.p99_ns);
    }
    {
        auto c         = make_controller();
        const Result r = measure(events, batch, [&] {
            c->burst(0.5);
            c->traffic();
            c->end_burst();
        });
        std::printf("burst (burst + traffic + end_burst): median %.1f ns/event, p99 %.1f\n",
                    r.median_ns, r.p99_ns);
    }
    return 0;
}

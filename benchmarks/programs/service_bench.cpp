// SPDX-License-Identifier: BSD-3-Clause
// service-bench: slimlinkd's three numbers, with the service on
// a thread of this process (ServiceServer + PortService, a socket in a
// temporary folder) and a test port without a model (a real port's shape:
// the service acts at published deadlines) that stamps each width change.
//
//   publish   ns per ServiceClient::publish() on the rank's side, the
//             service consuming: batches of --batch records timed by one
//             clock reading each (its own ~20 ns would swamp one record),
//             median and p99 of batch means. Between batches (untimed) the
//             client nudges and waits until its ring is drained.
//   reaction  from a published "low until t" deadline passing to the
//             backend's set_width(full) call; and from a nudge (sync()) to
//             the backend's call for a new width.
//   death     fork a client that attaches and goes low until far in the
//             future, SIGKILL it, time until the port is at full width.
//   load      (--load N,...) the service's own CPU under a node's ranks:
//             N clients publish --load-rate events per second each (one
//             record lowering the port at an event's end and one raising
//             it at the next event's start: two per event), every drain
//             round (16 ms for the emulated port, 4 ms for a real one), for
//             --load-for; the service thread's CPU time (its thread clock)
//             over the records it took and over the wall time.
//
// --syscall-window: only publish --batch records between two marker
// write(2)s on stderr ("publish window begin/end", with the thread id), for
//   strace -f -o trace benchmarks/service-bench --syscall-window
// where the publishing thread must make no system call between the markers.
//
// Usage: service-bench [--records N] [--batch N] [--reactions N] [--kills N]
//                      [--load N,... [--load-rate R] [--load-for S] [--load-port emulated|real]]
#include "bench_options.h"
#include "link/backend.h"
#include "link/service_client.h"
#include "link/service_protocol.h"
#include "service/backend_registry.h"
#include "service/port_service.h"
#include "service/service_server.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace slim::link;
namespace svc = slim::link::service;
using namespace std::chrono_literals;

struct PortState {
    std::atomic<unsigned> width{4};
    std::atomic<TimeNs> changed_ns{0};
};

class StampingBackend final : public LinkBackend {
public:
    explicit StampingBackend(std::shared_ptr<PortState> s) : s_(std::move(s)) {}
    std::string name() const override { return "stamping"; }
    unsigned full_width() const override { return 4; }
    Status set_width(unsigned width) override
    {
        if (s_->width.load(std::memory_order_relaxed) != width) {
            s_->changed_ns.store(steady_now_ns());
            s_->width.store(width);
        }
        return Status::success();
    }

private:
    std::shared_ptr<PortState> s_;
};

struct Service {
    std::string dir;
    std::string socket;
    std::shared_ptr<PortState> port = std::make_shared<PortState>();
    std::unique_ptr<PortService> service;
    std::unique_ptr<ServiceServer> server;
    std::atomic<bool> stop{false};
    std::thread thread;

    // The test port that stamps its width changes, or (`emulated`) the
    // emulated port as slimlinkd runs it, accounting energy on the records'
    // clock.
    explicit Service(bool emulated = false)
    {
        char tmpl[] = "/tmp/slimlink-bench-XXXXXX";
        if (::mkdtemp(tmpl) == nullptr) {
            std::perror("mkdtemp");
            std::exit(1);
        }
        dir    = tmpl;
        socket = dir + "/bench.sock";
        if (emulated) {
            service = std::make_unique<PortService>([](Clock clock) {
                BackendConfig config;
                config.clock = std::move(clock);
                return std::move(make_backend("emulated", config).backend);
            });
        } else {
            service = std::make_unique<PortService>(std::make_unique<StampingBackend>(port));
        }
        ServerOptions options;
        options.socket_path       = socket;
        options.grace             = 0ms;
        options.first_client_wait = 0ms;
        server                    = std::make_unique<ServiceServer>(*service, options);
        thread                    = std::thread([this] { server->run(stop); });
    }
    ~Service()
    {
        stop = true;
        thread.join();
        server.reset();
        service.reset();
        std::error_code ec;
        std::filesystem::remove_all(dir, ec);
    }
};

svc::AttachRequest request(std::int32_t rank = 0)
{
    svc::AttachRequest r;
    r.full_width = 4;
    r.rank       = rank;
    r.pid        = ::getpid();
    std::snprintf(r.job_key, sizeof r.job_key, "bench");
    return r;
}

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 2000ms)
{
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        std::this_thread::yield();
    }
    return true;
}

struct Stats {
    double median;
    double p99;
};

Stats stats_of(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    if (v.empty()) {
        return {0, 0};
    }
    return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)]};
}

// Fills one batch with records whose times go forward by 1 ns each,
// widths 1 and 2 in turn and `last` for the last one: what the service
// accepts, and a port width that says when the batch has been applied.
TimeNs publish_batch(ServiceClient& client, TimeNs t, long batch, unsigned last, long& failures)
{
    for (long i = 0; i < batch; ++i) {
        const std::uint32_t w = i + 1 == batch ? last : static_cast<std::uint32_t>(1 + (i & 1));
        const svc::DemandRecord r{t + i, 0, w, 0};
        failures += client.publish(r) ? 0 : 1;
    }
    return t + batch;
}

Stats bench_publish(long records, long batch)
{
    Service s;
    auto client   = ServiceClient::connect(s.socket, false, request());
    TimeNs t      = steady_now_ns();
    long failures = 0;
    std::vector<double> means;
    unsigned last = 3;
    for (long done = 0; done < records; done += batch) {
        last             = last == 3 ? 4 : 3;
        const auto start = std::chrono::steady_clock::now();
        t                = publish_batch(*client, t, batch, last, failures);
        const auto ns    = std::chrono::duration_cast<std::chrono::nanoseconds>(
                std::chrono::steady_clock::now() - start);
        means.push_back(static_cast<double>(ns.count()) / static_cast<double>(batch));
        // Untimed: hand the batch over and let the service drain it (the
        // port's width follows the last record).
        client->set_through(t);
        client->sync();
        if (!wait_until([&] { return client->port_width() == last && s.port->width == last; })) {
            std::fprintf(stderr, "service-bench: the service did not drain a batch\n");
            break;
        }
        t += 1'000;  // a gap, so that each batch's first record changes the width
    }
    if (failures > 0) {
        std::fprintf(stderr, "service-bench: %ld publishes found the ring full\n", failures);
    }
    return stats_of(means);
}

// Reaction to a published deadline, and to a nudge.
std::pair<Stats, Stats> bench_reaction(int rounds)
{
    Service s;
    auto client = ServiceClient::connect(s.socket, false, request());
    std::vector<double> deadline_us, nudge_us;
    for (int i = 0; i < rounds; ++i) {
        // A nudge: width 2 from now, said at once.
        TimeNs now = steady_now_ns();
        client->publish(svc::DemandRecord{now, 0, 2, 0});
        client->set_through(now + 1);
        const TimeNs nudged = steady_now_ns();
        client->sync();
        if (!wait_until([&] { return s.port->width == 2; })) {
            std::fprintf(stderr, "service-bench: no reaction to a nudge\n");
            break;
        }
        nudge_us.push_back(static_cast<double>(s.port->changed_ns - nudged) / 1e3);

        // Low until 2 ms from now; the client then says nothing.
        now                = steady_now_ns();
        const TimeNs until = now + 2'000'000;
        client->publish(svc::DemandRecord{now, until, 1, 0});
        client->set_through(now + 1);
        client->sync();
        if (!wait_until([&] { return s.port->width == 1; }) ||
            !wait_until([&] { return s.port->width == 4; })) {
            std::fprintf(stderr, "service-bench: the deadline was not acted on\n");
            break;
        }
        deadline_us.push_back(static_cast<double>(s.port->changed_ns - until) / 1e3);
        // The next round's records come after the raise.
        client->set_through(steady_now_ns());
    }
    return {stats_of(deadline_us), stats_of(nudge_us)};
}

Stats bench_death(int kills)
{
    Service s;
    std::vector<double> ms;
    for (int i = 0; i < kills; ++i) {
        int ready[2];
        if (::pipe(ready) != 0) {
            break;
        }
        const pid_t child = ::fork();
        if (child == 0) {
            ::close(ready[0]);
            try {
                auto c           = ServiceClient::connect(s.socket, false, request());
                const TimeNs now = steady_now_ns();
                c->publish(svc::DemandRecord{now, now + 3'600'000'000'000LL, 1, 0});
                c->set_through(now + 1);
                c->sync();
                [[maybe_unused]] const ssize_t w = ::write(ready[1], "r", 1);
                for (;;) {
                    ::pause();
                }
            } catch (...) {
                _exit(3);
            }
        }
        ::close(ready[1]);
        char byte     = 0;
        const bool up = ::read(ready[0], &byte, 1) == 1;
        ::close(ready[0]);
        if (!up || !wait_until([&] { return s.port->width == 1; })) {
            std::fprintf(stderr, "service-bench: the client did not lower the port\n");
            ::kill(child, SIGKILL);
            ::waitpid(child, nullptr, 0);
            break;
        }
        const TimeNs killed = steady_now_ns();
        ::kill(child, SIGKILL);
        const bool full = wait_until([&] { return s.port->width == 4; });
        ::waitpid(child, nullptr, 0);
        if (!full) {
            std::fprintf(stderr, "service-bench: the port did not return to full width\n");
            break;
        }
        ms.push_back(static_cast<double>(s.port->changed_ns - killed) / 1e6);
    }
    return stats_of(ms);
}

struct Load {
    long clients     = 0;
    long records     = 0;  // taken by the service
    double wall_s    = 0;
    double service_s = 0;  // the service thread's CPU time
};

double thread_cpu_s(std::thread& t)
{
    clockid_t id{};
    timespec ts{};
    if (::pthread_getcpuclockid(t.native_handle(), &id) != 0 || ::clock_gettime(id, &ts) != 0) {
        return 0;
    }
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// `clients` ranks of one job, each making `rate` events per second: at
// each drain round a rank publishes the events since the last (low at an
// event's end until about when the next is due, full at its start, so
// the port really moves), then its through time, then syncs (which nudges
// as a rank does).
Load bench_load(long clients, double rate, double seconds, bool emulated)
{
    Service s(emulated);
    std::vector<std::unique_ptr<ServiceClient>> ranks;
    for (long i = 0; i < clients; ++i) {
        ranks.push_back(
                ServiceClient::connect(s.socket, false, request(static_cast<std::int32_t>(i))));
    }
    const TimeNs round = emulated ? 16'000'000 : 4'000'000;  // the drain's interval
    const TimeNs gap   = static_cast<TimeNs>(1e9 / rate);
    std::vector<TimeNs> next(static_cast<std::size_t>(clients));
    const TimeNs start = steady_now_ns();
    for (long i = 0; i < clients; ++i) {
        next[static_cast<std::size_t>(i)] = start + gap * i / clients;  // spread out
    }
    long published    = 0;
    const double cpu0 = thread_cpu_s(s.thread);
    const TimeNs end  = start + static_cast<TimeNs>(seconds * 1e9);
    TimeNs now        = start;
    while (now < end) {
        std::this_thread::sleep_for(std::chrono::nanoseconds(round));
        now = steady_now_ns();
        for (long i = 0; i < clients; ++i) {
            ServiceClient& c = *ranks[static_cast<std::size_t>(i)];
            TimeNs& t        = next[static_cast<std::size_t>(i)];
            for (; t + gap / 2 < now; t += gap) {
                // An event of gap/4: full at its start, low after it until
                // shortly before the next one.
                published += c.publish(svc::DemandRecord{t, 0, 4, 0}) ? 1 : 0;
                published +=
                        c.publish(svc::DemandRecord{t + gap / 4, t + gap - gap / 8, 1, 0}) ? 1 : 0;
            }
            c.set_through(t);  // its next record starts there
            c.sync();
        }
    }
    // Whatever is still in the rings is taken before the clock stops.
    std::this_thread::sleep_for(std::chrono::nanoseconds(4 * round));
    Load l;
    l.clients   = clients;
    l.records   = published;
    l.wall_s    = static_cast<double>(steady_now_ns() - start) * 1e-9;
    l.service_s = thread_cpu_s(s.thread) - cpu0;
    return l;
}

int syscall_window(long batch)
{
    Service s;
    auto client    = ServiceClient::connect(s.socket, false, request());
    batch          = std::min<long>(batch, svc::kRingCapacity);
    long failures  = 0;
    const long tid = static_cast<long>(::syscall(SYS_gettid));
    char line[96];
    int n = std::snprintf(line, sizeof line, "publish window begin (tid %ld)\n", tid);
    [[maybe_unused]] ssize_t w = ::write(2, line, static_cast<std::size_t>(n));
    publish_batch(*client, steady_now_ns(), batch, 3, failures);
    n = std::snprintf(line, sizeof line, "publish window end (tid %ld)\n", tid);
    w = ::write(2, line, static_cast<std::size_t>(n));
    std::printf("published %ld records (%ld found the ring full) between the markers\n", batch,
                failures);
    return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char **argv)
{
    long records   = 1'000'000;
    long batch     = 1000;
    long reactions = 200;
    long kills     = 20;
    bool window    = false;
    std::vector<long> load_clients;
    double load_rate    = 1718;  // slimlink-cg's events per rank-second (slimlink(7), Scale)
    double load_for     = 3;
    std::string load_on = "emulated";
    CLI::App app("slimlinkd's costs: publish ns per record on the rank's side, reaction to a "
                 "deadline and to a nudge, death detection (median and p99).",
                 "service-bench");
    bench::add_integer(app, "--records", records, 1, 1'000'000'000, "records published");
    bench::add_integer(app, "--batch", batch, 1, svc::kRingCapacity, "records per clock reading");
    bench::add_integer(app, "--reactions", reactions, 1, 100'000, "deadline and nudge rounds");
    bench::add_integer(app, "--kills", kills, 1, 10'000, "clients killed");
    app.add_flag("--syscall-window", window,
                 "only publish --batch records between two marked write(2)s, for strace");
    app.add_option("--load", load_clients,
                   "only the service's CPU under N clients' records (a list: 1,16,128)")
            ->delimiter(',')
            ->check(CLI::Range(1L, 1000L));
    app.add_option("--load-rate", load_rate, "events per second per client (default 1718)")
            ->check(CLI::Range(1.0, 1e6));
    app.add_option("--load-for", load_for, "seconds per load (default 3)")
            ->check(CLI::Range(0.1, 600.0));
    app.add_option("--load-port", load_on, "emulated (default) or real (acts at deadlines)")
            ->check(CLI::IsMember({"emulated", "real"}));
    if (const int status = bench::parse(app, argc, argv); status >= 0) {
        return status;
    }
    if (window) {
        return syscall_window(batch);
    }
    if (!load_clients.empty()) {
        std::printf("slimlinkd's CPU, service on a thread, %s port, %.0f events/s per client "
                    "(2 records each), %.1f s per load\n",
                    load_on.c_str(), load_rate, load_for);
        std::printf("%8s %12s %10s %14s %14s %16s\n", "clients", "records", "wall s",
                    "service CPU s", "ns per record", "cores (service)");
        for (const long n : load_clients) {
            const Load l = bench_load(n, load_rate, load_for, load_on == "emulated");
            std::printf("%8ld %12ld %10.2f %14.4f %14.1f %16.4f\n", l.clients, l.records, l.wall_s,
                        l.service_s,
                        l.records > 0 ? l.service_s * 1e9 / static_cast<double>(l.records) : 0.0,
                        l.service_s / l.wall_s);
        }
        return 0;
    }

    const Stats publish          = bench_publish(records, batch);
    const auto [deadline, nudge] = bench_reaction(static_cast<int>(reactions));
    const Stats death            = bench_death(static_cast<int>(kills));
    std::printf("slimlinkd, service on a thread, %ld records in batches of %ld, %ld reaction "
                "rounds, %ld kills\n",
                records, batch, reactions, kills);
    std::printf("%-44s %12s %12s\n", "measure", "median", "p99");
    std::printf("%-44s %9.1f ns %9.1f ns\n", "publish, per record (rank side)", publish.median,
                publish.p99);
    std::printf("%-44s %9.1f us %9.1f us\n", "deadline passed -> backend set_width",
                deadline.median, deadline.p99);
    std::printf("%-44s %9.1f us %9.1f us\n", "nudge (sync) -> backend set_width", nudge.median,
                nudge.p99);
    std::printf("%-44s %9.2f ms %9.2f ms\n", "SIGKILL of a client -> port at full width",
                death.median, death.p99);
    return 0;
}

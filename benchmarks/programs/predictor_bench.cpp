// SPDX-License-Identifier: BSD-3-Clause
// predictor-bench: what the pattern predictor costs per event, and what one
// ADGT run costs. Targets: median <= 50 ns
// per event, p99 <= 2 us per event, one ADGT run on 400 samples <= 10 us.
//
// Events are generated in memory before they are timed, a chunk at a time
// (so 10^7 events need 2.5 MiB, not 400 MiB, and generation is never timed).
// Per-event cost is measured in batches: steady_clock is read once per batch
// of --batch events, so its ~20 ns per reading does not swamp a ~20 ns event;
// median and p99 are over the batch means. A batch mean hides a rare slow
// event (a gram that completes a pattern, the event that runs ADGT), so a
// second pass times every event on its own and reports its p99 and maximum,
// clock overhead included.
//
// Usage: predictor-bench [--events N] [--batch N] [--adgt-runs N] [--seed N]
//                        [--no-single] [--strict]
// Exit status: 0; 3 with --strict when a target is missed; 2 on a usage error.
#include "bench_options.h"
#include "predict/predictor.h"
#include "predict/threshold_tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace {

using slim::predict::Event;
using slim::predict::EventId;
// The pattern predictor's two forms (PredictorConfig::tuned).
enum class Policy { pps, spps };
using slim::predict::Predictor;
using slim::predict::PredictorConfig;
using slim::predict::TimeNs;
using Clock = std::chrono::steady_clock;

constexpr double target_median_ns = 50.0;
constexpr double target_p99_ns    = 2000.0;
constexpr double target_adgt_ns   = 10000.0;

struct Options {
    std::uint64_t events    = 10'000'000;
    std::uint64_t batch     = 1000;
    std::uint64_t adgt_runs = 2000;
    std::uint64_t seed      = 1;
    bool single             = true;
    bool strict             = false;
};

// One step of the CG-like pattern: the event, and the idle time after it.
struct Step {
    EventId id;
    TimeNs duration_ns;
    TimeNs idle_after_ns;
};

// A CG-like iteration as one process sees it (NAS CG: a sparse mat-vec whose
// vector pieces are exchanged with partners, then two dot-product reductions,
// with local computation between): ids 3 Irecv, 4 Send, 5 Wait, 7 Allreduce.
// Short idle (2-3 us) inside a phase, long idle (40-250 us) between phases,
// so any grouping threshold from ~5 us to ~40 us finds three grams.
const std::vector<Step> cg_iteration{
        {3, 1'500, 3'000}, {4, 8'000, 3'000},   {5, 6'000, 3'000},    // exchange, partner 1
        {3, 1'500, 3'000}, {4, 8'000, 3'000},   {5, 6'000, 250'000},  // partner 2; mat-vec
        {7, 4'000, 2'000}, {5, 1'500, 40'000},                        // dot product
        {7, 4'000, 2'000}, {5, 1'500, 250'000},                       // second reduction
};

// Endless CG-like events; with jitter > 0 every duration and idle time is
// scaled by a uniform factor in [1 - jitter, 1 + jitter].
class CgTrace {
public:
    CgTrace(double jitter, std::uint64_t seed) : jitter_(jitter), rng_(seed) {}

    Event next(TimeNs *idle_after = nullptr)
    {
        const Step& s = cg_iteration[step_];
        step_         = (step_ + 1) % cg_iteration.size();
        Event e;
        e.start_ns        = now_;
        e.end_ns          = now_ + scaled(s.duration_ns);
        e.id              = s.id;
        const TimeNs idle = scaled(s.idle_after_ns);
        now_              = e.end_ns + idle;
        if (idle_after) {
            *idle_after = idle;
        }
        return e;
    }

private:
    TimeNs scaled(TimeNs ns)
    {
        if (jitter_ == 0) {
            return ns;
        }
        const double f = 1.0 + jitter_ * (2.0 * unit_(rng_) - 1.0);
        return static_cast<TimeNs>(std::llround(static_cast<double>(ns) * f));
    }

    double jitter_;
    std::mt19937_64 rng_;
    std::uniform_real_distribution<double> unit_{0.0, 1.0};
    std::size_t step_ = 0;
    TimeNs now_       = 0;
};

double percentile(std::vector<double> v, double p)
{
    if (v.empty()) {
        return 0;
    }
    const std::size_t k =
            std::min(v.size() - 1,
                     static_cast<std::size_t>(std::ceil(p * static_cast<double>(v.size())) - 1));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
}

double elapsed_ns(Clock::time_point a, Clock::time_point b)
{
    return static_cast<double>(std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
}

volatile std::uint64_t sink;  // keeps the decisions alive

struct RunResult {
    std::string name;
    Policy policy;
    double median_ns = 0, p99_ns = 0;             // batch means
    double single_p99_ns = 0, single_max_ns = 0;  // individually timed
    std::uint64_t grams = 0, predictions = 0, hits = 0, events = 0, restarts = 0;
    std::optional<TimeNs> gt_ns;
    std::size_t memory_bytes = 0;
};

PredictorConfig config_for(Policy policy)
{
    PredictorConfig c;
    c.tuned = policy == Policy::spps;
    return c;
}

// Batch pass: fills a chunk (untimed), times it batch by batch.
void batch_pass(const Options& o, double jitter, Policy policy, RunResult& r)
{
    Predictor predictor(config_for(policy));
    CgTrace trace(jitter, o.seed);
    const std::size_t chunk_events = static_cast<std::size_t>(o.batch) * 64;
    std::vector<Event> chunk(chunk_events);
    std::vector<double> batch_ns;
    batch_ns.reserve(static_cast<std::size_t>(o.events / o.batch) + 1);
    std::uint64_t acc = 0;
    for (std::uint64_t done = 0; done < o.events;) {
        const std::size_t n =
                static_cast<std::size_t>(std::min<std::uint64_t>(chunk_events, o.events - done));
        for (std::size_t i = 0; i < n; ++i) {
            chunk[i] = trace.next();
        }
        for (std::size_t b = 0; b + o.batch <= n; b += o.batch) {
            const auto t0 = Clock::now();
            for (std::size_t i = b; i < b + o.batch; ++i) {
                acc += predictor.on_event(chunk[i]).prediction_active;
            }
            const auto t1 = Clock::now();
            batch_ns.push_back(elapsed_ns(t0, t1) / static_cast<double>(o.batch));
        }
        done += n;
    }
    sink           = acc;
    r.median_ns    = percentile(batch_ns, 0.50);
    r.p99_ns       = percentile(batch_ns, 0.99);
    const auto& s  = predictor.stats();
    r.events       = s.events;
    r.grams        = s.grams;
    r.predictions  = s.predictions;
    r.hits         = s.hits;
    r.restarts     = s.restarts;
    r.gt_ns        = s.gt_ns;
    r.memory_bytes = predictor.memory_bytes();
}

// Single pass: every event timed on its own (clock overhead included).
void single_pass(const Options& o, double jitter, Policy policy, RunResult& r)
{
    Predictor predictor(config_for(policy));
    CgTrace trace(jitter, o.seed);
    constexpr std::size_t chunk_events = 65536;
    std::vector<Event> chunk(chunk_events);
    // Per-event times up to 1 ms in 1 ns bins; slower events counted apart.
    std::vector<std::uint32_t> histogram(1'000'000, 0);
    double slowest    = 0;
    std::uint64_t acc = 0;
    for (std::uint64_t done = 0; done < o.events;) {
        const std::size_t n =
                static_cast<std::size_t>(std::min<std::uint64_t>(chunk_events, o.events - done));
        for (std::size_t i = 0; i < n; ++i) {
            chunk[i] = trace.next();
        }
        for (std::size_t i = 0; i < n; ++i) {
            const auto t0 = Clock::now();
            acc += predictor.on_event(chunk[i]).prediction_active;
            const auto t1   = Clock::now();
            const double ns = elapsed_ns(t0, t1);
            slowest         = std::max(slowest, ns);
            ++histogram[std::min<std::size_t>(histogram.size() - 1, static_cast<std::size_t>(ns))];
        }
        done += n;
    }
    sink            = acc;
    const auto rank = static_cast<std::uint64_t>(std::ceil(0.99 * static_cast<double>(o.events)));
    std::uint64_t seen = 0;
    for (std::size_t ns = 0; ns < histogram.size(); ++ns) {
        seen += histogram[ns];
        if (seen >= rank) {
            r.single_p99_ns = static_cast<double>(ns);
            break;
        }
    }
    r.single_max_ns = slowest;
}

double clock_overhead_ns()
{
    std::vector<double> v;
    v.reserve(10001);
    for (int i = 0; i < 10001; ++i) {
        const auto t0 = Clock::now();
        const auto t1 = Clock::now();
        v.push_back(elapsed_ns(t0, t1));
    }
    return percentile(v, 0.5);
}

struct AdgtTiming {
    double median_ns = 0, p99_ns = 0;
    std::optional<TimeNs> gt_ns;
};

// ADGT on 400 idle intervals of the jittered trace, after the 100 the tuner
// skips, as SPPS would sample them.
AdgtTiming time_adgt(const Options& o)
{
    slim::predict::TunerConfig tc;
    CgTrace trace(0.10, o.seed);
    std::vector<TimeNs> samples;
    for (std::size_t i = 0; i < tc.skip_intervals + tc.sample_intervals; ++i) {
        TimeNs idle = 0;
        trace.next(&idle);
        if (i >= tc.skip_intervals) {
            samples.push_back(idle);
        }
    }
    AdgtTiming t;
    t.gt_ns = slim::predict::run_adgt(samples, tc).gt_ns;  // warm-up
    std::vector<double> runs;
    runs.reserve(o.adgt_runs);
    std::uint64_t acc = 0;
    for (std::uint64_t i = 0; i < o.adgt_runs; ++i) {
        const auto t0     = Clock::now();
        const auto result = slim::predict::run_adgt(samples, tc);
        const auto t1     = Clock::now();
        acc += result.bins;
        runs.push_back(elapsed_ns(t0, t1));
    }
    sink        = acc;
    t.median_ns = percentile(runs, 0.5);
    t.p99_ns    = percentile(runs, 0.99);
    return t;
}

std::string gt_text(const std::optional<TimeNs>& gt)
{
    if (!gt) {
        return "none";
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1fus", static_cast<double>(*gt) / 1e3);
    return buf;
}

// Reads the command line into `o`. Returns -1 to go on, else the exit
// status: 0 after --help, 2 after a usage error (printed).
int parse_options(int argc, char **argv, Options& o)
{
    CLI::App app("Cost of the pattern predictor per event and of one ADGT run, against the "
                 "targets.",
                 "predictor-bench");
    bench::add_integer(app, "--events", o.events, 1, 1'000'000'000'000, "events per trace");
    bench::add_integer(app, "--batch", o.batch, 1, 1'000'000'000, "events per clock reading");
    bench::add_integer(app, "--adgt-runs", o.adgt_runs, 1, 1'000'000'000, "ADGT runs timed");
    bench::add_integer(app, "--seed", o.seed, 0, INT64_MAX, "seed of the generated traces");
    bool no_single = false;
    app.add_flag("--no-single", no_single, "skip the pass that times every event on its own");
    app.add_flag("--strict", o.strict, "exit 3 when a target is missed");
    if (const int status = bench::parse(app, argc, argv); status >= 0) {
        return status;
    }
    o.single = !no_single;
    if (o.events < o.batch) {
        std::fprintf(stderr, "predictor-bench: --events must be at least --batch\n");
        return 2;
    }
    return -1;
}

const char *judge(bool met) { return met ? "met" : "MISSED"; }

}  // namespace

int main(int argc, char **argv)
{
    Options o;
    if (const int status = parse_options(argc, argv, o); status >= 0) {
        return status;
    }
    std::printf("predictor-bench: %llu events per trace, batches of %llu events, seed %llu\n",
                static_cast<unsigned long long>(o.events), static_cast<unsigned long long>(o.batch),
                static_cast<unsigned long long>(o.seed));
    const double overhead = clock_overhead_ns();
    std::printf("steady_clock: %.0f ns per pair of readings (in the single-event columns, "
                "not in the batch columns)\n\n",
                overhead);

    struct Case {
        const char *name;
        double jitter;
        Policy policy;
    };
    const Case cases[] = {{"cg-periodic", 0.0, Policy::spps},
                          {"cg-jitter10", 0.10, Policy::spps},
                          {"cg-periodic", 0.0, Policy::pps},
                          {"cg-jitter10", 0.10, Policy::pps}};

    std::printf("%-12s %-6s %9s %9s %9s %8s %8s %9s | %10s %10s | %9s %9s\n", "trace", "policy",
                "grams", "predict", "hit rate", "GT", "restarts", "mem KiB", "median ns", "p99 ns",
                "1-ev p99", "1-ev max");
    std::vector<RunResult> results;
    for (const Case& c : cases) {
        RunResult r;
        r.name   = c.name;
        r.policy = c.policy;
        batch_pass(o, c.jitter, c.policy, r);
        if (o.single) {
            single_pass(o, c.jitter, c.policy, r);
        }
        const double hit_rate =
                r.events ? static_cast<double>(r.hits) / static_cast<double>(r.events) : 0.0;
        std::printf("%-12s %-6s %9llu %9llu %9.3f %8s %8llu %9.1f | %10.1f %10.1f | %9s %9s\n",
                    r.name.c_str(), c.policy == Policy::pps ? "pps" : "spps",
                    static_cast<unsigned long long>(r.grams),
                    static_cast<unsigned long long>(r.predictions), hit_rate,
                    gt_text(r.gt_ns).c_str(), static_cast<unsigned long long>(r.restarts),
                    static_cast<double>(r.memory_bytes) / 1024.0, r.median_ns, r.p99_ns,
                    o.single ? std::to_string(std::lround(r.single_p99_ns)).c_str() : "-",
                    o.single ? std::to_string(std::lround(r.single_max_ns)).c_str() : "-");
        std::fflush(stdout);
        results.push_back(r);
    }

    const AdgtTiming adgt = time_adgt(o);
    std::printf("\nADGT, 400 idle intervals of cg-jitter10: median %.2f us, p99 %.2f us over %llu "
                "runs (GT found: %s)\n\n",
                adgt.median_ns / 1e3, adgt.p99_ns / 1e3,
                static_cast<unsigned long long>(o.adgt_runs), gt_text(adgt.gt_ns).c_str());

    double worst_median = 0, worst_p99 = 0, worst_single_p99 = 0;
    for (const RunResult& r : results) {
        worst_median     = std::max(worst_median, r.median_ns);
        worst_p99        = std::max(worst_p99, r.p99_ns);
        worst_single_p99 = std::max(worst_single_p99, r.single_p99_ns);
    }
    bool all_met = true;
    auto target  = [&](const char *what, const char *measured, bool met) {
        all_met = all_met && met;
        std::printf("  %-44s %-22s %s\n", what, measured, judge(met));
    };
    char buf[64];
    std::printf("targets (worst case over the traces above)\n");
    std::snprintf(buf, sizeof buf, "%.1f ns", worst_median);
    target("median per event <= 50 ns (batch means)", buf, worst_median <= target_median_ns);
    std::snprintf(buf, sizeof buf, "%.1f ns", worst_p99);
    target("p99 per event <= 2 us (batch means)", buf, worst_p99 <= target_p99_ns);
    if (o.single) {
        std::snprintf(buf, sizeof buf, "%.0f ns", worst_single_p99);
        target("p99 per event <= 2 us (single events)", buf, worst_single_p99 <= target_p99_ns);
    }
    std::snprintf(buf, sizeof buf, "%.2f us (median)", adgt.median_ns / 1e3);
    target("one ADGT run, 400 samples <= 10 us", buf, adgt.median_ns <= target_adgt_ns);
    return (o.strict && !all_met) ? 3 : 0;
}

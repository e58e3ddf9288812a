// SPDX-License-Identifier: BSD-3-Clause
// The predictor facade: PPS with a fixed grouping threshold and SPPS with the
// threshold tuned by ADGT (thesis §5.2, §5.3), on the worked example and on
// synthetic application-like traces with jittered idle times.
#include "predict/predictor.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <random>
#include <vector>

using slim::predict::Decision;
using slim::predict::Event;
using slim::predict::EventId;
using slim::predict::Predictor;
using slim::predict::PredictorConfig;
using slim::predict::PredictorStats;
using slim::predict::TimeNs;

// Counts every allocation of the test binary, so a test can show that a
// stretch of code allocates nothing. Plain malloc/free underneath; every
// non-aligned form is replaced, so that no allocation made by one allocator
// is freed by the other (AddressSanitizer checks this with --enable-asan).
namespace {
std::atomic<std::uint64_t> g_allocations{0};

void *counted_malloc(std::size_t size) noexcept
{
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    return std::malloc(size ? size : 1);
}
}  // namespace

void *operator new(std::size_t size)
{
    if (void *p = counted_malloc(size)) {
        return p;
    }
    throw std::bad_alloc();
}
void *operator new[](std::size_t size) { return operator new(size); }
void *operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    return counted_malloc(size);
}
void *operator new[](std::size_t size, const std::nothrow_t&) noexcept
{
    return counted_malloc(size);
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t&) noexcept { std::free(p); }

namespace {

constexpr TimeNs kUs = 1'000;

PredictorConfig pps(TimeNs gt = 20 * kUs)
{
    PredictorConfig c;
    c.tuned       = false;
    c.fixed_gt_ns = gt;
    return c;
}

PredictorConfig spps()
{
    PredictorConfig c;
    c.tuned = true;
    return c;
}

// Builds a trace: each event follows the previous one after an idle time
// drawn uniformly within +-jitter of the nominal one.
class TraceBuilder {
public:
    explicit TraceBuilder(std::uint64_t seed, double jitter = 0.0) : rng_(seed), jitter_(jitter) {}

    void add(EventId id, TimeNs idle, TimeNs duration = 2 * kUs)
    {
        add(id, idle, duration, jitter_);
    }

    void add(EventId id, TimeNs idle, TimeNs duration, double jitter)
    {
        std::uniform_real_distribution<double> factor(1.0 - jitter, 1.0 + jitter);
        const TimeNs start =
                events.empty() ? 0 : now_ + std::llround(static_cast<double>(idle) * factor(rng_));
        Event e;
        e.start_ns = start;
        e.end_ns   = start + duration;
        e.id       = id;
        events.push_back(e);
        now_ = e.end_ns;
    }

    // CG-like iteration: a halo exchange with three neighbours (MPI_Sendrecv,
    // close together), computation, an MPI_Allreduce, computation.
    void cg_iteration(TimeNs compute_a = 250 * kUs, TimeNs compute_b = 400 * kUs)
    {
        add(41, compute_a);
        add(42, 3 * kUs);
        add(43, 3 * kUs);
        add(10, compute_b, 5 * kUs);
    }

    // FFT-like iteration: transpose phases (MPI_Alltoall) between long
    // computations, a differently sized one, and a residual MPI_Allreduce.
    void fft_iteration()
    {
        add(70, 800 * kUs, 30 * kUs);
        add(70, 300 * kUs, 30 * kUs);
        add(71, 1500 * kUs, 20 * kUs);
        add(10, 100 * kUs, 5 * kUs);
    }

    std::vector<Event> events;

private:
    std::mt19937_64 rng_;
    double jitter_;
    TimeNs now_ = 0;
};

// Feeds `events`; hits and events counted from `measure_from` on.
struct Replay {
    std::uint64_t events = 0;
    std::uint64_t hits   = 0;
    double hit_rate() const { return events ? static_cast<double>(hits) / events : 0.0; }
};

Replay replay(Predictor& p, const std::vector<Event>& events, std::size_t measure_from = 0)
{
    Replay r;
    for (std::size_t i = 0; i < events.size(); ++i) {
        const Decision d = p.on_event(events[i]);
        if (i >= measure_from) {
            ++r.events;
            r.hits += d.hit;
        }
    }
    return r;
}

// The Alya stream of Figures 5.2 and 5.3 (41 = MPI_Sendrecv, 10 =
// MPI_Allreduce): grams 41-41-41, 10, 10; 2 us inside a gram, `long_idle`
// between grams.
void alya_events(TraceBuilder& t, int count, TimeNs long_idle = 500 * kUs)
{
    for (int n = static_cast<int>(t.events.size()) + 1, end = n + count; n < end; ++n) {
        const int k = (n - 1) % 5;
        t.add(k < 3 ? 41 : 10, k == 1 || k == 2 ? 2 * kUs : long_idle, kUs);
    }
}

}  // namespace

TEST_CASE("Figure 5.3 through the predictor: prediction is off for events 1-20, on from event 21",
          "[predict]")
{
    Predictor p(pps());
    TraceBuilder t(1);
    alya_events(t, 25);
    for (int n = 1; n <= 25; ++n) {
        CAPTURE(n);
        const Decision d = p.on_event(t.events[n - 1]);
        CHECK(d.prediction_active == (n >= 21));
        CHECK(d.hit == (n >= 22));  // 21 switched it on; it was not on yet
        if (n == 23) {
            // 41-41-41 complete: low power for t1 = 500 us - (5 % + 10 us).
            REQUIRE(d.low_power);
            CHECK(d.low_power->from_ns == t.events[22].end_ns);
            CHECK(d.low_power->until_ns == t.events[22].end_ns + 465 * kUs);
        } else if (n == 24 || n == 25) {
            REQUIRE(d.low_power);  // each 10 is a whole gram
        } else {
            CHECK_FALSE(d.low_power);
        }
    }
    const PredictorStats& s = p.stats();
    CHECK(s.events == 25);
    CHECK(s.grams == 14);
    CHECK(s.hits == 4);
    CHECK(s.predictions == 3);
    CHECK(s.mispredictions == 0);
    REQUIRE(s.gt_ns);
    CHECK(*s.gt_ns == 20 * kUs);
}

TEST_CASE("requested low-power time is counted up to the next event only", "[predict]")
{
    Predictor p(pps());
    TraceBuilder t(1);
    alya_events(t, 23);
    t.add(10, 300 * kUs, kUs);  // t1 predicted at 500 us turns out to be 300 us
    replay(p, t.events);
    CHECK(p.stats().predictions == 2);  // after event 23 and event 24
    CHECK(p.stats().predicted_idle_ns == 300 * kUs);
    TimeNs idle = 0;
    for (std::size_t i = 1; i < t.events.size(); ++i) {
        idle += t.events[i].start_ns - t.events[i - 1].end_ns;
    }
    CHECK(p.stats().total_idle_ns == idle);
}

TEST_CASE("a misprediction turns prediction off; the used pattern returns on its next occurrence",
          "[predict]")
{
    Predictor p(pps());
    TraceBuilder t(2);
    alya_events(t, 60);
    replay(p, t.events);
    REQUIRE(p.stats().mispredictions == 0);
    REQUIRE(p.stats().hits > 30);

    // An unexpected MPI call (id 99) where the next 41-41-41 should start.
    Event noise      = t.events.back();
    noise.start_ns   = noise.end_ns + 500 * kUs;
    noise.end_ns     = noise.start_ns + kUs;
    noise.id         = 99;
    const Decision d = p.on_event(noise);
    CHECK_FALSE(d.hit);
    CHECK_FALSE(d.prediction_active);
    CHECK(p.stats().mispredictions == 1);

    // The pattern goes on. Three new back-to-back occurrences of
    // 41-41-41_10_10 would take nine completed grams; the used pattern is
    // recognised again sooner.
    const std::uint64_t grams_at_noise = p.stats().grams;
    TimeNs now                         = noise.end_ns;
    bool back_on                       = false;
    std::uint64_t grams_needed         = 0;
    for (int n = 1; n <= 30 && !back_on; ++n) {
        const int k = (n - 1) % 5;
        Event e;
        e.start_ns = now + (k == 1 || k == 2 ? 2 * kUs : 500 * kUs);
        e.end_ns   = e.start_ns + kUs;
        e.id       = k < 3 ? 41 : 10;
        now        = e.end_ns;
        back_on    = p.on_event(e).prediction_active;
        // Grams completed since the noise, the noise gram itself excluded.
        grams_needed = p.stats().grams - grams_at_noise - 1;
    }
    CHECK(back_on);
    CHECK(grams_needed < 9);
    CHECK(p.stats().mispredictions == 1);
}

TEST_CASE("PPS predicts a CG-like trace with jittered idle times", "[predict]")
{
    TraceBuilder t(11, 0.10);
    for (int i = 0; i < 2000; ++i) {
        t.cg_iteration();
    }
    Predictor p(pps());
    const Replay r = replay(p, t.events, t.events.size() / 2);
    CHECK(r.hit_rate() >= 0.9);
    CHECK(p.stats().mispredictions == 0);
    // Most of the idle time is spent in low power.
    CHECK(static_cast<double>(p.stats().predicted_idle_ns) > 0.7 * p.stats().total_idle_ns);
}

TEST_CASE("PPS recovers from occasional unexpected calls in a CG-like trace", "[predict]")
{
    // One iteration in fifty carries an extra MPI call of its own: each is a
    // misprediction, and the used pattern is reactivated soon after.
    TraceBuilder t(21, 0.10);
    std::mt19937 rng(22);
    int extra = 0;
    for (int i = 0; i < 4000; ++i) {
        t.cg_iteration();
        if (i > 100 && rng() % 50 == 0) {
            t.add(99, 100 * kUs);
            ++extra;
        }
    }
    Predictor p(pps());
    const Replay r = replay(p, t.events, t.events.size() / 2);
    CHECK(p.stats().mispredictions > 0);
    CHECK(p.stats().mispredictions <= static_cast<std::uint64_t>(extra));
    CHECK(r.hit_rate() >= 0.9);
}

TEST_CASE("PPS finds a longer iteration after a phase with a shorter one", "[predict]")
{
    // maxPatternSize is 2 after the CG-like phase; the second phase repeats
    // every five grams.
    TraceBuilder t(23, 0.10);
    for (int i = 0; i < 300; ++i) {
        t.cg_iteration();
    }
    const std::size_t phase2 = t.events.size();
    for (int i = 0; i < 2000; ++i) {
        for (const EventId id : {1u, 2u, 3u, 4u, 5u}) {
            t.add(id, 300 * kUs);
        }
    }
    Predictor p(pps());
    const Replay r = replay(p, t.events, phase2 + (t.events.size() - phase2) / 2);
    CHECK(r.hit_rate() >= 0.9);
}

TEST_CASE("PPS predicts an FFT-like trace with jittered idle times", "[predict]")
{
    TraceBuilder t(12, 0.10);
    for (int i = 0; i < 2000; ++i) {
        t.fft_iteration();
    }
    Predictor p(pps());
    const Replay r = replay(p, t.events, t.events.size() / 2);
    CHECK(r.hit_rate() >= 0.9);
    CHECK(p.stats().mispredictions == 0);
    CHECK(static_cast<double>(p.stats().predicted_idle_ns) > 0.7 * p.stats().total_idle_ns);
}

TEST_CASE("SPPS tunes the grouping threshold and then predicts a CG-like trace", "[predict]")
{
    TraceBuilder t(13, 0.10);
    for (int i = 0; i < 2000; ++i) {
        t.cg_iteration();
    }
    Predictor p(spps());
    // Nothing is predicted while the tuner skips and samples. The 3 us
    // intervals inside the halo are not sampled (under 20 us, §5.3.2), so
    // the sample of 400 takes more than skip + 400 events.
    const std::size_t skip_and_sample =
            p.config().tuner.skip_intervals + p.config().tuner.sample_intervals;
    std::size_t tuning = 0;
    for (; tuning < t.events.size() && !p.stats().gt_ns; ++tuning) {
        CHECK_FALSE(p.on_event(t.events[tuning]).prediction_active);
    }
    REQUIRE(p.stats().gt_ns);
    CHECK(tuning > skip_and_sample + 1);
    // Between the 3 us inside the halo and the 250 us of computation.
    CHECK(*p.stats().gt_ns > 3 * kUs * 1.1 / 0.9);
    CHECK(*p.stats().gt_ns < 225 * kUs * 0.9);

    std::vector<Event> rest(t.events.begin() + static_cast<std::ptrdiff_t>(tuning), t.events.end());
    const Replay r = replay(p, rest, rest.size() / 2);
    CHECK(r.hit_rate() >= 0.9);
    CHECK(p.stats().restarts == 0);
    CHECK_FALSE(p.stats().gave_up);
}

TEST_CASE("SPPS tunes the grouping threshold and then predicts an FFT-like trace", "[predict]")
{
    TraceBuilder t(14, 0.10);
    for (int i = 0; i < 2000; ++i) {
        t.fft_iteration();
    }
    Predictor p(spps());
    const Replay r = replay(p, t.events, t.events.size() / 2);
    REQUIRE(p.stats().gt_ns);
    CHECK(*p.stats().gt_ns < 90 * kUs * 0.9);  // below the shortest computation
    CHECK(r.hit_rate() >= 0.9);
    CHECK(p.stats().restarts == 0);
}

TEST_CASE("SPPS restarts when idle intervals fall in the dangerous zone, and tunes a new threshold",
          "[predict]")
{
    TraceBuilder t(15, 0.10);
    for (int i = 0; i < 1000; ++i) {
        t.cg_iteration();
    }
    Predictor p(spps());
    replay(p, t.events);
    REQUIRE(p.stats().gt_ns);
    REQUIRE(p.stats().restarts == 0);
    const TimeNs old_gt = *p.stats().gt_ns;

    // The application changes phase: the first computation now lasts about
    // the old GT (within 3 %), in the middle of its dangerous zone.
    TraceBuilder next(16, 0.10);
    for (int i = 0; i < 1500; ++i) {
        next.cg_iteration(old_gt);
    }
    std::vector<Event> phase2 = next.events;
    const TimeNs shift        = t.events.back().end_ns + 400 * kUs;
    for (Event& e : phase2) {
        e.start_ns += shift;
        e.end_ns += shift;
    }
    const Replay r = replay(p, phase2, phase2.size() / 2);
    CHECK(p.stats().restarts >= 1);
    REQUIRE(p.stats().gt_ns);
    CHECK(*p.stats().gt_ns != old_gt);
    // The new GT keeps clear of the new intervals, and prediction resumes.
    CHECK(std::abs(*p.stats().gt_ns - old_gt) > old_gt / 5);
    CHECK(r.hit_rate() >= 0.9);
}

TEST_CASE("SPPS tolerates one interval in the dangerous zone, not two within three pattern lengths",
          "[predict]")
{
    TraceBuilder t(24, 0.10);
    for (int i = 0; i < 1000; ++i) {
        t.cg_iteration();
    }
    Predictor p(spps());
    replay(p, t.events);
    REQUIRE(p.stats().gt_ns);
    const TimeNs gt            = *p.stats().gt_ns;
    const std::size_t tuned_at = t.events.size();

    // An iteration whose first computation lasts exactly the GT (no jitter):
    // one idle interval in the dangerous zone. The pattern is two grams, so
    // the restart window is six grams, three iterations.
    auto dangerous_iteration = [&] {
        t.add(41, gt, 2 * kUs, 0.0);
        t.add(42, 3 * kUs);
        t.add(43, 3 * kUs);
        t.add(10, 400 * kUs, 5 * kUs);
    };
    auto normal_iterations = [&](int n) {
        for (int i = 0; i < n; ++i) {
            t.cg_iteration();
        }
    };
    std::uint64_t expected_restarts = 0;
    SECTION("a single one")
    {
        dangerous_iteration();
        normal_iterations(100);
    }
    SECTION("two, four iterations apart")
    {
        dangerous_iteration();
        normal_iterations(3);
        dangerous_iteration();
        normal_iterations(100);
    }
    SECTION("two, in consecutive iterations")
    {
        dangerous_iteration();
        dangerous_iteration();
        normal_iterations(100);
        expected_restarts = 1;
    }
    const std::vector<Event> rest(t.events.begin() + static_cast<std::ptrdiff_t>(tuned_at),
                                  t.events.end());
    replay(p, rest);
    CHECK(p.stats().restarts == expected_restarts);
}

TEST_CASE("SPPS without a usable grouping threshold predicts nothing", "[predict]")
{
    // Idle times spread evenly over the whole log-scale range: every
    // histogram bin is crowded, ADGT gives up.
    std::mt19937_64 rng(17);
    std::uniform_real_distribution<double> exponent(std::log(20e3), std::log(1e9));
    Predictor p(spps());
    TimeNs now       = 0;
    bool ever_active = false;
    for (int i = 0; i < 1000; ++i) {
        Event e;
        e.start_ns = now + static_cast<TimeNs>(std::exp(exponent(rng)));
        e.end_ns   = e.start_ns + kUs;
        e.id       = static_cast<EventId>(i % 3);
        now        = e.end_ns;
        ever_active |= p.on_event(e).prediction_active;
    }
    CHECK(p.stats().gave_up);
    CHECK_FALSE(p.stats().gt_ns);
    CHECK_FALSE(ever_active);
    CHECK(p.stats().grams == 0);
}

TEST_CASE("SPPS samples again after giving up, and finds a later regular phase", "[predict]")
{
    // 600 intervals of noise (ADGT gives up), then a regular CG-like phase.
    const auto run = [](std::size_t retry_after) {
        std::mt19937_64 rng(19);
        std::uniform_real_distribution<double> exponent(std::log(20e3), std::log(1e9));
        TraceBuilder t(20, 0.10);
        for (int i = 0; i < 600; ++i) {
            t.add(static_cast<EventId>(i % 3), static_cast<TimeNs>(std::exp(exponent(rng))), kUs,
                  0.0);
        }
        for (int i = 0; i < 3000; ++i) {
            t.cg_iteration();
        }
        PredictorConfig c       = spps();
        c.retry_after_intervals = retry_after;
        Predictor p(c);
        for (const Event& e : t.events) {
            p.on_event(e);
        }
        return p.stats();
    };
    SECTION("by default, 1000 idle intervals later")
    {
        const PredictorStats s = run(1000);
        CHECK(s.gave_up);
        CHECK(s.tuning_retries >= 1);
        REQUIRE(s.gt_ns);
        CHECK(s.hits > 1000);
    }
    SECTION("never, as the thesis does, with 0")
    {
        const PredictorStats s = run(0);
        CHECK(s.gave_up);
        CHECK(s.tuning_retries == 0);
        CHECK_FALSE(s.gt_ns);
        CHECK(s.hits == 0);
    }
}

TEST_CASE("the predictor allocates nothing per event once constructed", "[predict]")
{
    // A regular phase, a phase of churn that fills and evicts the pattern
    // list and the gram table, and a regular phase again.
    TraceBuilder t(18, 0.10);
    for (int i = 0; i < 300; ++i) {
        t.cg_iteration();
    }
    std::mt19937 rng(19);
    for (int i = 0; i < 20000; ++i) {
        t.add(100 + rng() % 5000, rng() % 2 ? 3 * kUs : 300 * kUs);
    }
    for (int i = 0; i < 300; ++i) {
        t.fft_iteration();
    }
    for (const bool tuned : {false, true}) {
        CAPTURE(!tuned);
        PredictorConfig c            = tuned ? spps() : pps();
        c.gram_kinds_capacity        = 512;  // fills up during the churn
        c.pattern_capacity           = 256;
        const std::uint64_t at_start = g_allocations.load();
        Predictor p(c);
        CHECK(g_allocations.load() > at_start);  // the counter does count
        std::uint64_t hits         = 0;
        const std::uint64_t before = g_allocations.load();
        for (const Event& e : t.events) {
            hits += p.on_event(e).hit;
        }
        const std::uint64_t allocations = g_allocations.load() - before;
        CHECK(allocations == 0);
        CHECK(hits > 0);
    }
}

TEST_CASE("memory stays bounded: 10^7 events in less than 1 MiB", "[predict]")
{
    // Generated on the fly (a stored trace would need 320 MB): phases of a
    // regular pattern alternate with phases of new, ever-changing grams.
    Predictor p(pps());
    const std::size_t initial = p.memory_bytes();
    CHECK(initial < 1024 * 1024);

    std::uint64_t x    = 88172645463325252ull;
    TimeNs now         = 0;
    std::uint64_t hits = 0;
    const auto start   = std::chrono::steady_clock::now();
    for (std::uint64_t i = 0; i < 10'000'000; ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const bool regular = (i / 50'000) % 2 == 0;
        const int k        = static_cast<int>(i % 5);
        Event e;
        e.id       = regular ? (k < 3 ? 41 : 10) : static_cast<EventId>(1000 + x % 100'000);
        e.start_ns = now + (regular ? (k == 1 || k == 2 ? 2 * kUs : 500 * kUs)
                                    : static_cast<TimeNs>(x % 3 ? 3 * kUs : 300 * kUs));
        e.end_ns   = e.start_ns + kUs;
        now        = e.end_ns;
        hits += p.on_event(e).hit;
    }
    const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    INFO("10^7 events in " << seconds << " s, " << p.memory_bytes() << " bytes");
    CHECK(p.stats().events == 10'000'000);
    CHECK(p.memory_bytes() == initial);
    CHECK(p.memory_bytes() < 1024 * 1024);
    CHECK(hits > 4'000'000);  // the regular half is predicted
}

// SPDX-License-Identifier: BSD-3-Clause
// ADGT (thesis §5.3.2, Algorithm 5) and the tuner's skip/sample states, on
// synthetic idle-interval samples built here; the default TunerConfig is the
// thesis's (skip 100, sample 400, alpha 4, 20 us..1 s, gap 1.494).
#include "predict/threshold_tuner.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

using slim::predict::AdgtResult;
using slim::predict::run_adgt;
using slim::predict::ThresholdTuner;
using slim::predict::TimeNs;
using slim::predict::TunerConfig;

namespace {

constexpr std::size_t kBins = 20;  // floor(sqrt(400))

// Lower edge of bin b of the default 20 us..1 s log-scale histogram.
double edge(std::size_t b)
{
    return 20'000.0 * std::pow(1e9 / 20'000.0, static_cast<double>(b) / kBins);
}

// A point at `fraction` of the way through bin b, in log scale.
TimeNs in_bin(std::size_t b, double fraction)
{
    return std::llround(edge(b) * std::pow(edge(1) / edge(0), fraction));
}

// Three well-separated peaks, +-10 % jitter from a fixed seed: 200 intervals
// near 30 us (bin 0), 150 near 400 us (bin 5), 50 near 20 ms (bin 12).
// Interleaved, as a process would see them.
std::vector<TimeNs> three_peaks()
{
    std::mt19937 rng(20'240'531);
    std::vector<TimeNs> out;
    for (int i = 0; i < 400; ++i) {
        const double jitter = static_cast<double>(rng()) / 4294967296.0 * 0.2 - 0.1;
        const int slot      = i % 8;
        const double centre = slot < 4 ? 30e3 : slot < 7 ? 400e3 : 20e6;
        out.push_back(std::llround(centre * (1.0 + jitter)));
    }
    return out;
}

// Log-uniform over the whole histogram, evenly spread: 20 intervals per bin.
std::vector<TimeNs> dense_everywhere()
{
    std::vector<TimeNs> out;
    for (int i = 0; i < 400; ++i) {
        out.push_back(std::llround(20'000.0 * std::pow(1e9 / 20'000.0, (i + 0.5) / 400.0)));
    }
    return out;
}

bool near_gt(TimeNs idle, TimeNs gt)
{
    return std::fabs(static_cast<double>(idle - gt)) <= 0.1 * static_cast<double>(gt);
}

// Line 36 up to the integer: GT is 1.1 x / 0.9 rounded up.
void require_gt_from(TimeNs gt, double x)
{
    const double exact = 1.1 * x / 0.9;
    REQUIRE(static_cast<double>(gt) >= exact);
    REQUIRE(static_cast<double>(gt) < exact + 1.0);
}

void feed(ThresholdTuner& tuner, const std::vector<TimeNs>& idles)
{
    for (const TimeNs idle : idles) {
        tuner.add_idle(idle);
    }
}

}  // namespace

TEST_CASE("adgt uses 20 bins and a dangerous count of 5 for 400 intervals", "[adgt]")
{
    SECTION("400 intervals, alpha 4")
    {
        const AdgtResult result = run_adgt(three_peaks(), TunerConfig{});
        REQUIRE(result.bins == 20);
        REQUIRE(result.dang_num == 5);
    }
    SECTION("nBin is the floor of the square root")
    {
        const AdgtResult result = run_adgt(std::vector<TimeNs>(399, 1'000'000), TunerConfig{});
        REQUIRE(result.bins == 19);
        REQUIRE(result.dang_num == 6);  // floor(4 x 28.6 / 19) = floor(6.02)
    }
    SECTION("an empty sample has no bins and no GT")
    {
        const AdgtResult result = run_adgt({}, TunerConfig{});
        REQUIRE(result.bins == 0);
        REQUIRE_FALSE(result.gt_ns);
    }
}

TEST_CASE("adgt puts the GT in the gap between two peaks by 1.1 x / 0.9", "[adgt]")
{
    const std::vector<TimeNs> samples = three_peaks();
    const AdgtResult result           = run_adgt(samples, TunerConfig{});
    REQUIRE(result.gt_ns);
    const TimeNs gt = *result.gt_ns;

    // 90 % of the idle time is in the 20 ms peak (bin 12), so indexBin = 12
    // and the largest empty bin below it is bin 11.
    REQUIRE(result.chosen_bin == 11);
    REQUIRE(result.final_idle_share == Approx(0.90));

    // x, the gap's lower end: the bin's lower edge or a sample above it.
    double x = edge(result.chosen_bin);
    for (const TimeNs s : samples) {
        if (static_cast<double>(s) > x && s < gt) {
            x = static_cast<double>(s);
        }
    }
    require_gt_from(gt, x);

    TimeNs middle_peak_max = 0;
    TimeNs top_peak_min    = INT64_MAX;
    for (const TimeNs s : samples) {
        if (s < 1'000'000) {
            middle_peak_max = std::max(middle_peak_max, s);
        } else {
            top_peak_min = std::min(top_peak_min, s);
        }
    }
    REQUIRE(middle_peak_max < gt);
    REQUIRE(gt < top_peak_min);
    for (const TimeNs s : samples) {
        INFO("sample " << s << " ns, GT " << gt << " ns");
        REQUIRE_FALSE(near_gt(s, gt));
    }
}

TEST_CASE("adgt finds no GT when every bin is crowded", "[adgt]")
{
    const AdgtResult result = run_adgt(dense_everywhere(), TunerConfig{});
    REQUIRE_FALSE(result.gt_ns);
    REQUIRE(result.final_idle_share < TunerConfig{}.min_idle_share);

    ThresholdTuner tuner;
    feed(tuner, std::vector<TimeNs>(100, 1'000'000));
    feed(tuner, dense_everywhere());
    REQUIRE(tuner.state() == ThresholdTuner::State::gave_up);
    REQUIRE_FALSE(tuner.gt_ns());
    REQUIRE_FALSE(tuner.in_dangerous_zone(1'000'000));
}

TEST_CASE("adgt does not choose a bin again once its gap search failed", "[adgt]")
{
    // Every bin crowded (21 intervals spread through it) except bin 6, with
    // one interval in its middle (1.31 to either edge: no 1.494 gap), and
    // bin 3, with two intervals near its lower edge and a gap above them.
    // Bin 6 has the fewest intervals and fails; the literal pseudo-code would
    // pick it again until the share runs out.
    std::vector<TimeNs> samples;
    for (std::size_t b = 0; b < kBins; ++b) {
        if (b == 6) {
            samples.push_back(in_bin(b, 0.5));
        } else if (b == 3) {
            samples.push_back(in_bin(b, 0.05));
            samples.push_back(in_bin(b, 0.10));
        } else {
            for (int k = 0; k < 21; ++k) {
                samples.push_back(in_bin(b, (k + 0.5) / 21.0));
            }
        }
    }
    while (samples.size() < 400) {
        samples.push_back(3'000'000'000);  // beyond 1 s: the last bin
    }

    const AdgtResult result = run_adgt(samples, TunerConfig{});
    REQUIRE(result.gt_ns);
    REQUIRE(result.chosen_bin == 3);
    REQUIRE(result.final_idle_share == Approx(0.90 * 0.95));  // one decay, line 34
    require_gt_from(*result.gt_ns, static_cast<double>(in_bin(3, 0.10)));
    for (const TimeNs s : samples) {
        REQUIRE_FALSE(near_gt(s, *result.gt_ns));
    }
}

TEST_CASE("adgt handles degenerate samples", "[adgt]")
{
    SECTION("all intervals below 20 us are ignored: no bins, no GT")
    {
        std::vector<TimeNs> samples;
        for (int i = 0; i < 400; ++i) {
            samples.push_back(1'000 + 45 * i);  // 1 us .. 19 us
        }
        const AdgtResult result = run_adgt(samples, TunerConfig{});
        REQUIRE(result.bins == 0);
        REQUIRE_FALSE(result.gt_ns);
    }
    SECTION("intervals below 20 us do not change the GT")
    {
        // Two clusters, 30-40 us and 1 ms, with an empty range between them;
        // then the same plus as many 5 us gaps.
        std::vector<TimeNs> samples;
        for (int i = 0; i < 200; ++i) {
            samples.push_back(30'000 + 50 * i);
            samples.push_back(1'000'000 + 100 * i);
        }
        const AdgtResult clean = run_adgt(samples, TunerConfig{});
        REQUIRE(clean.gt_ns);
        std::vector<TimeNs> noisy = samples;
        for (int i = 0; i < 400; ++i) {
            noisy.push_back(5'000 + (i % 7) * 100);
        }
        const AdgtResult result = run_adgt(noisy, TunerConfig{});
        REQUIRE(result.bins == clean.bins);
        REQUIRE(result.gt_ns == clean.gt_ns);
    }
    SECTION("all intervals equal: GT in the empty bin just below them")
    {
        const std::vector<TimeNs> samples(400, 1'000'000);  // 1 ms, bin 7
        const AdgtResult result = run_adgt(samples, TunerConfig{});
        REQUIRE(result.gt_ns);
        REQUIRE(result.chosen_bin == 6);
        require_gt_from(*result.gt_ns, edge(6));
        REQUIRE(*result.gt_ns < 1'000'000);
        REQUIRE_FALSE(near_gt(1'000'000, *result.gt_ns));
    }
    SECTION("intervals above 1 s land in the last bin")
    {
        // If they were dropped, bin 0 would hold all the idle time and there
        // would be no GT; in bin 19 they make bin 18 the empty bin to use.
        std::vector<TimeNs> samples;
        for (int i = 0; i < 200; ++i) {
            samples.push_back(30'000);
            samples.push_back(i % 2 == 0 ? 1'000'000'000 : 5'000'000'000);
        }
        const AdgtResult result = run_adgt(samples, TunerConfig{});
        REQUIRE(result.gt_ns);
        REQUIRE(result.chosen_bin == 18);
        require_gt_from(*result.gt_ns, edge(18));
    }
}

TEST_CASE("threshold tuner skips 100 intervals, samples 400, then tunes once", "[adgt]")
{
    using State                     = ThresholdTuner::State;
    const std::vector<TimeNs> peaks = three_peaks();
    const AdgtResult expected       = run_adgt(peaks, TunerConfig{});
    REQUIRE(expected.gt_ns);

    ThresholdTuner tuner;
    REQUIRE(tuner.state() == State::skipping);
    // 9 ms sits in the gap the peaks leave: sampled, it would move the GT.
    for (int i = 1; i < 100; ++i) {
        REQUIRE(tuner.add_idle(9'000'000) == State::skipping);
    }
    REQUIRE(tuner.add_idle(9'000'000) == State::sampling);
    for (std::size_t i = 0; i + 1 < peaks.size(); ++i) {
        REQUIRE(tuner.add_idle(peaks[i]) == State::sampling);
        REQUIRE_FALSE(tuner.gt_ns());
    }
    REQUIRE(tuner.add_idle(peaks.back()) == State::tuned);
    REQUIRE(tuner.gt_ns() == expected.gt_ns);
    REQUIRE(tuner.last_result().chosen_bin == expected.chosen_bin);
    REQUIRE(tuner.add_idle(9'000'000) == State::tuned);  // tunes once
    REQUIRE(tuner.gt_ns() == expected.gt_ns);

    SECTION("restart without skipping samples again at once")
    {
        tuner.restart(false);
        REQUIRE(tuner.state() == State::sampling);
        REQUIRE_FALSE(tuner.gt_ns());
        for (std::size_t i = 0; i + 1 < peaks.size(); ++i) {
            REQUIRE(tuner.add_idle(peaks[i]) == State::sampling);
        }
        REQUIRE(tuner.add_idle(peaks.back()) == State::tuned);
        REQUIRE(tuner.gt_ns() == expected.gt_ns);
    }
    SECTION("while sampling, intervals under 20 us are ignored")
    {
        tuner.restart(false);
        for (std::size_t i = 0; i + 1 < peaks.size(); ++i) {
            REQUIRE(tuner.add_idle(peaks[i]) == State::sampling);
            REQUIRE(tuner.add_idle(19'999) == State::sampling);  // not sampled
        }
        REQUIRE(tuner.add_idle(peaks.back()) == State::tuned);
        REQUIRE(tuner.gt_ns() == expected.gt_ns);
    }
    SECTION("restart with skipping skips 100 again")
    {
        tuner.restart(true);
        REQUIRE(tuner.state() == State::skipping);
        feed(tuner, std::vector<TimeNs>(99, 9'000'000));
        REQUIRE(tuner.state() == State::skipping);
        feed(tuner, std::vector<TimeNs>(1, 9'000'000));
        REQUIRE(tuner.state() == State::sampling);
        feed(tuner, peaks);
        REQUIRE(tuner.state() == State::tuned);
        REQUIRE(tuner.gt_ns() == expected.gt_ns);
    }
}

TEST_CASE("the dangerous zone is GT plus or minus 10 percent, bounds included", "[adgt]")
{
    ThresholdTuner tuner;
    REQUIRE_FALSE(tuner.in_dangerous_zone(1'000'000));  // no GT while skipping
    feed(tuner, std::vector<TimeNs>(100, 0));
    feed(tuner, three_peaks());
    REQUIRE(tuner.gt_ns());
    const TimeNs gt    = *tuner.gt_ns();
    const TimeNs tenth = gt / 10;  // 10 d <= GT  <=>  d <= floor(GT / 10)

    REQUIRE(tuner.in_dangerous_zone(gt));
    REQUIRE(tuner.in_dangerous_zone(gt - tenth));
    REQUIRE(tuner.in_dangerous_zone(gt + tenth));
    REQUIRE_FALSE(tuner.in_dangerous_zone(gt - tenth - 1));
    REQUIRE_FALSE(tuner.in_dangerous_zone(gt + tenth + 1));
    for (const TimeNs s : three_peaks()) {
        REQUIRE_FALSE(tuner.in_dangerous_zone(s));
    }

    tuner.restart(false);
    REQUIRE_FALSE(tuner.in_dangerous_zone(gt));  // no GT while sampling again
}

// SPDX-License-Identifier: BSD-3-Clause
// ADGT, thesis §5.3.2 and Algorithm 5, and the skip/sample states around it.
//
// Histograms (lines 5-6). nBin = floor(sqrt(n)) bins, log-scale between
// histogram_min_ns and histogram_max_ns. Bin b spans (edge[b], edge[b+1]]:
// upper bound included, because the thesis defines Histogram_cumt as the idle
// time "in idle intervals of length less than or equal to the upper bound of
// the bin". The last bin takes everything above its lower bound, however long.
//
// Intervals shorter than histogram_min_ns are ignored, as the thesis says
// (§5.3.2, note to Figs 5.16-5.17: "intervals less than 20 us are ignored"):
// they are not sampled and hold no idle time. They cannot be used anyway (a
// width change takes 2 tau = 20 us), and kept in the first bin they decide
// line 14 alone: the CG mini-app's 4-8 us gaps between the messages of one
// MPI call held 21 % of the idle time, so the first bin already passed
// 1 - demCumIdleTime and ADGT gave up on a trace where PPS saves 36 %.
//
//   counts[b]    = Histogram_f[b], intervals in bin b;
//   cum_share[b] = Histogram_cumt[b], as a fraction in [0, 1]: the share of
//                  the total idle time held by intervals in bins 0..b, i.e.
//                  intervals <= edge[b+1]. Nondecreasing, last bin exactly 1.
//
// So line 13, indexBin = min b with cum_share[b] >= 1 - demCumIdleTime, is the
// first bin up to which the short side already holds too much idle time: a GT
// in any bin below it leaves more than demCumIdleTime of the idle time in
// intervals above the GT.
//
// Restart after a failed finalization (line 34). The gap search is a function
// of the bin alone, so a bin that had no gap never has one; the literal
// pseudo-code would pick it again on every pass (it stays the argmin while the
// decayed share only widens the range) until demCumIdleTime falls below the
// minimum. Such a bin is therefore excluded from later argmin searches, and
// the share still decays as line 34 says. The loop ends: every pass that does
// not return multiplies the share by share_decay in (0, 1), and the share
// starts finite and stops at min_idle_share > 0 (about 44 passes with the
// defaults), whatever the bins do.
//
// Cost. The sample is never sorted: each interval finds its bin by a
// branch-free binary search over the nBin - 1 inner edges, and only the few
// intervals of a bin under finalization (fewer than dangNum) are collected
// and sorted. 400 intervals, -O2, median (shared 2-core Debian 12 box): about
// 2.9 us for run_adgt, 2.6 us in the tuner, 3.9 us when every bin is crowded
// (all ~44 passes); a first version that sorted the sample took 10.5 us.
#include "threshold_tuner.h"

#include <algorithm>
#include <cmath>

namespace slim::predict {

namespace {

// Dangerous zone GT +- 10 %. Line 36, GT = 1.1 x / 0.9, puts the zone's lower
// end 10 % above the gap's lower end x (Figure 5.18).
constexpr double kAboveSample = 1.1;
constexpr double kBelowGt     = 0.9;

// Figure 5.19: bins of a 20 us..1.7 s histogram make (28.6 / nBin) gaps of
// 1.494 fit into one bin.
constexpr double kGapsPerHistogram = 28.6;

// Working memory of one run: the tuner's members, or fresh vectors for the
// free function. Edges are filled before the run.
struct AdgtBuffers {
    const std::vector<double>& edges;    // nBin + 1
    std::vector<std::size_t>& counts;    // Histogram_f
    std::vector<double>& cum_share;      // Histogram_cumt, fraction
    std::vector<unsigned char>& failed;  // finalization found no gap
    std::vector<TimeNs>& in_bin;         // the bin under finalization
};

std::size_t floor_sqrt(std::size_t n)
{
    auto root = static_cast<std::size_t>(std::sqrt(static_cast<double>(n)));
    while (root * root > n) {
        --root;
    }
    while ((root + 1) * (root + 1) <= n) {
        ++root;
    }
    return root;
}

std::size_t dangerous_count(double alpha, std::size_t bins)
{
    if (bins == 0) {
        return 0;
    }
    // 28.6 is a decimal: the epsilon keeps an exact product such as
    // 10 x 28.6 / 26 = 11 from flooring to 10.
    const double value = std::max(0.0, alpha) * (kGapsPerHistogram / static_cast<double>(bins));
    return static_cast<std::size_t>(std::floor(value * (1.0 + 1e-12)));
}

// A configuration the main loop cannot finish with finds no GT.
bool usable(const TunerConfig& config)
{
    return config.histogram_min_ns > 0 && config.histogram_max_ns > config.histogram_min_ns &&
           config.share_decay > 0.0 && config.share_decay < 1.0 && config.min_idle_share > 0.0;
}

void compute_edges(const TunerConfig& config, std::size_t bins, std::vector<double>& edges)
{
    const auto lo      = static_cast<double>(config.histogram_min_ns);
    const auto hi      = static_cast<double>(config.histogram_max_ns);
    const double ratio = hi / lo;
    edges.resize(bins + 1);
    for (std::size_t b = 0; b < bins; ++b) {
        edges[b] = lo * std::pow(ratio, static_cast<double>(b) / static_cast<double>(bins));
    }
    edges[bins] = hi;  // nominal only: the last bin is open
}

// Number of the `count` sorted edges from `first` that are below x: the bin
// of x when `first` points at the inner edges. Branch-free (conditional
// moves), so mixed interval lengths cost no mispredictions.
std::size_t edges_below(const double *first, std::size_t count, double x)
{
    if (count == 0) {
        return 0;
    }
    const double *base = first;
    while (count > 1) {
        const std::size_t half = count / 2;
        base                   = base[half] < x ? base + half : base;
        count -= half;
    }
    return static_cast<std::size_t>(base - first) + (*base < x ? 1 : 0);
}

void build_histograms(const std::vector<TimeNs>& samples, std::size_t bins, AdgtBuffers& buf)
{
    buf.counts.assign(bins, 0);
    buf.cum_share.assign(bins, 0.0);
    const double *inner = buf.edges.data() + 1;
    for (const TimeNs sample : samples) {
        const auto x          = static_cast<double>(sample);
        const std::size_t bin = edges_below(inner, bins - 1, x);
        ++buf.counts[bin];
        buf.cum_share[bin] += std::max(x, 0.0);  // idle time per bin, for now
    }
    double total = 0.0;
    for (double& share : buf.cum_share) {
        total += share;
        share = total;
    }
    for (double& share : buf.cum_share) {
        // No idle time at all: every bin already holds "all" of it.
        share = total > 0.0 ? share / total : 1.0;
    }
    buf.cum_share[bins - 1] = 1.0;  // no rounding below 100 % in the last bin
}

// Line 13: the first bin whose cumulative share reaches 1 - share.
std::size_t index_bin(const AdgtBuffers& buf, double share)
{
    return static_cast<std::size_t>(
            std::lower_bound(buf.cum_share.begin(), buf.cum_share.end(), 1.0 - share) -
            buf.cum_share.begin());
}

// Line 16 without the bins that failed their gap search: the largest bin
// below index_bin with the fewest intervals.
std::optional<std::size_t> fewest_intervals(const AdgtBuffers& buf, std::size_t index_bin)
{
    std::optional<std::size_t> best;
    // Downwards with a strict "<": among equal counts the largest bin wins.
    for (std::size_t b = index_bin; b-- > 0;) {
        if (buf.failed[b] == 0 && (!best || buf.counts[b] < buf.counts[*best])) {
            best = b;
        }
    }
    return best;
}

// Lines 22-32: the first gap >= gap_ratio in [minval] + intervals strictly
// inside (minval, maxval), sorted + [maxval]. Returns the gap's lower end.
std::optional<double> find_gap(const std::vector<TimeNs>& samples, std::size_t bin,
                               double gap_ratio, AdgtBuffers& buf)
{
    const double minval = buf.edges[bin];
    const double maxval = buf.edges[bin + 1];
    buf.in_bin.clear();
    for (const TimeNs sample : samples) {
        const auto x = static_cast<double>(sample);
        if (minval < x && x < maxval) {
            buf.in_bin.push_back(sample);
        }
    }
    std::sort(buf.in_bin.begin(), buf.in_bin.end());

    double lower = minval;
    for (const TimeNs sample : buf.in_bin) {
        const auto x = static_cast<double>(sample);
        if (x / lower >= gap_ratio) {
            return lower;
        }
        lower = x;
    }
    if (maxval / lower >= gap_ratio) {
        return lower;
    }
    return std::nullopt;
}

// Algorithm 5 from line 5 on; buf.edges holds the bins' edges.
AdgtResult adgt(const std::vector<TimeNs>& samples, const TunerConfig& config, AdgtBuffers& buf)
{
    AdgtResult result;
    result.bins             = floor_sqrt(samples.size());
    result.dang_num         = dangerous_count(config.alpha, result.bins);
    result.final_idle_share = config.demanded_idle_share;
    if (result.bins == 0 || !usable(config)) {
        return result;
    }
    build_histograms(samples, result.bins, buf);
    buf.failed.assign(result.bins, 0);

    for (double share = config.demanded_idle_share;; share *= config.share_decay) {
        result.final_idle_share = share;
        if (!(share >= config.min_idle_share)) {
            return result;
        }
        // Line 14. A smaller share only moves indexBin up, so this can
        // only happen on the first pass.
        const std::size_t end = index_bin(buf, share);
        if (end == 0) {
            return result;
        }
        const std::optional<std::size_t> bin = fewest_intervals(buf, end);
        if (!bin) {
            continue;  // every bin below indexBin failed its gap search
        }
        if (buf.counts[*bin] >= result.dang_num) {
            continue;  // line 20
        }
        const std::optional<double> lower = find_gap(samples, *bin, config.gap_ratio, buf);
        if (!lower) {
            buf.failed[*bin] = 1;  // line 34, and never this bin again
            continue;
        }
        result.gt_ns      = static_cast<TimeNs>(std::ceil(kAboveSample * *lower / kBelowGt));
        result.chosen_bin = *bin;
        return result;
    }
}

}  // namespace

AdgtResult run_adgt(const std::vector<TimeNs>& samples, const TunerConfig& config)
{
    std::vector<double> edges;
    std::vector<std::size_t> counts;
    std::vector<double> cum_share;
    std::vector<unsigned char> failed;
    std::vector<TimeNs> in_bin;
    std::vector<TimeNs> kept;
    for (const TimeNs sample : samples) {
        if (sample >= config.histogram_min_ns) {
            kept.push_back(sample);
        }
    }
    const std::size_t bins = floor_sqrt(kept.size());
    if (bins > 0 && usable(config)) {
        compute_edges(config, bins, edges);
    }
    AdgtBuffers buf{edges, counts, cum_share, failed, in_bin};
    return adgt(kept, config, buf);
}

ThresholdTuner::ThresholdTuner(const TunerConfig& config)
    : config_(config), state_(config.skip_intervals > 0 ? State::skipping : State::sampling)
{
    sample_.reserve(config_.sample_intervals);
    // The sample is always sample_intervals long, so the bins are known now.
    const std::size_t bins = floor_sqrt(config_.sample_intervals);
    if (bins > 0 && usable(config_)) {
        compute_edges(config_, bins, edges_);
    }
    counts_.reserve(bins);
    cum_share_.reserve(bins);
    failed_bins_.reserve(bins);
    // Finalization only runs on a bin with fewer than dangNum intervals.
    bin_samples_.reserve(std::min(dangerous_count(config_.alpha, bins), config_.sample_intervals));
}

ThresholdTuner::State ThresholdTuner::add_idle(TimeNs idle_ns)
{
    switch (state_) {
    case State::skipping:
        if (++skipped_ >= config_.skip_intervals) {
            state_ = State::sampling;
        }
        break;
    case State::sampling:
        if (idle_ns < config_.histogram_min_ns) {
            break;  // ignored, like run_adgt does
        }
        if (sample_.size() < config_.sample_intervals) {
            sample_.push_back(idle_ns);
        }
        if (sample_.size() >= config_.sample_intervals) {
            tune();
        }
        break;
    case State::tuned:
    case State::gave_up: break;
    }
    return state_;
}

void ThresholdTuner::tune()
{
    AdgtBuffers buf{edges_, counts_, cum_share_, failed_bins_, bin_samples_};
    result_ = adgt(sample_, config_, buf);
    state_  = result_.gt_ns ? State::tuned : State::gave_up;
}

void ThresholdTuner::restart(bool skip_again)
{
    // last_result() keeps the previous run until the next one completes.
    sample_.clear();
    skipped_ = 0;
    state_   = skip_again && config_.skip_intervals > 0 ? State::skipping : State::sampling;
}

ThresholdTuner::State ThresholdTuner::state() const { return state_; }

std::optional<TimeNs> ThresholdTuner::gt_ns() const
{
    return state_ == State::tuned ? result_.gt_ns : std::nullopt;
}

const AdgtResult& ThresholdTuner::last_result() const { return result_; }

bool ThresholdTuner::in_dangerous_zone(TimeNs idle_ns) const
{
    if (state_ != State::tuned || !result_.gt_ns || idle_ns < 0) {
        return false;
    }
    const TimeNs gt   = *result_.gt_ns;
    const TimeNs diff = idle_ns >= gt ? idle_ns - gt : gt - idle_ns;
    // |idle - GT| <= 10 % of GT, exact in integers: 10 d <= g <=> d <= floor(g / 10).
    return diff <= gt / 10;
}

}  // namespace slim::predict

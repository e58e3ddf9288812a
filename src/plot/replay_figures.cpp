// SPDX-License-Identifier: BSD-3-Clause
// The figures of slim-replay --plot: see replay_figures.h.
#include "plot/replay_figures.h"

#include "plot/canvas.h"
#include "plot/chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace slim::plot {

namespace {

constexpr unsigned kFigureWidth  = 960;
constexpr unsigned kFigureHeight = 600;

std::string percent_text(double v)
{
    std::array<char, 32> b{};
    std::snprintf(b.data(), b.size(), "%.1f %%", v);
    return b.data();
}

// "0.34", "12.5", "100": a share in %, to a useful precision.
std::string share_text(double v)
{
    std::array<char, 32> b{};
    std::snprintf(b.data(), b.size(), v < 0.01 ? "<0.01" : v < 10 ? "%.2g" : "%.3g", v);
    return b.data();
}

// Axis ticks in microseconds as durations: 1us, 10us, 1ms.
std::string us_tick(double us)
{
    return short_duration(static_cast<TimeNs>(std::llround(us * 1e3)));
}

}  // namespace

std::size_t IdleHistogram::bucket(TimeNs idle_ns)
{
    // floor(idle / 1 us) has bit width k exactly in [2^(k-1), 2^k) us.
    auto        us    = static_cast<std::uint64_t>(std::max<TimeNs>(0, idle_ns / 1000));
    std::size_t width = 0;
    for (; us != 0; us >>= 1) {
        ++width;
    }
    return width;
}

TimeNs IdleHistogram::lower_bound_ns(std::size_t bucket)
{
    return bucket == 0 ? 0 : (TimeNs{1} << (bucket - 1)) * 1000;
}

void IdleHistogram::add(TimeNs idle_ns)
{
    if (idle_ns <= 0) {
        return;
    }
    const std::size_t b = bucket(idle_ns);
    ++counts_[b];
    idle_ns_[b] += idle_ns;
    ++intervals_;
    total_idle_ns_ += idle_ns;
}

std::string short_duration(TimeNs ns)
{
    struct Unit {
        double      ns;
        const char* name;
    };
    static constexpr Unit units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}, {1, "ns"}};
    const double v = static_cast<double>(ns);
    for (const Unit& u : units) {
        if (std::abs(v) >= u.ns || u.ns == 1) {
            std::array<char, 32> b{};
            std::snprintf(b.data(), b.size(), "%.3g%s", v / u.ns, u.name);
            return b.data();
        }
    }
    return "0ns";
}

Image idle_histogram_figure(const IdleHistogram& h, const std::string& trace)
{
    // From 1 us (below it when there are shorter intervals) to the longest.
    const std::size_t first = h.count(0) != 0 ? 0 : 1;
    std::size_t       last  = 0;
    for (std::size_t b = 0; b < IdleHistogram::kBuckets; ++b) {
        if (h.count(b) != 0) {
            last = b;
        }
    }
    Axis x{"idle interval length (log2 buckets, labelled by their lower bound)"};
    Axis count_axis{"idle intervals"};
    Axis share_axis{"share of total idle time (%)"};
    share_axis.max = 106;
    std::vector<double>    counts;
    std::vector<double>    shares;
    // The running total at each bucket's upper bound (between the bars):
    // the share of idle time in intervals shorter than that.
    std::vector<DataPoint> cumulative{{-0.5, 0}};
    double                 running = 0;
    for (std::size_t b = first; b <= last && h.intervals() != 0; ++b) {
        x.categories.push_back(b == 0 ? "<1us" : short_duration(IdleHistogram::lower_bound_ns(b)));
        counts.push_back(static_cast<double>(h.count(b)));
        const double share = 100.0 * static_cast<double>(h.idle_ns(b)) /
                             static_cast<double>(h.total_idle_ns());
        shares.push_back(share);
        running += share;
        cumulative.push_back({static_cast<double>(b - first) + 0.5, running});
    }
    Chart counts_chart("Idle intervals by length", x, count_axis);
    counts_chart.set_subtitle(trace + ": " + std::to_string(h.intervals()) +
                              " idle intervals, " + short_duration(h.total_idle_ns()) +
                              " idle in total");
    counts_chart.add_bars("idle intervals", kBlue, counts,
                          [](double v) { return std::to_string(std::llround(v)); });
    Chart shares_chart("Idle time by interval length", x, share_axis);
    shares_chart.add_bars("share of idle time in the bucket (%)", kOrange, shares,
                          [](double v) { return share_text(v); });
    shares_chart.add_line("cumulative share (%, at each bucket's upper bound)", kRed,
                          cumulative, true);
    if (h.intervals() == 0) {
        counts_chart.set_note("no idle intervals");
        shares_chart.set_note("no idle intervals");
    }
    Canvas    canvas(kFigureWidth, kFigureHeight * 6 / 5);
    const int half = canvas.height() / 2;
    counts_chart.draw(canvas, {0, 0, canvas.width(), half});
    shares_chart.draw(canvas, {0, half, canvas.width(), canvas.height() - half});
    return canvas.image();
}

Image energy_vs_gt_figure(const EnergySweep& sweep, const std::string& setup)
{
    Axis x{"grouping threshold GT (log scale)", AxisScale::log10};
    x.format = us_tick;
    Axis y{"energy savings (%)"};
    Chart chart("Energy savings of PPS against the grouping threshold", x, y);
    chart.set_subtitle(setup);
    std::vector<DataPoint> points;
    for (const SweepPoint& p : sweep.pps) {
        if (p.savings_pct) {
            points.push_back({static_cast<double>(p.gt_ns) / 1e3, *p.savings_pct});
        }
    }
    chart.add_line("PPS, fixed GT", kBlue, points, true);
    if (sweep.oracle_pct) {
        chart.add_hline("oracle: " + percent_text(*sweep.oracle_pct), kGreen, *sweep.oracle_pct);
    }
    if (sweep.spps_pct) {
        const std::string gt = sweep.spps_gt_ns ? "GT " + short_duration(*sweep.spps_gt_ns)
                                                : "no GT found yet";
        chart.add_hline("SPPS (ADGT, " + gt + "): " + percent_text(*sweep.spps_pct), kRed,
                        *sweep.spps_pct);
    }
    if (sweep.chosen_gt_ns) {
        for (const SweepPoint& p : sweep.pps) {
            if (p.gt_ns == *sweep.chosen_gt_ns && p.savings_pct) {
                chart.add_line("--gt " + short_duration(p.gt_ns) + ": " +
                                       percent_text(*p.savings_pct),
                               kOrange, {{static_cast<double>(p.gt_ns) / 1e3, *p.savings_pct}},
                               true);
            }
        }
    }
    if (points.empty()) {
        chart.set_note("no events");
    }
    Canvas canvas(kFigureWidth, kFigureHeight);
    chart.draw(canvas, {0, 0, canvas.width(), canvas.height()});
    return canvas.image();
}

Image width_over_time_figure(const link::WidthTimeline& timeline, unsigned lanes,
                             const std::string& policy, const std::string& window,
                             const std::string& setup)
{
    const TimeNs origin = timeline.widths.empty() ? 0 : timeline.widths.front().at_ns;
    TimeNs       end    = origin;
    if (!timeline.bursts.empty()) {
        end = std::max(end, timeline.bursts.back().end_ns);
    }
    if (!timeline.widths.empty()) {
        end = std::max(end, timeline.widths.back().at_ns);
    }
    // The unit that keeps the numbers on the axis short.
    const TimeNs span = end - origin;
    const double unit = span < 2'000'000 ? 1e3 : span < 2'000'000'000 ? 1e6 : 1e9;
    const char*  name = unit == 1e3 ? "us" : unit == 1e6 ? "ms" : "s";
    auto at = [&](TimeNs t) { return static_cast<double>(t - origin) / unit; };

    Axis x{std::string("time from the first event shown (") + name + ", replayed)"};
    x.min = 0;
    x.max = std::max(at(end), 1e-9);
    Axis y{"link width (lanes)"};
    // 0 to the full width, also when nothing was recorded.
    y.min  = 0;
    y.max  = lanes * 1.08;
    y.step = 1;
    Chart chart("Link width over time, policy " + policy + " (" + window + ")", x, y);
    chart.set_subtitle(setup);
    std::vector<Span> bursts;
    for (const link::ReplayedBurst& b : timeline.bursts) {
        bursts.push_back({at(b.start_ns), at(b.end_ns), static_cast<double>(b.width)});
    }
    std::vector<DataPoint> steps;
    for (const link::WidthChange& c : timeline.widths) {
        steps.push_back({at(c.at_ns), static_cast<double>(c.width)});
    }
    if (!steps.empty()) {
        steps.push_back({at(end), steps.back().y});
    }
    chart.add_spans("bursts (lanes they need)", kLightOrange, bursts);
    chart.add_step("usable link width", kBlue, steps);
    if (steps.empty()) {
        chart.set_note("no events");
    }
    Canvas canvas(kFigureWidth, kFigureHeight);
    chart.draw(canvas, {0, 0, canvas.width(), canvas.height()});
    return canvas.image();
}

}  // namespace slim::plot

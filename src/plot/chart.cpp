// SPDX-License-Identifier: BSD-3-Clause
// Chart: see chart.h. Layout, top to bottom: title (font scale 2),
// subtitle, legend row(s), plot area, x tick labels, x axis label; the y
// axis label (turned) and y tick labels sit left of the plot area.
#include "plot/chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

namespace slim::plot {

namespace {

constexpr int kMargin      = 12;   // around the whole chart
constexpr int kGap         = 6;    // between a label and what it labels
constexpr int kTickLength  = 5;
constexpr int kMinorLength = 3;
constexpr int kTickSpacing = 50;   // pixels wanted between linear ticks
constexpr int kTitleScale  = 2;
constexpr int kSwatch      = 22;   // legend sample width
constexpr int kRightRoom   = 24;   // half of a tick label of 8 characters

constexpr Rgb kGrid{228, 228, 228};
constexpr Rgb kText{30, 30, 30};
constexpr Rgb kSubtle{90, 90, 90};

struct Tick {
    double value;
    bool   labelled;
};

// 1, 2 or 5 times a power of ten, at least `raw`.
double nice_step(double raw)
{
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    const double f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * p;
}

std::vector<Tick> linear_ticks(double lo, double hi, int count, std::optional<double> fixed)
{
    const double step  = fixed && *fixed > 0 ? *fixed : nice_step((hi - lo) / std::max(1, count));
    const double first = std::ceil(lo / step - 1e-9) * step;
    std::vector<Tick> ticks;
    for (double v = first; v <= hi + step * 1e-9; v += step) {
        // -0 would print as "-0".
        ticks.push_back({std::abs(v) < step * 1e-9 ? 0.0 : v, true});
    }
    return ticks;
}

// Decades labelled; 2 and 5 labelled too when there are at most two decades.
std::vector<Tick> log_ticks(double lo, double hi)
{
    std::vector<Tick> ticks;
    const int  first = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
    const int  last  = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
    const bool few   = last - first <= 2;
    for (int e = first; e <= last; ++e) {
        const double decade = std::pow(10.0, e);
        for (int m = 1; m <= 9; ++m) {
            const double v = m * decade;
            if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) {
                ticks.push_back({v, m == 1 || (few && (m == 2 || m == 5))});
            }
        }
    }
    return ticks;
}

std::string default_format(double v, double step)
{
    const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step) - 1e-9));
    std::array<char, 32> b{};
    std::snprintf(b.data(), b.size(), "%.*f", decimals, v);
    return b.data();
}

std::string log_format(double v)
{
    std::array<char, 32> b{};
    std::snprintf(b.data(), b.size(), "%g", v);
    return b.data();
}

}  // namespace

// Data coordinates to pixels inside the plot area.
class Chart::Mapping {
public:
    Mapping(const Rect& plot, Range x, Range y, bool log_x)
        : plot_(plot), x_(x), y_(y), log_x_(log_x)
    {
        if (log_x_) {
            x_ = {std::log10(x.lo), std::log10(x.hi)};
        }
    }

    const Rect& plot() const { return plot_; }
    bool        has_x(double v) const { return !log_x_ || v > 0; }

    int px(double v) const
    {
        const double t = log_x_ ? std::log10(v) : v;
        return plot_.x + round((t - x_.lo) / (x_.hi - x_.lo) * (plot_.width - 1));
    }
    int py(double v) const
    {
        return plot_.bottom() - 1 - round((v - y_.lo) / (y_.hi - y_.lo) * (plot_.height - 1));
    }
    // Pixels per unit of x (linear and categorical axes).
    double x_scale() const { return (plot_.width - 1) / (x_.hi - x_.lo); }
    // y = 0, or the nearer bound when 0 is out of range: where bars start.
    int py_base() const { return py(std::clamp(0.0, y_.lo, y_.hi)); }

private:
    static int round(double v)
    {
        // Far outside the plot is clipped anyway; keep it in int range.
        return static_cast<int>(std::lround(std::clamp(v, -1e6, 1e6)));
    }

    Rect  plot_;
    Range x_;
    Range y_;
    bool  log_x_;
};

Chart::Chart(std::string title, Axis x, Axis y)
    : title_(std::move(title)), x_(std::move(x)), y_(std::move(y))
{
}

void Chart::add_bars(std::string name, Rgb color, std::vector<double> heights,
                     std::function<std::string(double)> label)
{
    Series s{Kind::bars, std::move(name), color, {}, {}, false, std::move(label)};
    for (std::size_t i = 0; i < heights.size(); ++i) {
        s.points.push_back({static_cast<double>(i), heights[i]});
    }
    series_.push_back(std::move(s));
}

void Chart::add_line(std::string name, Rgb color, std::vector<DataPoint> points, bool markers)
{
    series_.push_back({Kind::line, std::move(name), color, std::move(points), {}, markers, {}});
}

void Chart::add_step(std::string name, Rgb color, std::vector<DataPoint> points)
{
    series_.push_back({Kind::step, std::move(name), color, std::move(points), {}, false, {}});
}

void Chart::add_spans(std::string name, Rgb color, std::vector<Span> spans)
{
    series_.push_back({Kind::spans, std::move(name), color, {}, std::move(spans), false, {}});
}

void Chart::add_hline(std::string name, Rgb color, double y)
{
    series_.push_back({Kind::hline, std::move(name), color, {{0, y}}, {}, false, {}});
}

Chart::Range Chart::x_range() const
{
    if (!x_.categories.empty()) {
        return {-0.5, static_cast<double>(x_.categories.size()) - 0.5};
    }
    const bool log = x_.scale == AxisScale::log10;
    double     lo  = std::numeric_limits<double>::infinity();
    double     hi  = -lo;
    auto       see = [&](double v) {
        if (std::isfinite(v) && (!log || v > 0)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    };
    for (const Series& s : series_) {
        if (s.kind == Kind::hline) {
            continue;
        }
        for (const DataPoint& p : s.points) {
            see(p.x);
        }
        for (const Span& sp : s.spans) {
            see(sp.x0);
            see(sp.x1);
        }
    }
    if (lo > hi) {
        lo = log ? 1 : 0;
        hi = log ? 10 : 1;
    }
    lo = x_.min.value_or(lo);
    hi = x_.max.value_or(hi);
    if (log) {
        lo = std::pow(10.0, std::floor(std::log10(lo) + 1e-9));
        hi = std::pow(10.0, std::ceil(std::log10(hi) - 1e-9));
        return {lo, hi > lo ? hi : lo * 10};
    }
    return {lo, hi > lo ? hi : lo + 1};
}

Chart::Range Chart::y_range() const
{
    double lo     = 0;
    double hi     = 0;
    bool   filled = false;  // bars or spans, which stand on 0
    for (const Series& s : series_) {
        filled = filled || s.kind == Kind::bars || s.kind == Kind::spans;
        for (const DataPoint& p : s.points) {
            if (std::isfinite(p.y)) {
                lo = std::min(lo, p.y);
                hi = std::max(hi, p.y);
            }
        }
        for (const Span& sp : s.spans) {
            lo = std::min(lo, sp.y);
            hi = std::max(hi, sp.y);
        }
    }
    if (hi <= lo) {
        hi = lo + 1;
    }
    // Headroom so the highest point does not sit on the frame; below too,
    // unless bars stand on the frame, so a line at 0 stays visible.
    const double pad = 0.06 * (hi - lo);
    return {y_.min.value_or(lo < 0 || !filled ? lo - pad : lo), y_.max.value_or(hi + pad)};
}

int Chart::draw_header(Canvas& canvas, const Rect& area) const
{
    const int centre = area.x + area.width / 2;
    int       y      = area.y + kMargin;
    canvas.text(centre - Canvas::text_width(title_, kTitleScale) / 2, y, title_, kText,
                kTitleScale);
    y += Canvas::text_height(kTitleScale) + kGap;
    if (!subtitle_.empty()) {
        canvas.text(centre - Canvas::text_width(subtitle_) / 2, y, subtitle_, kSubtle);
        y += Canvas::text_height() + kGap;
    }
    std::vector<const Series*> named;
    for (const Series& s : series_) {
        if (!s.name.empty()) {
            named.push_back(&s);
        }
    }
    if (named.size() < 2) {
        return y + kGap;
    }
    // Entries in rows, each row centred.
    auto entry_width = [](const Series* s) {
        return kSwatch + kGap + Canvas::text_width(s->name) + 3 * kGap;
    };
    const int room = area.width - 2 * kMargin;
    std::size_t i = 0;
    while (i < named.size()) {
        std::size_t end   = i;
        int         width = 0;
        while (end < named.size() && (end == i || width + entry_width(named[end]) <= room)) {
            width += entry_width(named[end++]);
        }
        int x = centre - (width - 3 * kGap) / 2;
        for (; i < end; ++i) {
            draw_legend_swatch(canvas, *named[i], x, y);
            canvas.text(x + kSwatch + kGap, y, named[i]->name, kText);
            x += entry_width(named[i]);
        }
        y += Canvas::text_height() + kGap;
    }
    return y + kGap;
}

void Chart::draw_legend_swatch(Canvas& canvas, const Series& s, int x, int y) const
{
    const int mid = y + 3;  // the middle of a capital letter
    switch (s.kind) {
    case Kind::bars:
    case Kind::spans:
        canvas.fill_rect({x, y - 1, kSwatch, 9}, s.color);
        return;
    case Kind::line:
    case Kind::step:
        canvas.line(x, mid, x + kSwatch - 1, mid, s.color, {2, 0});
        if (s.markers) {
            canvas.fill_rect({x + kSwatch / 2 - 3, mid - 3, 7, 7}, s.color);
        }
        return;
    case Kind::hline:
        canvas.line(x, mid, x + kSwatch - 1, mid, s.color, {2, 4});
        return;
    }
}

void Chart::draw_series(Canvas& canvas, const Mapping& map) const
{
    const Rect& plot = map.plot();
    std::size_t bar_series = 0;
    for (const Series& s : series_) {
        bar_series += s.kind == Kind::bars;
    }
    std::size_t bar_index = 0;
    for (const Series& s : series_) {
        switch (s.kind) {
        case Kind::bars: {
            // 80 % of each category's slot, shared by the bar series.
            const double slot = map.x_scale();
            const double each = 0.8 * slot / static_cast<double>(bar_series);
            const int    w    = std::max(1, static_cast<int>(each) - 1);
            for (const DataPoint& p : s.points) {
                if (p.y == 0) {
                    continue;
                }
                const double left = map.px(p.x) - 0.4 * slot + each * static_cast<double>(bar_index);
                const int    x    = static_cast<int>(std::lround(left));
                const int    top  = map.py(p.y);
                const int    base = map.py_base();
                canvas.fill_rect({x, std::min(top, base), w, std::abs(base - top) + 1}, s.color);
                if (!s.label) {
                    continue;
                }
                const std::string text  = s.label(p.y);
                const int         width = Canvas::text_width(text);
                if (width <= static_cast<int>(slot) - 2) {
                    // Above the bar; inside its top when there is no room.
                    const int y = top - Canvas::text_height() - 2 >= plot.y
                                          ? top - Canvas::text_height() - 2
                                          : top + 3;
                    canvas.text(x + w / 2 - width / 2, y, text, kText);
                }
            }
            ++bar_index;
            break;
        }
        case Kind::line:
            for (std::size_t i = 0; i < s.points.size(); ++i) {
                const DataPoint& p = s.points[i];
                if (!map.has_x(p.x)) {
                    continue;
                }
                if (i > 0 && map.has_x(s.points[i - 1].x)) {
                    const DataPoint& q = s.points[i - 1];
                    canvas.line(map.px(q.x), map.py(q.y), map.px(p.x), map.py(p.y), s.color,
                                {2, 0});
                }
            }
            if (s.markers) {
                for (const DataPoint& p : s.points) {
                    if (map.has_x(p.x)) {
                        canvas.fill_rect({map.px(p.x) - 3, map.py(p.y) - 3, 7, 7}, s.color);
                    }
                }
            }
            break;
        case Kind::step:
            for (std::size_t i = 0; i + 1 < s.points.size(); ++i) {
                const DataPoint& p = s.points[i];
                const DataPoint& q = s.points[i + 1];
                canvas.line(map.px(p.x), map.py(p.y), map.px(q.x), map.py(p.y), s.color, {2, 0});
                canvas.line(map.px(q.x), map.py(p.y), map.px(q.x), map.py(q.y), s.color, {2, 0});
            }
            break;
        case Kind::spans:
            for (const Span& sp : s.spans) {
                const int x0   = map.px(sp.x0);
                const int top  = map.py(sp.y);
                const int base = map.py_base();
                canvas.fill_rect({x0, std::min(top, base), std::max(1, map.px(sp.x1) - x0),
                                  std::abs(base - top) + 1},
                                 s.color);
            }
            break;
        case Kind::hline: {
            const int y = map.py(s.points.front().y);
            canvas.line(plot.x, y, plot.right() - 1, y, s.color, {2, 6});
            break;
        }
        }
    }
}

void Chart::draw(Canvas& canvas, const Rect& area) const
{
    const bool  log_x       = x_.scale == AxisScale::log10 && x_.categories.empty();
    const Range xr          = x_range();
    const Range yr          = y_range();
    const int   text_h      = Canvas::text_height();
    const int   plot_top    = draw_header(canvas, area);
    const int   plot_bottom = area.bottom() - kMargin - text_h - kGap - text_h - kGap -
                            kTickLength;
    const std::vector<Tick> y_ticks =
            linear_ticks(yr.lo, yr.hi, std::max(2, (plot_bottom - plot_top) / kTickSpacing),
                         y_.step);
    const double y_step = y_ticks.size() > 1 ? y_ticks[1].value - y_ticks[0].value : 1.0;
    auto y_label = [&](double v) { return y_.format ? y_.format(v) : default_format(v, y_step); };
    int y_labels_width = 0;
    for (const Tick& t : y_ticks) {
        y_labels_width = std::max(y_labels_width, Canvas::text_width(y_label(t.value)));
    }
    const int plot_left  = area.x + kMargin + text_h + 2 * kGap + y_labels_width + kTickLength;
    // Room on the right for half of the last x tick label.
    const int plot_right = area.right() - kMargin - kRightRoom;
    const Rect plot{plot_left, plot_top, std::max(2, plot_right - plot_left),
                    std::max(2, plot_bottom - plot_top)};
    const Mapping map(plot, xr, yr, log_x);

    // x ticks: categories, decades, or round numbers.
    std::vector<Tick> x_ticks;
    double            x_step = 1;
    if (!x_.categories.empty()) {
        for (std::size_t i = 0; i < x_.categories.size(); ++i) {
            x_ticks.push_back({static_cast<double>(i), true});
        }
    } else if (log_x) {
        x_ticks = log_ticks(xr.lo, xr.hi);
    } else {
        x_ticks = linear_ticks(xr.lo, xr.hi, std::max(2, plot.width / (2 * kTickSpacing)),
                               x_.step);
        x_step  = x_ticks.size() > 1 ? x_ticks[1].value - x_ticks[0].value : 1.0;
    }
    auto x_label = [&](double v) -> std::string {
        if (!x_.categories.empty()) {
            return x_.categories[static_cast<std::size_t>(std::lround(v))];
        }
        if (x_.format) {
            return x_.format(v);
        }
        return log_x ? log_format(v) : default_format(v, x_step);
    };

    // Grid, then the data (clipped to the plot), then frame and ticks on top.
    for (const Tick& t : y_ticks) {
        canvas.fill_rect({plot.x, map.py(t.value), plot.width, 1}, kGrid);
    }
    if (x_.categories.empty()) {
        for (const Tick& t : x_ticks) {
            if (t.labelled) {
                canvas.fill_rect({map.px(t.value), plot.y, 1, plot.height}, kGrid);
            }
        }
    }
    canvas.set_clip(plot);
    draw_series(canvas, map);
    canvas.clear_clip();
    canvas.outline_rect({plot.x - 1, plot.y - 1, plot.width + 2, plot.height + 2}, kText);

    for (const Tick& t : y_ticks) {
        const int         y     = map.py(t.value);
        const std::string label = y_label(t.value);
        canvas.fill_rect({plot.x - 1 - kTickLength, y, kTickLength, 1}, kText);
        canvas.text(plot.x - 1 - kTickLength - kGap / 2 - Canvas::text_width(label),
                    y - text_h / 2 + 1, label, kText);
    }
    // Labels that would overlap the one before are left out: on a
    // categorical axis every k-th, so the pattern stays regular.
    std::size_t stride = 1;
    if (!x_.categories.empty()) {
        int widest = 0;
        for (const std::string& c : x_.categories) {
            widest = std::max(widest, Canvas::text_width(c));
        }
        stride = static_cast<std::size_t>(
                std::max(1.0, std::ceil((widest + 2 * kGap) / std::max(1.0, map.x_scale()))));
    }
    const int label_y   = plot.bottom() + 1 + kTickLength + kGap / 2;
    int       last_edge = std::numeric_limits<int>::min();
    for (std::size_t i = 0; i < x_ticks.size(); ++i) {
        const Tick& t = x_ticks[i];
        const int   x = map.px(t.value);
        canvas.fill_rect({x, plot.bottom() + 1, 1, t.labelled ? kTickLength : kMinorLength},
                         kText);
        if (!t.labelled || i % stride != 0) {
            continue;
        }
        const std::string label = x_label(t.value);
        const int         left  = x - Canvas::text_width(label) / 2;
        if (left < last_edge + kGap) {
            continue;
        }
        canvas.text(left, label_y, label, kText);
        last_edge = left + Canvas::text_width(label);
    }

    // Axis labels: x centred below the tick labels, y turned, centred left.
    canvas.text(plot.x + plot.width / 2 - Canvas::text_width(x_.label) / 2,
                label_y + text_h + kGap, x_.label, kText);
    canvas.text_up(area.x + kMargin, plot.y + plot.height / 2 - Canvas::text_width(y_.label) / 2,
                   y_.label, kText);
    if (!note_.empty()) {
        canvas.text(plot.x + plot.width / 2 - Canvas::text_width(note_, 2) / 2,
                    plot.y + plot.height / 2 - Canvas::text_height(2) / 2, note_, kSubtle, 2);
    }
}

}  // namespace slim::plot

/* SPDX-License-Identifier: BSD-3-Clause */
// Minimal charts on a Canvas: a framed plot area with ticks, tick labels
// and axis labels (linear, log10 or categorical x; linear y), a title, a
// legend row, and series -- bars, lines, steps, filled spans and horizontal
// reference lines. Just what slim-replay's figures need.
#pragma once

#include "plot/canvas.h"
#include "plot/image.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace slim::plot {

// Colours that stay apart on screen and in grey print.
constexpr Rgb kBlue{31, 119, 180};
constexpr Rgb kOrange{255, 127, 14};
constexpr Rgb kGreen{44, 160, 44};
constexpr Rgb kRed{214, 39, 40};
constexpr Rgb kGrey{127, 127, 127};
constexpr Rgb kLightOrange{253, 208, 162};

enum class AxisScale { linear, log10 };

struct Axis {
    explicit Axis(std::string label_, AxisScale scale_ = AxisScale::linear)
        : label(std::move(label_)), scale(scale_)
    {
    }

    std::string label;  // with its unit, e.g. "energy savings (%)"
    AxisScale   scale = AxisScale::linear;
    // Bounds; by default from the data (a linear y axis always shows 0).
    std::optional<double> min;
    std::optional<double> max;
    // Distance between ticks; by default 1, 2 or 5 times a power of ten
    // that gives about one tick per 50 pixels (linear axes only).
    std::optional<double> step;
    // Non-empty: a categorical x axis, category i at x = i (bars).
    std::vector<std::string> categories;
    // Tick labels; by default the value with the decimals the tick step needs.
    std::function<std::string(double)> format;
};

struct DataPoint {
    double x = 0;
    double y = 0;
};

// A filled box from y = 0 up to `y`, over [x0, x1] (a burst, say).
struct Span {
    double x0 = 0;
    double x1 = 0;
    double y  = 0;
};

class Chart {
public:
    Chart(std::string title, Axis x, Axis y);

    // A second, smaller title line (the data set, the parameters).
    void set_subtitle(std::string subtitle) { subtitle_ = std::move(subtitle); }
    // Written across the plot area, e.g. when there is nothing to plot.
    void set_note(std::string note) { note_ = std::move(note); }

    // Series are drawn in the order added; a series named "" has no legend
    // entry. The legend is shown when at least two series have names.
    //
    // One bar per category of the x axis; several bar series share each
    // category's slot side by side. With `label`, each bar above 0 has its
    // value written over it (when the text fits the bar's slot).
    void add_bars(std::string name, Rgb color, std::vector<double> heights,
                  std::function<std::string(double)> label = {});
    void add_line(std::string name, Rgb color, std::vector<DataPoint> points,
                  bool markers = false);
    // points[i].y holds from points[i].x to points[i + 1].x.
    void add_step(std::string name, Rgb color, std::vector<DataPoint> points);
    void add_spans(std::string name, Rgb color, std::vector<Span> spans);
    // A dashed line across the plot at `y`.
    void add_hline(std::string name, Rgb color, double y);

    // Draws the whole chart (title, legend, axes, series) inside `area`.
    void draw(Canvas& canvas, const Rect& area) const;

private:
    enum class Kind { bars, line, step, spans, hline };
    struct Series {
        Kind                   kind;
        std::string            name;
        Rgb                    color;
        std::vector<DataPoint> points;   // bars: (category, height); hline: one (0, y)
        std::vector<Span>      spans;
        bool                   markers = false;
        std::function<std::string(double)> label;  // bars only
    };
    struct Range {
        double lo = 0;
        double hi = 1;
    };
    class Mapping;

    Range x_range() const;
    Range y_range() const;
    int   draw_header(Canvas& canvas, const Rect& area) const;  // returns the y below it
    void  draw_legend_swatch(Canvas& canvas, const Series& s, int x, int y) const;
    void  draw_series(Canvas& canvas, const Mapping& map) const;

    std::string         title_;
    std::string         subtitle_;
    std::string         note_;
    Axis                x_;
    Axis                y_;
    std::vector<Series> series_;
};

}  // namespace slim::plot

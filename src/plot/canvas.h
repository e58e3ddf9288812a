/* SPDX-License-Identifier: BSD-3-Clause */
// A raster canvas over an Image: rectangles, lines and text in the built-in
// font (font.h). Pixel coordinates, origin at the top left, y down. Every
// operation clips to the image, and to a clip rectangle when one is set, so
// callers may draw partly (or wholly) outside.
#pragma once

#include "plot/image.h"

#include <optional>
#include <string_view>

namespace slim::plot {

struct Rect {
    int x      = 0;
    int y      = 0;
    int width  = 0;
    int height = 0;

    int  right() const { return x + width; }    // one past the last column
    int  bottom() const { return y + height; }  // one past the last row
    bool contains(int px, int py) const
    {
        return px >= x && px < right() && py >= y && py < bottom();
    }
};

struct Stroke {
    int width = 1;  // pixels across
    int dash  = 0;  // 0: solid; n: n pixels on, n pixels off
};

class Canvas {
public:
    // Throws std::invalid_argument as Image does.
    Canvas(unsigned width, unsigned height, Rgb background = kWhite);

    int          width() const { return static_cast<int>(image_.width()); }
    int          height() const { return static_cast<int>(image_.height()); }
    const Image& image() const { return image_; }

    void set_clip(const Rect& clip) { clip_ = clip; }
    void clear_clip() { clip_.reset(); }

    void point(int x, int y, Rgb c);
    void fill_rect(const Rect& r, Rgb c);
    void outline_rect(const Rect& r, Rgb c);  // one pixel inside r's edge
    // Bresenham from (x0, y0) to (x1, y1), both ends drawn; a wide stroke
    // stamps a square pen centred on each point.
    void line(int x0, int y0, int x1, int y1, Rgb c, Stroke stroke = {});

    // Text whose box (text_width x text_height) has its top-left corner at
    // (x, y); `scale` draws each font pixel as scale x scale. Characters
    // outside 32..126 are drawn as '?'.
    void text(int x, int y, std::string_view s, Rgb c, int scale = 1);
    // The same turned a quarter turn counter-clockwise (read bottom to top,
    // as a y-axis label): its box is text_height wide, text_width high.
    void text_up(int x, int y, std::string_view s, Rgb c, int scale = 1);

    static int text_width(std::string_view s, int scale = 1);
    static int text_height(int scale = 1);

private:
    Image               image_;
    std::optional<Rect> clip_;
};

}  // namespace slim::plot

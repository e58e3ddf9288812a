// SPDX-License-Identifier: BSD-3-Clause
// Canvas: see canvas.h.
#include "plot/canvas.h"

#include "plot/font.h"

#include <cstdlib>

namespace slim::plot {

Canvas::Canvas(unsigned width, unsigned height, Rgb background)
    : image_(width, height, background)
{
}

void Canvas::point(int x, int y, Rgb c)
{
    if (x < 0 || y < 0 || x >= width() || y >= height()) {
        return;
    }
    if (clip_ && !clip_->contains(x, y)) {
        return;
    }
    image_.set(static_cast<unsigned>(x), static_cast<unsigned>(y), c);
}

void Canvas::fill_rect(const Rect& r, Rgb c)
{
    for (int y = r.y; y < r.bottom(); ++y) {
        for (int x = r.x; x < r.right(); ++x) {
            point(x, y, c);
        }
    }
}

void Canvas::outline_rect(const Rect& r, Rgb c)
{
    if (r.width <= 0 || r.height <= 0) {
        return;
    }
    fill_rect({r.x, r.y, r.width, 1}, c);
    fill_rect({r.x, r.bottom() - 1, r.width, 1}, c);
    fill_rect({r.x, r.y, 1, r.height}, c);
    fill_rect({r.right() - 1, r.y, 1, r.height}, c);
}

void Canvas::line(int x0, int y0, int x1, int y1, Rgb c, Stroke stroke)
{
    const int dx   = std::abs(x1 - x0);
    const int dy   = -std::abs(y1 - y0);
    const int sx   = x0 < x1 ? 1 : -1;
    const int sy   = y0 < y1 ? 1 : -1;
    const int pen  = stroke.width < 1 ? 1 : stroke.width;
    const int back = (pen - 1) / 2;  // pen pixels before the centre
    int       err  = dx + dy;
    for (int step = 0;; ++step) {
        if (stroke.dash <= 0 || (step / stroke.dash) % 2 == 0) {
            fill_rect({x0 - back, y0 - back, pen, pen}, c);
        }
        if (x0 == x1 && y0 == y1) {
            return;
        }
        const int e2 = 2 * err;
        if (e2 >= dy) {
            err += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            err += dx;
            y0 += sy;
        }
    }
}

void Canvas::text(int x, int y, std::string_view s, Rgb c, int scale)
{
    for (const char ch : s) {
        const font::Glyph& g = font::glyph(ch);
        for (int row = 0; row < font::kGlyphHeight; ++row) {
            for (int col = 0; col < font::kGlyphWidth; ++col) {
                if (g[static_cast<std::size_t>(row)] & (0x10 >> col)) {
                    fill_rect({x + col * scale, y + row * scale, scale, scale}, c);
                }
            }
        }
        x += font::kAdvance * scale;
    }
}

void Canvas::text_up(int x, int y, std::string_view s, Rgb c, int scale)
{
    // Glyph (col, row) goes to (row, -col) turned: the first character at
    // the bottom of the box, its top row at the box's left edge.
    int bottom = y + text_width(s, scale);
    for (const char ch : s) {
        const font::Glyph& g = font::glyph(ch);
        for (int row = 0; row < font::kGlyphHeight; ++row) {
            for (int col = 0; col < font::kGlyphWidth; ++col) {
                if (g[static_cast<std::size_t>(row)] & (0x10 >> col)) {
                    fill_rect({x + row * scale, bottom - (col + 1) * scale, scale, scale}, c);
                }
            }
        }
        bottom -= font::kAdvance * scale;
    }
}

int Canvas::text_width(std::string_view s, int scale)
{
    if (s.empty()) {
        return 0;
    }
    // No spacing column after the last character.
    return (static_cast<int>(s.size()) * font::kAdvance - 1) * scale;
}

int Canvas::text_height(int scale)
{
    return font::kGlyphHeight * scale;
}

}  // namespace slim::plot

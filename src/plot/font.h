/* SPDX-License-Identifier: BSD-3-Clause */
// A tiny bitmap font of our own for printable ASCII (32..126): 5 x 7 pixel
// capitals and digits, lower case with two rows of descender below the
// baseline, one column of spacing. Enough for chart titles, labels and ticks.
#pragma once

#include <array>
#include <cstdint>

namespace slim::plot::font {

constexpr int kGlyphWidth  = 5;   // pixels of ink per glyph, at most
constexpr int kGlyphHeight = 9;   // 7 above the baseline, 2 below
constexpr int kAdvance     = 6;   // glyph width + one column of spacing

// One row per element, top first; bit 4 is the leftmost column.
using Glyph = std::array<std::uint8_t, kGlyphHeight>;

// The glyph of `c`; '?' for anything outside 32..126.
const Glyph& glyph(char c);

}  // namespace slim::plot::font

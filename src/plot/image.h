/* SPDX-License-Identifier: BSD-3-Clause */
// An RGB8 raster: the value the canvas draws on and the PNG writer encodes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace slim::plot {

struct Rgb {
    std::uint8_t r = 0;
    std::uint8_t g = 0;
    std::uint8_t b = 0;

    friend bool operator==(Rgb a, Rgb b) { return a.r == b.r && a.g == b.g && a.b == b.b; }
    friend bool operator!=(Rgb a, Rgb b) { return !(a == b); }
};

constexpr Rgb kWhite{255, 255, 255};
constexpr Rgb kBlack{0, 0, 0};

// Row-major, top row first, three bytes (R, G, B) per pixel: the layout of a
// PNG scanline without its filter byte.
class Image {
public:
    // PNG allows up to 2^31 - 1 per side; 2^14 keeps width * height * 3
    // far from overflow and is plenty for a figure.
    static constexpr unsigned kMaxSide = 1u << 14;

    // Throws std::invalid_argument for a side of 0 or above kMaxSide.
    Image(unsigned width, unsigned height, Rgb fill = kWhite)
        : width_(width), height_(height)
    {
        if (width == 0 || height == 0 || width > kMaxSide || height > kMaxSide) {
            throw std::invalid_argument("image sides must be 1 to 16384 pixels");
        }
        rgb_.resize(std::size_t{width} * height * 3);
        for (std::size_t i = 0; i < rgb_.size(); i += 3) {
            rgb_[i]     = fill.r;
            rgb_[i + 1] = fill.g;
            rgb_[i + 2] = fill.b;
        }
    }

    unsigned width() const { return width_; }
    unsigned height() const { return height_; }

    // x < width(), y < height(): the caller (the canvas) clips.
    Rgb at(unsigned x, unsigned y) const
    {
        const std::size_t i = offset(x, y);
        return Rgb{rgb_[i], rgb_[i + 1], rgb_[i + 2]};
    }
    void set(unsigned x, unsigned y, Rgb c)
    {
        const std::size_t i = offset(x, y);
        rgb_[i]     = c.r;
        rgb_[i + 1] = c.g;
        rgb_[i + 2] = c.b;
    }

    const std::vector<std::uint8_t>& rgb() const { return rgb_; }

private:
    std::size_t offset(unsigned x, unsigned y) const
    {
        return (std::size_t{y} * width_ + x) * 3;
    }

    unsigned                  width_;
    unsigned                  height_;
    std::vector<std::uint8_t> rgb_;
};

}  // namespace slim::plot

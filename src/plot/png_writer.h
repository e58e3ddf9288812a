/* SPDX-License-Identifier: BSD-3-Clause */
// PNG encoding without zlib (no new dependencies): an RGB8 image becomes
// signature, IHDR, one IDAT and IEND. The IDAT holds a zlib stream of
// *stored* deflate blocks (RFC 1950/1951): no compression, so a W x H figure
// takes about 3 W H bytes -- about 1.7 MB at 960 x 600 -- which is the price
// of a writer small enough to check by hand.
#pragma once

#include "plot/image.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace slim::plot {

// CRC-32 of PNG chunks (ISO 3309, reflected polynomial 0xEDB88320), and
// Adler-32 of zlib streams. Pass the previous value to continue a checksum
// over several buffers.
std::uint32_t crc32(const std::uint8_t* data, std::size_t size, std::uint32_t crc = 0);
std::uint32_t adler32(const std::uint8_t* data, std::size_t size, std::uint32_t adler = 1);

// Deflate's stored blocks carry at most 65535 bytes each.
constexpr std::size_t kMaxStoredBlock = 65535;

// The whole PNG file.
std::vector<std::uint8_t> encode_png(const Image& image);

// Writes encode_png(image) to `path`, replacing it. Throws std::runtime_error
// "PATH: cannot write: REASON" (REASON from errno).
void write_png(const std::string& path, const Image& image);

}  // namespace slim::plot

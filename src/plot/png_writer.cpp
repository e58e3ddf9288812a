// SPDX-License-Identifier: BSD-3-Clause
// PNG writer: see png_writer.h. Layout after the PNG specification (W3C,
// 2003): every chunk is LENGTH TYPE DATA CRC, big-endian, the CRC over TYPE
// and DATA.
#include "plot/png_writer.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace slim::plot {

namespace {

constexpr std::array<std::uint32_t, 256> make_crc_table()
{
    std::array<std::uint32_t, 256> table{};
    for (std::uint32_t n = 0; n < 256; ++n) {
        std::uint32_t c = n;
        for (int k = 0; k < 8; ++k) {
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        }
        table[n] = c;
    }
    return table;
}

constexpr std::array<std::uint32_t, 256> kCrcTable = make_crc_table();

void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v)
{
    out.push_back(static_cast<std::uint8_t>(v >> 24));
    out.push_back(static_cast<std::uint8_t>(v >> 16));
    out.push_back(static_cast<std::uint8_t>(v >> 8));
    out.push_back(static_cast<std::uint8_t>(v));
}

void put_chunk(std::vector<std::uint8_t>& out, const char (&type)[5],
               const std::vector<std::uint8_t>& data)
{
    put_u32(out, static_cast<std::uint32_t>(data.size()));
    const std::size_t type_at = out.size();
    out.insert(out.end(), type, type + 4);
    out.insert(out.end(), data.begin(), data.end());
    put_u32(out, crc32(out.data() + type_at, 4 + data.size()));
}

// Scanlines, each behind filter byte 0 (None).
std::vector<std::uint8_t> scanlines(const Image& image)
{
    const std::size_t row = std::size_t{image.width()} * 3;
    std::vector<std::uint8_t> raw;
    raw.reserve((row + 1) * image.height());
    const auto& rgb = image.rgb();
    for (std::size_t y = 0; y < image.height(); ++y) {
        raw.push_back(0);
        raw.insert(raw.end(), rgb.begin() + static_cast<std::ptrdiff_t>(y * row),
                   rgb.begin() + static_cast<std::ptrdiff_t>((y + 1) * row));
    }
    return raw;
}

// RFC 1950 header (CM 8, 32K window, no dictionary, FCHECK so the header is
// a multiple of 31), stored blocks (RFC 1951 §3.2.4: BFINAL/BTYPE 00, LEN,
// NLEN, bytes), Adler-32 of the data.
std::vector<std::uint8_t> zlib_stored(const std::vector<std::uint8_t>& data)
{
    std::vector<std::uint8_t> out;
    const std::size_t blocks = std::max<std::size_t>(1, (data.size() + kMaxStoredBlock - 1) /
                                                                kMaxStoredBlock);
    out.reserve(2 + data.size() + 5 * blocks + 4);
    out.push_back(0x78);
    out.push_back(0x01);
    std::size_t at = 0;
    do {
        const std::size_t   n     = std::min(kMaxStoredBlock, data.size() - at);
        const bool          last  = at + n == data.size();
        const std::uint16_t len   = static_cast<std::uint16_t>(n);
        const std::uint16_t nlen  = static_cast<std::uint16_t>(~len);
        out.push_back(last ? 1 : 0);
        out.push_back(static_cast<std::uint8_t>(len));
        out.push_back(static_cast<std::uint8_t>(len >> 8));
        out.push_back(static_cast<std::uint8_t>(nlen));
        out.push_back(static_cast<std::uint8_t>(nlen >> 8));
        out.insert(out.end(), data.begin() + static_cast<std::ptrdiff_t>(at),
                   data.begin() + static_cast<std::ptrdiff_t>(at + n));
        at += n;
    } while (at < data.size());
    put_u32(out, adler32(data.data(), data.size()));
    return out;
}

struct FileCloser {
    void operator()(std::FILE* f) const { std::fclose(f); }
};

[[noreturn]] void fail_write(const std::string& path, int err)
{
    throw std::runtime_error(path + ": cannot write: " +
                             (err != 0 ? std::strerror(err) : "unknown error"));
}

}  // namespace

std::uint32_t crc32(const std::uint8_t* data, std::size_t size, std::uint32_t crc)
{
    crc = ~crc;
    for (std::size_t i = 0; i < size; ++i) {
        crc = kCrcTable[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
    }
    return ~crc;
}

std::uint32_t adler32(const std::uint8_t* data, std::size_t size, std::uint32_t adler)
{
    constexpr std::uint32_t kMod = 65521;
    // 5552 bytes is the most that can be summed before b overflows 32 bits
    // (zlib's NMAX), so the modulo is taken once per run, not per byte.
    constexpr std::size_t kRun = 5552;
    std::uint32_t a = adler & 0xFFFF;
    std::uint32_t b = adler >> 16;
    while (size > 0) {
        const std::size_t n = std::min(size, kRun);
        for (std::size_t i = 0; i < n; ++i) {
            a += data[i];
            b += a;
        }
        a %= kMod;
        b %= kMod;
        data += n;
        size -= n;
    }
    return (b << 16) | a;
}

std::vector<std::uint8_t> encode_png(const Image& image)
{
    static constexpr std::uint8_t kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    std::vector<std::uint8_t> png(std::begin(kSignature), std::end(kSignature));

    std::vector<std::uint8_t> ihdr;
    put_u32(ihdr, image.width());
    put_u32(ihdr, image.height());
    // Bit depth 8, colour type 2 (RGB), compression 0, filter 0, no interlace.
    ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
    put_chunk(png, "IHDR", ihdr);
    put_chunk(png, "IDAT", zlib_stored(scanlines(image)));
    put_chunk(png, "IEND", {});
    return png;
}

void write_png(const std::string& path, const Image& image)
{
    const std::vector<std::uint8_t> png = encode_png(image);
    errno = 0;
    std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "wb"));
    if (!file) {
        fail_write(path, errno);
    }
    if (std::fwrite(png.data(), 1, png.size(), file.get()) != png.size()) {
        fail_write(path, errno);
    }
    // fclose flushes: a full disk shows up here.
    errno = 0;
    if (std::fclose(file.release()) != 0) {
        fail_write(path, errno);
    }
}

}  // namespace slim::plot

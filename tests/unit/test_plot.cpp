// SPDX-License-Identifier: BSD-3-Clause
// src/plot/: the PNG writer (decoded back here, stored blocks and all), the
// canvas and its font, the idle histogram of slim-replay --plot, and the
// replay's width timeline the width figure draws (src/link/replay.h).
#include "link/replay.h"
#include "plot/canvas.h"
#include "plot/font.h"
#include "plot/image.h"
#include "plot/png_writer.h"
#include "plot/replay_figures.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

using slim::plot::Canvas;
using slim::plot::Image;
using slim::plot::Rect;
using slim::plot::Rgb;
using Bytes = std::vector<std::uint8_t>;

namespace {

std::uint32_t be32(const Bytes& b, std::size_t at)
{
    return std::uint32_t{b.at(at)} << 24 | std::uint32_t{b.at(at + 1)} << 16 |
           std::uint32_t{b.at(at + 2)} << 8 | std::uint32_t{b.at(at + 3)};
}

const std::uint8_t* bytes_of(const char* s)
{
    return reinterpret_cast<const std::uint8_t*>(s);
}

struct Chunk {
    std::string type;
    Bytes       data;
};

// Splits a PNG into its chunks, checking the signature, each length and
// each CRC on the way.
std::vector<Chunk> chunks_of(const Bytes& png)
{
    const Bytes signature = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
    REQUIRE(png.size() >= signature.size());
    REQUIRE(Bytes(png.begin(), png.begin() + 8) == signature);
    std::vector<Chunk> chunks;
    std::size_t        at = 8;
    while (at < png.size()) {
        REQUIRE(at + 12 <= png.size());
        const std::uint32_t length = be32(png, at);
        REQUIRE(at + 12 + length <= png.size());
        const std::uint32_t crc = slim::plot::crc32(png.data() + at + 4, 4 + length);
        INFO("chunk at byte " << at);
        CHECK(crc == be32(png, at + 8 + length));
        chunks.push_back({std::string(png.begin() + at + 4, png.begin() + at + 8),
                          Bytes(png.begin() + at + 8, png.begin() + at + 8 + length)});
        at += 12 + length;
    }
    return chunks;
}

// RFC 1950/1951, stored blocks only: the inflated bytes. `blocks` counts
// the stored blocks.
Bytes inflate_stored(const Bytes& z, std::size_t& blocks)
{
    REQUIRE(z.size() >= 6);
    CHECK(z[0] == 0x78);                     // deflate, 32K window
    CHECK((z[0] * 256 + z[1]) % 31 == 0);    // FCHECK
    CHECK((z[1] & 0x20) == 0);               // no preset dictionary
    Bytes       out;
    std::size_t at   = 2;
    bool        last = false;
    blocks           = 0;
    while (!last) {
        REQUIRE(at + 5 <= z.size());
        last = (z[at] & 1) != 0;
        REQUIRE((z[at] >> 1) == 0);          // BTYPE 00: stored
        const unsigned len  = z[at + 1] | z[at + 2] << 8;
        const unsigned nlen = z[at + 3] | z[at + 4] << 8;
        REQUIRE((len ^ 0xFFFF) == nlen);
        REQUIRE(len <= slim::plot::kMaxStoredBlock);
        REQUIRE(at + 5 + len <= z.size());
        out.insert(out.end(), z.begin() + at + 5, z.begin() + at + 5 + len);
        at += 5 + len;
        ++blocks;
    }
    REQUIRE(at + 4 == z.size());
    CHECK(be32(z, at) == slim::plot::adler32(out.data(), out.size()));
    return out;
}

// Encodes `image`, decodes it with the helpers above, and compares every
// pixel. Returns the number of stored blocks.
std::size_t round_trip(const Image& image)
{
    const std::vector<Chunk> chunks = chunks_of(slim::plot::encode_png(image));
    REQUIRE(chunks.size() == 3);
    CHECK(chunks[0].type == "IHDR");
    CHECK(chunks[1].type == "IDAT");
    CHECK(chunks[2].type == "IEND");
    CHECK(chunks[2].data.empty());

    const Bytes& ihdr = chunks[0].data;
    REQUIRE(ihdr.size() == 13);
    CHECK(be32(ihdr, 0) == image.width());
    CHECK(be32(ihdr, 4) == image.height());
    CHECK(ihdr[8] == 8);   // bit depth
    CHECK(ihdr[9] == 2);   // RGB
    CHECK(ihdr[10] == 0);  // deflate
    CHECK(ihdr[11] == 0);  // adaptive filtering
    CHECK(ihdr[12] == 0);  // no interlace

    std::size_t blocks = 0;
    const Bytes raw    = inflate_stored(chunks[1].data, blocks);
    const std::size_t row = std::size_t{image.width()} * 3 + 1;
    REQUIRE(raw.size() == row * image.height());
    std::size_t differences = 0;
    for (unsigned y = 0; y < image.height(); ++y) {
        CHECK(raw[y * row] == 0);  // filter None
        for (unsigned x = 0; x < image.width(); ++x) {
            const std::size_t i = y * row + 1 + std::size_t{x} * 3;
            differences += Rgb{raw[i], raw[i + 1], raw[i + 2]} != image.at(x, y);
        }
    }
    CHECK(differences == 0);
    return blocks;
}

std::size_t ink_inside(const Image& image, const Rect& box, Rgb background, std::size_t& outside)
{
    std::size_t inside = 0;
    outside            = 0;
    for (unsigned y = 0; y < image.height(); ++y) {
        for (unsigned x = 0; x < image.width(); ++x) {
            if (image.at(x, y) == background) {
                continue;
            }
            (box.contains(static_cast<int>(x), static_cast<int>(y)) ? inside : outside) += 1;
        }
    }
    return inside;
}

}  // namespace

TEST_CASE("CRC-32 and Adler-32 give the published check values", "[plot]")
{
    CHECK(slim::plot::crc32(bytes_of("123456789"), 9) == 0xCBF43926u);
    CHECK(slim::plot::adler32(bytes_of("Wikipedia"), 9) == 0x11E60398u);
    SECTION("continued over two buffers they give the same")
    {
        CHECK(slim::plot::crc32(bytes_of("6789"), 4, slim::plot::crc32(bytes_of("12345"), 5)) ==
              0xCBF43926u);
        CHECK(slim::plot::adler32(bytes_of("pedia"), 5, slim::plot::adler32(bytes_of("Wiki"), 4)) ==
              0x11E60398u);
    }
    SECTION("of nothing they are the initial values")
    {
        CHECK(slim::plot::crc32(nullptr, 0) == 0u);
        CHECK(slim::plot::adler32(nullptr, 0) == 1u);
    }
}

TEST_CASE("a tiny image encodes to a PNG whose chunks, header and pixels check out", "[plot]")
{
    Image image(3, 2, Rgb{10, 20, 30});
    image.set(0, 0, Rgb{255, 0, 0});
    image.set(1, 0, Rgb{0, 255, 0});
    image.set(2, 1, Rgb{0, 0, 255});
    CHECK(round_trip(image) == 1);
}

TEST_CASE("an image of more than 65535 raw bytes spans several stored blocks", "[plot]")
{
    // 200 x 150: 150 rows of 1 + 600 bytes = 90150 bytes, two blocks.
    Image image(200, 150);
    for (unsigned y = 0; y < image.height(); ++y) {
        for (unsigned x = 0; x < image.width(); ++x) {
            image.set(x, y, Rgb{static_cast<std::uint8_t>(x), static_cast<std::uint8_t>(y),
                                static_cast<std::uint8_t>(x ^ y)});
        }
    }
    CHECK(round_trip(image) == 2);
    SECTION("exactly 65535 raw bytes fill one block; one more row needs a second")
    {
        // 15 rows of 1 + 3 * 1456 = 4369 bytes: 65535.
        CHECK(round_trip(Image(1456, 15, Rgb{1, 2, 3})) == 1);
        CHECK(round_trip(Image(1456, 16, Rgb{1, 2, 3})) == 2);
    }
}

TEST_CASE("write_png writes the encoded bytes, and names the path when it cannot", "[plot]")
{
    char dir_template[] = "/tmp/slim-plot-test-XXXXXX";
    REQUIRE(::mkdtemp(dir_template) != nullptr);
    const std::filesystem::path dir = dir_template;
    Image image(5, 4, Rgb{9, 8, 7});

    const std::string path = (dir / "x.png").string();
    slim::plot::write_png(path, image);
    std::ifstream in(path, std::ios::binary);
    const Bytes   written{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
    CHECK(written == slim::plot::encode_png(image));

    const std::string missing = (dir / "no" / "such" / "x.png").string();
    try {
        slim::plot::write_png(missing, image);
        FAIL("write_png into a missing directory did not throw");
    } catch (const std::runtime_error& e) {
        CHECK(std::string(e.what()) == missing + ": cannot write: No such file or directory");
    }
    std::filesystem::remove_all(dir);
}

TEST_CASE("an image refuses a side of 0", "[plot]")
{
    CHECK_THROWS_AS(Image(0, 3), std::invalid_argument);
    CHECK_THROWS_AS(Image(3, 0), std::invalid_argument);
}

TEST_CASE("canvas rectangles and lines set exactly their pixels", "[plot]")
{
    const Rgb ink{200, 0, 0};
    Canvas    canvas(10, 8);

    SECTION("a filled rectangle")
    {
        canvas.fill_rect({2, 3, 4, 2}, ink);
        std::size_t outside = 0;
        CHECK(ink_inside(canvas.image(), {2, 3, 4, 2}, slim::plot::kWhite, outside) == 8);
        CHECK(outside == 0);
    }
    SECTION("a horizontal line, both ends included")
    {
        canvas.line(1, 5, 7, 5, ink);
        std::size_t outside = 0;
        CHECK(ink_inside(canvas.image(), {1, 5, 7, 1}, slim::plot::kWhite, outside) == 7);
        CHECK(outside == 0);
    }
    SECTION("a diagonal, drawn backwards")
    {
        canvas.line(4, 4, 0, 0, ink);
        for (unsigned i = 0; i <= 4; ++i) {
            CHECK(canvas.image().at(i, i) == ink);
        }
        std::size_t outside = 0;
        CHECK(ink_inside(canvas.image(), {0, 0, 5, 5}, slim::plot::kWhite, outside) == 5);
        CHECK(outside == 0);
    }
    SECTION("a dashed line: 2 on, 2 off")
    {
        canvas.line(0, 0, 7, 0, ink, {1, 2});
        const bool expected[] = {true, true, false, false, true, true, false, false};
        for (unsigned x = 0; x < 8; ++x) {
            CHECK((canvas.image().at(x, 0) == ink) == expected[x]);
        }
    }
    SECTION("drawing off the image, or outside the clip, draws nothing there")
    {
        canvas.fill_rect({-5, -5, 100, 100}, ink);
        canvas.line(-20, 3, 50, 3, slim::plot::kBlack);
        CHECK(canvas.image().at(9, 7) == ink);
        CHECK(canvas.image().at(0, 3) == slim::plot::kBlack);

        Canvas clipped(10, 8);
        clipped.set_clip({2, 2, 3, 3});
        clipped.fill_rect({0, 0, 10, 8}, ink);
        std::size_t outside = 0;
        CHECK(ink_inside(clipped.image(), {2, 2, 3, 3}, slim::plot::kWhite, outside) == 9);
        CHECK(outside == 0);
    }
}

TEST_CASE("text draws inside its box and nowhere else", "[plot]")
{
    const std::string text = "GT=20us (5.3%) <x>_y";
    for (const int scale : {1, 2}) {
        Canvas    canvas(300, 60);
        const int w = Canvas::text_width(text, scale);
        const int h = Canvas::text_height(scale);
        CHECK(w == (static_cast<int>(text.size()) * 6 - 1) * scale);
        CHECK(h == 9 * scale);

        canvas.text(7, 5, text, slim::plot::kBlack, scale);
        std::size_t outside = 0;
        CHECK(ink_inside(canvas.image(), {7, 5, w, h}, slim::plot::kWhite, outside) > 0);
        CHECK(outside == 0);

        Canvas up(60, 300);
        up.text_up(5, 7, text, slim::plot::kBlack, scale);
        CHECK(ink_inside(up.image(), {5, 7, h, w}, slim::plot::kWhite, outside) > 0);
        CHECK(outside == 0);
    }
}

TEST_CASE("the font has a glyph for every printable character", "[plot]")
{
    namespace font = slim::plot::font;
    for (char c = '!'; c <= '~'; ++c) {
        INFO("character '" << c << "'");
        bool ink = false;
        for (const std::uint8_t row : font::glyph(c)) {
            ink = ink || row != 0;
            CHECK(row < (1u << font::kGlyphWidth));
        }
        CHECK(ink);
    }
    for (const std::uint8_t row : font::glyph(' ')) {
        CHECK(row == 0);
    }
    CHECK(font::glyph('\x01') == font::glyph('?'));
    CHECK(font::glyph('\x7f') == font::glyph('?'));
    // Distinct where a reader must tell them apart.
    CHECK(font::glyph('0') != font::glyph('O'));
    CHECK(font::glyph('1') != font::glyph('l'));
    CHECK(font::glyph('5') != font::glyph('S'));
}

TEST_CASE("idle intervals are bucketed by the log2 of their length in microseconds", "[plot]")
{
    using slim::plot::IdleHistogram;
    CHECK(IdleHistogram::bucket(1) == 0);
    CHECK(IdleHistogram::bucket(999) == 0);
    CHECK(IdleHistogram::bucket(1'000) == 1);
    CHECK(IdleHistogram::bucket(1'999) == 1);
    CHECK(IdleHistogram::bucket(2'000) == 2);
    CHECK(IdleHistogram::bucket(900'000) == 10);  // [512 us, 1024 us)
    CHECK(IdleHistogram::bucket(INT64_MAX) < IdleHistogram::kBuckets);
    CHECK(IdleHistogram::lower_bound_ns(0) == 0);
    CHECK(IdleHistogram::lower_bound_ns(1) == 1'000);
    CHECK(IdleHistogram::lower_bound_ns(10) == 512'000);

    IdleHistogram h;
    h.add(0);  // back to back: not idle
    h.add(5'000);
    h.add(5'000);
    h.add(1'000'000);
    CHECK(h.intervals() == 3);
    CHECK(h.total_idle_ns() == 1'010'000);
    CHECK(h.count(3) == 2);
    CHECK(h.idle_ns(3) == 10'000);
    CHECK(h.count(10) == 1);
    CHECK(h.count(0) == 0);
}

TEST_CASE("short durations for labels keep three digits", "[plot]")
{
    CHECK(slim::plot::short_duration(500) == "500ns");
    CHECK(slim::plot::short_duration(1'000) == "1us");
    CHECK(slim::plot::short_duration(512'000) == "512us");
    CHECK(slim::plot::short_duration(1'024'000) == "1.02ms");
    CHECK(slim::plot::short_duration(2'000'000'000) == "2s");
}

TEST_CASE("the figures draw without data too", "[plot]")
{
    // Empty inputs must not divide by zero or index past the end.
    const Image idle = slim::plot::idle_histogram_figure(slim::plot::IdleHistogram{}, "t");
    CHECK(idle.width() > 0);
    const Image energy = slim::plot::energy_vs_gt_figure(slim::plot::EnergySweep{}, "t");
    CHECK(energy.width() > 0);
    const Image width =
            slim::plot::width_over_time_figure(slim::link::WidthTimeline{}, 4, "oracle", "none", "t");
    CHECK(width.width() > 0);
}

namespace {

using slim::link::PolicyKind;
using slim::link::ReplayConfig;
using slim::link::WidthChange;
using slim::predict::Event;
using slim::predict::TimeNs;

// Bursts of 100 us every 1 ms (tests/data/replay-periodic.trace).
slim::link::Replay replay_periodic(const ReplayConfig& config, int events)
{
    slim::link::Replay driver(config);
    for (TimeNs i = 0; i < events; ++i) {
        driver.on_event(Event{i * 1'000'000, i * 1'000'000 + 100'000, 1, 0, 0});
    }
    return driver;
}

std::vector<std::pair<TimeNs, unsigned>> steps(const std::vector<WidthChange>& widths)
{
    std::vector<std::pair<TimeNs, unsigned>> out;
    for (const WidthChange& c : widths) {
        out.emplace_back(c.at_ns, c.width);
    }
    return out;
}

}  // namespace

TEST_CASE("the replay records the link's width over the events asked for", "[plot]")
{
    // Default link: 4 lanes, low 1, tau 10 us.
    ReplayConfig config;
    config.policy.kind = PolicyKind::oracle;

    SECTION("not asked: nothing recorded")
    {
        slim::link::Replay driver = replay_periodic(config, 3);
        CHECK(driver.timeline().widths.empty());
        CHECK(driver.timeline().bursts.empty());
    }
    SECTION("oracle: low from each burst's end, full again exactly at the next start")
    {
        config.timeline_events    = 3;
        slim::link::Replay driver = replay_periodic(config, 5);
        using Steps               = std::vector<std::pair<TimeNs, unsigned>>;
        // Falling: the usable width drops when the transition starts;
        // rising from gap end - tau: it is up when the transition ends.
        CHECK(steps(driver.timeline().widths) ==
              Steps{{0, 4}, {100'000, 1}, {1'000'000, 4}, {1'100'000, 1}, {2'000'000, 4}});
        REQUIRE(driver.timeline().bursts.size() == 3);
        CHECK(driver.timeline().bursts[2].start_ns == 2'000'000);
        CHECK(driver.timeline().bursts[2].end_ns == 2'100'000);
        CHECK(driver.timeline().bursts[2].width == 4);
    }
    SECTION("timeout: low after 100 us idle, up tau after the burst that waits")
    {
        config.policy.kind       = PolicyKind::timeout;
        config.policy.timeout_ns = 100'000;
        config.timeline_events   = 2;
        slim::link::Replay driver = replay_periodic(config, 2);
        using Steps               = std::vector<std::pair<TimeNs, unsigned>>;
        CHECK(steps(driver.timeline().widths) == Steps{{0, 4}, {200'000, 1}, {1'010'000, 4}});
        REQUIRE(driver.timeline().bursts.size() == 2);
        CHECK(driver.timeline().bursts[1].start_ns == 1'010'000);  // waited tau
        CHECK(driver.timeline().bursts[1].end_ns == 1'110'000);
    }
    SECTION("a window later in the trace opens at the end of the event before it")
    {
        config.timeline_first_event = 998;
        config.timeline_events      = 2;
        slim::link::Replay driver   = replay_periodic(config, 1000);
        using Steps                 = std::vector<std::pair<TimeNs, unsigned>>;
        CHECK(steps(driver.timeline().widths) == Steps{{997'100'000, 1},
                                                       {998'000'000, 4},
                                                       {998'100'000, 1},
                                                       {999'000'000, 4}});
        CHECK(driver.timeline().bursts.size() == 2);
    }
    SECTION("recording changes nothing in the result")
    {
        for (const PolicyKind kind : {PolicyKind::oracle, PolicyKind::timeout,
                                      PolicyKind::predictor, PolicyKind::always_on}) {
            ReplayConfig plain;
            plain.policy.kind                    = kind;
            plain.policy.predictor.policy        = slim::predict::Policy::pps;
            ReplayConfig recorded                = plain;
            recorded.timeline_events             = 600;
            slim::link::Replay a                 = replay_periodic(plain, 1000);
            slim::link::Replay b                 = replay_periodic(recorded, 1000);
            const slim::link::ReplayResult ra    = a.result();
            const slim::link::ReplayResult rb    = b.result();
            INFO("policy " << static_cast<int>(kind));
            CHECK(ra.energy_joules == rb.energy_joules);
            CHECK(ra.delay_ns == rb.delay_ns);
            CHECK(ra.transitions == rb.transitions);
            CHECK(ra.time_at_width_ns == rb.time_at_width_ns);
            CHECK(b.timeline().bursts.size() == 600);
        }
    }
}

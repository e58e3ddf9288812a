// SPDX-License-Identifier: BSD-3-Clause
// The packing frame (src/pack/frame.h). Expected payloads come from a model
// written here: every whole element of a marked run (boundaries from its
// region base) becomes pack::round_trip of the original, every other byte is
// unchanged — unless the run is too short to be worth packing (frame.h).
#include "pack/frame.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

using slim::pack::ByteSpan;
using slim::pack::FrameError;
using slim::pack::FrameKind;
using slim::pack::FrameRequest;
using slim::pack::MarkedRun;
using slim::pack::Precision;
using slim::pack::RegionRegistry;
using slim::pack::Rounding;
using slim::pack::SegmentKind;

namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes random_bytes(std::size_t n, std::mt19937_64& rng)
{
    Bytes b(n);
    for (auto& x : b)
        x = static_cast<std::uint8_t>(rng());
    return b;
}

std::uintptr_t addr_of(const std::uint8_t *p) { return reinterpret_cast<std::uintptr_t>(p); }

std::vector<MarkedRun> find_runs(const RegionRegistry& reg, const std::uint8_t *p, std::size_t n)
{
    std::vector<MarkedRun> runs(64);
    const std::size_t count = reg.find(p, n, runs.data(), runs.size());
    REQUIRE(count <= runs.size());
    runs.resize(count);
    return runs;
}

// What the receiver must see for payload bytes at [addr, addr + size).
Bytes expected_payload(const std::uint8_t *payload, std::size_t size, std::uintptr_t addr,
                       const std::vector<MarkedRun>& runs)
{
    Bytes out(payload, payload + size);
    for (const MarkedRun& run : runs) {
        const std::uintptr_t lo    = std::max(run.begin, addr);
        const std::uintptr_t hi    = std::min(run.end, addr + size);
        const std::uintptr_t first = run.region_base + (lo - run.region_base + 7) / 8 * 8;
        const std::uintptr_t n     = hi >= first + 8 ? (hi - first) / 8 : 0;
        if (n == 0) continue;
        for (std::uintptr_t s = first; s + 8 <= hi; s += 8) {
            double d;
            std::memcpy(&d, payload + (s - addr), 8);
            d = slim::pack::round_trip(d, run.precision);
            std::memcpy(out.data() + (s - addr), &d, 8);
        }
    }
    return out;
}

struct Encoded {
    Bytes frame;
    slim::pack::FrameEncodeResult result;
};

Encoded encode(FrameRequest rq)
{
    std::size_t payload_len = 0;
    for (std::size_t i = 0; i < rq.piece_count; ++i)
        payload_len += rq.pieces[i].size;
    Encoded e;
    e.frame.resize(slim::pack::frame_max_size(rq.header.size, payload_len, rq.run_count));
    e.result = slim::pack::encode_frame(rq, e.frame.data(), e.frame.size());
    REQUIRE(e.result.error == FrameError::none);
    REQUIRE(e.result.size() <= e.frame.size());
    e.frame.resize(e.result.size());
    return e;
}

FrameRequest am_request(const ByteSpan *pieces, std::size_t count, std::uintptr_t addr,
                        const std::vector<MarkedRun>& runs)
{
    FrameRequest rq;
    rq.kind         = FrameKind::active_message;
    rq.orig_am_id   = 17;
    rq.pieces       = pieces;
    rq.piece_count  = count;
    rq.payload_addr = addr;
    rq.runs         = runs.data();
    rq.run_count    = runs.size();
    return rq;
}

Bytes decode(const Bytes& frame)
{
    const auto v = slim::pack::validate_frame(frame.data(), frame.size());
    REQUIRE(v.error == FrameError::none);
    Bytes out(v.view.orig_payload_len());
    REQUIRE(slim::pack::decode_into(v.view, out.data(), out.size()) == FrameError::none);
    return out;
}

// Aligned storage for doubles, addressed as bytes.
struct Buffer {
    explicit Buffer(std::size_t n_doubles, std::mt19937_64& rng) : words(n_doubles)
    {
        for (auto& w : words)
            w = rng();
    }
    std::uint8_t *bytes() { return reinterpret_cast<std::uint8_t *>(words.data()); }
    std::size_t size() const { return words.size() * 8; }
    std::vector<std::uint64_t> words;
};

}  // namespace

TEST_CASE("an unmarked payload travels as one raw segment, byte for byte", "[frame]")
{
    std::mt19937_64 rng(1);
    const Bytes payload = random_bytes(1000, rng);
    const ByteSpan piece{payload.data(), payload.size()};
    const auto e = encode(am_request(&piece, 1, addr_of(payload.data()), {}));

    CHECK(e.frame.size() == slim::pack::frame_max_size(0, payload.size(), 0));
    CHECK(e.result.stats.raw_bytes == payload.size());
    CHECK(e.result.stats.packed_elements == 0);
    CHECK(e.result.stats.wire_bytes == 24 + 8 + 1000);

    const auto v = slim::pack::validate_frame(e.frame.data(), e.frame.size());
    REQUIRE(v.ok());
    REQUIRE(v.view.segment_count() == 1);
    CHECK(v.view.segment(0).kind == SegmentKind::raw);
    CHECK(v.view.segment(0).orig_len == 1000);
    CHECK(decode(e.frame) == payload);
}

TEST_CASE("an empty payload makes a frame with no segments", "[frame]")
{
    const auto e = encode(am_request(nullptr, 0, 0, {}));
    CHECK(e.frame.size() == 24);
    const auto v = slim::pack::validate_frame(e.frame.data(), e.frame.size());
    REQUIRE(v.ok());
    CHECK(v.view.segment_count() == 0);
    CHECK(v.view.orig_payload_len() == 0);
    CHECK(slim::pack::decode_into(v.view, nullptr, 0) == FrameError::none);
}

TEST_CASE("a fully marked payload decodes to round_trip of every value, bit for bit", "[frame]")
{
    std::mt19937_64 rng(2);
    Buffer buf(100, rng);
    for (int keep = slim::pack::kMinKeep; keep <= slim::pack::kMaxKeep; ++keep) {
        for (const Rounding mode : {Rounding::truncate, Rounding::nearest_even}) {
            CAPTURE(keep, static_cast<int>(mode));
            RegionRegistry reg;
            REQUIRE(reg.mark(buf.bytes(), buf.size(), Precision{keep, mode}));
            const auto runs = find_runs(reg, buf.bytes(), buf.size());
            const ByteSpan piece{buf.bytes(), buf.size()};
            const auto e = encode(am_request(&piece, 1, addr_of(buf.bytes()), runs));

            CHECK(e.frame.size() == 24 + 8 + 100 * static_cast<std::size_t>(keep));
            CHECK(e.result.stats.packed_elements == 100);
            CHECK(e.result.stats.raw_bytes == 0);
            const auto v = slim::pack::validate_frame(e.frame.data(), e.frame.size());
            REQUIRE(v.ok());
            REQUIRE(v.view.segment_count() == 1);
            CHECK(v.view.segment(0).kind == SegmentKind::packed);
            CHECK(v.view.segment(0).precision.keep_bytes == keep);
            CHECK(v.view.segment(0).precision.mode == mode);

            const Bytes got = decode(e.frame);
            REQUIRE(got.size() == buf.size());
            for (std::size_t i = 0; i < 100; ++i) {
                double orig;
                std::memcpy(&orig, buf.bytes() + 8 * i, 8);
                const double want = slim::pack::round_trip(orig, Precision{keep, mode});
                INFO("element " << i);
                CHECK(std::memcmp(got.data() + 8 * i, &want, 8) == 0);
            }
        }
    }
}

TEST_CASE("mixed runs of different precision decode exactly", "[frame]")
{
    std::mt19937_64 rng(3);
    Buffer buf(256, rng);
    RegionRegistry reg;
    // Regions at odd byte offsets: element boundaries follow each region.
    REQUIRE(reg.mark(buf.bytes() + 13, 400, Precision{3, Rounding::truncate}));
    REQUIRE(reg.mark(buf.bytes() + 600, 800, Precision{5, Rounding::nearest_even}));
    REQUIRE(reg.mark(buf.bytes() + 1400, 300, Precision{5, Rounding::nearest_even}));
    const auto runs = find_runs(reg, buf.bytes(), buf.size());
    const ByteSpan piece{buf.bytes(), buf.size()};
    const auto e = encode(am_request(&piece, 1, addr_of(buf.bytes()), runs));

    const Bytes want = expected_payload(buf.bytes(), buf.size(), addr_of(buf.bytes()), runs);
    CHECK(decode(e.frame) == want);

    // raw, packed(3), raw, packed(5) — the two adjacent keep-5 regions merge
    // into one packed segment: 600..1400 is whole elements, then 1400..1696.
    const auto v = slim::pack::validate_frame(e.frame.data(), e.frame.size());
    REQUIRE(v.ok());
    REQUIRE(v.view.segment_count() == 5);
    CHECK(v.view.segment(0).kind == SegmentKind::raw);
    CHECK(v.view.segment(0).orig_len == 13);
    CHECK(v.view.segment(1).kind == SegmentKind::packed);
    CHECK(v.view.segment(1).orig_len == 400);
    CHECK(v.view.segment(2).kind == SegmentKind::raw);
    CHECK(v.view.segment(3).kind == SegmentKind::packed);
    CHECK(v.view.segment(3).orig_len == 800 + 296);
    CHECK(v.view.segment(4).kind == SegmentKind::raw);
    CHECK(e.result.stats.packed_elements == 50 + 137);
    CHECK(e.result.stats.raw_bytes == buf.size() - 8 * (50 + 137));
}

TEST_CASE("a fragment starting and ending mid-element sends the partial elements raw", "[frame]")
{
    std::mt19937_64 rng(4);
    Buffer buf(64, rng);
    RegionRegistry reg;
    const Precision prec{4, Rounding::nearest_even};
    REQUIRE(reg.mark(buf.bytes(), buf.size(), prec));
    const std::uintptr_t base = addr_of(buf.bytes());

    for (std::size_t s = 0; s < 8; ++s) {
        for (std::size_t t = 0; t < 8; ++t) {
            CAPTURE(s, t);
            std::uint8_t *p     = buf.bytes() + 24 + s;
            const std::size_t n = (8 * 60 + t) - (24 + s);
            const auto runs     = find_runs(reg, p, n);
            REQUIRE(runs.size() == 1);
            REQUIRE(runs[0].region_base == base);
            const ByteSpan piece{p, n};
            const auto e = encode(am_request(&piece, 1, addr_of(p), runs));

            CHECK(decode(e.frame) == expected_payload(p, n, addr_of(p), runs));
            const std::size_t head = s == 0 ? 0 : 8 - s;
            CHECK(e.result.stats.raw_bytes == head + t);
            CHECK(e.result.stats.packed_elements == (n - head - t) / 8);

            const auto v = slim::pack::validate_frame(e.frame.data(), e.frame.size());
            REQUIRE(v.ok());
            CHECK(v.view.segment_count() == std::size_t{1} + (head > 0) + (t > 0));
            if (head > 0) {
                CHECK(v.view.segment(0).kind == SegmentKind::raw);
                CHECK(v.view.segment(0).orig_len == head);
            }
        }
    }
}

TEST_CASE("a run holding no whole element of the fragment is sent raw", "[frame]")
{
    std::mt19937_64 rng(15);
    Buffer buf(8, rng);
    RegionRegistry reg;
    REQUIRE(reg.mark(buf.bytes(), buf.size(), Precision{2, Rounding::truncate}));
    // The fragment starts 1 byte into an element; the run ends 2 bytes later,
    // and 7 bytes later: both inside that partial element.
    for (const std::size_t n : {std::size_t{2}, std::size_t{7}, std::size_t{9}}) {
        CAPTURE(n);
        std::uint8_t *p = buf.bytes() + 1;
        const auto runs = find_runs(reg, p, n);
        const ByteSpan piece{p, n};
        const auto e = encode(am_request(&piece, 1, addr_of(p), runs));
        CHECK(e.result.stats.packed_elements == 0);
        CHECK(e.frame.size() == slim::pack::frame_max_size(0, n, 0));
        CHECK(decode(e.frame) == Bytes(p, p + n));
    }
}

TEST_CASE("an iov payload split at arbitrary points frames like the contiguous one", "[frame]")
{
    std::mt19937_64 rng(5);
    Buffer buf(200, rng);
    RegionRegistry reg;
    REQUIRE(reg.mark(buf.bytes() + 5, 700, Precision{2, Rounding::truncate}));
    REQUIRE(reg.mark(buf.bytes() + 900, 500, Precision{6, Rounding::nearest_even}));
    const auto runs = find_runs(reg, buf.bytes(), buf.size());
    const ByteSpan whole{buf.bytes(), buf.size()};
    const auto reference = encode(am_request(&whole, 1, addr_of(buf.bytes()), runs));

    for (int trial = 0; trial < 200; ++trial) {
        CAPTURE(trial);
        // Cut points, duplicates allowed (they make empty pieces).
        std::vector<std::size_t> cuts{0, buf.size()};
        const int n_cuts = static_cast<int>(rng() % 12);
        for (int i = 0; i < n_cuts; ++i)
            cuts.push_back(rng() % (buf.size() + 1));
        std::sort(cuts.begin(), cuts.end());
        std::vector<ByteSpan> pieces;
        for (std::size_t i = 0; i + 1 < cuts.size(); ++i)
            pieces.push_back({buf.bytes() + cuts[i], cuts[i + 1] - cuts[i]});

        const auto e = encode(am_request(pieces.data(), pieces.size(), addr_of(buf.bytes()), runs));
        REQUIRE(e.frame == reference.frame);
    }
    CHECK(decode(reference.frame) ==
          expected_payload(buf.bytes(), buf.size(), addr_of(buf.bytes()), runs));
}

TEST_CASE("scattered iov memory works once the runs are shifted to payload offsets", "[frame]")
{
    std::mt19937_64 rng(6);
    Buffer a(40, rng), b(40, rng);
    RegionRegistry reg;
    REQUIRE(reg.mark(a.bytes(), a.size(), Precision{3, Rounding::truncate}));
    REQUIRE(reg.mark(b.bytes() + 4, b.size() - 4, Precision{6, Rounding::truncate}));

    // Payload: the last 300 bytes of a, then the first 301 bytes of b.
    const ByteSpan pieces[]           = {{a.bytes() + 20, 300}, {b.bytes(), 301}};
    const std::uintptr_t payload_addr = 0x1000;  // any address space will do
    std::vector<MarkedRun> runs;
    std::uintptr_t logical = payload_addr;
    for (const ByteSpan& piece : pieces) {
        for (MarkedRun r : find_runs(reg, piece.data, piece.size)) {
            const std::uintptr_t shift = logical - addr_of(piece.data);
            r.begin += shift;
            r.end += shift;
            r.region_base += shift;
            runs.push_back(r);
        }
        logical += piece.size;
    }
    Bytes flat(pieces[0].data, pieces[0].data + pieces[0].size);
    flat.insert(flat.end(), pieces[1].data, pieces[1].data + pieces[1].size);

    const auto e = encode(am_request(pieces, 2, payload_addr, runs));
    CHECK(e.result.stats.packed_elements == 37 + 37);
    CHECK(decode(e.frame) == expected_payload(flat.data(), flat.size(), payload_addr, runs));
}

TEST_CASE("an am_short header travels with the frame", "[frame]")
{
    std::mt19937_64 rng(7);
    Buffer buf(32, rng);
    RegionRegistry reg;
    REQUIRE(reg.mark(buf.bytes(), buf.size(), Precision{4, Rounding::truncate}));
    const auto runs              = find_runs(reg, buf.bytes(), buf.size());
    const std::uint8_t header[8] = {1, 2, 3, 4, 5, 6, 7, 0xFF};
    const ByteSpan piece{buf.bytes(), buf.size()};
    FrameRequest rq = am_request(&piece, 1, addr_of(buf.bytes()), runs);
    rq.orig_am_id   = 42;
    rq.header       = {header, sizeof header};
    const auto e    = encode(rq);

    CHECK(e.frame.size() == 24 + 8 + 8 + 32 * 4);
    const auto v = slim::pack::validate_frame(e.frame.data(), e.frame.size());
    REQUIRE(v.ok());
    CHECK(v.view.kind() == FrameKind::active_message);
    CHECK(v.view.orig_am_id() == 42);
    CHECK(v.view.remote_addr() == 0);
    REQUIRE(v.view.header().size == 8);
    CHECK(std::memcmp(v.view.header().data, header, 8) == 0);
    CHECK(decode(e.frame) == expected_payload(buf.bytes(), buf.size(), addr_of(buf.bytes()), runs));
}

TEST_CASE("a put frame carries its remote address and no header", "[frame]")
{
    std::mt19937_64 rng(8);
    Buffer buf(32, rng);
    const ByteSpan piece{buf.bytes(), buf.size()};
    FrameRequest rq = am_request(&piece, 1, addr_of(buf.bytes()), {});
    rq.kind         = FrameKind::put;
    rq.orig_am_id   = 0;
    rq.remote_addr  = 0x7FFF'1234'5678'9ABCULL;
    const auto e    = encode(rq);

    // Field by field, little-endian.
    const Bytes head(e.frame.begin(), e.frame.begin() + 24);
    const Bytes want{0x5A, 1, 1, 0, 0,    0,    1,    0,    0,    1,    0,    0,
                     0,    0, 0, 0, 0xBC, 0x9A, 0x78, 0x56, 0x34, 0x12, 0xFF, 0x7F};
    CHECK(head == want);
    const auto v = slim::pack::validate_frame(e.frame.data(), e.frame.size());
    REQUIRE(v.ok());
    CHECK(v.view.kind() == FrameKind::put);
    CHECK(v.view.remote_addr() == rq.remote_addr);
    CHECK(v.view.header().size == 0);
    CHECK(decode(e.frame) == Bytes(buf.bytes(), buf.bytes() + buf.size()));

    SECTION("a put with a header is refused")
    {
        const std::uint8_t h[8] = {};
        rq.header               = {h, 8};
        Bytes out(1024);
        CHECK(slim::pack::encode_frame(rq, out.data(), out.size()).error ==
              FrameError::field_not_zero);
    }
    SECTION("an active message with a remote address is refused")
    {
        rq.kind = FrameKind::active_message;
        Bytes out(1024);
        CHECK(slim::pack::encode_frame(rq, out.data(), out.size()).error ==
              FrameError::field_not_zero);
    }
}

TEST_CASE("every whole marked element is packed, even a single one", "[frame]")
{
    std::mt19937_64 rng(9);
    Buffer buf(64, rng);
    // keep 7 saves 1 byte per element, less than its table entries cost: the
    // receiver must still see the packed values, whatever the message size.
    for (const std::size_t elements : {std::size_t{1}, std::size_t{15}, std::size_t{16}}) {
        CAPTURE(elements);
        RegionRegistry reg;
        REQUIRE(reg.mark(buf.bytes() + 64, 8 * elements, Precision{7, Rounding::truncate}));
        const auto runs = find_runs(reg, buf.bytes(), buf.size());
        const ByteSpan piece{buf.bytes(), buf.size()};
        const auto e = encode(am_request(&piece, 1, addr_of(buf.bytes()), runs));
        CHECK(e.frame.size() <= slim::pack::frame_max_size(0, buf.size(), runs.size()));
        CHECK(e.result.stats.packed_elements == elements);
        CHECK(decode(e.frame) ==
              expected_payload(buf.bytes(), buf.size(), addr_of(buf.bytes()), runs));
    }
}

TEST_CASE("frame_max_size bounds frames of many tiny runs", "[frame]")
{
    std::mt19937_64 rng(12);
    Buffer buf(64, rng);
    RegionRegistry reg;
    // Every other element marked: 32 runs, each one packed element.
    for (std::size_t i = 0; i < 64; i += 2)
        REQUIRE(reg.mark(buf.bytes() + 8 * i, 8, Precision{7, Rounding::nearest_even}));
    const auto runs = find_runs(reg, buf.bytes(), buf.size());
    REQUIRE(runs.size() == 32);
    const ByteSpan piece{buf.bytes(), buf.size()};
    const auto e = encode(am_request(&piece, 1, addr_of(buf.bytes()), runs));
    CHECK(e.result.stats.packed_elements == 32);
    CHECK(e.frame.size() > slim::pack::frame_max_size(0, buf.size(), 0));
    CHECK(e.frame.size() <= slim::pack::frame_max_size(0, buf.size(), runs.size()));
    CHECK(decode(e.frame) == expected_payload(buf.bytes(), buf.size(), addr_of(buf.bytes()), runs));
}

TEST_CASE("no frame is larger than frame_max_size, whatever the runs", "[frame]")
{
    std::mt19937_64 rng(10);
    Buffer buf(128, rng);
    for (int trial = 0; trial < 500; ++trial) {
        RegionRegistry reg;
        const int n = 1 + static_cast<int>(rng() % 8);
        for (int i = 0; i < n; ++i) {
            const std::size_t at  = rng() % buf.size();
            const std::size_t len = 1 + rng() % (buf.size() - at);
            const Precision prec{2 + static_cast<int>(rng() % 6),
                                 rng() % 2 ? Rounding::truncate : Rounding::nearest_even};
            reg.mark(buf.bytes() + at, len, prec);
        }
        const std::size_t off = rng() % 64;
        const std::size_t len = rng() % (buf.size() - off);
        const auto runs       = find_runs(reg, buf.bytes() + off, len);
        const ByteSpan piece{buf.bytes() + off, len};
        const auto e = encode(am_request(&piece, 1, addr_of(piece.data), runs));
        REQUIRE(e.frame.size() <= slim::pack::frame_max_size(0, len, runs.size()));
        REQUIRE(decode(e.frame) == expected_payload(piece.data, len, addr_of(piece.data), runs));
    }
}

TEST_CASE("the encoder refuses what cannot be framed", "[frame]")
{
    std::mt19937_64 rng(11);
    Buffer buf(16, rng);
    const ByteSpan piece{buf.bytes(), buf.size()};
    FrameRequest rq = am_request(&piece, 1, addr_of(buf.bytes()), {});
    Bytes out(4096);

    SECTION("an output buffer one byte short")
    {
        const std::size_t need = slim::pack::frame_max_size(0, buf.size(), 0);
        CHECK(slim::pack::encode_frame(rq, out.data(), need - 1).error ==
              FrameError::buffer_too_small);
        CHECK(slim::pack::encode_frame(rq, out.data(), need).ok());
    }
    SECTION("a header above 65535 bytes")
    {
        Bytes header(70000);
        rq.header = {header.data(), header.size()};
        CHECK(slim::pack::encode_frame(rq, out.data(), out.size()).error ==
              FrameError::header_too_long);
        CHECK(slim::pack::frame_max_size(header.size(), 0, 0) == 0);
    }
    SECTION("a payload above 1 GiB")
    {
        const ByteSpan huge[] = {{buf.bytes(), std::size_t{1} << 29},
                                 {buf.bytes(), (std::size_t{1} << 29) + 1}};
        rq.pieces             = huge;
        rq.piece_count        = 2;
        CHECK(slim::pack::encode_frame(rq, out.data(), out.size()).error ==
              FrameError::payload_too_large);
        CHECK(slim::pack::frame_max_size(0, (std::size_t{1} << 30) + 1, 0) == 0);
    }
    SECTION("an unknown kind")
    {
        rq.kind = static_cast<FrameKind>(7);
        CHECK(slim::pack::encode_frame(rq, out.data(), out.size()).error == FrameError::bad_kind);
    }
}

namespace {

// A valid frame to break: 8-byte header, raw(13) packed(keep 3, 400) raw(rest).
struct Sample {
    Bytes frame;
    std::size_t table_at = 24 + 8;
    std::size_t entry(std::size_t i) const { return table_at + 8 * i; }
};

Sample sample_frame()
{
    static std::mt19937_64 rng(12);
    static Buffer buf(64, rng);
    RegionRegistry reg;
    REQUIRE(reg.mark(buf.bytes() + 13, 400, Precision{3, Rounding::nearest_even}));
    const auto runs              = find_runs(reg, buf.bytes(), buf.size());
    const std::uint8_t header[8] = {9, 8, 7, 6, 5, 4, 3, 2};
    const ByteSpan piece{buf.bytes(), buf.size()};
    FrameRequest rq = am_request(&piece, 1, addr_of(buf.bytes()), runs);
    rq.header       = {header, 8};
    Sample s;
    s.frame      = encode(rq).frame;
    const auto v = slim::pack::validate_frame(s.frame.data(), s.frame.size());
    REQUIRE(v.ok());
    REQUIRE(v.view.segment_count() == 3);
    REQUIRE(v.view.segment(1).kind == SegmentKind::packed);
    return s;
}

void put_le(Bytes& f, std::size_t at, std::uint64_t v, int bytes)
{
    for (int i = 0; i < bytes; ++i)
        f[at + i] = static_cast<std::uint8_t>(v >> (8 * i));
}

std::uint64_t get_le(const Bytes& f, std::size_t at, int bytes)
{
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i)
        v = (v << 8) | f[at + i];
    return v;
}

FrameError check(const Bytes& f) { return slim::pack::validate_frame(f.data(), f.size()).error; }

}  // namespace

TEST_CASE("malformed frames are rejected with the matching error", "[frame]")
{
    Sample s = sample_frame();
    Bytes& f = s.frame;

    SECTION("short frame")
    {
        CHECK(slim::pack::validate_frame(f.data(), 23).error == FrameError::truncated);
        CHECK(slim::pack::validate_frame(f.data(), 0).error == FrameError::truncated);
        CHECK(slim::pack::validate_frame(nullptr, 100).error == FrameError::truncated);
    }
    SECTION("bad magic")
    {
        f[0] = 0x5B;
        CHECK(check(f) == FrameError::bad_magic);
    }
    SECTION("bad version")
    {
        f[1] = 2;
        CHECK(check(f) == FrameError::bad_version);
    }
    SECTION("bad kind")
    {
        f[2] = 2;
        CHECK(check(f) == FrameError::bad_kind);
    }
    SECTION("header reserved field not zero")
    {
        f[13] = 1;
        CHECK(check(f) == FrameError::field_not_zero);
    }
    SECTION("active message with a remote address")
    {
        f[23] = 1;
        CHECK(check(f) == FrameError::field_not_zero);
    }
    SECTION("put with an AM header")
    {
        f[2] = 1;
        CHECK(check(f) == FrameError::field_not_zero);
    }
    SECTION("hdr_len beyond the frame")
    {
        put_le(f, 4, f.size() - 24 + 1, 2);
        CHECK(check(f) == FrameError::header_overrun);
        put_le(f, 4, 0xFFFF, 2);
        CHECK(check(f) == FrameError::header_overrun);
    }
    SECTION("segment table beyond the frame")
    {
        put_le(f, 6, 0xFFFF, 2);
        CHECK(check(f) == FrameError::table_overrun);
        const Bytes cut(f.begin(), f.begin() + static_cast<long>(s.entry(2) + 4));
        CHECK(check(cut) == FrameError::table_overrun);
    }
    SECTION("unknown segment kind")
    {
        f[s.entry(0)] = 2;
        CHECK(check(f) == FrameError::bad_segment_kind);
        f[s.entry(0)] = 0xFF;
        CHECK(check(f) == FrameError::bad_segment_kind);
    }
    SECTION("keep out of range")
    {
        for (const std::uint8_t keep : {0, 1, 8, 255}) {
            f[s.entry(1) + 1] = keep;
            CHECK(check(f) == FrameError::bad_keep);
        }
    }
    SECTION("mode out of range")
    {
        f[s.entry(1) + 2] = 2;
        CHECK(check(f) == FrameError::bad_mode);
    }
    SECTION("segment reserved byte, raw keep or raw mode not zero")
    {
        Bytes g           = f;
        g[s.entry(1) + 3] = 1;
        CHECK(check(g) == FrameError::field_not_zero);
        g                 = f;
        g[s.entry(0) + 1] = 3;
        CHECK(check(g) == FrameError::field_not_zero);
        g                 = f;
        g[s.entry(2) + 2] = 1;
        CHECK(check(g) == FrameError::field_not_zero);
    }
    SECTION("packed length not a multiple of 8")
    {
        put_le(f, s.entry(1) + 4, get_le(f, s.entry(1) + 4, 4) + 1, 4);
        CHECK(check(f) == FrameError::packed_length_not_multiple_of_8);
    }
    SECTION("segment lengths do not add up to the payload length")
    {
        Bytes g = f;
        put_le(g, 8, get_le(g, 8, 4) + 1, 4);
        CHECK(check(g) == FrameError::payload_length_mismatch);
        g = f;
        put_le(g, 8, get_le(g, 8, 4) - 1, 4);
        CHECK(check(g) == FrameError::payload_length_mismatch);
        g = f;  // a huge packed segment: rejected without overflowing
        put_le(g, s.entry(1) + 4, 0xFFFFFFF8u, 4);
        CHECK(check(g) == FrameError::payload_length_mismatch);
        g = f;
        put_le(g, 6, 0, 2);  // no segments, payload left over
        CHECK(check(g) == FrameError::payload_length_mismatch);
    }
    SECTION("segment data not exactly the rest of the frame")
    {
        Bytes g = f;
        g.push_back(0);
        CHECK(check(g) == FrameError::wire_size_mismatch);
        g = f;
        g.pop_back();
        CHECK(check(g) == FrameError::wire_size_mismatch);
        g = f;  // consistent lengths, one byte of data missing
        put_le(g, s.entry(0) + 4, get_le(g, s.entry(0) + 4, 4) + 1, 4);
        put_le(g, 8, get_le(g, 8, 4) + 1, 4);
        CHECK(check(g) == FrameError::wire_size_mismatch);
    }
    SECTION("payload length above the sanity limit")
    {
        put_le(f, 8, (1u << 30) + 1, 4);
        CHECK(check(f) == FrameError::payload_too_large);
        put_le(f, 8, 0xFFFFFFFFu, 4);
        CHECK(check(f) == FrameError::payload_too_large);
    }
}

TEST_CASE("decode_into refuses a buffer smaller than the payload", "[frame]")
{
    const Sample s = sample_frame();
    const auto v   = slim::pack::validate_frame(s.frame.data(), s.frame.size());
    REQUIRE(v.ok());
    const std::size_t n = v.view.orig_payload_len();
    Bytes out(n, 0xEE);
    CHECK(slim::pack::decode_into(v.view, out.data(), n - 1) == FrameError::buffer_too_small);
    CHECK(out == Bytes(n, 0xEE));
    CHECK(slim::pack::decode_into(v.view, out.data(), n) == FrameError::none);
}

TEST_CASE("every frame error has its own message", "[frame]")
{
    std::set<std::string> seen;
    for (int e = 0; e <= static_cast<int>(FrameError::buffer_too_small); ++e) {
        const std::string m = slim::pack::frame_error_message(static_cast<FrameError>(e));
        CHECK(!m.empty());
        CHECK(seen.insert(m).second);
    }
}

TEST_CASE("random mutations of valid frames never crash the decoder", "[frame]")
{
    std::mt19937_64 rng(13);
    const Sample s = sample_frame();
    int valid      = 0;
    for (int trial = 0; trial < 10000; ++trial) {
        Bytes f         = s.frame;
        const int edits = 1 + static_cast<int>(rng() % 4);
        for (int i = 0; i < edits; ++i) {
            switch (rng() % 4) {
            case 0: f[rng() % f.size()] = static_cast<std::uint8_t>(rng()); break;
            case 1:
                f[rng() % std::min<std::size_t>(f.size(), 64)] ^=
                        static_cast<std::uint8_t>(1u << (rng() % 8));
                break;
            case 2: f.resize(rng() % (f.size() + 1)); break;
            default: f.resize(f.size() + rng() % 16, static_cast<std::uint8_t>(rng())); break;
            }
            if (f.empty()) f.push_back(0x5A);
        }
        // An exact-size copy: reading past it is caught by ASan builds.
        const std::unique_ptr<std::uint8_t[]> exact(new std::uint8_t[f.size()]);
        std::memcpy(exact.get(), f.data(), f.size());
        const auto v = slim::pack::validate_frame(exact.get(), f.size());
        if (!v.ok()) continue;
        ++valid;
        // A valid frame's payload is bounded by its size (keep >= 2).
        REQUIRE(v.view.orig_payload_len() <= 4 * f.size());
        Bytes out(v.view.orig_payload_len());
        REQUIRE(slim::pack::decode_into(v.view, out.data(), out.size()) == FrameError::none);
    }
    CHECK(valid > 0);
}

// Writes the fuzzer's seed corpus (tests/fuzz/corpus/) when
// SLIM_FRAME_CORPUS_DIR is set: `slim-unit-tests "[.frame-corpus]"`.
TEST_CASE("write the frame fuzzer seed corpus", "[.frame-corpus]")
{
    const char *dir = std::getenv("SLIM_FRAME_CORPUS_DIR");
    REQUIRE(dir != nullptr);
    auto write = [&](const std::string& name, const Bytes& frame) {
        std::ofstream(std::string(dir) + "/" + name, std::ios::binary)
                .write(reinterpret_cast<const char *>(frame.data()),
                       static_cast<std::streamsize>(frame.size()));
    };
    write("am-mixed", sample_frame().frame);

    std::mt19937_64 rng(14);
    Buffer buf(24, rng);
    const ByteSpan piece{buf.bytes(), buf.size()};
    write("am-raw", encode(am_request(&piece, 1, addr_of(buf.bytes()), {})).frame);

    RegionRegistry reg;
    REQUIRE(reg.mark(buf.bytes() + 3, buf.size() - 3, Precision{2, Rounding::truncate}));
    const auto runs = find_runs(reg, buf.bytes(), buf.size());
    FrameRequest rq = am_request(&piece, 1, addr_of(buf.bytes()), runs);
    rq.kind         = FrameKind::put;
    rq.remote_addr  = 0x1000;
    write("put-packed", encode(rq).frame);
    write("empty", encode(am_request(nullptr, 0, 0, {})).frame);
}

TEST_CASE("elements cut by fragment edges arrive quantized, however the message is cut",
          "[frame][edge]")
{
    std::mt19937_64 rng(11);
    Buffer buf(64, rng);
    RegionRegistry reg;
    const Precision prec{3, Rounding::nearest_even};
    // The region starts 8 bytes in, so element 0 is not marked, and ends 3
    // bytes into element 63: that element is cut by the mark itself.
    REQUIRE(reg.mark(buf.bytes() + 8, 8 * 62 + 3, prec));

    // What the receiver must see for the whole buffer, whichever fragments
    // carried it: every whole marked element quantized, all else exact.
    Bytes whole(buf.bytes(), buf.bytes() + buf.size());
    for (std::size_t k = 1; k < 63; ++k) {
        double d;
        std::memcpy(&d, buf.bytes() + 8 * k, 8);
        d = slim::pack::round_trip(d, prec);
        std::memcpy(whole.data() + 8 * k, &d, 8);
    }

    for (const std::size_t cut : {1u, 7u, 8u, 9u, 13u, 100u, 251u, 500u, 506u, 507u}) {
        CAPTURE(cut);
        Bytes received;
        std::size_t edge_patch_count = 0;
        for (const auto& [from, to] :
             {std::pair<std::size_t, std::size_t>{0, cut}, {cut, buf.size()}}) {
            std::uint8_t *p     = buf.bytes() + from;
            const std::size_t n = to - from;
            const auto runs     = find_runs(reg, p, n);
            std::vector<slim::pack::EdgePatch> patches(2 * runs.size());
            std::size_t count = 0;
            for (const MarkedRun& run : runs) {
                count += slim::pack::edge_patches(run, addr_of(p), n, 0, patches.data() + count);
            }
            edge_patch_count += count;
            const ByteSpan piece{p, n};
            FrameRequest rq = am_request(&piece, 1, addr_of(p), runs);
            rq.patches      = patches.data();
            rq.patch_count  = count;
            const Bytes got = decode(encode(rq).frame);
            received.insert(received.end(), got.begin(), got.end());
        }
        CHECK(received == whole);
        // A cut inside a marked element patches both of its parts; one on an
        // element boundary or outside the region none.
        const bool inside = cut % 8 != 0 && cut > 8 && cut < 8 * 63;
        CHECK(edge_patch_count == (inside ? 2u : 0u));
    }
}

TEST_CASE("a piece inside one marked element is patched once", "[frame][edge]")
{
    std::mt19937_64 rng(12);
    Buffer buf(4, rng);
    RegionRegistry reg;
    const Precision prec{2, Rounding::truncate};
    REQUIRE(reg.mark(buf.bytes(), buf.size(), prec));
    std::uint8_t *p = buf.bytes() + 10;  // bytes 2..5 of element 1
    const auto runs = find_runs(reg, p, 4);
    REQUIRE(runs.size() == 1);
    slim::pack::EdgePatch patches[2];
    REQUIRE(slim::pack::edge_patches(runs[0], addr_of(p), 4, 0, patches) == 1);
    CHECK(patches[0].offset == 0);
    CHECK(patches[0].length == 4);
    double d;
    std::memcpy(&d, buf.bytes() + 8, 8);
    d = slim::pack::round_trip(d, prec);
    CHECK(std::memcmp(patches[0].bytes, reinterpret_cast<const std::uint8_t *>(&d) + 2, 4) == 0);
}

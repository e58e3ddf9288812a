// SPDX-License-Identifier: BSD-3-Clause
// The transport's packing path through the C interface the module uses
// (slim_core.h): frames built from marked memory, rebuilt and checked on
// receipt, and the counters behind slim_packing_get().
#include "pack/codec.h"
#include "slim_core.h"
#include "slimlink.h"

#include <catch2/catch.hpp>

#include <cstring>
#include <random>
#include <vector>

namespace {

struct Alloc {
    std::vector<std::uint8_t> buffer;
    int calls   = 0;
    bool refuse = false;

    static void *cb(void *arg, size_t size)
    {
        auto *self = static_cast<Alloc *>(arg);
        ++self->calls;
        if (self->refuse) return nullptr;
        self->buffer.assign(size, 0xEE);
        return self->buffer.data();
    }
};

std::vector<double> random_doubles(std::size_t n, std::uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> dist(-1e3, 1e3);
    std::vector<double> v(n);
    for (double& d : v)
        d = dist(rng);
    return v;
}

slim_packing_stats_t packing()
{
    slim_packing_stats_t s{};
    slim_packing_get(&s);
    return s;
}

// Marks on construction, unmarks on scope exit (other tests share the
// process-wide registry).
struct Mark {
    Mark(const void *p, std::size_t n, int keep, slim_round_t mode) : ptr(p)
    {
        REQUIRE(slim_mark_precision(p, n, keep, mode) == SLIM_OK);
    }
    ~Mark() { slim_unmark(ptr); }
    const void *ptr;
};

}  // namespace

TEST_CASE("an unmarked message is left alone, without building anything")
{
    REQUIRE(slim_core_init() == SLIM_OK);
    std::vector<double> data = random_doubles(64, 1);
    const slim_frame_piece_t piece{data.data(), data.size() * 8};
    const std::uint64_t header = 0x1122334455667788u;
    const slim_frame_request_t rq{5, &header, sizeof(header), &piece, 1};
    Alloc alloc;
    void *frame = reinterpret_cast<void *>(1);
    slim_frame_info_t info;
    CHECK(slim_core_frame_build(&rq, Alloc::cb, &alloc, &frame, &info) == SLIM_FRAME_UNMARKED);
    CHECK(alloc.calls == 0);
    CHECK(frame == nullptr);
    CHECK(info.marked_bytes == 0);
    CHECK(info.payload_length == 8 + 512);
}

TEST_CASE("the marked-regions word the send path reads follows marks and unmarks")
{
    REQUIRE(slim_core_init() == SLIM_OK);
    const size_t *word = slim_core_marked_regions();
    REQUIRE(word != nullptr);
    CHECK(slim_core_marked_regions() == word);  // one word for the process
    const size_t before = __atomic_load_n(word, __ATOMIC_RELAXED);
    std::vector<double> a(16), b(16);
    {
        const Mark ma(a.data(), a.size() * 8, 4, SLIM_ROUND_TRUNCATE);
        CHECK(__atomic_load_n(word, __ATOMIC_RELAXED) == before + 1);
        const Mark mb(b.data(), b.size() * 8, 4, SLIM_ROUND_TRUNCATE);
        CHECK(__atomic_load_n(word, __ATOMIC_RELAXED) == before + 2);
    }
    CHECK(__atomic_load_n(word, __ATOMIC_RELAXED) == before);
}

TEST_CASE("a marked message is rebuilt with its header and quantized elements")
{
    REQUIRE(slim_core_init() == SLIM_OK);
    std::vector<double> data = random_doubles(100, 2);
    // Region from element 10 to element 90 plus 3 bytes (a partial element).
    const Mark mark(&data[10], 80 * 8 + 3, 3, SLIM_ROUND_NEAREST);
    const std::uint64_t header = 0x0102030405060708u;
    const slim_frame_piece_t piece{data.data(), data.size() * 8};
    const slim_frame_request_t rq{7, &header, sizeof(header), &piece, 1};

    const slim_packing_stats_t before = packing();
    Alloc alloc;
    void *frame = nullptr;
    slim_frame_info_t info;
    REQUIRE(slim_core_frame_build(&rq, Alloc::cb, &alloc, &frame, &info) == SLIM_FRAME_READY);
    CHECK(frame == alloc.buffer.data());
    CHECK(info.marked_bytes == 80 * 8 + 3);
    CHECK(info.packed_bytes == 80 * 8);
    CHECK(info.frame_length < info.payload_length);
    slim_core_frame_sent(&info);

    std::vector<std::uint8_t> out(info.payload_length);
    std::uint8_t am_id = 0;
    REQUIRE(slim_core_frame_unpack(frame, info.frame_length, out.data(), out.size(), &am_id) ==
            static_cast<std::int64_t>(info.payload_length));
    CHECK(am_id == 7);
    CHECK(std::memcmp(out.data(), &header, 8) == 0);
    std::vector<double> expected = data;
    REQUIRE(slim_quantize(&data[10], &expected[10], 80, 3, SLIM_ROUND_NEAREST) == SLIM_OK);
    CHECK(std::memcmp(out.data() + 8, expected.data(), data.size() * 8) == 0);

    const slim_packing_stats_t after = packing();
    CHECK(after.frames_sent - before.frames_sent == 1);
    CHECK(after.packed_bytes - before.packed_bytes == 640);
    CHECK(after.edge_bytes - before.edge_bytes == 3);
    CHECK(after.frames_received - before.frames_received == 1);
}

TEST_CASE("iov pieces cut at odd offsets keep element boundaries of the region")
{
    REQUIRE(slim_core_init() == SLIM_OK);
    std::vector<double> data = random_doubles(64, 3);
    const Mark mark(data.data(), data.size() * 8, 5, SLIM_ROUND_TRUNCATE);
    auto *bytes = reinterpret_cast<const std::uint8_t *>(data.data());
    // A fragment from byte 13 to byte 333, in two pieces cut at byte 101.
    const slim_frame_piece_t pieces[] = {{bytes + 13, 88}, {bytes + 101, 232}};
    const slim_frame_request_t rq{3, nullptr, 0, pieces, 2};
    Alloc alloc;
    void *frame = nullptr;
    slim_frame_info_t info;
    REQUIRE(slim_core_frame_build(&rq, Alloc::cb, &alloc, &frame, &info) == SLIM_FRAME_READY);

    std::vector<std::uint8_t> out(320);
    std::uint8_t am_id = 0;
    REQUIRE(slim_core_frame_unpack(frame, info.frame_length, out.data(), out.size(), &am_id) ==
            320);
    std::vector<double> quantized(64);
    slim_quantize(data.data(), quantized.data(), 64, 5, SLIM_ROUND_TRUNCATE);
    auto *q = reinterpret_cast<const std::uint8_t *>(quantized.data());
    for (std::size_t i = 0; i < 320; ++i) {
        const std::size_t at = 13 + i;
        // Elements 2..11 and 13..40 lie whole inside a piece and go packed.
        // Those cut by the fragment's ends (1, 41) or by the piece boundary
        // at 101 (12, bytes 96..103) go at full width, but quantized: every
        // byte is the quantized value's.
        INFO("byte " << at);
        REQUIRE(out[i] == q[at]);
    }
    CHECK(info.packed_bytes == 8 * (10 + 28));
    CHECK(info.marked_bytes == 320);
}

TEST_CASE("a marked message that cannot be framed is counted as missed")
{
    REQUIRE(slim_core_init() == SLIM_OK);
    std::vector<double> data = random_doubles(16, 4);
    const Mark mark(data.data(), 128, 4, SLIM_ROUND_TRUNCATE);
    const slim_frame_piece_t piece{data.data(), 128};
    const slim_frame_request_t rq{1, nullptr, 0, &piece, 1};
    const slim_packing_stats_t before = packing();

    Alloc alloc;
    alloc.refuse = true;
    void *frame  = nullptr;
    slim_frame_info_t info;
    CHECK(slim_core_frame_build(&rq, Alloc::cb, &alloc, &frame, &info) == SLIM_FRAME_UNFRAMED);
    CHECK(info.marked_bytes == 128);
    slim_core_frame_unsent(&info);
    // Puts ask without an allocator: never framed.
    CHECK(slim_core_frame_build(&rq, nullptr, nullptr, &frame, &info) == SLIM_FRAME_UNFRAMED);

    const slim_packing_stats_t after = packing();
    CHECK(after.missed_bytes - before.missed_bytes == 128);
    CHECK(after.marked_bytes - before.marked_bytes == 128);
    CHECK(after.frames_sent == before.frames_sent);
}

TEST_CASE("a put holding only parts of marked values goes quantized, or as it is when the mark "
          "cuts them")
{
    // UCP splits a rendezvous into puts wherever its lanes' shares end: a
    // put may hold the tail of one value and nothing whole. When the value
    // is marked whole, its part goes in a packed put at full width but
    // quantized, as the put holding the rest will send its part; when the
    // mark itself cuts the value, the part goes as it is. Both are edge
    // bytes, not misses.
    REQUIRE(slim_core_init() == SLIM_OK);
    std::vector<double> data = random_doubles(16, 5);
    const Mark mark(data.data(), 128, 4, SLIM_ROUND_TRUNCATE);
    std::vector<double> part = random_doubles(4, 6);
    const Mark part_mark(part.data(), 12, 4, SLIM_ROUND_TRUNCATE);  // value 1 cut by the mark
    std::vector<std::uint8_t> wire(4096 + SLIM_PUT_SLACK);
    std::vector<std::uint8_t> notice(SLIM_EXPAND_NOTICE_MAX);
    const auto *bytes                 = reinterpret_cast<const std::uint8_t *>(data.data());
    const slim_packing_stats_t before = packing();

    const slim_frame_piece_t cut{bytes + 2, 6};  // the last 6 bytes of value 0
    const slim_put_request_t cut_rq{&cut, 1, 0x10000, 7, 1};
    slim_put_info_t info;
    REQUIRE(slim_core_put_pack(&cut_rq, wire.data(), wire.size(), notice.data(), &info) ==
            SLIM_FRAME_READY);
    CHECK(info.frame.marked_bytes == 6);
    CHECK(info.frame.packed_bytes == 0);
    CHECK(info.frame.payload_length == 6);
    double q0;
    slim_quantize(data.data(), &q0, 1, 4, SLIM_ROUND_TRUNCATE);
    CHECK(info.frame.frame_length == 6);
    CHECK(std::memcmp(wire.data() + info.wire_offset,
                      reinterpret_cast<const std::uint8_t *>(&q0) + 2, 6) == 0);
    slim_core_frame_sent(&info.frame);

    const slim_frame_piece_t by_mark{reinterpret_cast<const std::uint8_t *>(part.data()) + 8, 4};
    const slim_put_request_t by_mark_rq{&by_mark, 1, 0x30000, 7, 2};
    REQUIRE(slim_core_put_pack(&by_mark_rq, wire.data(), wire.size(), notice.data(), &info) ==
            SLIM_FRAME_EDGE_ONLY);
    CHECK(info.frame.marked_bytes == 4);
    slim_core_frame_edge_sent(&info.frame);

    // Beside it, a put with whole values is packed.
    const slim_frame_piece_t whole{bytes + 8, 64};
    const slim_put_request_t whole_rq{&whole, 1, 0x20000, 7, 1};
    REQUIRE(slim_core_put_pack(&whole_rq, wire.data(), wire.size(), notice.data(), &info) ==
            SLIM_FRAME_READY);
    CHECK(info.frame.packed_bytes == 64);

    const slim_packing_stats_t after = packing();
    CHECK(after.edge_bytes - before.edge_bytes == 10);
    CHECK(after.marked_bytes - before.marked_bytes == 10);
    CHECK(after.missed_bytes == before.missed_bytes);
}

TEST_CASE("received frames that do not validate are dropped and counted")
{
    REQUIRE(slim_core_init() == SLIM_OK);
    std::vector<double> data = random_doubles(16, 5);
    const Mark mark(data.data(), 128, 4, SLIM_ROUND_TRUNCATE);
    const slim_frame_piece_t piece{data.data(), 128};
    Alloc alloc;
    void *frame = nullptr;
    slim_frame_info_t info;
    std::vector<std::uint8_t> out(256, 0xAB);
    std::uint8_t am_id = 0;

    SECTION("a frame cut short")
    {
        const slim_frame_request_t rq{1, nullptr, 0, &piece, 1};
        REQUIRE(slim_core_frame_build(&rq, Alloc::cb, &alloc, &frame, &info) == SLIM_FRAME_READY);
        const slim_packing_stats_t before = packing();
        CHECK(slim_core_frame_unpack(frame, info.frame_length - 1, out.data(), out.size(),
                                     &am_id) == -1);
        CHECK(packing().frames_rejected - before.frames_rejected == 1);
        CHECK(out == std::vector<std::uint8_t>(256, 0xAB));
    }
    SECTION("a frame for the reserved id itself")
    {
        const slim_frame_request_t rq{SLIM_FRAME_AM_ID, nullptr, 0, &piece, 1};
        REQUIRE(slim_core_frame_build(&rq, Alloc::cb, &alloc, &frame, &info) == SLIM_FRAME_READY);
        CHECK(slim_core_frame_unpack(frame, info.frame_length, out.data(), out.size(), &am_id) ==
              -1);
    }
    SECTION("a put frame")
    {
        const slim_frame_request_t rq{1, nullptr, 0, &piece, 1};
        REQUIRE(slim_core_frame_build(&rq, Alloc::cb, &alloc, &frame, &info) == SLIM_FRAME_READY);
        static_cast<std::uint8_t *>(frame)[2] = 1;  // kind: put
        CHECK(slim_core_frame_unpack(frame, info.frame_length, out.data(), out.size(), &am_id) ==
              -1);
    }
    SECTION("a buffer too small gets the size needed and nothing written")
    {
        const slim_frame_request_t rq{1, nullptr, 0, &piece, 1};
        REQUIRE(slim_core_frame_build(&rq, Alloc::cb, &alloc, &frame, &info) == SLIM_FRAME_READY);
        CHECK(slim_core_frame_unpack(frame, info.frame_length, out.data(), 127, &am_id) == 128);
        CHECK(out == std::vector<std::uint8_t>(256, 0xAB));
    }
}

TEST_CASE("slim_quantize matches the codec and refuses bad arguments")
{
    const std::vector<double> in = random_doubles(33, 6);
    std::vector<double> out(in.size());
    REQUIRE(slim_quantize(in.data(), out.data(), in.size(), 4, SLIM_ROUND_NEAREST) == SLIM_OK);
    for (std::size_t i = 0; i < in.size(); ++i) {
        const double expect = slim::pack::round_trip(
                in[i], slim::pack::Precision{4, slim::pack::Rounding::nearest_even});
        CHECK(std::memcmp(&out[i], &expect, 8) == 0);
    }
    CHECK(slim_quantize(nullptr, out.data(), 1, 4, SLIM_ROUND_NEAREST) == SLIM_ERR_INVALID);
    CHECK(slim_quantize(in.data(), out.data(), 1, 8, SLIM_ROUND_NEAREST) == SLIM_ERR_INVALID);
    CHECK(slim_quantize(in.data(), out.data(), 1, 4, static_cast<slim_round_t>(7)) ==
          SLIM_ERR_INVALID);
    CHECK(slim_quantize(nullptr, nullptr, 0, 2, SLIM_ROUND_TRUNCATE) == SLIM_OK);
    CHECK(slim_packing_get(nullptr) == SLIM_ERR_INVALID);
}

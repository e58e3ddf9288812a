// SPDX-License-Identifier: BSD-3-Clause
// Packed puts and expand notices (src/pack/expand_notice.h), and the core's
// receive path for them (slim_core_expand, slim_core.h): what the receiver
// widens equals what a frame of the same data decodes to; every malformed,
// unregistered, mismatched, replayed or out-of-order notice is refused
// without a byte written.
#include "pack/expand_notice.h"
#include "slim_core.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

using slim::pack::ByteSpan;
using slim::pack::ExpandError;
using slim::pack::ExpandSequencer;
using slim::pack::FrameRequest;
using slim::pack::MarkedRun;
using slim::pack::PackedPutRequest;
using slim::pack::Precision;
using slim::pack::Rounding;

namespace {

using Bytes = std::vector<std::uint8_t>;

constexpr std::size_t kGuard = 64;  // bytes checked on each side

Bytes random_values(std::size_t bytes, std::mt19937_64& rng)
{
    Bytes b(bytes);
    for (std::size_t i = 0; i + 8 <= bytes; i += 8) {
        // finite doubles with full mantissas, so every keep changes them
        std::uint64_t u = (rng() & 0x800FFFFFFFFFFFFFull) | (std::uint64_t{0x3F0} << 52) | 1u;
        std::memcpy(b.data() + i, &u, 8);
    }
    for (std::size_t i = bytes / 8 * 8; i < bytes; ++i)
        b[i] = static_cast<std::uint8_t>(rng());
    return b;
}

// What a receiver of a frame of `source` would see: the reference.
Bytes frame_reference(const FrameRequest& source)
{
    FrameRequest rq     = source;
    rq.kind             = slim::pack::FrameKind::active_message;
    std::size_t payload = 0;
    for (std::size_t i = 0; i < rq.piece_count; ++i)
        payload += rq.pieces[i].size;
    Bytes frame(slim::pack::frame_max_size(0, payload, rq.run_count));
    const auto enc = slim::pack::encode_frame(rq, frame.data(), frame.size());
    REQUIRE(enc.ok());
    const auto v = slim::pack::validate_frame(frame.data(), enc.size());
    REQUIRE(v.ok());
    Bytes out(payload);
    REQUIRE(slim::pack::decode_into(v.view, out.data(), out.size()) ==
            slim::pack::FrameError::none);
    return out;
}

struct Packed {
    Bytes buffer;
    Bytes notice;
    slim::pack::PackedPutResult result;
    const std::uint8_t *wire() const { return buffer.data() + result.wire_offset; }
};

Packed pack_put(const FrameRequest& source, std::uint64_t remote_addr, std::uint64_t stream = 7,
                std::uint64_t seq = 1)
{
    std::size_t payload = 0;
    for (std::size_t i = 0; i < source.piece_count; ++i)
        payload += source.pieces[i].size;
    Packed p;
    p.buffer.resize(slim::pack::frame_max_size(0, payload, source.run_count));
    p.notice.resize(slim::pack::expand_notice_max_size(source.run_count));
    PackedPutRequest rq;
    rq.source      = source;
    rq.remote_addr = remote_addr;
    rq.stream      = stream;
    rq.seq         = seq;
    p.result = slim::pack::encode_packed_put(rq, p.buffer.data(), p.buffer.size(), p.notice.data(),
                                             p.notice.size());
    p.notice.resize(p.result.notice_len);
    return p;
}

// A destination with guard bytes: the put's data at its start, the rest
// (up to orig_len) garbage, as a receive buffer would be.
struct Destination {
    Bytes memory;
    std::uint8_t *at() { return memory.data() + kGuard; }
    Destination(const Packed& p, std::size_t orig_len) : memory(orig_len + 2 * kGuard, 0xA5)
    {
        std::memcpy(at(), p.wire(), p.result.wire_len);
    }
    bool guards_intact() const
    {
        for (std::size_t i = 0; i < kGuard; ++i) {
            if (memory[i] != 0xA5 || memory[memory.size() - 1 - i] != 0xA5) return false;
        }
        return true;
    }
};

void widen(const Packed& p, Destination& d)
{
    const auto v = slim::pack::validate_expand_notice(p.notice.data(), p.notice.size());
    REQUIRE(v.ok());
    REQUIRE(slim::pack::expand_in_place(v.view, d.at()) == ExpandError::none);
}

Precision precision(int keep, Rounding mode) { return Precision{keep, mode}; }

}  // namespace

TEST_CASE("a packed put widens in place to what a frame of the same data decodes to", "[expand]")
{
    std::mt19937_64 rng(42);
    for (int keep = 2; keep <= 7; ++keep) {
        for (Rounding mode : {Rounding::truncate, Rounding::nearest_even}) {
            for (std::size_t bytes : {8u, 16u, 24u, 512u, 4096u, 40000u, 262144u}) {
                const Bytes src = random_values(bytes, rng);
                // The run in the payload's own address space (offset 0).
                MarkedRun run{0, bytes, 0, precision(keep, mode)};
                const ByteSpan piece{src.data(), bytes};
                FrameRequest source;
                source.pieces      = &piece;
                source.piece_count = 1;
                source.runs        = &run;
                source.run_count   = 1;

                const Packed p = pack_put(source, 0x1000);
                REQUIRE(p.result.ok());
                CHECK(p.result.wire_len == bytes / 8 * static_cast<std::size_t>(keep));
                Destination d(p, bytes);
                widen(p, d);
                CHECK(std::equal(d.at(), d.at() + bytes, frame_reference(source).begin()));
                CHECK(d.guards_intact());
            }
        }
    }
}

TEST_CASE("mixed segments, odd element phases and several pieces widen exactly", "[expand]")
{
    std::mt19937_64 rng(7);
    for (int trial = 0; trial < 200; ++trial) {
        const std::size_t bytes = 64 + rng() % 20000;
        const Bytes src         = random_values(bytes, rng);
        // Up to 5 runs at random places, random precisions and phases.
        std::vector<MarkedRun> runs;
        std::size_t pos = rng() % 64;
        while (runs.size() < 5 && pos + 16 < bytes) {
            const std::size_t len = 8 + rng() % std::min<std::size_t>(bytes - pos, 5000);
            MarkedRun r;
            r.begin       = pos;
            r.end         = std::min(bytes, pos + len);
            r.region_base = pos - rng() % 8;  // elements may start mid-run
            r.precision   = precision(2 + static_cast<int>(rng() % 6),
                                    rng() % 2 ? Rounding::truncate : Rounding::nearest_even);
            runs.push_back(r);
            pos = r.end + rng() % 300;
        }
        // Split the payload into up to 4 pieces at arbitrary bytes.
        std::vector<ByteSpan> pieces;
        std::size_t at = 0;
        while (at < bytes) {
            const std::size_t len = pieces.size() == 3 ? bytes - at : 1 + rng() % (bytes - at);
            pieces.push_back({src.data() + at, len});
            at += len;
        }
        FrameRequest source;
        source.pieces      = pieces.data();
        source.piece_count = pieces.size();
        source.runs        = runs.data();
        source.run_count   = runs.size();

        const Packed p = pack_put(source, 0x2000, 9, 1);
        REQUIRE(p.result.ok());
        Destination d(p, bytes);
        widen(p, d);
        CHECK(std::equal(d.at(), d.at() + bytes, frame_reference(source).begin()));
        CHECK(d.guards_intact());
    }
}

TEST_CASE("a put shorter than 8 bytes pads head and tail with zeros", "[expand]")
{
    std::mt19937_64 rng(3);
    const Bytes src = random_values(16, rng);
    // 16 bytes marked keep 2: 4 packed bytes on the wire.
    MarkedRun run{0, 16, 0, precision(2, Rounding::truncate)};
    const ByteSpan piece{src.data(), 16};
    FrameRequest source;
    source.pieces      = &piece;
    source.piece_count = 1;
    source.runs        = &run;
    source.run_count   = 1;
    const Packed p     = pack_put(source, 0x3000);
    REQUIRE(p.result.ok());
    REQUIRE(p.result.wire_len == 4);
    Destination d(p, 16);
    widen(p, d);
    CHECK(std::equal(d.at(), d.at() + 16, frame_reference(source).begin()));
    CHECK(d.guards_intact());
}

namespace {

// One valid notice for a 4 KiB keep-4 put, and its destination.
struct Fixture {
    Bytes src;
    MarkedRun run{0, 4096, 0, Precision{4, Rounding::nearest_even}};
    ByteSpan piece;
    FrameRequest source;
    Packed packed;
    Fixture()
    {
        std::mt19937_64 rng(11);
        src                = random_values(4096, rng);
        piece              = {src.data(), src.size()};
        source.pieces      = &piece;
        source.piece_count = 1;
        source.runs        = &run;
        source.run_count   = 1;
        packed             = pack_put(source, 0x4000);
        REQUIRE(packed.result.ok());
    }
};

ExpandError validate(const Bytes& notice)
{
    return slim::pack::validate_expand_notice(notice.data(), notice.size()).error;
}

}  // namespace

TEST_CASE("malformed notices are refused with the matching error", "[expand]")
{
    Fixture f;
    const Bytes good = f.packed.notice;
    REQUIRE(validate(good) == ExpandError::none);
    REQUIRE(good.size() == slim::pack::kExpandHeaderSize + 8);

    auto mutated = [&](std::size_t at, std::uint8_t value) {
        Bytes n = good;
        n[at]   = value;
        return n;
    };
    CHECK(validate(Bytes(good.begin(), good.begin() + 55)) == ExpandError::truncated);
    CHECK(validate(mutated(0, 0x5A)) == ExpandError::bad_magic);
    CHECK(validate(mutated(1, 2)) == ExpandError::bad_version);
    CHECK(validate(mutated(2, 2)) == ExpandError::table_size_mismatch);
    CHECK(validate(mutated(2, 0)) == ExpandError::no_segments);
    CHECK(validate(Bytes(good.begin(), good.end() - 1)) == ExpandError::table_size_mismatch);
    CHECK(validate(mutated(20, 1)) == ExpandError::field_not_zero);
    Bytes zero_stream = good;
    std::fill(zero_stream.begin() + 24, zero_stream.begin() + 32, 0);
    CHECK(validate(zero_stream) == ExpandError::zero_stream);
    CHECK(validate(mutated(19, 0x7F)) == ExpandError::payload_too_large);
    CHECK(validate(mutated(16, 8)) == ExpandError::payload_length_mismatch);  // orig_len
    CHECK(validate(mutated(5, 0)) == ExpandError::wire_length_mismatch);      // wire_len
    const std::size_t e = slim::pack::kExpandHeaderSize;
    CHECK(validate(mutated(e + 0, 2)) == ExpandError::bad_segment_kind);
    CHECK(validate(mutated(e + 1, 8)) == ExpandError::bad_keep);
    CHECK(validate(mutated(e + 1, 1)) == ExpandError::bad_keep);
    CHECK(validate(mutated(e + 2, 2)) == ExpandError::bad_mode);
    CHECK(validate(mutated(e + 3, 1)) == ExpandError::field_not_zero);
    Bytes raw_with_keep = mutated(e + 0, 0);  // raw, keep still 4
    CHECK(validate(raw_with_keep) == ExpandError::field_not_zero);
    CHECK(validate(mutated(e + 4, 4)) == ExpandError::packed_length_not_multiple_of_8);
    for (ExpandError error : {ExpandError::truncated, ExpandError::destination_mismatch,
                              ExpandError::buffer_too_small}) {
        CHECK(std::strlen(slim::pack::expand_error_message(error)) > 10);
    }
}

TEST_CASE("a destination that does not hold the put is left untouched", "[expand]")
{
    Fixture f;
    const auto v =
            slim::pack::validate_expand_notice(f.packed.notice.data(), f.packed.notice.size());
    REQUIRE(v.ok());
    // The put has not arrived (or a different one did): the head differs.
    Destination absent(f.packed, 4096);
    absent.at()[0] ^= 1;
    const Bytes before = absent.memory;
    CHECK(slim::pack::expand_in_place(v.view, absent.at()) == ExpandError::destination_mismatch);
    CHECK(absent.memory == before);
    // Its tail differs: a put of another length.
    Destination shorter(f.packed, 4096);
    shorter.at()[f.packed.result.wire_len - 1] ^= 0x80;
    const Bytes before2 = shorter.memory;
    CHECK(slim::pack::expand_in_place(v.view, shorter.at()) == ExpandError::destination_mismatch);
    CHECK(shorter.memory == before2);
}

TEST_CASE("the sequencer accepts each stream's notices once and in order", "[expand]")
{
    using Verdict = ExpandSequencer::Verdict;
    ExpandSequencer s(2);
    CHECK(s.check(10, 2) == Verdict::out_of_order);  // 1 is missing
    CHECK(s.check(10, 1) == Verdict::accept);
    CHECK(s.check(10, 1) == Verdict::replayed);
    CHECK(s.check(10, 3) == Verdict::out_of_order);
    CHECK(s.check(10, 2) == Verdict::accept);
    CHECK(s.check(20, 1) == Verdict::accept);
    CHECK(s.check(10, 3) == Verdict::accept);        // 10 is now the most recent
    CHECK(s.check(30, 1) == Verdict::accept);        // evicts 20, the least recent
    CHECK(s.check(20, 2) == Verdict::out_of_order);  // forgotten: not accepted
    CHECK(s.check(10, 4) == Verdict::accept);        // kept
    CHECK(s.check(10, 0) == Verdict::replayed);
}

namespace {

struct Registered {
    std::uintptr_t begin = 0, end = 0;
    int calls = 0;
};

int registered_cb(void *arg, std::uint64_t address, std::size_t length)
{
    auto *r = static_cast<Registered *>(arg);
    ++r->calls;
    return address >= r->begin && address + length <= r->end ? 1 : 0;
}

// The fixture's put, landed in real memory, and a notice naming it.
struct Landed {
    Fixture f;
    Bytes memory;
    Bytes notice;
    Registered reg;
    explicit Landed(std::uint64_t seq = 1) : memory(4096 + 2 * kGuard, 0xA5)
    {
        std::uint8_t *at = memory.data() + kGuard;
        const auto addr  = reinterpret_cast<std::uintptr_t>(at);
        f.packed         = pack_put(f.source, addr, 77, seq);
        std::memcpy(at, f.packed.wire(), f.packed.result.wire_len);
        notice    = f.packed.notice;
        reg.begin = addr;
        reg.end   = addr + 4096;
    }
    std::uint8_t *at() { return memory.data() + kGuard; }
};

slim_packing_stats_t stats()
{
    slim_packing_stats_t s{};
    REQUIRE(slim_packing_get(&s) == SLIM_OK);
    return s;
}

}  // namespace

TEST_CASE("slim_core_expand widens a registered put once, and refuses the rest", "[expand]")
{
    slim_core_expander_t *expander = slim_core_expander_open();
    REQUIRE(expander != nullptr);

    Landed ok;
    const auto before = stats();
    REQUIRE(slim_core_expand(expander, ok.notice.data(), ok.notice.size(), registered_cb,
                             &ok.reg) == 0);
    CHECK(std::equal(ok.at(), ok.at() + 4096, frame_reference(ok.f.source).begin()));
    CHECK(stats().frames_received == before.frames_received + 1);

    SECTION("a replayed notice")
    {
        const Bytes widened = ok.memory;
        CHECK(slim_core_expand(expander, ok.notice.data(), ok.notice.size(), registered_cb,
                               &ok.reg) == -1);
        CHECK(ok.memory == widened);
        CHECK(stats().frames_rejected == before.frames_rejected + 1);
    }
    SECTION("an out-of-order notice")
    {
        Landed later(3);  // seq 2 never came
        const Bytes untouched = later.memory;
        CHECK(slim_core_expand(expander, later.notice.data(), later.notice.size(), registered_cb,
                               &later.reg) == -1);
        CHECK(later.memory == untouched);
    }
    SECTION("a range that is not registered")
    {
        Landed next(2);
        next.reg.end          = next.reg.begin + 4095;  // one byte short
        const Bytes untouched = next.memory;
        CHECK(slim_core_expand(expander, next.notice.data(), next.notice.size(), registered_cb,
                               &next.reg) == -1);
        CHECK(next.reg.calls == 1);
        CHECK(next.memory == untouched);
        CHECK(slim_core_expand(expander, next.notice.data(), next.notice.size(), nullptr,
                               nullptr) == -1);
    }
    SECTION("a length that does not match the put")
    {
        Landed next(2);
        next.at()[next.f.packed.result.wire_len - 1] ^= 1;  // another put's tail
        const Bytes untouched = next.memory;
        CHECK(slim_core_expand(expander, next.notice.data(), next.notice.size(), registered_cb,
                               &next.reg) == -1);
        CHECK(next.memory == untouched);
    }
    SECTION("garbage")
    {
        Bytes junk(100, 0x5B);
        CHECK(slim_core_expand(expander, junk.data(), junk.size(), registered_cb, &ok.reg) == -1);
        CHECK(slim_core_expand_is_notice(junk.data(), junk.size()) == 1);
        junk[0] = 0x5A;
        CHECK(slim_core_expand_is_notice(junk.data(), junk.size()) == 0);
        CHECK(slim_core_expand_is_notice(junk.data(), 0) == 0);
    }
    slim_core_expander_close(expander);
}

TEST_CASE("encode_packed_put refuses what it cannot pack", "[expand]")
{
    Fixture f;
    PackedPutRequest rq;
    rq.source      = f.source;
    rq.remote_addr = 0x5000;
    rq.stream      = 0;
    Bytes buffer(8192), notice(1200);
    CHECK(slim::pack::encode_packed_put(rq, buffer.data(), buffer.size(), notice.data(),
                                        notice.size())
                  .error == ExpandError::zero_stream);
    rq.stream = 1;
    CHECK(slim::pack::encode_packed_put(rq, buffer.data(), 100, notice.data(), notice.size())
                  .frame_error == slim::pack::FrameError::buffer_too_small);
    CHECK(slim::pack::encode_packed_put(rq, buffer.data(), buffer.size(), notice.data(), 60)
                  .error == ExpandError::buffer_too_small);
    const auto ok = slim::pack::encode_packed_put(rq, buffer.data(), buffer.size(), notice.data(),
                                                  notice.size());
    CHECK(ok.ok());
    CHECK(ok.notice_len <= slim::pack::expand_notice_max_size(1));
    CHECK(ok.notice_len <= SLIM_EXPAND_NOTICE_MAX);
    CHECK(slim::pack::expand_notice_max_size(64) <= SLIM_EXPAND_NOTICE_MAX);
}

// Seeds for the fuzzer's corpus (tests/fuzz/corpus), written only when
// SLIM_FRAME_CORPUS_DIR is set: `slim-unit-tests "[.frame-corpus]"`.
TEST_CASE("write the expand notice seeds of the fuzzer corpus", "[.frame-corpus]")
{
    const char *dir = std::getenv("SLIM_FRAME_CORPUS_DIR");
    REQUIRE(dir != nullptr);
    auto write = [&](const std::string& name, const Bytes& bytes) {
        std::ofstream(std::string(dir) + "/" + name, std::ios::binary)
                .write(reinterpret_cast<const char *>(bytes.data()),
                       static_cast<std::streamsize>(bytes.size()));
    };
    Fixture f;
    write("notice-keep4", f.packed.notice);

    // Three runs: raw, packed keep 2, raw, packed keep 7 round, raw.
    std::mt19937_64 rng(21);
    const Bytes src  = random_values(200, rng);
    MarkedRun runs[] = {{13, 77, 13, Precision{2, Rounding::truncate}},
                        {101, 173, 99, Precision{7, Rounding::nearest_even}}};
    const ByteSpan piece{src.data(), src.size()};
    FrameRequest source;
    source.pieces      = &piece;
    source.piece_count = 1;
    source.runs        = runs;
    source.run_count   = 2;
    const Packed mixed = pack_put(source, 0x6000, 5, 2);
    REQUIRE(mixed.result.ok());
    write("notice-mixed", mixed.notice);
}

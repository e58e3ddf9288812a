// SPDX-License-Identifier: BSD-3-Clause
// The packing frame (frame.h has the wire format). All length arithmetic is
// in uint64_t on operands bounded by the format (u16 counts, u32 lengths,
// checked incrementally against orig_payload_len), so nothing can wrap.
#include "pack/frame.h"

#include "pack/wire_bytes.h"

#include <algorithm>
#include <cstring>

namespace slim::pack {

namespace {

using namespace wire;

// Values go through a small aligned buffer on the stack: payload bytes need
// not be 8-aligned, and an element may straddle two iov pieces.
constexpr std::size_t kStageElements = 64;

bool valid_precision(const Precision& p)
{
    return p.keep_bytes >= kMinKeep && p.keep_bytes <= kMaxKeep &&
           (p.mode == Rounding::truncate || p.mode == Rounding::nearest_even);
}

std::uint64_t wire_len_of(SegmentKind kind, int keep, std::uint64_t orig_len)
{
    return kind == SegmentKind::raw ? orig_len : orig_len / 8 * static_cast<std::uint64_t>(keep);
}

struct PlannedSegment {
    SegmentKind kind = SegmentKind::raw;
    Precision precision;
    std::uint64_t orig_len = 0;
};

// Splits [0, payload_len) into raw and packed segments from the runs and
// hands each (merged) segment to emit, in order. Run twice by the encoder:
// once to count, once to write — no allocation.
template <typename Emit>
void plan_segments(const FrameRequest& rq, std::uint64_t payload_len, Emit&& emit)
{
    PlannedSegment pending;
    bool have_pending = false;
    auto push         = [&](SegmentKind kind, Precision precision, std::uint64_t len) {
        if (len == 0) return;
        if (have_pending && pending.kind == kind &&
            (kind == SegmentKind::raw || (pending.precision.keep_bytes == precision.keep_bytes &&
                                          pending.precision.mode == precision.mode))) {
            pending.orig_len += len;
            return;
        }
        if (have_pending) emit(pending);
        pending      = PlannedSegment{kind, precision, len};
        have_pending = true;
    };

    std::uint64_t pos         = 0;  // payload bytes already assigned to segments
    const std::uintptr_t base = rq.payload_addr;
    for (std::size_t i = 0; i < rq.run_count; ++i) {
        const MarkedRun& run = rq.runs[i];
        if (!valid_precision(run.precision) || run.end <= run.begin) continue;
        if (run.end <= base) continue;
        std::uint64_t b = run.begin > base ? run.begin - base : 0;
        std::uint64_t e = run.end - base;
        if (b >= payload_len) continue;
        e = std::min(e, payload_len);
        b = std::max(b, pos);  // tolerate overlapping or unordered runs
        if (e <= b) continue;

        // Element phase, mod 8, relative to the region: wrap-around in the
        // unsigned subtraction does not change the low three bits.
        const std::uint64_t phase_b = (base + b - run.region_base) & 7u;
        const std::uint64_t phase_e = (base + e - run.region_base) & 7u;
        const std::uint64_t first   = b + ((8 - phase_b) & 7u);
        if (first + 8 > e) continue;  // no whole element (and e - phase_e could wrap)
        const std::uint64_t last = e - phase_e;

        push(SegmentKind::raw, Precision{}, first - pos);
        push(SegmentKind::packed, run.precision, last - first);
        pos = last;
    }
    push(SegmentKind::raw, Precision{}, payload_len - pos);
    if (have_pending) emit(pending);
}

// Sequential reader over the concatenated payload pieces.
class PieceCursor {
public:
    PieceCursor(const ByteSpan *pieces, std::size_t count) : pieces_(pieces), count_(count) {}

    void copy(std::uint8_t *dst, std::size_t n)
    {
        while (n > 0 && index_ < count_) {
            const ByteSpan& piece   = pieces_[index_];
            const std::size_t avail = piece.size - offset_;
            if (avail == 0) {
                ++index_;
                offset_ = 0;
                continue;
            }
            const std::size_t take = std::min(avail, n);
            std::memcpy(dst, piece.data + offset_, take);
            dst += take;
            n -= take;
            offset_ += take;
        }
    }

private:
    const ByteSpan *pieces_;
    std::size_t count_;
    std::size_t index_  = 0;
    std::size_t offset_ = 0;
};

// Writes the patches that fall in the raw stretch [at, at + len) of the
// payload, now at dst, over it; `next` walks the patches in order.
void apply_patches(const FrameRequest& rq, std::size_t& next, std::uint64_t at, std::uint64_t len,
                   std::uint8_t *dst)
{
    while (next < rq.patch_count) {
        const EdgePatch& p = rq.patches[next];
        if (p.offset >= at + len) return;
        const std::uint64_t lo = std::max(p.offset, at);
        const std::uint64_t hi = std::min<std::uint64_t>(p.offset + p.length, at + len);
        if (lo < hi) std::memcpy(dst + (lo - at), p.bytes + (lo - p.offset), hi - lo);
        if (p.offset + p.length > at + len) return;  // goes on in the next raw stretch
        ++next;
    }
}

void write_segment_data(const PlannedSegment& seg, PieceCursor& cursor, std::uint8_t *dst)
{
    if (seg.kind == SegmentKind::raw) {
        cursor.copy(dst, seg.orig_len);
        return;
    }
    double stage[kStageElements];
    std::uint64_t left = seg.orig_len / 8;
    const auto keep    = static_cast<std::size_t>(seg.precision.keep_bytes);
    while (left > 0) {
        const std::size_t n =
                static_cast<std::size_t>(std::min<std::uint64_t>(left, kStageElements));
        cursor.copy(reinterpret_cast<std::uint8_t *>(stage), n * 8);
        encode(stage, n, seg.precision, dst);
        dst += n * keep;
        left -= n;
    }
}

}  // namespace

std::size_t edge_patches(const MarkedRun& run, std::uintptr_t piece, std::size_t piece_len,
                         std::uint64_t piece_offset, EdgePatch *out)
{
    if (!valid_precision(run.precision) || run.end <= run.begin) return 0;
    const std::uintptr_t piece_end = piece + piece_len;
    // Elements start at region_base + 8k; wrap-around in the subtraction
    // keeps the low three bits right.
    const std::uintptr_t head = run.begin - ((run.begin - run.region_base) & 7u);
    const std::uintptr_t tail = (run.end - 1) - ((run.end - 1 - run.region_base) & 7u);
    std::size_t count         = 0;
    for (const std::uintptr_t element : {head, tail}) {
        if (count > 0 && element == head) break;  // one element holds both edges
        const bool cut   = element < piece || element + 8 > piece_end || element + 8 < element;
        const bool whole = element >= run.region_begin && element + 8 > element &&
                           element + 8 <= run.region_end;
        if (!cut || !whole) continue;
        const std::uintptr_t lo = std::max(element, run.begin);
        const std::uintptr_t hi = std::min(element + 8, run.end);
        if (lo >= hi) continue;
        double value;
        std::memcpy(&value, reinterpret_cast<const void *>(element), 8);
        const double q = round_trip(value, run.precision);
        EdgePatch& p   = out[count++];
        p.offset       = piece_offset + (lo - piece);
        p.length       = static_cast<std::uint8_t>(hi - lo);
        std::memcpy(p.bytes, reinterpret_cast<const std::uint8_t *>(&q) + (lo - element), hi - lo);
    }
    return count;
}

const char *frame_error_message(FrameError error)
{
    switch (error) {
    case FrameError::none: return "no error";
    case FrameError::truncated: return "frame shorter than its 24-byte header";
    case FrameError::bad_magic: return "frame magic is not 0x5A";
    case FrameError::bad_version: return "unsupported frame version";
    case FrameError::bad_kind: return "frame kind is neither active message (0) nor put (1)";
    case FrameError::header_overrun: return "frame AM header runs past the end of the frame";
    case FrameError::table_overrun: return "frame segment table runs past the end of the frame";
    case FrameError::bad_segment_kind:
        return "frame segment kind is neither raw (0) nor packed (1)";
    case FrameError::bad_keep: return "packed segment keep is outside 2..7";
    case FrameError::bad_mode:
        return "packed segment mode is neither truncate (0) nor nearest_even (1)";
    case FrameError::field_not_zero:
        return "a frame field that must be 0 is not (reserved, raw keep/mode, "
               "AM remote address or put header length)";
    case FrameError::packed_length_not_multiple_of_8:
        return "packed segment length is not a multiple of 8";
    case FrameError::payload_length_mismatch:
        return "frame segment lengths do not add up to the payload length";
    case FrameError::wire_size_mismatch:
        return "frame segment data does not exactly fill the rest of the frame";
    case FrameError::payload_too_large: return "frame payload is above the 1 GiB limit";
    case FrameError::header_too_long: return "AM header is longer than 65535 bytes";
    case FrameError::too_many_segments: return "frame would need more than 65535 segments";
    case FrameError::buffer_too_small: return "buffer too small for the frame or its payload";
    }
    return "unknown frame error";
}

std::size_t frame_max_size(std::size_t hdr_len, std::size_t payload_len, std::size_t run_count)
{
    if (hdr_len > kFrameMaxHeaderLen || payload_len > kMaxFramePayload) return 0;
    if (payload_len == 0) return kFrameHeaderSize + hdr_len;
    // Every segment holds at least one payload byte, so payload_len also
    // bounds the count (and keeps 2 * run_count + 1 from overflowing).
    const std::size_t segments =
            run_count >= payload_len ? payload_len : std::min(payload_len, 2 * run_count + 1);
    return kFrameHeaderSize + hdr_len + segments * kFrameSegmentSize + payload_len;
}

FrameEncodeResult encode_frame(const FrameRequest& rq, std::uint8_t *out, std::size_t capacity)
{
    FrameEncodeResult result;
    auto fail = [&](FrameError e) {
        result.error = e;
        result.stats = FrameStats{};
        return result;
    };

    if (rq.kind != FrameKind::active_message && rq.kind != FrameKind::put)
        return fail(FrameError::bad_kind);
    if (rq.header.size > kFrameMaxHeaderLen) return fail(FrameError::header_too_long);
    if (rq.kind == FrameKind::active_message && rq.remote_addr != 0)
        return fail(FrameError::field_not_zero);
    if (rq.kind == FrameKind::put && rq.header.size != 0) return fail(FrameError::field_not_zero);

    std::uint64_t payload_len = 0;
    for (std::size_t i = 0; i < rq.piece_count; ++i) {
        payload_len += rq.pieces[i].size;
        if (payload_len > kMaxFramePayload) return fail(FrameError::payload_too_large);
    }

    std::uint64_t n_segments = 0;
    std::uint64_t data_bytes = 0;
    plan_segments(rq, payload_len, [&](const PlannedSegment& seg) {
        ++n_segments;
        data_bytes += wire_len_of(seg.kind, seg.precision.keep_bytes, seg.orig_len);
    });
    if (n_segments > kFrameMaxSegments) return fail(FrameError::too_many_segments);

    const std::uint64_t table_at = kFrameHeaderSize + rq.header.size;
    const std::uint64_t data_at  = table_at + n_segments * kFrameSegmentSize;
    const std::uint64_t total    = data_at + data_bytes;
    if (total > capacity) return fail(FrameError::buffer_too_small);

    out[0] = kFrameMagic;
    out[1] = kFrameVersion;
    out[2] = static_cast<std::uint8_t>(rq.kind);
    out[3] = rq.orig_am_id;
    put_u16(out + 4, static_cast<std::uint16_t>(rq.header.size));
    put_u16(out + 6, static_cast<std::uint16_t>(n_segments));
    put_u32(out + 8, static_cast<std::uint32_t>(payload_len));
    put_u32(out + 12, 0);
    put_u64(out + 16, rq.remote_addr);
    if (rq.header.size > 0) std::memcpy(out + kFrameHeaderSize, rq.header.data, rq.header.size);

    std::uint8_t *entry = out + table_at;
    std::uint8_t *data  = out + data_at;
    PieceCursor cursor(rq.pieces, rq.piece_count);
    std::uint64_t at       = 0;  // payload offset of the segment
    std::size_t next_patch = 0;
    plan_segments(rq, payload_len, [&](const PlannedSegment& seg) {
        const bool packed = seg.kind == SegmentKind::packed;
        entry[0]          = static_cast<std::uint8_t>(seg.kind);
        entry[1]          = packed ? static_cast<std::uint8_t>(seg.precision.keep_bytes) : 0;
        entry[2]          = packed ? static_cast<std::uint8_t>(seg.precision.mode) : 0;
        entry[3]          = 0;
        put_u32(entry + 4, static_cast<std::uint32_t>(seg.orig_len));
        entry += kFrameSegmentSize;

        write_segment_data(seg, cursor, data);
        if (!packed) apply_patches(rq, next_patch, at, seg.orig_len, data);
        at += seg.orig_len;
        data += wire_len_of(seg.kind, seg.precision.keep_bytes, seg.orig_len);
        if (packed) {
            result.stats.packed_elements += seg.orig_len / 8;
        } else {
            result.stats.raw_bytes += seg.orig_len;
        }
    });
    result.stats.wire_bytes = total;
    return result;
}

FrameError read_segment_entry(const std::uint8_t *e, FrameSegment& seg)
{
    seg = FrameSegment{};
    if (e[0] > static_cast<std::uint8_t>(SegmentKind::packed)) return FrameError::bad_segment_kind;
    if (e[3] != 0) return FrameError::field_not_zero;
    seg.kind     = static_cast<SegmentKind>(e[0]);
    seg.orig_len = get_u32(e + 4);
    if (seg.kind == SegmentKind::raw) {
        if (e[1] != 0 || e[2] != 0) return FrameError::field_not_zero;
    } else {
        if (e[1] < kMinKeep || e[1] > kMaxKeep) return FrameError::bad_keep;
        if (e[2] > static_cast<std::uint8_t>(Rounding::nearest_even)) return FrameError::bad_mode;
        if (seg.orig_len % 8 != 0) return FrameError::packed_length_not_multiple_of_8;
        seg.precision.keep_bytes = e[1];
        seg.precision.mode       = static_cast<Rounding>(e[2]);
    }
    seg.wire_len = wire_len_of(seg.kind, seg.precision.keep_bytes, seg.orig_len);
    return FrameError::none;
}

FrameSegment FrameView::segment(std::size_t i) const
{
    FrameSegment seg;
    read_segment_entry(table_ + i * kFrameSegmentSize, seg);  // validated already
    return seg;
}

FrameValidation validate_frame(const std::uint8_t *frame, std::size_t len)
{
    FrameValidation v;
    auto fail = [&](FrameError e) {
        v.error = e;
        v.view  = FrameView{};
        return v;
    };

    if (frame == nullptr || len < kFrameHeaderSize) return fail(FrameError::truncated);
    if (frame[0] != kFrameMagic) return fail(FrameError::bad_magic);
    if (frame[1] != kFrameVersion) return fail(FrameError::bad_version);
    if (frame[2] > static_cast<std::uint8_t>(FrameKind::put)) return fail(FrameError::bad_kind);

    const auto kind                 = static_cast<FrameKind>(frame[2]);
    const std::uint16_t hdr_len     = get_u16(frame + 4);
    const std::uint16_t n_segments  = get_u16(frame + 6);
    const std::uint32_t payload_len = get_u32(frame + 8);
    const std::uint32_t reserved    = get_u32(frame + 12);
    const std::uint64_t remote_addr = get_u64(frame + 16);

    if (payload_len > kMaxFramePayload) return fail(FrameError::payload_too_large);
    if (reserved != 0) return fail(FrameError::field_not_zero);
    if (kind == FrameKind::active_message && remote_addr != 0)
        return fail(FrameError::field_not_zero);
    if (kind == FrameKind::put && hdr_len != 0) return fail(FrameError::field_not_zero);

    const std::uint64_t table_at = kFrameHeaderSize + std::uint64_t{hdr_len};
    if (table_at > len) return fail(FrameError::header_overrun);
    const std::uint64_t data_at = table_at + std::uint64_t{n_segments} * kFrameSegmentSize;
    if (data_at > len) return fail(FrameError::table_overrun);

    std::uint64_t orig_sum = 0;
    std::uint64_t wire_sum = 0;
    for (std::size_t i = 0; i < n_segments; ++i) {
        FrameSegment seg;
        const FrameError e = read_segment_entry(frame + table_at + i * kFrameSegmentSize, seg);
        if (e != FrameError::none) return fail(e);
        orig_sum += seg.orig_len;
        if (orig_sum > payload_len) return fail(FrameError::payload_length_mismatch);
        wire_sum += seg.wire_len;
    }
    if (orig_sum != payload_len) return fail(FrameError::payload_length_mismatch);
    if (wire_sum != len - data_at) return fail(FrameError::wire_size_mismatch);

    FrameView& view        = v.view;
    view.kind_             = kind;
    view.orig_am_id_       = frame[3];
    view.remote_addr_      = remote_addr;
    view.header_           = frame + kFrameHeaderSize;
    view.header_len_       = hdr_len;
    view.orig_payload_len_ = payload_len;
    view.n_segments_       = n_segments;
    view.table_            = frame + table_at;
    view.data_             = frame + data_at;
    return v;
}

FrameError decode_into(const FrameView& view, std::uint8_t *out, std::size_t out_capacity)
{
    if (out_capacity < view.orig_payload_len()) return FrameError::buffer_too_small;

    const std::uint8_t *src = view.segment_data();
    for (std::size_t i = 0; i < view.segment_count(); ++i) {
        const FrameSegment seg = view.segment(i);
        if (seg.kind == SegmentKind::raw) {
            if (seg.orig_len > 0) std::memcpy(out, src, seg.orig_len);
            out += seg.orig_len;
            src += seg.wire_len;
            continue;
        }
        const auto keep = static_cast<std::size_t>(seg.precision.keep_bytes);
        double stage[kStageElements];
        std::size_t left = seg.orig_len / 8;
        while (left > 0) {
            const std::size_t n = std::min(left, kStageElements);
            decode(src, n, seg.precision.keep_bytes, stage);
            std::memcpy(out, stage, n * 8);
            out += n * 8;
            src += n * keep;
            left -= n;
        }
    }
    return FrameError::none;
}

}  // namespace slim::pack

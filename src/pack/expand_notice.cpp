/* SPDX-License-Identifier: BSD-3-Clause */
// Packed puts and expand notices (expand_notice.h).
#include "pack/expand_notice.h"

#include "pack/wire_bytes.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace slim::pack {

namespace {

using namespace wire;

// Values widened per step through the stack: small enough for the stack,
// large enough for the SIMD decoder.
constexpr std::size_t kStageElements = 64;

// The first (or last) min(8, len) bytes of data, zero-padded, as a word.
std::uint64_t edge_word(const std::uint8_t *data, std::size_t len, bool tail)
{
    std::uint8_t bytes[8] = {};
    const std::size_t n   = std::min<std::size_t>(8, len);
    std::memcpy(bytes, tail ? data + len - n : data, n);
    return get_u64(bytes);
}

// A segment entry's error, as the notice's.
ExpandError expand_error_of(FrameError e)
{
    switch (e) {
    case FrameError::bad_segment_kind: return ExpandError::bad_segment_kind;
    case FrameError::bad_keep: return ExpandError::bad_keep;
    case FrameError::bad_mode: return ExpandError::bad_mode;
    case FrameError::packed_length_not_multiple_of_8:
        return ExpandError::packed_length_not_multiple_of_8;
    default: return ExpandError::field_not_zero;
    }
}

}  // namespace

const char *expand_error_message(ExpandError error)
{
    switch (error) {
    case ExpandError::none: return "no error";
    case ExpandError::truncated: return "expand notice shorter than its 56-byte header";
    case ExpandError::bad_magic: return "expand notice magic is not 0x5B";
    case ExpandError::bad_version: return "unsupported expand notice version";
    case ExpandError::table_size_mismatch:
        return "expand notice segment table does not exactly fill the rest of the notice";
    case ExpandError::no_segments: return "expand notice has no segments";
    case ExpandError::bad_segment_kind:
        return "expand notice segment kind is neither raw (0) nor packed (1)";
    case ExpandError::bad_keep: return "packed segment keep is outside 2..7";
    case ExpandError::bad_mode:
        return "packed segment mode is neither truncate (0) nor nearest_even (1)";
    case ExpandError::field_not_zero:
        return "an expand notice field that must be 0 is not (reserved, raw keep/mode)";
    case ExpandError::zero_stream: return "expand notice stream is 0";
    case ExpandError::packed_length_not_multiple_of_8:
        return "packed segment length is not a multiple of 8";
    case ExpandError::payload_length_mismatch:
        return "expand notice segment lengths do not add up to its original length";
    case ExpandError::wire_length_mismatch:
        return "expand notice segment wire sizes do not add up to the length put";
    case ExpandError::payload_too_large: return "expand notice length is above the 1 GiB limit";
    case ExpandError::destination_mismatch:
        return "the destination's first or last packed bytes differ from the notice's "
               "(no such put arrived, or not of this length)";
    case ExpandError::too_many_segments: return "a packed put would need more than 65535 segments";
    case ExpandError::buffer_too_small: return "buffer too small for the packed put or its notice";
    }
    return "unknown expand notice error";
}

std::size_t expand_notice_max_size(std::size_t run_count)
{
    return kExpandHeaderSize + (2 * run_count + 1) * kFrameSegmentSize;
}

PackedPutResult encode_packed_put(const PackedPutRequest& request, std::uint8_t *buffer,
                                  std::size_t capacity, std::uint8_t *notice,
                                  std::size_t notice_capacity)
{
    PackedPutResult result;
    if (request.stream == 0) {
        result.error = ExpandError::zero_stream;
        return result;
    }

    FrameRequest frame              = request.source;
    frame.kind                      = FrameKind::put;
    frame.orig_am_id                = 0;
    frame.header                    = {};
    frame.remote_addr               = request.remote_addr;
    const FrameEncodeResult encoded = encode_frame(frame, buffer, capacity);
    if (!encoded.ok()) {
        result.frame_error = encoded.error;
        return result;
    }

    // The frame as written: header, table, then the segment data.
    const std::size_t n_segments = get_u16(buffer + 6);
    const std::size_t table_at   = kFrameHeaderSize;
    const std::size_t data_at    = table_at + n_segments * kFrameSegmentSize;
    const std::size_t wire_len   = encoded.size() - data_at;
    const std::size_t notice_len = kExpandHeaderSize + n_segments * kFrameSegmentSize;
    if (notice_len > notice_capacity) {
        result.error = ExpandError::buffer_too_small;
        return result;
    }
    if (n_segments == 0 || wire_len == 0) {
        // An empty source: nothing to put and nothing to widen.
        result.frame_error = FrameError::payload_length_mismatch;
        return result;
    }

    const std::uint8_t *wire = buffer + data_at;
    notice[0]                = kExpandMagic;
    notice[1]                = kExpandVersion;
    put_u16(notice + 2, static_cast<std::uint16_t>(n_segments));
    put_u32(notice + 4, static_cast<std::uint32_t>(wire_len));
    put_u64(notice + 8, request.remote_addr);
    put_u32(notice + 16, get_u32(buffer + 8));  // the frame's orig_payload_len
    put_u32(notice + 20, 0);
    put_u64(notice + 24, request.stream);
    put_u64(notice + 32, request.seq);
    put_u64(notice + 40, edge_word(wire, wire_len, false));
    put_u64(notice + 48, edge_word(wire, wire_len, true));
    std::memcpy(notice + kExpandHeaderSize, buffer + table_at, n_segments * kFrameSegmentSize);

    result.stats            = encoded.stats;
    result.stats.wire_bytes = wire_len;
    result.wire_offset      = data_at;
    result.wire_len         = wire_len;
    result.notice_len       = notice_len;
    return result;
}

FrameSegment ExpandNoticeView::segment(std::size_t i) const
{
    FrameSegment seg;
    read_segment_entry(table_ + i * kFrameSegmentSize, seg);  // validated already
    return seg;
}

ExpandValidation validate_expand_notice(const std::uint8_t *notice, std::size_t len)
{
    ExpandValidation v;
    auto fail = [&](ExpandError e) {
        v.error = e;
        v.view  = ExpandNoticeView{};
        return v;
    };

    if (len < kExpandHeaderSize) return fail(ExpandError::truncated);
    if (notice[0] != kExpandMagic) return fail(ExpandError::bad_magic);
    if (notice[1] != kExpandVersion) return fail(ExpandError::bad_version);
    const std::size_t n_segments = get_u16(notice + 2);
    if (n_segments == 0) return fail(ExpandError::no_segments);
    if (len != kExpandHeaderSize + n_segments * kFrameSegmentSize)
        return fail(ExpandError::table_size_mismatch);
    if (get_u32(notice + 20) != 0) return fail(ExpandError::field_not_zero);

    ExpandNoticeView& view = v.view;
    view.wire_len_         = get_u32(notice + 4);
    view.remote_addr_      = get_u64(notice + 8);
    view.orig_len_         = get_u32(notice + 16);
    view.stream_           = get_u64(notice + 24);
    view.seq_              = get_u64(notice + 32);
    view.head_             = get_u64(notice + 40);
    view.tail_             = get_u64(notice + 48);
    view.n_segments_       = n_segments;
    view.table_            = notice + kExpandHeaderSize;
    if (view.stream_ == 0) return fail(ExpandError::zero_stream);
    if (view.orig_len_ > kMaxFramePayload) return fail(ExpandError::payload_too_large);

    std::uint64_t orig_sum = 0, wire_sum = 0;
    for (std::size_t i = 0; i < n_segments; ++i) {
        FrameSegment seg;
        const FrameError e = read_segment_entry(view.table_ + i * kFrameSegmentSize, seg);
        if (e != FrameError::none) return fail(expand_error_of(e));
        orig_sum += seg.orig_len;
        wire_sum += seg.wire_len;
    }
    if (orig_sum != view.orig_len_) return fail(ExpandError::payload_length_mismatch);
    if (wire_sum != view.wire_len_ || wire_sum == 0) return fail(ExpandError::wire_length_mismatch);
    return v;
}

ExpandError expand_in_place(const ExpandNoticeView& view, std::uint8_t *destination)
{
    const std::size_t wire_len = view.wire_len();
    if (edge_word(destination, wire_len, false) != view.head() ||
        edge_word(destination, wire_len, true) != view.tail()) {
        return ExpandError::destination_mismatch;
    }

    // Back to front: segment i reads [wire_at, wire_at + wire_len) and
    // writes [orig_at, orig_at + orig_len) with wire_at <= orig_at, and
    // every segment before it reads below wire_at. Within a packed segment
    // the values go from the last block to the first, each through the
    // stack: a block's output starts at 8·j0 >= keep·j0, where the input of
    // the values before it ends.
    std::size_t wire_end = wire_len;
    std::size_t orig_end = view.orig_len();
    for (std::size_t i = view.segment_count(); i-- > 0;) {
        const FrameSegment seg    = view.segment(i);
        const std::size_t wire_at = wire_end - seg.wire_len;
        const std::size_t orig_at = orig_end - seg.orig_len;
        if (seg.kind == SegmentKind::raw) {
            if (seg.orig_len > 0 && wire_at != orig_at)
                std::memmove(destination + orig_at, destination + wire_at, seg.orig_len);
        } else {
            const auto keep = static_cast<std::size_t>(seg.precision.keep_bytes);
            double stage[kStageElements];
            std::size_t left = seg.orig_len / 8;
            while (left > 0) {
                const std::size_t n  = std::min(left, kStageElements);
                const std::size_t j0 = left - n;
                decode(destination + wire_at + j0 * keep, n, seg.precision.keep_bytes, stage);
                std::memcpy(destination + orig_at + j0 * 8, stage, n * 8);
                left = j0;
            }
        }
        wire_end = wire_at;
        orig_end = orig_at;
    }
    return ExpandError::none;
}

// ------------------------------------------------------------ sequencer

struct ExpandSequencer::Impl {
    struct Entry {
        std::uint64_t stream = 0;  // 0: free
        std::uint64_t last   = 0;  // the last seq accepted
        std::uint64_t used   = 0;  // when it was last accepted (a counter)
    };
    Entry *entries       = nullptr;
    std::size_t capacity = 0;
    std::uint64_t clock  = 0;
};

ExpandSequencer::ExpandSequencer(std::size_t capacity) : impl_(new Impl)
{
    impl_->capacity = std::max<std::size_t>(capacity, 1);
    impl_->entries  = new Impl::Entry[impl_->capacity];
}

ExpandSequencer::~ExpandSequencer()
{
    delete[] impl_->entries;
    delete impl_;
}

// A linear scan: an interface talks to few peers that pack puts, and a
// notice follows a put of up to a bounce buffer's size.
ExpandSequencer::Verdict ExpandSequencer::check(std::uint64_t stream, std::uint64_t seq)
{
    Impl::Entry *found  = nullptr;
    Impl::Entry *oldest = &impl_->entries[0];
    for (std::size_t i = 0; i < impl_->capacity; ++i) {
        Impl::Entry& e = impl_->entries[i];
        if (e.stream == stream && stream != 0) {
            found = &e;
            break;
        }
        if (e.used < oldest->used) oldest = &e;
    }
    const std::uint64_t expected = found != nullptr ? found->last + 1 : 1;
    if (seq != expected) {
        return (found != nullptr && seq <= found->last) ? Verdict::replayed : Verdict::out_of_order;
    }
    if (found == nullptr) {
        found         = oldest;  // free entries have used == 0
        found->stream = stream;
    }
    found->last = seq;
    found->used = ++impl_->clock;
    return Verdict::accept;
}

}  // namespace slim::pack

/* SPDX-License-Identifier: BSD-3-Clause */
// Packed puts and the expand notice that follows each one (slim_core.h,
// "packed puts and expand notices"). A put's source is packed like a frame's
// payload (frame.h: the same segments, the same codec), but only the segment
// data travels by the put, to the destination's first bytes; the frame's
// header and segment table travel in the notice, on the frame AM id, right
// behind the put on the same endpoint. The receiver widens the values in
// place, back to front: every segment's data starts at or before its
// original offset, so widening the last segment first never overwrites data
// not yet read. Pure: no allocation, no logging, no exceptions.
//
// Expand notice, version 1. Little-endian, serialised field by field, no
// padding:
//
//   header, 56 bytes
//     0  u8   magic        0x5B (a frame's is 0x5A)
//     1  u8   version      1
//     2  u16  n_segments   at least 1
//     4  u32  wire_len     bytes the put wrote at remote_addr (>= 1)
//     8  u64  remote_addr  the put's destination, in the receiver's space
//    16  u32  orig_len     bytes after widening (<= kMaxFramePayload,
//                          >= wire_len)
//    20  u32  reserved     0
//    24  u64  stream       the sending endpoint's token (never 0)
//    32  u64  seq          1, 2, ... per stream
//    40  u64  head         the put's first min(8, wire_len) bytes, then 0s
//    48  u64  tail         its last min(8, wire_len) bytes, then 0s
//   n_segments entries, 8 bytes each: exactly frame.h's segment entry
//
// The segments' orig_len add up to orig_len and their wire sizes (raw:
// orig_len; packed: orig_len/8 × keep) to wire_len; a notice whose lengths
// disagree with each other or with its own size is rejected.
#pragma once

#include "pack/frame.h"

#include <cstddef>
#include <cstdint>

namespace slim::pack {

constexpr std::uint8_t kExpandMagic     = 0x5B;
constexpr std::uint8_t kExpandVersion   = 1;
constexpr std::size_t kExpandHeaderSize = 56;

enum class ExpandError {
    none,
    truncated,  // fewer than kExpandHeaderSize bytes
    bad_magic,
    bad_version,
    table_size_mismatch,  // n_segments entries != the rest of the notice
    no_segments,
    bad_segment_kind,
    bad_keep,
    bad_mode,
    field_not_zero,  // a reserved field, raw keep/mode
    zero_stream,
    packed_length_not_multiple_of_8,
    payload_length_mismatch,  // segments' orig_len sum != orig_len
    wire_length_mismatch,     // segments' wire sizes sum != wire_len
    payload_too_large,        // orig_len above kMaxFramePayload
    // Checked against the destination (expand_in_place):
    destination_mismatch,  // head or tail differ from the destination's
    // Encoder:
    too_many_segments,
    buffer_too_small,
};

// A stable one-line description.
const char *expand_error_message(ExpandError error);

// ------------------------------------------------------------ sending

// What to pack: the put's source as FrameRequest describes a payload
// (pieces, payload_addr, runs in that address space); its kind, AM id and
// header are ignored.
struct PackedPutRequest {
    FrameRequest source;
    std::uint64_t remote_addr = 0;
    std::uint64_t stream      = 0;  // must not be 0
    std::uint64_t seq         = 0;
};

struct PackedPutResult {
    ExpandError error      = ExpandError::none;
    FrameError frame_error = FrameError::none;  // when the source was refused
    FrameStats stats;                           // as for a frame; stats.wire_bytes = wire_len
    std::size_t wire_offset = 0;                // the packed bytes: buffer[wire_offset,
    std::size_t wire_len    = 0;                //   wire_offset + wire_len)
    std::size_t notice_len  = 0;                // bytes written to `notice`
    bool ok() const { return error == ExpandError::none && frame_error == FrameError::none; }
};

// Largest notice for `run_count` marked runs (frame_max_size's rule: at most
// 2 × run_count + 1 segments).
std::size_t expand_notice_max_size(std::size_t run_count);

// Packs the source into buffer[0, capacity) as a put frame (encode_frame()),
// whose segment data, buffer[wire_offset, wire_offset + wire_len), is what
// the put carries; writes the notice into notice[0, notice_capacity).
// capacity >= frame_max_size(0, source bytes, run_count) always suffices.
// Element boundaries, merging and clipping as encode_frame(). Fails with
// buffer_too_small (either buffer), zero_stream, or a frame_error for a
// source encode_frame() refuses (too_many_segments, buffer_too_small, ...).
PackedPutResult encode_packed_put(const PackedPutRequest& request, std::uint8_t *buffer,
                                  std::size_t capacity, std::uint8_t *notice,
                                  std::size_t notice_capacity);

// ------------------------------------------------------------ receiving

// A validated notice; points into the notice's memory, which must outlive it.
class ExpandNoticeView {
public:
    ExpandNoticeView() = default;

    std::uint32_t wire_len() const { return wire_len_; }
    std::uint64_t remote_addr() const { return remote_addr_; }
    std::uint32_t orig_len() const { return orig_len_; }
    std::uint64_t stream() const { return stream_; }
    std::uint64_t seq() const { return seq_; }
    std::uint64_t head() const { return head_; }
    std::uint64_t tail() const { return tail_; }
    std::size_t segment_count() const { return n_segments_; }
    FrameSegment segment(std::size_t i) const;  // i < segment_count()

private:
    friend struct ExpandValidation validate_expand_notice(const std::uint8_t *, std::size_t);

    std::uint32_t wire_len_    = 0;
    std::uint64_t remote_addr_ = 0;
    std::uint32_t orig_len_    = 0;
    std::uint64_t stream_      = 0;
    std::uint64_t seq_         = 0;
    std::uint64_t head_        = 0;
    std::uint64_t tail_        = 0;
    std::size_t n_segments_    = 0;
    const std::uint8_t *table_ = nullptr;
};

struct ExpandValidation {
    ExpandError error = ExpandError::none;
    ExpandNoticeView view;  // meaningful only when ok()
    bool ok() const { return error == ExpandError::none; }
};

// Checks every field and length of notice[0, len); reads nothing outside it.
ExpandValidation validate_expand_notice(const std::uint8_t *notice, std::size_t len);

// Widens the put at `destination` (the local address of remote_addr, holding
// wire_len packed bytes and room for orig_len) in place, back to front.
// First compares head and tail with the destination's first and last bytes
// and returns destination_mismatch, writing nothing, when they differ.
// Touches only destination[0, orig_len); reads nothing beyond it.
ExpandError expand_in_place(const ExpandNoticeView& view, std::uint8_t *destination);

// Which notice each stream may send next: seq 1 for a stream never seen,
// then seq + 1. Fixed capacity, no allocation after construction; a new
// stream beyond capacity replaces the least recently accepted one (its next
// notice is then refused as out of order, which is logged: the capacity is
// sized far above the peers one interface talks to).
class ExpandSequencer {
public:
    enum class Verdict { accept, replayed, out_of_order };

    explicit ExpandSequencer(std::size_t capacity = 1024);
    ~ExpandSequencer();
    ExpandSequencer(const ExpandSequencer&)            = delete;
    ExpandSequencer& operator=(const ExpandSequencer&) = delete;

    // accept: records seq as the stream's last. Otherwise changes nothing.
    Verdict check(std::uint64_t stream, std::uint64_t seq);

private:
    struct Impl;
    Impl *impl_;
};

}  // namespace slim::pack

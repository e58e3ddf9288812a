/* SPDX-License-Identifier: BSD-3-Clause */
// The self-describing packing frame: what travels on the reserved AM id in
// place of an active message or a put whose payload overlaps marked float64
// regions. The receiver needs no marking: it validates the frame against its
// own length and rebuilds the original payload in scratch memory. Pure: no
// allocation, no logging, no exceptions.
//
// Wire format, version 1. Little-endian, serialised field by field (never a
// struct image), no padding:
//
//   header, 24 bytes
//     0  u8   magic              0x5A
//     1  u8   version            1
//     2  u8   kind               0 active message, 1 put
//     3  u8   orig_am_id         the AM id the frame replaces
//     4  u16  hdr_len            bytes of original AM header that follow
//                                (put: must be 0)
//     6  u16  n_segments
//     8  u32  orig_payload_len   original payload bytes, AM header excluded
//                                (at most kMaxFramePayload)
//    12  u32  reserved           0 (keeps remote_addr 8-aligned)
//    16  u64  remote_addr        put only; must be 0 for an active message
//   hdr_len bytes                the original AM header (am_short: 8 bytes)
//   n_segments entries, 8 bytes each
//     0  u8   seg_kind           0 raw, 1 packed
//     1  u8   keep               packed: 2..7; raw: 0
//     2  u8   mode               packed: 0 truncate, 1 nearest_even; raw: 0
//     3  u8   reserved           0
//     4  u32  orig_len           original bytes (packed: a multiple of 8)
//   segment data, back to back, nothing after it
//     raw    → orig_len bytes, verbatim
//     packed → orig_len/8 × keep bytes, pack::encode layout
//
// The segments' orig_len add up to orig_payload_len, and the data occupies
// exactly the rest of the frame: a frame whose lengths disagree with its
// size in any way is rejected.
#pragma once

#include "pack/codec.h"
#include "pack/region_registry.h"

#include <cstddef>
#include <cstdint>

namespace slim::pack {

constexpr std::uint8_t kFrameMagic       = 0x5A;
constexpr std::uint8_t kFrameVersion     = 1;
constexpr std::size_t kFrameHeaderSize   = 24;
constexpr std::size_t kFrameSegmentSize  = 8;
constexpr std::size_t kFrameMaxHeaderLen = 0xFFFF;
constexpr std::size_t kFrameMaxSegments  = 0xFFFF;
// Sanity limit on orig_payload_len: a receiver never sizes scratch memory
// from an unchecked peer-supplied length beyond this.
constexpr std::uint32_t kMaxFramePayload = 1u << 30;  // 1 GiB

enum class FrameKind : std::uint8_t {
    active_message = 0,
    put            = 1,
};

enum class SegmentKind : std::uint8_t {
    raw    = 0,
    packed = 1,
};

// Why a frame (or a request to build or decode one) was refused.
enum class FrameError {
    none,
    truncated,  // fewer than kFrameHeaderSize bytes
    bad_magic,
    bad_version,
    bad_kind,
    header_overrun,  // hdr_len runs past the end of the frame
    table_overrun,   // segment table runs past the end of the frame
    bad_segment_kind,
    bad_keep,        // packed keep outside 2..7
    bad_mode,        // packed mode not 0/1
    field_not_zero,  // a reserved field, raw keep/mode, AM
                     // remote_addr or put hdr_len is not 0
    packed_length_not_multiple_of_8,
    payload_length_mismatch,  // sum of orig_len != orig_payload_len
    wire_size_mismatch,       // segment data != the rest of the frame
    payload_too_large,        // above kMaxFramePayload
    header_too_long,          // encoder: header above kFrameMaxHeaderLen
    too_many_segments,        // encoder: more than kFrameMaxSegments
    buffer_too_small,         // encoder output or decode_into capacity
};

// A stable one-line description ("frame segment data does not match ...").
const char *frame_error_message(FrameError error);

// Largest frame that encode_frame() can produce for this header and payload
// from `run_count` marked runs: every run adds at most two segments (itself
// and the raw stretch after it), and segment data never exceeds the payload.
// 0 when they cannot be framed at all (header above kFrameMaxHeaderLen or
// payload above kMaxFramePayload).
std::size_t frame_max_size(std::size_t hdr_len, std::size_t payload_len, std::size_t run_count);

// ------------------------------------------------------------ encoding

// One piece of memory (an iov entry, the AM header).
struct ByteSpan {
    const std::uint8_t *data = nullptr;
    std::size_t size         = 0;
};

// A whole marked element that the payload's edge cuts (UCP split the
// message into fragments at a byte inside it): its bytes inside the payload
// travel raw, at full width, but hold the element's quantized value, so
// that the receiver gets slim_quantize()'s value whichever way the message
// was fragmented. Elements cut by their region's own edge are not whole
// marked elements and travel exact.
struct EdgePatch {
    std::uint64_t offset  = 0;  // payload offset of the first byte it replaces
    std::uint8_t length   = 0;  // 1..7 bytes
    std::uint8_t bytes[8] = {};
};

// The patches (0, 1 or 2) for the run `run`, found for the payload piece
// [piece, piece + piece_len) at `piece_offset` in the payload: an element at
// the piece's first or last byte that lies wholly inside the run's region
// but not inside the piece. Reads the element's 8 bytes from memory,
// outside the piece too: marked memory is the caller's while it is marked.
// `run` is in the address space of the memory (not shifted).
std::size_t edge_patches(const MarkedRun& run, std::uintptr_t piece, std::size_t piece_len,
                         std::uint64_t piece_offset, EdgePatch *out);

// What to send. The payload is the concatenation of `pieces` (one piece for
// a contiguous buffer; am_zcopy/put_zcopy pass their iov). Its bytes occupy
// the address range [payload_addr, payload_addr + total size) in the address
// space of `runs`, which are what RegionRegistry::find returns for that
// range. For one contiguous buffer split into pieces that is simply the
// buffer's address; for scattered iov memory the caller queries each piece
// and shifts its runs (begin, end and region_base alike) to the piece's
// offset in the concatenation.
struct FrameRequest {
    FrameKind kind            = FrameKind::active_message;
    std::uint8_t orig_am_id   = 0;
    std::uint64_t remote_addr = 0;  // put only; 0 for an AM
    ByteSpan header;                // AM header; empty for a put
    const ByteSpan *pieces      = nullptr;
    std::size_t piece_count     = 0;
    std::uintptr_t payload_addr = 0;
    const MarkedRun *runs       = nullptr;  // address order, non-overlapping
    std::size_t run_count       = 0;
    // Written over the raw bytes they cover; in payload order, each inside
    // a raw stretch (edge_patches() only makes such).
    const EdgePatch *patches = nullptr;
    std::size_t patch_count  = 0;
};

struct FrameStats {
    std::size_t raw_bytes       = 0;  // payload bytes sent verbatim
    std::size_t packed_elements = 0;  // float64 values sent packed
    std::size_t wire_bytes      = 0;  // the whole frame
};

struct FrameEncodeResult {
    FrameError error = FrameError::none;
    FrameStats stats;  // valid only when ok()
    bool ok() const { return error == FrameError::none; }
    std::size_t size() const { return stats.wire_bytes; }
};

// Writes the frame for `request` into out[0, capacity). Element boundaries
// come from each run's region_base, so a payload that starts or ends inside
// an element (a multi-rail fragment split at any byte) sends the partial
// elements raw, with the request's edge patches written over them. Adjacent raw pieces merge into one
// segment, as do adjacent packed runs of equal precision. Runs outside the
// payload are clipped away; a run whose precision is not keep 2..7 is sent
// raw. Every whole marked element is packed, even when its table entries cost
// more than it saves: the receiver then sees the same values whatever size
// the message is, or wherever it was fragmented.
// Fails with header_too_long, payload_too_large, bad_kind, field_not_zero
// (an AM with a remote_addr, a put with a header), too_many_segments or
// buffer_too_small; capacity >= frame_max_size(hdr, payload, run_count)
// always suffices.
FrameEncodeResult encode_frame(const FrameRequest& request, std::uint8_t *out,
                               std::size_t capacity);

// ------------------------------------------------------------ decoding

struct FrameSegment {
    SegmentKind kind = SegmentKind::raw;
    Precision precision;         // packed only
    std::uint32_t orig_len = 0;  // bytes it rebuilds
    std::size_t wire_len   = 0;  // bytes it occupies in the frame
};

// Reads one entry of a segment table (8 bytes, the format above) into out,
// and checks it: bad_segment_kind, field_not_zero (reserved byte, or a raw
// entry's keep/mode), bad_keep, bad_mode or packed_length_not_multiple_of_8
// for an entry that breaks the format (out is then only partly filled).
// Frames and expand notices (expand_notice.h) share the entry.
FrameError read_segment_entry(const std::uint8_t *entry, FrameSegment& out);

struct FrameValidation;
FrameValidation validate_frame(const std::uint8_t *frame, std::size_t len);

// A validated frame; it points into the frame's memory, which must outlive
// it. Only validate_frame() makes one (a default-constructed view is empty).
class FrameView {
public:
    FrameView() = default;

    FrameKind kind() const { return kind_; }
    std::uint8_t orig_am_id() const { return orig_am_id_; }
    std::uint64_t remote_addr() const { return remote_addr_; }
    ByteSpan header() const { return {header_, header_len_}; }
    std::uint32_t orig_payload_len() const { return orig_payload_len_; }
    std::size_t segment_count() const { return n_segments_; }
    FrameSegment segment(std::size_t i) const;  // i < segment_count()
    // Where segment data starts; segment i follows segments 0..i-1.
    const std::uint8_t *segment_data() const { return data_; }

private:
    friend FrameValidation validate_frame(const std::uint8_t *, std::size_t);

    FrameKind kind_                 = FrameKind::active_message;
    std::uint8_t orig_am_id_        = 0;
    std::uint64_t remote_addr_      = 0;
    const std::uint8_t *header_     = nullptr;
    std::size_t header_len_         = 0;
    std::uint32_t orig_payload_len_ = 0;
    std::size_t n_segments_         = 0;
    const std::uint8_t *table_      = nullptr;
    const std::uint8_t *data_       = nullptr;
};

struct FrameValidation {
    FrameError error = FrameError::none;
    FrameView view;  // meaningful only when ok()
    bool ok() const { return error == FrameError::none; }
};

// Checks every field and length of frame[0, len) (see the format above);
// reads nothing outside it.
FrameValidation validate_frame(const std::uint8_t *frame, std::size_t len);

// Rebuilds the original payload (orig_payload_len bytes) into out: raw
// segments verbatim, packed ones through pack::decode (dropped bytes
// zero-filled). Refuses with buffer_too_small, writing nothing, when
// out_capacity < orig_payload_len.
FrameError decode_into(const FrameView& view, std::uint8_t *out, std::size_t out_capacity);

}  // namespace slim::pack

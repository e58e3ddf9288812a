// SPDX-License-Identifier: BSD-3-Clause
// The transport's packing path (slim_core.h, "lossy packing"): finds the
// marked runs of an outgoing message, builds its frame, and rebuilds
// received frames; packs puts and widens them at the receiver (expand
// notices); plus the counters behind slim_packing_get().
#include "engine.h"
#include "base/log.h"
#include "packing_monitor.h"
#include "pack/expand_notice.h"
#include "pack/frame.h"
#include "slim_core.h"

#include <atomic>
#include <cstring>
#include <new>

namespace slim {

namespace {

using pack::ByteSpan;
using pack::FrameRequest;
using pack::MarkedRun;

// The registry only holds precisions of keep 2..7 (RegionRegistry::mark
// refuses others), so every run it returns is marked data.

// Marked runs a frame can describe. A message overlapping more marked
// regions than this goes unframed (counted as missed): it is an unusual
// marking (thousands of tiny regions) that the frame table would not pay for.
constexpr std::size_t kMaxRuns    = 64;
constexpr std::size_t kMaxPieces  = 16;
constexpr std::uint8_t kAmIdLimit = 64;  // UCT_AM_ID_MAX

// Marked bytes in [ptr, ptr+len), however many runs there are: walks the
// registry in batches (only for messages with more than kMaxRuns runs).
std::size_t count_marked(const pack::RegionRegistry& regions, const std::uint8_t *ptr,
                         std::size_t len)
{
    MarkedRun batch[kMaxRuns];
    std::size_t marked      = 0;
    const std::uint8_t *end = ptr + len;
    while (ptr < end) {
        const std::size_t found =
                regions.find(ptr, static_cast<std::size_t>(end - ptr), batch, kMaxRuns);
        const std::size_t n = found < kMaxRuns ? found : kMaxRuns;
        for (std::size_t i = 0; i < n; ++i) {
            marked += batch[i].end - batch[i].begin;
        }
        if (found <= kMaxRuns) break;
        ptr = reinterpret_cast<const std::uint8_t *>(batch[kMaxRuns - 1].end);
    }
    return marked;
}

// Drops of invalid frames are logged, but a peer sending garbage in a loop
// must not flood the log: the first few, then one in a thousand.
void log_rejected(std::size_t length, const char *reason, const char *what = "packing frame")
{
    static std::atomic<std::uint64_t> rejected{0};
    const std::uint64_t n = rejected.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n > 10 && n % 1000 != 0) return;
    logger().error("dropped a received {} of {} bytes: {} ({} dropped so far)", what, length,
                   reason, n);
}

slim_frame_result_t unframed(slim_frame_info_t *info, std::size_t marked)
{
    info->marked_bytes = marked;
    return SLIM_FRAME_UNFRAMED;
}

// The marked runs of a payload given as pieces, moved into the address
// space of the concatenated payload (offset 0 = first payload byte):
// element phases relative to each region's base survive the shift
// (frame.h, FrameRequest).
//
// Every send builds one, marked or not, so its 2.3 KB of arrays are left
// uninitialized (find_marked writes each entry before anything reads it):
// zeroing them cost every send a `rep stos` and a 64-store loop.
struct MarkedPayload {
    MarkedPayload() noexcept {}  // runs and pieces: written before read
    union {
        MarkedRun runs[kMaxRuns];
    };
    union {
        ByteSpan pieces[kMaxPieces];
    };
    // At most one at each end of each piece (a run in the middle of a
    // piece is not cut by it).
    union {
        pack::EdgePatch patches[2 * kMaxPieces];
    };
    std::size_t patch_count = 0;
    std::size_t run_count   = 0;
    std::size_t marked      = 0;
    std::size_t payload_len = 0;
    bool overflow           = false;  // too many runs or pieces to frame
};

void find_marked(const pack::RegionRegistry& regions, const slim_frame_piece_t *pieces,
                 std::size_t piece_count, MarkedPayload& out)
{
    out.overflow          = piece_count > kMaxPieces;
    std::uintptr_t offset = 0;
    for (std::size_t i = 0; i < piece_count; ++i) {
        const slim_frame_piece_t& piece = pieces[i];
        const auto *data                = static_cast<const std::uint8_t *>(piece.data);
        const auto addr                 = reinterpret_cast<std::uintptr_t>(piece.data);
        if (i < kMaxPieces) out.pieces[i] = {data, piece.length};
        if (piece.length == 0) continue;
        const std::size_t room  = out.overflow ? 0 : kMaxRuns - out.run_count;
        const std::size_t found = regions.find(data, piece.length, out.runs + out.run_count, room);
        if (found > room) {
            out.overflow = true;
            out.marked += count_marked(regions, data, piece.length);
        } else {
            // Elements cut by this piece's edges (fragment boundaries) are
            // sent quantized: found in memory coordinates, before the shift.
            if (found > 0) {
                out.patch_count += pack::edge_patches(out.runs[out.run_count], addr, piece.length,
                                                      offset, out.patches + out.patch_count);
            }
            if (found > 1) {
                out.patch_count +=
                        pack::edge_patches(out.runs[out.run_count + found - 1], addr, piece.length,
                                           offset, out.patches + out.patch_count);
            }
            for (std::size_t r = out.run_count; r < out.run_count + found; ++r) {
                MarkedRun& run = out.runs[r];
                out.marked += run.end - run.begin;
                run.begin        = run.begin - addr + offset;
                run.end          = run.end - addr + offset;
                run.region_base  = run.region_base - addr + offset;  // mod 2^64
                run.region_begin = run.region_begin - addr + offset;
                run.region_end   = run.region_end - addr + offset;
            }
            out.run_count += found;
        }
        offset += piece.length;
    }
}

// The marked runs of a message's payload; nullptr when nothing in it is
// marked (O(1) when nothing is marked in the process). payload_len is set
// either way.
const Engine *find_marked_payload(const slim_frame_piece_t *pieces, std::size_t piece_count,
                                  std::size_t& payload_len, MarkedPayload& payload)
{
    payload_len = 0;
    for (std::size_t i = 0; i < piece_count; ++i) {
        payload_len += pieces[i].length;
    }
    const Engine *engine = Engine::get();
    if (engine == nullptr || !engine->any_marked() || payload_len == 0) {
        return nullptr;
    }
    find_marked(engine->regions(), pieces, piece_count, payload);
    return payload.marked != 0 ? engine : nullptr;
}

// For the report's error bound: noted when built, so a frame the transport
// then fails to send still counts (it is a bound).
void note_precisions(const MarkedPayload& payload)
{
    for (std::size_t r = 0; r < payload.run_count; ++r) {
        process_packing().packed_with(payload.runs[r].precision);
    }
}

}  // namespace

}  // namespace slim

extern "C" {

int slim_core_packing_steers(void)
{
    const slim::Engine *engine = slim::Engine::get();
    return engine != nullptr && !engine->config().forward_only && engine->config().packing_steers()
                   ? 1
                   : 0;
}

const size_t *slim_core_marked_regions(void)
{
    // The C side reads the word as a plain size_t with atomic builtins.
    using Word = std::atomic<std::size_t>;
    static_assert(sizeof(Word) == sizeof(std::size_t) && alignof(Word) == alignof(std::size_t) &&
                  Word::is_always_lock_free);
    static const std::size_t none = 0;
    const slim::Engine *engine    = slim::Engine::get();
    return engine != nullptr ? reinterpret_cast<const std::size_t *>(engine->regions().size_word())
                             : &none;
}

slim_frame_result_t slim_core_frame_build(const slim_frame_request_t *request,
                                          slim_frame_alloc_cb_t alloc, void *alloc_arg,
                                          void **frame_p, slim_frame_info_t *info)
{
    using namespace slim;

    *frame_p                = nullptr;
    *info                   = slim_frame_info_t{};
    std::size_t payload_len = 0;
    MarkedPayload payload;
    const Engine *engine =
            find_marked_payload(request->pieces, request->piece_count, payload_len, payload);
    info->payload_length = request->header_length + payload_len;
    if (engine == nullptr) {
        return SLIM_FRAME_UNMARKED;
    }
    if (payload.overflow || alloc == nullptr || engine->config().packing == PackingMode::off) {
        return unframed(info, payload.marked);
    }

    const std::size_t max_size =
            pack::frame_max_size(request->header_length, payload_len, payload.run_count);
    if (max_size == 0) {
        return unframed(info, payload.marked);
    }
    auto *out = static_cast<std::uint8_t *>(alloc(alloc_arg, max_size));
    *frame_p  = out;
    if (out == nullptr) {
        return unframed(info, payload.marked);
    }

    FrameRequest rq;
    rq.kind         = pack::FrameKind::active_message;
    rq.orig_am_id   = request->am_id;
    rq.header       = {static_cast<const std::uint8_t *>(request->header), request->header_length};
    rq.pieces       = payload.pieces;
    rq.piece_count  = request->piece_count;
    rq.payload_addr = 0;
    rq.runs         = payload.runs;
    rq.run_count    = payload.run_count;
    rq.patches      = payload.patches;
    rq.patch_count  = payload.patch_count;
    const pack::FrameEncodeResult result = pack::encode_frame(rq, out, max_size);
    if (!result.ok()) {
        return unframed(info, payload.marked);
    }
    info->frame_length = result.size();
    info->marked_bytes = payload.marked;
    info->packed_bytes = result.stats.packed_elements * 8;
    if (result.stats.packed_elements > 0) {
        note_precisions(payload);
    }
    return SLIM_FRAME_READY;
}

void slim_core_frame_sent(const slim_frame_info_t *info)
{
    slim::process_packing().frame_sent(info->payload_length, info->frame_length, info->marked_bytes,
                                       info->packed_bytes);
}

void slim_core_frame_unsent(const slim_frame_info_t *info)
{
    slim::process_packing().marked_unsent(info->marked_bytes);
}

void slim_core_frame_edge_sent(const slim_frame_info_t *info)
{
    slim::process_packing().marked_edge(info->marked_bytes);
}

int64_t slim_core_frame_unpack(const void *frame, size_t length, void *out, size_t capacity,
                               uint8_t *am_id)
{
    using namespace slim;

    const pack::FrameValidation v =
            pack::validate_frame(static_cast<const std::uint8_t *>(frame), length);
    const char *reason = nullptr;
    if (!v.ok()) {
        reason = pack::frame_error_message(v.error);
    } else if (v.view.kind() != pack::FrameKind::active_message) {
        reason = "a put frame (slim never sends one: puts are not framed)";
    } else if (v.view.orig_am_id() >= kAmIdLimit || v.view.orig_am_id() == SLIM_FRAME_AM_ID) {
        reason = "the frame names an AM id that cannot carry a message";
    }
    if (reason != nullptr) {
        process_packing().frame_rejected();
        log_rejected(length, reason);
        return -1;
    }

    const pack::ByteSpan header = v.view.header();
    const std::size_t need      = header.size + v.view.orig_payload_len();
    if (need > capacity) {
        return static_cast<int64_t>(need);
    }
    auto *dst = static_cast<std::uint8_t *>(out);
    if (header.size > 0) std::memcpy(dst, header.data, header.size);
    if (pack::decode_into(v.view, dst + header.size, capacity - header.size) !=
        pack::FrameError::none) {
        process_packing().frame_rejected();  // cannot happen: capacity was checked
        log_rejected(length, "payload does not fit");
        return -1;
    }
    *am_id = v.view.orig_am_id();
    process_packing().frame_received();
    return static_cast<int64_t>(need);
}

void slim_core_bounce_config(size_t *buffer_size, unsigned *count, unsigned *grow)
{
    const slim::Engine *engine = slim::Engine::get();
    *buffer_size               = engine != nullptr ? engine->config().bounce_size : 0;
    *count                     = engine != nullptr ? engine->config().bounce_count : 0;
    *grow                      = engine != nullptr ? engine->config().bounce_grow : 0;
}

void slim_core_put_bounce_empty(const slim_frame_info_t *info)
{
    slim::process_packing().marked_unsent(info->marked_bytes);
    slim::process_packing().put_bounce_empty();
}

void slim_core_bounce_added(size_t bytes) { slim::process_packing().bounce_added(bytes); }

void slim_core_sync_unseen(uint64_t message_bytes)
{
    slim::process_packing().sync_unseen(message_bytes);
}

slim_frame_result_t slim_core_put_pack(const slim_put_request_t *request, void *wire,
                                       size_t wire_capacity, void *notice, slim_put_info_t *info)
{
    using namespace slim;

    *info                   = slim_put_info_t{};
    std::size_t payload_len = 0;
    MarkedPayload payload;
    const Engine *engine =
            find_marked_payload(request->pieces, request->piece_count, payload_len, payload);
    info->frame.payload_length = payload_len;
    if (engine == nullptr) {
        return SLIM_FRAME_UNMARKED;
    }
    if (payload.overflow || wire == nullptr || notice == nullptr ||
        engine->config().packing == PackingMode::off) {
        return unframed(&info->frame, payload.marked);
    }

    pack::PackedPutRequest rq;
    rq.source.pieces       = payload.pieces;
    rq.source.piece_count  = request->piece_count;
    rq.source.payload_addr = 0;
    rq.source.runs         = payload.runs;
    rq.source.run_count    = payload.run_count;
    rq.source.patches      = payload.patches;
    rq.source.patch_count  = payload.patch_count;
    rq.remote_addr         = request->remote_addr;
    rq.stream              = request->stream;
    rq.seq                 = request->seq;
    const pack::PackedPutResult result =
            pack::encode_packed_put(rq, static_cast<std::uint8_t *>(wire), wire_capacity,
                                    static_cast<std::uint8_t *>(notice), SLIM_EXPAND_NOTICE_MAX);
    if (!result.ok()) {
        return unframed(&info->frame, payload.marked);
    }
    if (result.stats.packed_elements == 0 && payload.patch_count == 0) {
        // Only parts of values that no mark holds whole: edge bytes that
        // travel exact, as in a frame; a notice would only cost a round
        // trip. (Parts of whole marked values go packed, quantized.)
        info->frame.marked_bytes = payload.marked;
        return SLIM_FRAME_EDGE_ONLY;
    }
    info->frame.frame_length = result.wire_len;
    info->frame.marked_bytes = payload.marked;
    info->frame.packed_bytes = result.stats.packed_elements * 8;
    info->wire_offset        = result.wire_offset;
    info->notice_length      = result.notice_len;
    note_precisions(payload);
    process_packing().put_packed();
    return SLIM_FRAME_READY;
}

int slim_core_expand_is_notice(const void *data, size_t length)
{
    return length > 0 && *static_cast<const std::uint8_t *>(data) == slim::pack::kExpandMagic;
}

struct slim_core_expander {
    slim::pack::ExpandSequencer sequencer;
};

slim_core_expander_t *slim_core_expander_open(void)
{
    try {
        return new slim_core_expander();
    } catch (const std::bad_alloc&) {
        return nullptr;  // the module goes on without expanding packed puts, and says so
    }
}

void slim_core_expander_close(slim_core_expander_t *expander) { delete expander; }

int slim_core_expand(slim_core_expander_t *expander, const void *notice, size_t length,
                     slim_expand_registered_cb_t registered, void *arg)
{
    using namespace slim;
    using Verdict = pack::ExpandSequencer::Verdict;

    auto reject = [&](const char *reason) {
        process_packing().frame_rejected();
        process_packing().notice_rejected();
        log_rejected(length, reason, "expand notice");
        return -1;
    };
    const pack::ExpandValidation v =
            pack::validate_expand_notice(static_cast<const std::uint8_t *>(notice), length);
    if (!v.ok()) {
        return reject(pack::expand_error_message(v.error));
    }
    if (expander == nullptr) {
        return reject("an expand notice arrived where no memory for its state was had");
    }
    switch (expander->sequencer.check(v.view.stream(), v.view.seq())) {
    case Verdict::accept: break;
    case Verdict::replayed: return reject("an expand notice that was applied already (replayed)");
    case Verdict::out_of_order:
        return reject("an expand notice out of order (its stream's previous notice is missing)");
    }
    if (registered == nullptr || !registered(arg, v.view.remote_addr(), v.view.orig_len())) {
        return reject("an expand notice names memory this process did not register for "
                      "remote puts (or no longer does)");
    }
    auto *destination             = reinterpret_cast<std::uint8_t *>(v.view.remote_addr());
    const pack::ExpandError error = pack::expand_in_place(v.view, destination);
    if (error != pack::ExpandError::none) {
        return reject(pack::expand_error_message(error));
    }
    process_packing().frame_received();
    return 0;
}

slim_status_t slim_packing_get(slim_packing_stats_t *out)
{
    if (out == nullptr) {
        return SLIM_ERR_INVALID;
    }
    *out = slim::process_packing().snapshot();
    return SLIM_OK;
}

}  // extern "C"

// SPDX-License-Identifier: BSD-3-Clause
// libFuzzer target for the packing frame (src/pack/frame.h) and the expand
// notice of packed puts (src/pack/expand_notice.h), built with
// clang++ -fsanitize=fuzzer,address by tests/fuzz/local.mk. Properties:
// - any input, taken as a received frame, is either rejected or decodes into
//   a buffer of exactly orig_payload_len bytes without touching anything else;
// - any input, taken as a received expand notice, is either rejected or
//   widens a destination of exactly orig_len bytes without touching anything
//   else;
// - any input, taken as a payload with runs drawn from its first bytes,
//   encodes into a frame that validates and rebuilds to the same length,
//   with every unpacked byte unchanged, and into a packed put whose notice
//   widens it to exactly what the frame rebuilds.
#include "pack/expand_notice.h"
#include "pack/frame.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

namespace {

using namespace slim::pack;

void check(bool ok)
{
    if (!ok) std::abort();
}

void fuzz_receive(const std::uint8_t *data, std::size_t size)
{
    // An exact-size copy so that ASan sees any read past the frame.
    const std::unique_ptr<std::uint8_t[]> frame(new std::uint8_t[size]);
    if (size > 0) std::memcpy(frame.get(), data, size);
    const FrameValidation v = validate_frame(frame.get(), size);
    if (!v.ok()) return;
    const std::size_t n = v.view.orig_payload_len();
    check(n <= 4 * size);  // keep >= 2: a valid frame cannot claim more
    const std::unique_ptr<std::uint8_t[]> out(new std::uint8_t[n + 1]);
    if (n > 0) check(decode_into(v.view, out.get(), n - 1) == FrameError::buffer_too_small);
    check(decode_into(v.view, out.get(), n) == FrameError::none);
}

// A destination holding the put the notice describes: its first and last
// packed bytes are the notice's, the rest whatever the input says.
void fuzz_notice(const std::uint8_t *data, std::size_t size)
{
    const std::unique_ptr<std::uint8_t[]> notice(new std::uint8_t[size]);
    if (size > 0) std::memcpy(notice.get(), data, size);
    const ExpandValidation v = validate_expand_notice(notice.get(), size);
    if (!v.ok()) return;
    const std::size_t n    = v.view.orig_len();
    const std::size_t wire = v.view.wire_len();
    check(wire >= 1 && wire <= n);
    if (n > (1u << 20)) return;  // valid, but too large to widen here
    const std::unique_ptr<std::uint8_t[]> dest(new std::uint8_t[n]);
    for (std::size_t i = 0; i < n; ++i)
        dest[i] = data[i % size];
    // The put's first and last bytes, as the notice says...
    std::uint8_t edge[8];
    const std::size_t k = wire < 8 ? wire : 8;
    for (int i = 0; i < 8; ++i)
        edge[i] = static_cast<std::uint8_t>(v.view.head() >> (8 * i));
    std::memcpy(dest.get(), edge, k);
    for (int i = 0; i < 8; ++i)
        edge[i] = static_cast<std::uint8_t>(v.view.tail() >> (8 * i));
    std::memcpy(dest.get() + wire - k, edge, k);
    // ... and widened once it does (unless head and tail, overlapping in a
    // put under 16 bytes, contradict each other).
    const ExpandError e = expand_in_place(v.view, dest.get());
    check(e == ExpandError::none || (wire < 16 && e == ExpandError::destination_mismatch));
}

void fuzz_send(const std::uint8_t *data, std::size_t size)
{
    if (size < 4) return;
    // Control bytes: number of runs, then per run (offset, length, precision).
    const std::size_t n_runs = data[0] % 5;
    if (size < 1 + 3 * n_runs) return;
    const std::uint8_t *control = data + 1;
    const std::uint8_t *payload = data + 1 + 3 * n_runs;
    const std::size_t len       = size - 1 - 3 * n_runs;
    const std::uintptr_t addr   = 0x10000;

    std::vector<MarkedRun> runs;
    std::uintptr_t at = addr;
    for (std::size_t i = 0; i < n_runs; ++i) {
        MarkedRun r;
        r.begin                = at + control[3 * i] % 64;
        r.end                  = r.begin + control[3 * i + 1] * 2u;
        r.region_base          = r.begin - (control[3 * i + 2] >> 5);
        r.precision.keep_bytes = 2 + control[3 * i + 2] % 6;
        r.precision.mode = (control[3 * i + 2] & 8) ? Rounding::nearest_even : Rounding::truncate;
        runs.push_back(r);
        at = r.end;
    }
    // The payload in up to three pieces, cut where the control bytes say.
    const std::size_t cut1  = len == 0 ? 0 : data[size - 1] % (len + 1);
    const std::size_t cut2  = cut1 + (len - cut1 == 0 ? 0 : data[size - 2] % (len - cut1 + 1));
    const ByteSpan pieces[] = {
            {payload, cut1}, {payload + cut1, cut2 - cut1}, {payload + cut2, len - cut2}};

    FrameRequest rq;
    rq.orig_am_id   = data[0];
    rq.header       = {data, data[1] % 9u <= size ? data[1] % 9u : 0};
    rq.pieces       = pieces;
    rq.piece_count  = 3;
    rq.payload_addr = addr;
    rq.runs         = runs.data();
    rq.run_count    = runs.size();

    const std::size_t max = frame_max_size(rq.header.size, len, runs.size());
    std::vector<std::uint8_t> frame(max);
    const FrameEncodeResult e = encode_frame(rq, frame.data(), frame.size());
    check(e.ok());
    check(e.size() <= max);
    check(e.stats.raw_bytes + 8 * e.stats.packed_elements == len);

    const FrameValidation v = validate_frame(frame.data(), e.size());
    check(v.ok());
    check(v.view.orig_payload_len() == len);
    std::vector<std::uint8_t> out(len);
    check(decode_into(v.view, out.data(), out.size()) == FrameError::none);
    std::size_t pos         = 0;
    const std::uint8_t *src = v.view.segment_data();
    for (std::size_t i = 0; i < v.view.segment_count(); ++i) {
        const FrameSegment s = v.view.segment(i);
        if (s.kind == SegmentKind::raw) {
            check(std::memcmp(out.data() + pos, payload + pos, s.orig_len) == 0);
            check(std::memcmp(src, payload + pos, s.orig_len) == 0);
        }
        pos += s.orig_len;
        src += s.wire_len;
    }
    check(pos == len);

    // The same payload as a packed put: widened, it is what the frame
    // rebuilt. The destination is exactly the payload's size.
    if (len == 0) return;
    PackedPutRequest put;
    put.source        = rq;
    put.source.header = {};
    put.remote_addr   = 0x20000;
    put.stream        = 1;
    put.seq           = 1;
    std::vector<std::uint8_t> buffer(frame_max_size(0, len, runs.size()));
    std::vector<std::uint8_t> notice(expand_notice_max_size(runs.size()));
    const PackedPutResult p =
            encode_packed_put(put, buffer.data(), buffer.size(), notice.data(), notice.size());
    check(p.ok());
    check(p.wire_len <= len);
    const ExpandValidation nv = validate_expand_notice(notice.data(), p.notice_len);
    check(nv.ok());
    check(nv.view.orig_len() == len && nv.view.wire_len() == p.wire_len);
    const std::unique_ptr<std::uint8_t[]> dest(new std::uint8_t[len]);
    std::memset(dest.get(), 0xA5, len);
    std::memcpy(dest.get(), buffer.data() + p.wire_offset, p.wire_len);
    check(expand_in_place(nv.view, dest.get()) == ExpandError::none);
    check(std::memcmp(dest.get(), out.data(), len) == 0);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t *data, std::size_t size)
{
    fuzz_receive(data, size);
    fuzz_notice(data, size);
    fuzz_send(data, size);
    return 0;
}

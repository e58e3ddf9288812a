/* SPDX-License-Identifier: BSD-3-Clause */
// Counters of lossy packing as the transport performed it (slimlink.h,
// slim_packing_stats_t). Like TrafficMonitor: relaxed atomics on the data
// path, read as a whole at report time.
#ifndef SLIM_RUNTIME_PACKING_MONITOR_H
#define SLIM_RUNTIME_PACKING_MONITOR_H

#include "pack/codec.h"
#include "slimlink.h"

#include <atomic>
#include <cstdint>
#include <optional>
#include <type_traits>

namespace slim {

// Mantissa bits a packed double keeps for sure (codec.h: relative error of a
// normal value <= 2^-(8k-12) truncated, <= 2^-(8k-11) rounded to nearest).
// This orders precisions from coarsest to finest: keep 3 rounded (13) lies
// between keep 3 truncated (12) and keep 4 truncated (20).
constexpr int guaranteed_bits(pack::Precision p) noexcept
{
    return 8 * p.keep_bytes - (p.mode == pack::Rounding::truncate ? 12 : 11);
}

// The worst relative error packing can have introduced into a normal double:
// 2^-min_bits over the coarsest precision anything was packed with. A bound
// from the precisions used, not a measurement; subnormals (|x| < 2^-1022)
// keep fewer bits and may lose more.
struct ErrorBound {
    int min_bits = 0;  // 0: nothing was packed

    bool packed() const noexcept { return min_bits > 0; }
    double relative() const noexcept;  // 2^-min_bits; 0 when nothing was packed
};

class PackingMonitor {
public:
    constexpr PackingMonitor() noexcept = default;

    PackingMonitor(const PackingMonitor&)            = delete;
    PackingMonitor& operator=(const PackingMonitor&) = delete;

    // A frame left in place of a message of payload_bytes (header included)
    // holding marked_bytes marked, packed_bytes of them packed.
    void frame_sent(std::uint64_t payload_bytes, std::uint64_t wire_bytes,
                    std::uint64_t marked_bytes, std::uint64_t packed_bytes) noexcept;
    // A message holding marked_bytes marked left unframed.
    void marked_unsent(std::uint64_t marked_bytes) noexcept;
    // A message whose marked_bytes are only parts of values, cut by its
    // edges, left as it was (edge bytes, not missed).
    void marked_edge(std::uint64_t marked_bytes) noexcept;
    void frame_received() noexcept { add(frames_received_, 1); }
    void frame_rejected() noexcept { add(frames_rejected_, 1); }
    // Packed puts (also counted as frames): one left packed; an expand
    // notice was rejected (also a frame rejected); a marked put went
    // unpacked because no bounce buffer was free (also missed bytes).
    void put_packed() noexcept { add(puts_packed_, 1); }
    void notice_rejected() noexcept { add(notices_rejected_, 1); }
    void put_bounce_empty() noexcept { add(bounce_empty_, 1); }
    // The bounce pools grew by one buffer of `bytes` (registered memory the
    // process keeps until its interface closes).
    void bounce_added(std::uint64_t bytes) noexcept
    {
        add(bounce_buffers_, 1);
        add(bounce_bytes_, bytes);
    }
    struct PutCounts {
        std::uint64_t puts_packed      = 0;
        std::uint64_t notices_rejected = 0;
        std::uint64_t bounce_empty     = 0;
        std::uint64_t bounce_buffers   = 0;  // over all interfaces' pools
        std::uint64_t bounce_bytes     = 0;
    };
    PutCounts put_counts() const noexcept;
    // A synchronous send of message_bytes went by am_bcopy while something
    // was marked: UCP copied it where slim never sees the sender's buffer,
    // so whether it held marked bytes is unknown (none of the byte counts
    // above include it).
    void sync_unseen(std::uint64_t message_bytes) noexcept
    {
        add(sync_unseen_sends_, 1);
        add(sync_unseen_bytes_, message_bytes);
    }
    struct Unseen {
        std::uint64_t sync_sends = 0;
        std::uint64_t sync_bytes = 0;  // their payload, marked or not
    };
    Unseen unseen() const noexcept;
    // Values were packed at `precision` (the frame path, per packed run).
    void packed_with(pack::Precision precision) noexcept;

    slim_packing_stats_t snapshot() const noexcept;
    ErrorBound error_bound() const noexcept;

private:
    static void add(std::atomic<std::uint64_t>& c, std::uint64_t v) noexcept
    {
        c.fetch_add(v, std::memory_order_relaxed);
    }

    std::atomic<std::uint64_t> frames_sent_{0};
    std::atomic<std::uint64_t> payload_bytes_{0};
    std::atomic<std::uint64_t> wire_bytes_{0};
    std::atomic<std::uint64_t> marked_bytes_{0};
    std::atomic<std::uint64_t> packed_bytes_{0};
    std::atomic<std::uint64_t> edge_bytes_{0};
    std::atomic<std::uint64_t> missed_bytes_{0};
    std::atomic<std::uint64_t> frames_received_{0};
    std::atomic<std::uint64_t> frames_rejected_{0};
    std::atomic<std::uint64_t> puts_packed_{0};
    std::atomic<std::uint64_t> notices_rejected_{0};
    std::atomic<std::uint64_t> bounce_empty_{0};
    std::atomic<std::uint64_t> bounce_buffers_{0};
    std::atomic<std::uint64_t> bounce_bytes_{0};
    std::atomic<std::uint64_t> sync_unseen_sends_{0};
    std::atomic<std::uint64_t> sync_unseen_bytes_{0};
    std::atomic<int> min_bits_{0};  // ErrorBound::min_bits
};

static_assert(std::is_trivially_destructible_v<PackingMonitor>);

// The process-wide counters that the slim_core_frame_* calls feed.
PackingMonitor& process_packing() noexcept;

}  // namespace slim

#endif

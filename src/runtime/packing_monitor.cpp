// SPDX-License-Identifier: BSD-3-Clause
#include "packing_monitor.h"

#include <cmath>

namespace slim {

double ErrorBound::relative() const noexcept { return packed() ? std::ldexp(1.0, -min_bits) : 0.0; }

void PackingMonitor::packed_with(pack::Precision precision) noexcept
{
    if (precision.keep_bytes < pack::kMinKeep || precision.keep_bytes > pack::kMaxKeep) {
        return;  // sent raw (encode_frame packs keep 2..7 only)
    }
    const int bits = guaranteed_bits(precision);
    // Relaxed min: one load per frame once the coarsest precision is known.
    int seen = min_bits_.load(std::memory_order_relaxed);
    while ((seen == 0 || bits < seen) &&
           !min_bits_.compare_exchange_weak(seen, bits, std::memory_order_relaxed)) {}
}

ErrorBound PackingMonitor::error_bound() const noexcept
{
    return ErrorBound{min_bits_.load(std::memory_order_relaxed)};
}

void PackingMonitor::frame_sent(std::uint64_t payload_bytes, std::uint64_t wire_bytes,
                                std::uint64_t marked_bytes, std::uint64_t packed_bytes) noexcept
{
    add(frames_sent_, 1);
    add(payload_bytes_, payload_bytes);
    add(wire_bytes_, wire_bytes);
    add(marked_bytes_, marked_bytes);
    add(packed_bytes_, packed_bytes);
    add(edge_bytes_, marked_bytes >= packed_bytes ? marked_bytes - packed_bytes : 0);
}

void PackingMonitor::marked_unsent(std::uint64_t marked_bytes) noexcept
{
    add(marked_bytes_, marked_bytes);
    add(missed_bytes_, marked_bytes);
}

void PackingMonitor::marked_edge(std::uint64_t marked_bytes) noexcept
{
    add(marked_bytes_, marked_bytes);
    add(edge_bytes_, marked_bytes);
}

slim_packing_stats_t PackingMonitor::snapshot() const noexcept
{
    slim_packing_stats_t s{};
    s.frames_sent     = frames_sent_.load(std::memory_order_relaxed);
    s.payload_bytes   = payload_bytes_.load(std::memory_order_relaxed);
    s.wire_bytes      = wire_bytes_.load(std::memory_order_relaxed);
    s.marked_bytes    = marked_bytes_.load(std::memory_order_relaxed);
    s.packed_bytes    = packed_bytes_.load(std::memory_order_relaxed);
    s.edge_bytes      = edge_bytes_.load(std::memory_order_relaxed);
    s.missed_bytes    = missed_bytes_.load(std::memory_order_relaxed);
    s.frames_received = frames_received_.load(std::memory_order_relaxed);
    s.frames_rejected = frames_rejected_.load(std::memory_order_relaxed);
    return s;
}

PackingMonitor::PutCounts PackingMonitor::put_counts() const noexcept
{
    PutCounts c;
    c.puts_packed      = puts_packed_.load(std::memory_order_relaxed);
    c.notices_rejected = notices_rejected_.load(std::memory_order_relaxed);
    c.bounce_empty     = bounce_empty_.load(std::memory_order_relaxed);
    c.bounce_buffers   = bounce_buffers_.load(std::memory_order_relaxed);
    c.bounce_bytes     = bounce_bytes_.load(std::memory_order_relaxed);
    return c;
}

PackingMonitor::Unseen PackingMonitor::unseen() const noexcept
{
    Unseen u;
    u.sync_sends = sync_unseen_sends_.load(std::memory_order_relaxed);
    u.sync_bytes = sync_unseen_bytes_.load(std::memory_order_relaxed);
    return u;
}

PackingMonitor& process_packing() noexcept
{
    // Constant-initialized, never destroyed: usable from any thread at any time.
    static PackingMonitor monitor;
    return monitor;
}

}  // namespace slim

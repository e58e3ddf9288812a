// Counters of lossy packing as the transport performed it (slimlink.h,
// slim_packing_stats_t). Like TrafficMonitor: relaxed atomics on the data
// path, read as a whole at report time.
#ifndef SLIM_RUNTIME_PACKING_MONITOR_H
#define SLIM_RUNTIME_PACKING_MONITOR_H

#include "slimlink.h"

#include <atomic>
#include <cstdint>
#include <type_traits>

namespace slim {

class PackingMonitor {
public:
    constexpr PackingMonitor() noexcept = default;

    PackingMonitor(const PackingMonitor &)            = delete;
    PackingMonitor &operator=(const PackingMonitor &) = delete;

    // A frame left in place of a message of payload_bytes (header included)
    // holding marked_bytes marked, packed_bytes of them packed.
    void frame_sent(std::uint64_t payload_bytes, std::uint64_t wire_bytes,
                    std::uint64_t marked_bytes, std::uint64_t packed_bytes) noexcept;
    // A message holding marked_bytes marked left unframed.
    void marked_unsent(std::uint64_t marked_bytes) noexcept;
    void frame_received() noexcept { add(frames_received_, 1); }
    void frame_rejected() noexcept { add(frames_rejected_, 1); }

    slim_packing_stats_t snapshot() const noexcept;

private:
    static void add(std::atomic<std::uint64_t> &c, std::uint64_t v) noexcept
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
};

static_assert(std::is_trivially_destructible_v<PackingMonitor>);

// The process-wide counters that the slim_core_frame_* calls feed.
PackingMonitor &process_packing() noexcept;

} // namespace slim

#endif

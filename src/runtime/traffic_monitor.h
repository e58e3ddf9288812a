/* SPDX-License-Identifier: BSD-3-Clause */
// Counts of the data operations `slim` observes, per operation kind and
// direction. Recording is a pair of relaxed atomic increments: the counters
// are only read as a whole at report time, when ordering no longer matters.
#ifndef SLIM_RUNTIME_TRAFFIC_MONITOR_H
#define SLIM_RUNTIME_TRAFFIC_MONITOR_H

#include "slim_core.h"
#include "slimlink.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace slim {

class TrafficMonitor {
public:
    // constexpr: the process-wide instance is constant-initialized, so it is
    // usable from any thread at any time, including from ELF constructors
    // that run before this library's dynamic initialization.
    constexpr TrafficMonitor() noexcept = default;

    TrafficMonitor(const TrafficMonitor&)            = delete;
    TrafficMonitor& operator=(const TrafficMonitor&) = delete;

    // Out-of-range kinds or directions are ignored: the data path never fails.
    void record(slim_op_t op, slim_dir_t dir, std::uint64_t bytes) noexcept
    {
        record_n(op, dir, 1, bytes);
    }
    // record() of `count` operations of `bytes` in all.
    void record_n(slim_op_t op, slim_dir_t dir, std::uint64_t count, std::uint64_t bytes) noexcept
    {
        if (static_cast<unsigned>(op) >= SLIM_OP_COUNT ||
            static_cast<unsigned>(dir) >= SLIM_DIR_COUNT) {
            return;
        }
        Cell& cell = cells_[op][dir];
        cell.count.fetch_add(count, std::memory_order_relaxed);
        cell.bytes.fetch_add(bytes, std::memory_order_relaxed);
    }

    // The same for a monitor that only one thread at a time writes (a UCT
    // interface's, see add_serial_traffic()): a load and a store per
    // counter, no locked instruction. Readers still see whole values.
    void record_serial(slim_op_t op, slim_dir_t dir, std::uint64_t bytes) noexcept
    {
        record_serial_n(op, dir, 1, bytes);
    }

    // record_serial() of `count` operations of `bytes` in all.
    void record_serial_n(slim_op_t op, slim_dir_t dir, std::uint64_t count,
                         std::uint64_t bytes) noexcept
    {
        if (static_cast<unsigned>(op) >= SLIM_OP_COUNT ||
            static_cast<unsigned>(dir) >= SLIM_DIR_COUNT) {
            return;
        }
        Cell& cell = cells_[op][dir];
        cell.count.store(cell.count.load(std::memory_order_relaxed) + count,
                         std::memory_order_relaxed);
        cell.bytes.store(cell.bytes.load(std::memory_order_relaxed) + bytes,
                         std::memory_order_relaxed);
    }

    // Adds `other`'s counts to this one's (atomically per counter).
    void add(const TrafficMonitor& other) noexcept;

    slim_traffic_t snapshot() const noexcept;
    void reset() noexcept;

private:
    struct Cell {
        std::atomic<std::uint64_t> count{0};
        std::atomic<std::uint64_t> bytes{0};
    };
    Cell cells_[SLIM_OP_COUNT][SLIM_DIR_COUNT];
};

// Never torn down: teardown code of UCX may still record at process exit.
static_assert(std::is_trivially_destructible_v<TrafficMonitor>);

// The process-wide counters that slim_core_traffic() feeds.
TrafficMonitor& process_traffic() noexcept;

// Serially written monitors (one per UCT interface) count towards the
// process's totals from add_serial_traffic() on; remove_serial_traffic()
// folds their counts into process_traffic(). Both lock: interface open and
// close, never the data path.
// `pending`: the tally whose counts the monitor's interface has not handed
// over yet (slim_core_tally_t), counted too by a snapshot; it must outlive
// remove_serial_traffic(), and be handed over before it. A snapshot taken
// by another thread while the interface hands it over may count a round's
// operations twice or not at all; one taken by the interface's own thread
// (the application's, between MPI calls) or after it closed is exact.
void add_serial_traffic(const TrafficMonitor *monitor, const slim_core_tally_t *pending = nullptr);
void remove_serial_traffic(const TrafficMonitor *monitor) noexcept;

// The process's totals: process_traffic() and every serial monitor.
slim_traffic_t process_traffic_snapshot() noexcept;

// Sum over operation kinds for one direction.
slim_counter_t total(const slim_traffic_t& traffic, slim_dir_t dir) noexcept;

}  // namespace slim

#endif

// SPDX-License-Identifier: BSD-3-Clause
#include "traffic_monitor.h"

#include "base/no_destructor.h"

#include <algorithm>
#include <mutex>
#include <vector>

namespace slim {

namespace {
// Constant initialization (constexpr constructor, static storage): no
// initialization-order hazard for callers in other translation units.
TrafficMonitor g_process_traffic;

struct SerialMonitor {
    const TrafficMonitor *monitor;
    const slim_core_tally_t *pending;  // may be null
};

struct SerialMonitors {
    std::mutex mutex;
    std::vector<SerialMonitor> live;
};

// What `tally` counted and has not handed over yet. Its interface's thread
// writes it with plain stores; aligned words read whole.
void accumulate_pending(slim_traffic_t& sum, const slim_core_tally_t& tally) noexcept
{
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        for (int dir = 0; dir < SLIM_DIR_COUNT; ++dir) {
            sum.op[op][dir].count += __atomic_load_n(&tally.count[op][dir], __ATOMIC_RELAXED);
            sum.op[op][dir].bytes += __atomic_load_n(&tally.bytes[op][dir], __ATOMIC_RELAXED);
        }
    }
}

// Never destroyed: UCX may close an interface after static destructors.
SerialMonitors& serial_monitors()
{
    static NoDestructor<SerialMonitors> monitors;
    return *monitors;
}

void accumulate(slim_traffic_t& sum, const slim_traffic_t& part) noexcept
{
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        for (int dir = 0; dir < SLIM_DIR_COUNT; ++dir) {
            sum.op[op][dir].count += part.op[op][dir].count;
            sum.op[op][dir].bytes += part.op[op][dir].bytes;
        }
    }
}
}  // namespace

void TrafficMonitor::add(const TrafficMonitor& other) noexcept
{
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        for (int dir = 0; dir < SLIM_DIR_COUNT; ++dir) {
            const Cell& from = other.cells_[op][dir];
            cells_[op][dir].count.fetch_add(from.count.load(std::memory_order_relaxed),
                                            std::memory_order_relaxed);
            cells_[op][dir].bytes.fetch_add(from.bytes.load(std::memory_order_relaxed),
                                            std::memory_order_relaxed);
        }
    }
}

void add_serial_traffic(const TrafficMonitor *monitor, const slim_core_tally_t *pending)
{
    SerialMonitors& m = serial_monitors();
    const std::lock_guard<std::mutex> lock(m.mutex);
    m.live.push_back(SerialMonitor{monitor, pending});
}

void remove_serial_traffic(const TrafficMonitor *monitor) noexcept
{
    SerialMonitors& m = serial_monitors();
    const std::lock_guard<std::mutex> lock(m.mutex);
    const auto it = std::find_if(m.live.begin(), m.live.end(), [monitor](const SerialMonitor& s) {
        return s.monitor == monitor;
    });
    if (it != m.live.end()) {
        // Under the lock, so a snapshot counts it exactly once.
        g_process_traffic.add(*monitor);
        m.live.erase(it);
    }
}

slim_traffic_t process_traffic_snapshot() noexcept
{
    SerialMonitors& m = serial_monitors();
    const std::lock_guard<std::mutex> lock(m.mutex);
    slim_traffic_t sum = g_process_traffic.snapshot();
    for (const SerialMonitor& s : m.live) {
        accumulate(sum, s.monitor->snapshot());
        if (s.pending != nullptr) {
            accumulate_pending(sum, *s.pending);
        }
    }
    return sum;
}

slim_traffic_t TrafficMonitor::snapshot() const noexcept
{
    slim_traffic_t out{};
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        for (int dir = 0; dir < SLIM_DIR_COUNT; ++dir) {
            out.op[op][dir].count = cells_[op][dir].count.load(std::memory_order_relaxed);
            out.op[op][dir].bytes = cells_[op][dir].bytes.load(std::memory_order_relaxed);
        }
    }
    return out;
}

void TrafficMonitor::reset() noexcept
{
    for (auto& per_op : cells_) {
        for (Cell& cell : per_op) {
            cell.count.store(0, std::memory_order_relaxed);
            cell.bytes.store(0, std::memory_order_relaxed);
        }
    }
}

TrafficMonitor& process_traffic() noexcept { return g_process_traffic; }

slim_counter_t total(const slim_traffic_t& traffic, slim_dir_t dir) noexcept
{
    slim_counter_t sum{};
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        sum.count += traffic.op[op][dir].count;
        sum.bytes += traffic.op[op][dir].bytes;
    }
    return sum;
}

}  // namespace slim

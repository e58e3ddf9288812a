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

struct SerialMonitors {
    std::mutex                          mutex;
    std::vector<const TrafficMonitor *> live;
};

// Never destroyed: UCX may close an interface after static destructors.
SerialMonitors &serial_monitors()
{
    static NoDestructor<SerialMonitors> monitors;
    return *monitors;
}

void accumulate(slim_traffic_t &sum, const slim_traffic_t &part) noexcept
{
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        for (int dir = 0; dir < SLIM_DIR_COUNT; ++dir) {
            sum.op[op][dir].count += part.op[op][dir].count;
            sum.op[op][dir].bytes += part.op[op][dir].bytes;
        }
    }
}
} // namespace

void TrafficMonitor::add(const TrafficMonitor &other) noexcept
{
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        for (int dir = 0; dir < SLIM_DIR_COUNT; ++dir) {
            const Cell &from = other.cells_[op][dir];
            cells_[op][dir].count.fetch_add(from.count.load(std::memory_order_relaxed),
                                            std::memory_order_relaxed);
            cells_[op][dir].bytes.fetch_add(from.bytes.load(std::memory_order_relaxed),
                                            std::memory_order_relaxed);
        }
    }
}

void add_serial_traffic(const TrafficMonitor *monitor)
{
    SerialMonitors &m = serial_monitors();
    const std::lock_guard<std::mutex> lock(m.mutex);
    m.live.push_back(monitor);
}

void remove_serial_traffic(const TrafficMonitor *monitor) noexcept
{
    SerialMonitors &m = serial_monitors();
    const std::lock_guard<std::mutex> lock(m.mutex);
    const auto it = std::find(m.live.begin(), m.live.end(), monitor);
    if (it != m.live.end()) {
        // Under the lock, so a snapshot counts it exactly once.
        g_process_traffic.add(*monitor);
        m.live.erase(it);
    }
}

slim_traffic_t process_traffic_snapshot() noexcept
{
    SerialMonitors &m = serial_monitors();
    const std::lock_guard<std::mutex> lock(m.mutex);
    slim_traffic_t sum = g_process_traffic.snapshot();
    for (const TrafficMonitor *monitor : m.live) {
        accumulate(sum, monitor->snapshot());
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
    for (auto &per_op : cells_) {
        for (Cell &cell : per_op) {
            cell.count.store(0, std::memory_order_relaxed);
            cell.bytes.store(0, std::memory_order_relaxed);
        }
    }
}

TrafficMonitor &process_traffic() noexcept { return g_process_traffic; }

slim_counter_t total(const slim_traffic_t &traffic, slim_dir_t dir) noexcept
{
    slim_counter_t sum{};
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        sum.count += traffic.op[op][dir].count;
        sum.bytes += traffic.op[op][dir].bytes;
    }
    return sum;
}

} // namespace slim

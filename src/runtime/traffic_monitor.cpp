#include "traffic_monitor.h"

namespace slim {

namespace {
// Constant initialization (constexpr constructor, static storage): no
// initialization-order hazard for callers in other translation units.
TrafficMonitor g_process_traffic;
} // namespace

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

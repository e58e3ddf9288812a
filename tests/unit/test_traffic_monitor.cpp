// SPDX-License-Identifier: BSD-3-Clause
#include "traffic_monitor.h"

#include <catch2/catch.hpp>

#include <thread>
#include <vector>

using slim::TrafficMonitor;

TEST_CASE("a new traffic monitor counts nothing")
{
    const TrafficMonitor monitor;
    const slim_traffic_t t = monitor.snapshot();
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        for (int dir = 0; dir < SLIM_DIR_COUNT; ++dir) {
            CHECK(t.op[op][dir].count == 0);
            CHECK(t.op[op][dir].bytes == 0);
        }
    }
}

TEST_CASE("the traffic monitor counts operations and bytes per kind and direction")
{
    TrafficMonitor monitor;
    monitor.record(SLIM_OP_AM_SHORT, SLIM_DIR_SEND, 8);
    monitor.record(SLIM_OP_AM_SHORT, SLIM_DIR_SEND, 16);
    monitor.record(SLIM_OP_AM_ANY, SLIM_DIR_RECV, 100);
    monitor.record(SLIM_OP_GET, SLIM_DIR_RECV, 4096);
    monitor.record(SLIM_OP_PUT, SLIM_DIR_SEND, 0);

    const slim_traffic_t t = monitor.snapshot();
    CHECK(t.op[SLIM_OP_AM_SHORT][SLIM_DIR_SEND].count == 2);
    CHECK(t.op[SLIM_OP_AM_SHORT][SLIM_DIR_SEND].bytes == 24);
    CHECK(t.op[SLIM_OP_AM_SHORT][SLIM_DIR_RECV].count == 0);
    CHECK(t.op[SLIM_OP_AM_ANY][SLIM_DIR_RECV].count == 1);
    CHECK(t.op[SLIM_OP_AM_ANY][SLIM_DIR_RECV].bytes == 100);
    CHECK(t.op[SLIM_OP_GET][SLIM_DIR_RECV].bytes == 4096);
    CHECK(t.op[SLIM_OP_PUT][SLIM_DIR_SEND].count == 1);
    CHECK(t.op[SLIM_OP_PUT][SLIM_DIR_SEND].bytes == 0);
    CHECK(t.op[SLIM_OP_AM_BCOPY][SLIM_DIR_SEND].count == 0);

    const slim_counter_t sent = slim::total(t, SLIM_DIR_SEND);
    const slim_counter_t recv = slim::total(t, SLIM_DIR_RECV);
    CHECK(sent.count == 3);
    CHECK(sent.bytes == 24);
    CHECK(recv.count == 2);
    CHECK(recv.bytes == 4196);
}

TEST_CASE("the traffic monitor ignores out-of-range kinds and directions")
{
    TrafficMonitor monitor;
    monitor.record(SLIM_OP_COUNT, SLIM_DIR_SEND, 1);
    monitor.record(static_cast<slim_op_t>(-1), SLIM_DIR_SEND, 1);
    monitor.record(SLIM_OP_PUT, SLIM_DIR_COUNT, 1);
    monitor.record(SLIM_OP_PUT, static_cast<slim_dir_t>(7), 1);
    const slim_traffic_t t = monitor.snapshot();
    CHECK(slim::total(t, SLIM_DIR_SEND).count == 0);
    CHECK(slim::total(t, SLIM_DIR_RECV).count == 0);
}

TEST_CASE("concurrent increments from four threads sum exactly")
{
    constexpr int threads    = 4;
    constexpr int per_thread = 200000;
    TrafficMonitor monitor;
    std::vector<std::thread> workers;
    for (int i = 0; i < threads; ++i) {
        workers.emplace_back([&monitor, i] {
            for (int n = 0; n < per_thread; ++n) {
                monitor.record(SLIM_OP_AM_BCOPY, SLIM_DIR_SEND, 3);
                monitor.record(static_cast<slim_op_t>(n % SLIM_OP_COUNT), SLIM_DIR_RECV,
                               static_cast<std::uint64_t>(i));
            }
        });
    }
    for (std::thread& w : workers) {
        w.join();
    }
    const slim_traffic_t t = monitor.snapshot();
    CHECK(t.op[SLIM_OP_AM_BCOPY][SLIM_DIR_SEND].count == threads * per_thread);
    CHECK(t.op[SLIM_OP_AM_BCOPY][SLIM_DIR_SEND].bytes == 3ull * threads * per_thread);
    CHECK(slim::total(t, SLIM_DIR_RECV).count == threads * per_thread);
    CHECK(slim::total(t, SLIM_DIR_RECV).bytes == 1ull * per_thread * (0 + 1 + 2 + 3));
}

TEST_CASE("reset clears every counter")
{
    TrafficMonitor monitor;
    monitor.record(SLIM_OP_ATOMIC, SLIM_DIR_SEND, 8);
    monitor.reset();
    CHECK(slim::total(monitor.snapshot(), SLIM_DIR_SEND).count == 0);
}

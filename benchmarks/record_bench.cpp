// SPDX-License-Identifier: BSD-3-Clause
// record-bench: what the send path's recording costs per message, in
// nanoseconds (issue 11). Bandwidth runs on a 2-core VM cannot resolve a
// cost of 1 % (tcp against itself spreads 2 - 4 %); this measures the
// recording itself, through the same C interface the `slim` module calls
// (slim_core_recorder_*, src/runtime/slim_core.h), with the process's real
// engine: configuration from UCX_SLIM_*, live loop and drain thread running.
//
// One "message" is what the sender of a 64 KiB rendezvous records over
// tcp (uprobe counts, issue 11): the request sent, the reply received, two
// puts in flight and their completions, two acknowledgements sent and one
// activity mark. Between messages the benchmark writes --evict KiB of
// memory, as the kernel's copy of the message's data does, so the
// recording state is found where the data path really finds it. Each
// message is timed alone; the same eviction followed by an empty timed
// section, in the same round, is the baseline subtracted (clock reads and
// what the eviction leaves behind).
//
// Prints medians of --rounds rounds, per message and per call.
// Usage: record-bench [--messages N] [--rounds R] [--evict KiB]...
#include "bench_cli.h"
#include "bench_stats.h"
#include "slim_core.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

namespace {

using SteadyClock = std::chrono::steady_clock;

// The calls of one message (see above).
constexpr int kCallsPerMessage = 9;

void record_message(slim_core_recorder_t *recorder)
{
    slim_core_recorder_traffic(recorder, SLIM_OP_AM_BCOPY, SLIM_DIR_SEND, 1, 96, 96, 1);
    slim_core_recorder_traffic(recorder, SLIM_OP_AM_ANY, SLIM_DIR_RECV, 2, 64, 64, 1);
    slim_core_recorder_in_flight(recorder, SLIM_OP_PUT, SLIM_DIR_SEND, 0, 40960, 40960, 1);
    slim_core_recorder_in_flight(recorder, SLIM_OP_PUT, SLIM_DIR_SEND, 0, 24576, 24576, 2);
    slim_core_recorder_completed(recorder);
    slim_core_recorder_completed(recorder);
    slim_core_recorder_traffic(recorder, SLIM_OP_AM_BCOPY, SLIM_DIR_SEND, 3, 32, 32, 1);
    slim_core_recorder_traffic(recorder, SLIM_OP_AM_BCOPY, SLIM_DIR_SEND, 3, 32, 32, 2);
    slim_core_recorder_activity(recorder);
}

// Writes one byte per cache line of `buffer`.
void evict(std::vector<unsigned char> &buffer)
{
    for (std::size_t i = 0; i < buffer.size(); i += 64) {
        buffer[i] = static_cast<unsigned char>(buffer[i] + 1);
    }
}

// Mean ns per message over `messages`, the baseline's subtracted.
double ns_per_message(slim_core_recorder_t *recorder, std::vector<unsigned char> &buffer,
                      long messages)
{
    double recorded = 0;
    double baseline = 0;
    for (long i = 0; i < messages; ++i) {
        evict(buffer);
        auto start = SteadyClock::now();
        record_message(recorder);
        recorded += std::chrono::duration<double, std::nano>(SteadyClock::now() - start).count();

        evict(buffer);
        start = SteadyClock::now();
        asm volatile("" ::: "memory");
        baseline += std::chrono::duration<double, std::nano>(SteadyClock::now() - start).count();
    }
    return (recorded - baseline) / static_cast<double>(messages);
}

}  // namespace

int main(int argc, char **argv)
{
    long             messages = 20000;
    int              rounds   = 7;
    std::vector<int> evict_kib;
    CLI::App app("Cost of recording one 64 KiB rendezvous message on the send path (9 calls "
                 "through the module's interface), with memory evicted between messages.",
                 "record-bench");
    bench::add_integer(app, "--messages", messages, 1, 100'000'000, "messages per round");
    bench::add_integer(app, "--rounds", rounds, 1, 1'000'000, "rounds; medians are reported");
    bench::add_integers(app, "--evict", evict_kib, 0, 1 << 20,
                        "KiB written between messages, repeatable (default 0, 256, 1024, "
                        "4096)")
            ->type_name("KiB");
    if (const int status = bench::parse(app, argc, argv); status >= 0) {
        return status;
    }
    if (evict_kib.empty()) {
        evict_kib = {0, 256, 1024, 4096};
    }

    if (slim_core_init() != SLIM_OK) {
        std::fprintf(stderr, "record-bench: slim_core_init failed (see the message above)\n");
        return 1;
    }
    slim_core_recorder_t *recorder = slim_core_recorder_open();
    if (recorder == nullptr) {
        std::fprintf(stderr, "record-bench: no recorder (out of memory?)\n");
        return 1;
    }

    std::printf("record-bench: %ld messages of %d calls per round, median of %d rounds\n",
                messages, kCallsPerMessage, rounds);
    std::printf("  %-24s %12s %12s\n", "evicted between", "ns/message", "ns/call");
    for (const int kib : evict_kib) {
        std::vector<unsigned char> buffer(static_cast<std::size_t>(kib) * 1024);
        std::vector<double>        per_message;
        for (int r = 0; r < rounds; ++r) {
            per_message.push_back(ns_per_message(recorder, buffer, messages));
        }
        const double m = bench::median(per_message);
        std::printf("  %-24s %12.1f %12.1f\n", (std::to_string(kib) + " KiB").c_str(), m,
                    m / kCallsPerMessage);
    }
    slim_core_recorder_close(recorder);
    return 0;
}

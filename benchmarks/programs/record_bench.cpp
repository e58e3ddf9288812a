// SPDX-License-Identifier: BSD-3-Clause
// record-bench: what recording costs per message, in nanoseconds.
// Bandwidth runs on a 2-core VM cannot resolve a cost of 1 % (tcp against
// itself spreads 2 - 4 %); this measures the recording itself, through the
// same inline functions and C interface the `slim` module uses
// (slim_core_tally_*, src/runtime/slim_core.h), with the process's real
// engine: configuration from UCX_SLIM_*, live loop and drain thread running.
//
// One "message" is what the sender of a 64 KiB rendezvous records over tcp
// (uprobe counts): the request sent, the reply received, two puts in
// flight and their completions, two acknowledgements sent and one activity
// mark: 9 entries in the interface's tally, on the operations' own path.
// They reach the core in --handovers progress rounds (default 3: the
// request goes out, the reply and the puts come in one round, the
// completions and the acknowledgements in another), each a clock read and
// one call, where the rank waits for the next arrival.
//
// Between messages the benchmark writes --evict KiB of memory, as the
// kernel's copy of the message's data does, so the recording state is found
// where the data path really finds it. Each message is timed alone; the
// same eviction followed by an empty timed section, in the same round, is
// the baseline subtracted (clock reads and what the eviction leaves behind).
//
// Prints medians of --rounds rounds: per message, what the operations pay
// (the critical path), what the hand-overs pay, and both.
// Usage: record-bench [--messages N] [--rounds R] [--handovers H] [--evict KiB]...
#include "bench_options.h"
#include "bench_stats.h"
#include "slim_core.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace {

using SteadyClock = std::chrono::steady_clock;

// The tally entries of one message (see above).
constexpr int kEntriesPerMessage = 9;

// The entries of one message, `handovers` - 1 of them handed over between
// them, as the progress rounds of the message do, when `recorder` is set.
void record_message(slim_core_tally_t *tally, slim_core_recorder_t *recorder, int handovers)
{
    int left             = handovers;
    const auto hand_over = [&] {
        if (recorder != nullptr && left > 1) {
            slim_core_tally_flush(recorder, tally);
            --left;
        }
    };
    slim_core_tally_op(tally, SLIM_OP_AM_BCOPY, SLIM_DIR_SEND, 1, 96, 96, 1);
    hand_over();
    slim_core_tally_op(tally, SLIM_OP_AM_ANY, SLIM_DIR_RECV, 2, 64, 64, 1);
    slim_core_tally_in_flight(tally, SLIM_OP_PUT, SLIM_DIR_SEND, 0, 40960, 1);
    slim_core_tally_in_flight(tally, SLIM_OP_PUT, SLIM_DIR_SEND, 0, 24576, 2);
    hand_over();
    slim_core_tally_completed(tally);
    slim_core_tally_completed(tally);
    slim_core_tally_op(tally, SLIM_OP_AM_BCOPY, SLIM_DIR_SEND, 3, 32, 32, 1);
    slim_core_tally_op(tally, SLIM_OP_AM_BCOPY, SLIM_DIR_SEND, 3, 32, 32, 2);
    slim_core_tally_activity(tally);
    if (recorder != nullptr) {
        slim_core_tally_flush(recorder, tally);
    }
}

// Writes one byte per cache line of `buffer`.
void evict(std::vector<unsigned char>& buffer)
{
    for (std::size_t i = 0; i < buffer.size(); i += 64) {
        buffer[i] = static_cast<unsigned char>(buffer[i] + 1);
    }
}

// Mean ns per message over `messages`, the baseline's subtracted: with
// the hand-overs when `recorder` is set, else the tally's entries alone
// (the tally is then emptied untimed, as a hand-over would).
double ns_per_message(slim_core_tally_t *tally, slim_core_recorder_t *recorder, int handovers,
                      std::vector<unsigned char>& buffer, long messages)
{
    double recorded = 0;
    double baseline = 0;
    for (long i = 0; i < messages; ++i) {
        evict(buffer);
        auto start = SteadyClock::now();
        record_message(tally, recorder, handovers);
        recorded += std::chrono::duration<double, std::nano>(SteadyClock::now() - start).count();
        if (recorder == nullptr) {
            *tally = slim_core_tally_t{};
        }

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
    long messages = 20000;
    int rounds    = 7;
    int handovers = 3;
    std::vector<int> evict_kib;
    CLI::App app("Cost of recording one 64 KiB rendezvous message: 9 tally entries on the "
                 "operations' path, handed over to the core in a few progress rounds, with "
                 "memory evicted between messages.",
                 "record-bench");
    bench::add_integer(app, "--messages", messages, 1, 100'000'000, "messages per round");
    bench::add_integer(app, "--rounds", rounds, 1, 1'000'000, "rounds; medians are reported");
    bench::add_integer(app, "--handovers", handovers, 1, kEntriesPerMessage,
                       "progress rounds that hand a message's entries over");
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
    slim_core_tally_t tally{};
    slim_core_recorder_t *recorder = slim_core_recorder_open(&tally);
    if (recorder == nullptr) {
        std::fprintf(stderr, "record-bench: no recorder (out of memory?)\n");
        return 1;
    }

    std::printf("record-bench: %ld messages of %d tally entries and %d hand-overs per round, "
                "median of %d rounds\n",
                messages, kEntriesPerMessage, handovers, rounds);
    std::printf("  %-16s %16s %16s %16s %16s\n", "evicted between", "entries ns/msg",
                "hand-overs ns/msg", "total ns/msg", "ns/hand-over");
    for (const int kib : evict_kib) {
        std::vector<unsigned char> buffer(static_cast<std::size_t>(kib) * 1024);
        std::vector<double> entries, total;
        for (int r = 0; r < rounds; ++r) {
            entries.push_back(ns_per_message(&tally, nullptr, handovers, buffer, messages));
            total.push_back(ns_per_message(&tally, recorder, handovers, buffer, messages));
        }
        const double e = bench::median(entries);
        const double t = bench::median(total);
        std::printf("  %-16s %16.1f %16.1f %16.1f %16.1f\n", (std::to_string(kib) + " KiB").c_str(),
                    e, t - e, t, (t - e) / handovers);
    }
    slim_core_recorder_close(recorder);
    return 0;
}

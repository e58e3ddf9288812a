/* SPDX-License-Identifier: BSD-3-Clause */
// Grace periods for the region registry's lock-free readers: a two-slot
// reader counter and a generation flip (the scheme of classic userspace RCU
// / SRCU, reduced to one structure). A reader
//   1. reads the generation g, increments readers[g & 1],
//   2. re-reads the generation; if it changed, undoes the increment and
//      retries (only when a writer flipped meanwhile: lock-free),
//   3. does its reads, decrements readers[g & 1].
// A writer that wants to free what it unlinked flips the generation and
// waits until the old slot drains: every reader that could have reached an
// unlinked node started before the flip. All of these are seq_cst.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

namespace slim::pack {

class GracePeriod {
public:
    // RAII read-side critical section: what was reachable when it began is
    // not freed while it lives.
    class ReadGuard {
    public:
        explicit ReadGuard(const GracePeriod& grace) : grace_(grace)
        {
            for (;;) {
                const std::uint64_t g = grace_.generation_.load();
                slot_                 = static_cast<unsigned>(g & 1U);
                grace_.readers_[slot_].fetch_add(1);
                if (grace_.generation_.load() == g) {
                    break;
                }
                grace_.readers_[slot_].fetch_sub(1);
            }
        }
        ~ReadGuard() { grace_.readers_[slot_].fetch_sub(1); }
        ReadGuard(const ReadGuard&)            = delete;
        ReadGuard& operator=(const ReadGuard&) = delete;

    private:
        const GracePeriod& grace_;
        unsigned slot_ = 0;
    };

    // Returns once every reader that began before the call has ended. One
    // writer at a time.
    void wait_for_readers()
    {
        const std::uint64_t g = generation_.fetch_add(1);
        const unsigned slot   = static_cast<unsigned>(g & 1U);
        while (readers_[slot].load() != 0) {
            std::this_thread::yield();
        }
    }

private:
    std::atomic<std::uint64_t> generation_{0};
    // Mutable: a reader (a const lookup) registers itself.
    mutable std::atomic<std::uint64_t> readers_[2] = {{0}, {0}};
};

}  // namespace slim::pack

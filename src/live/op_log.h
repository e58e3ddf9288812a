// Everything the drain replays, from every producer: one SerialOpRing per
// UCT interface (the send and receive path, no locked instruction per
// record) and one shared OpRing for the rest (the application's region
// calls, a transport that records without a ring of its own). The consumer
// takes records oldest first across all of them, so the loop sees one
// stream in time order whichever interface carried each operation.
//
// Rings are opened and closed on UCX's interface open and close, under a
// mutex that the consumer also holds while it drains: never on the data
// path. A closed ring is freed once the consumer has taken its last record,
// so nothing an interface recorded before it closed is lost.
#pragma once

#include "live/op_ring.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace slim::live {

class OpLog {
public:
    // `shared_capacity`: the shared ring; `serial_capacity`: each serial
    // ring (both rounded up to a power of two).
    OpLog(std::size_t shared_capacity, std::size_t serial_capacity);
    OpLog(const OpLog&) = delete;
    OpLog& operator=(const OpLog&) = delete;

    // Any thread, any time.
    OpRing& shared() noexcept { return shared_; }

    // A ring for one serial producer; throws std::bad_alloc.
    SerialOpRing* open_serial();
    // The producer is done with `ring` (it must not push again); the
    // consumer frees it once empty. Null is ignored.
    void close_serial(SerialOpRing* ring) noexcept;

    // The consumer only: hands every record now in the log to `each`, oldest
    // first (by t_ns; records with equal times in ring order), then frees
    // closed rings it emptied. Returns how many it handed over.
    template <typename F>
    std::uint64_t drain(F&& each)
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        std::uint64_t n = 0;
        for (;;) {
            SerialOpRing*   from = nullptr;
            const OpRecord* next = shared_head();
            for (const Source& s : serial_) {
                const OpRecord* r = s.ring->peek();
                if (r != nullptr && (next == nullptr || r->t_ns < next->t_ns)) {
                    next = r;
                    from = s.ring.get();
                }
            }
            if (next == nullptr) {
                break;
            }
            const OpRecord record = *next;
            if (from != nullptr) {
                from->pop();
            } else {
                shared_peeked_ = false;
            }
            ++n;
            each(record);
        }
        free_closed_locked();
        return n;
    }

    // Records lost to a full ring, over every ring the log ever had.
    std::uint64_t dropped() const noexcept;
    // Serial rings now open (tests).
    std::size_t serial_open() const noexcept;

private:
    struct Source {
        std::unique_ptr<SerialOpRing> ring;
        bool                          closed = false;
    };

    const OpRecord* shared_head() noexcept;
    void            free_closed_locked() noexcept;

    OpRing              shared_;
    std::size_t         serial_capacity_;
    mutable std::mutex  mutex_;
    std::vector<Source> serial_;             // under mutex_
    std::uint64_t       closed_dropped_ = 0; // under mutex_: freed rings' drops
    OpRecord            shared_next_;        // the consumer's peeked record
    bool                shared_peeked_ = false;
};

}  // namespace slim::live

// The send path's record log (ARCHITECTURE.md §1, "the fast path records"):
// a bounded ring of operation records, written by any thread that sends or
// receives through `slim`, read by one consumer (the LiveDrain thread) that
// forms bursts and runs the predictor off that path.
//
// A push is a clock read, one compare-and-swap on the head and a few stores:
// no lock, no allocation, no system call, no thread wake (UCX's
// OptimizationStyle.md). The consumer is never woken by a push; it wakes on
// its own schedule. A full ring drops the record and counts it: the send
// path never waits for the consumer.
//
// The ring is Vyukov's bounded queue: each slot carries a sequence number
// that says whether it is free for the producer holding ticket `seq` or
// holds the record of ticket `seq - 1` for the consumer.
#pragma once

#include "predict/types.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace slim::live {

using predict::TimeNs;

// What the consumer replays, in the order it was pushed.
enum class OpKind : std::uint8_t {
    traffic,       // a data operation (the fields below)
    region_begin,  // slim_region_begin: ratio in `ratio`
    region_end,    // slim_region_end
};

// 32 bytes: a UCT operation carries less than 4 GiB (max_zcopy), and a
// region's ratio needs no double.
struct OpRecord {
    TimeNs         t_ns       = 0;
    std::uintptr_t peer       = 0;
    std::uint32_t  wire_bytes = 0;
    std::uint32_t  orig_bytes = 0;
    float          ratio      = 1.0f;  // region_begin only
    std::uint8_t   op_class   = 0;
    std::uint8_t   am_id      = 0;
    bool           send       = true;
    OpKind         kind       = OpKind::traffic;

    static std::uint32_t clamp_bytes(std::uint64_t bytes) noexcept
    {
        return bytes > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(bytes);
    }
};

class OpRing {
public:
    // `capacity` is rounded up to a power of two (at least 2).
    explicit OpRing(std::size_t capacity)
    {
        std::size_t n = 2;
        while (n < capacity) {
            n <<= 1;
        }
        mask_  = n - 1;
        slots_ = std::make_unique<Slot[]>(n);
        for (std::size_t i = 0; i < n; ++i) {
            slots_[i].seq.store(i, std::memory_order_relaxed);
        }
    }

    // Any thread. False when the ring is full (the record is dropped and
    // counted).
    bool push(const OpRecord& record) noexcept
    {
        std::uint64_t ticket = head_.load(std::memory_order_relaxed);
        for (;;) {
            Slot& slot = slots_[ticket & mask_];
            const std::uint64_t seq = slot.seq.load(std::memory_order_acquire);
            if (seq == ticket) {
                if (head_.compare_exchange_weak(ticket, ticket + 1, std::memory_order_relaxed)) {
                    slot.record = record;
                    slot.seq.store(ticket + 1, std::memory_order_release);
                    return true;
                }
            } else if (seq < ticket) {
                dropped_.fetch_add(1, std::memory_order_relaxed);
                return false;
            } else {
                ticket = head_.load(std::memory_order_relaxed);
            }
        }
    }

    // The consumer only: the oldest record, if one is complete.
    bool pop(OpRecord& out) noexcept
    {
        Slot& slot = slots_[tail_ & mask_];
        if (slot.seq.load(std::memory_order_acquire) != tail_ + 1) {
            return false;
        }
        out = slot.record;
        slot.seq.store(tail_ + mask_ + 1, std::memory_order_release);
        ++tail_;
        return true;
    }

    std::size_t   capacity() const noexcept { return mask_ + 1; }
    std::uint64_t pushed() const noexcept { return head_.load(std::memory_order_relaxed); }
    std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

private:
    struct Slot {
        std::atomic<std::uint64_t> seq{0};
        OpRecord                   record;
    };

    std::size_t                mask_ = 0;
    std::unique_ptr<Slot[]>    slots_;
    alignas(64) std::atomic<std::uint64_t> head_{0};
    alignas(64) std::atomic<std::uint64_t> dropped_{0};
    alignas(64) std::uint64_t  tail_ = 0;  // consumer only
};

// The ring of one serial producer: a UCT interface, whose operations UCX
// never runs two at a time (one thread, or threads that hand the interface
// over with a lock or a join, which orders their accesses). A push is a few
// plain stores and one release store: no compare-and-swap, no locked
// instruction, and no load of a line the consumer writes except when the
// ring looks full (Lamport's queue with a cached consumer index). This is
// what `slim` records on: the CAS and the slot's sequence load of OpRing
// cost ~2 % of a 4 us loopback ping-pong (issue 11).
class SerialOpRing {
public:
    // `capacity` is rounded up to a power of two (at least 2).
    explicit SerialOpRing(std::size_t capacity)
    {
        std::size_t n = 2;
        while (n < capacity) {
            n <<= 1;
        }
        mask_  = n - 1;
        slots_ = std::make_unique<OpRecord[]>(n);
    }

    // The producer. False when the ring is full (the record is dropped and
    // counted).
    bool push(const OpRecord& record) noexcept
    {
        const std::uint64_t head = head_.load(std::memory_order_relaxed);
        if (head - tail_seen_ > mask_) {
            tail_seen_ = tail_.load(std::memory_order_acquire);
            if (head - tail_seen_ > mask_) {
                // One writer: a load and a store, not a locked add.
                dropped_.store(dropped_.load(std::memory_order_relaxed) + 1,
                               std::memory_order_relaxed);
                return false;
            }
        }
        slots_[head & mask_] = record;
        head_.store(head + 1, std::memory_order_release);
        return true;
    }

    // The consumer: the oldest record without taking it.
    const OpRecord* peek() noexcept
    {
        if (tail_local_ == head_seen_) {
            head_seen_ = head_.load(std::memory_order_acquire);
            if (tail_local_ == head_seen_) {
                return nullptr;
            }
        }
        return &slots_[tail_local_ & mask_];
    }

    // The consumer: drops the record peek() returned.
    void pop() noexcept
    {
        ++tail_local_;
        tail_.store(tail_local_, std::memory_order_release);
    }

    std::size_t   capacity() const noexcept { return mask_ + 1; }
    std::uint64_t pushed() const noexcept { return head_.load(std::memory_order_relaxed); }
    std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

private:
    std::size_t                 mask_ = 0;
    std::unique_ptr<OpRecord[]> slots_;
    // The producer's line: what it writes and its copy of the consumer's index.
    alignas(64) std::atomic<std::uint64_t> head_{0};
    std::atomic<std::uint64_t>  dropped_{0};
    std::uint64_t               tail_seen_ = 0;
    // The consumer's line.
    alignas(64) std::atomic<std::uint64_t> tail_{0};
    std::uint64_t               tail_local_ = 0;
    std::uint64_t               head_seen_  = 0;
};

}  // namespace slim::live

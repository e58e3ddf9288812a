/* SPDX-License-Identifier: BSD-3-Clause */
// The record logs the live loop drains (ARCHITECTURE.md §1, "the fast path
// records"), read by one consumer (the LiveDrain thread) that forms bursts
// and runs the predictor off the send path. Two kinds:
//
// OpRing, for records from any thread (the application's region calls, an
// interface without a log of its own): a push is one compare-and-swap on
// the head and a few stores. It is Vyukov's bounded queue: each slot
// carries a sequence number that says whether it is free for the producer
// holding ticket `seq` or holds the record of ticket `seq - 1`.
//
// SerialOpRing, one per UCT interface (below): no locked instruction, and
// a slot only where a run of operations starts.
//
// Neither takes a lock, allocates, makes a system call or wakes a thread
// (UCX's OptimizationStyle.md). The consumer is never woken by a push; it
// wakes on its own schedule. A full ring drops the record and counts it:
// the send path never waits for the consumer.
#pragma once

#include "base/power_of_two.h"
#include "predict/types.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

namespace slim::live {

using predict::TimeNs;

// What the consumer replays, in the order it was pushed.
enum class OpKind : std::uint8_t {
    traffic,       // a data operation (the fields below)
    region_begin,  // slim_region_begin: ratio in `ratio`
    region_end,    // slim_region_end
    // A wait of the rank: wait_begin at its first timed round, while it
    // lasts (slim_core_wait_begin), wait_end once it ended
    // (slim_core_wait_record). wait_end carries the time the wait spent
    // blocked (yield mode) in `peer` and how far it reached before its
    // begin's stamp in `orig_bytes`, both in the stamp's unit, and how
    // many times it blocked in `wire_bytes`.
    wait_begin,
    wait_end,
};

// Whether a record stands for a data operation (it counts in a producer's
// totals) rather than a marker beside them (regions, waits).
inline constexpr bool is_operation(OpKind kind) noexcept { return kind == OpKind::traffic; }

// How long an operation in flight keeps its run going with nothing else
// happening (SerialOpRing::record, LiveLoop). A verbs completion comes
// when the data has crossed (a 64 MiB get on EDR: 5.4 ms); over tcp a put
// completes at the peer's acknowledgement, which waits for the peer's
// progress, so a put to a peer that computes before reading its last bytes
// would otherwise hold the link busy in the model for the whole compute
// phase. A completion that never comes holds no longer than this either.
inline constexpr TimeNs kInFlightHoldNs = 10'000'000;

// OpRecord::op_class of activity the inner transport reported without an
// operation slim saw (slim_core_tally_activity): one past slim_op_t's
// classes.
inline constexpr std::uint8_t kActivityOpClass = 7;

// 32 bytes: a UCT operation carries less than 4 GiB (max_zcopy), and a
// region's ratio needs no double.
struct OpRecord {
    TimeNs t_ns              = 0;
    std::uintptr_t peer      = 0;
    std::uint32_t wire_bytes = 0;
    std::uint32_t orig_bytes = 0;
    float ratio              = 1.0f;  // region_begin only
    std::uint8_t op_class    = 0;
    std::uint8_t am_id       = 0;
    bool send                = true;
    OpKind kind              = OpKind::traffic;

    static std::uint32_t clamp_bytes(std::uint64_t bytes) noexcept
    {
        return bytes > UINT32_MAX ? UINT32_MAX : static_cast<std::uint32_t>(bytes);
    }
};

// A ring's slot count: `capacity` rounded up to a power of two, at least 2.
inline std::size_t ring_slots(std::size_t capacity) noexcept
{
    return power_of_two_at_least(capacity < 2 ? 2 : capacity);
}

class OpRing {
public:
    // `capacity` is rounded up to a power of two (at least 2).
    explicit OpRing(std::size_t capacity)
    {
        const std::size_t n = ring_slots(capacity);
        mask_               = n - 1;
        slots_              = std::make_unique<Slot[]>(n);
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
            Slot& slot              = slots_[ticket & mask_];
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

    std::size_t capacity() const noexcept { return mask_ + 1; }
    std::uint64_t pushed() const noexcept { return head_.load(std::memory_order_relaxed); }
    std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

private:
    struct Slot {
        std::atomic<std::uint64_t> seq{0};
        OpRecord record;
    };

    std::size_t mask_ = 0;
    std::unique_ptr<Slot[]> slots_;
    alignas(64) std::atomic<std::uint64_t> head_{0};
    alignas(64) std::atomic<std::uint64_t> dropped_{0};
    alignas(64) std::uint64_t tail_ = 0;  // consumer only
};

// What one serial producer (a UCT interface) has done so far: the time of
// its latest operation and running totals over all its operations.
struct SerialTotals {
    TimeNs last_t      = 0;
    std::uint64_t ops  = 0;
    std::uint64_t orig = 0;  // bytes before packing
    std::uint64_t wire = 0;  // bytes on the wire
    // Gaps longer than the split gap that coalescing hid (SerialOpRing::
    // record): what the live loop would have seen as separate runs.
    std::uint64_t splits = 0;
    // Zero-copy operations that went in flight (the inner transport
    // completes them later) and those that completed: while more began
    // than ended, the link carries their data and the run goes on.
    std::uint64_t began = 0;
    std::uint64_t ended = 0;

    std::uint64_t in_flight() const noexcept { return began - ended; }
    // Whether these totals count anything `other` does not.
    bool ahead_of(const SerialTotals& other) const noexcept
    {
        return ops > other.ops || began > other.began || ended > other.ended;
    }

    // The totals once `op` is counted too.
    void add(const OpRecord& op) noexcept
    {
        last_t = std::max(last_t, op.t_ns);
        ops += 1;
        orig += op.orig_bytes;
        wire += op.wire_bytes;
    }
};

// What a serial producer did between two stamps (the module's tally,
// slim_core_tally_t), all at one time: `first.t_ns`.
struct OpBatch {
    OpRecord first;       // the first operation (t_ns: the stamp)
    OpRecord first_send;  // the first send, when has_send
    bool has_send       = false;
    std::uint64_t ops   = 0;  // every operation, the first ones included
    std::uint64_t orig  = 0;
    std::uint64_t wire  = 0;
    std::uint64_t began = 0;  // of them, went in flight
    std::uint64_t ended = 0;  // completions (of these or earlier ones)
};

// A record of a serial producer: the operation, and the producer's totals
// just before it. The operations between the previous record and this one
// (those it coalesced, see SerialOpRing::record) are the difference of the
// totals; they ran without a gap longer than the coalescing gap, the last
// of them at `before.last_t`.
struct SerialRecord {
    OpRecord op;
    SerialTotals before;
};

// The log of one serial producer: a UCT interface, whose operations UCX
// never runs two at a time (one thread, or threads that hand the interface
// over with a lock or a join, which orders their accesses).
//
// record() writes a ring slot only for an operation that starts a run (the
// first after a gap longer than the coalescing gap) or is the run's first
// send: what names a burst (LiveLoop::event_id). Every other operation only
// updates the published totals (a few plain stores to the producer's own
// cache line, under a sequence counter). Within a run the live loop needs
// nothing else: such an operation only extends the open burst and adds its
// bytes (LiveLoop::extend_burst). Writing a 40-byte slot per operation cost
// ~2 % of a 4 us loopback ping-pong, more than the slot's stores suggest,
// because a ring larger than the cache misses on every line; a
// ping-pong now writes two slots in all.
//
// The ring itself is Lamport's queue with cached indices: a push is plain
// stores and one release store, no compare-and-swap, no locked instruction.
class SerialOpRing {
public:
    // `capacity` is rounded up to a power of two (at least 2).
    explicit SerialOpRing(std::size_t capacity)
        : mask_(ring_slots(capacity) - 1), slots_(std::make_unique<SerialRecord[]>(mask_ + 1))
    {}

    // The producer: one operation at `op.t_ns`. Operations at most
    // `coalesce_gap` after the previous one are folded into the totals
    // unless they are the run's first send; those of them more than
    // `split_gap` after the previous one are counted (SerialTotals::splits).
    // Set `coalesce_gap` to the live loop's burst gap or less: then the
    // loop's bursts come out the same as if every operation had been
    // logged. `split_gap`: the loop's configured gap, at most coalesce_gap.
    // While an operation is in flight no gap up to `hold_gap`
    // (kInFlightHoldNs, in the same unit as the times) ends the run: its
    // data is on the wire. `in_flight`: this operation completes later
    // (end_in_flight()).
    void record(const OpRecord& op, TimeNs coalesce_gap, TimeNs split_gap, bool in_flight = false,
                TimeNs hold_gap = kInFlightHoldNs) noexcept
    {
        OpBatch b;
        b.first      = op;
        b.first_send = op;
        b.has_send   = op.send;
        b.ops        = 1;
        b.orig       = op.orig_bytes;
        b.wire       = op.wire_bytes;
        b.began      = in_flight ? 1 : 0;
        record_batch(b, coalesce_gap, split_gap, hold_gap);
    }
    void record(const OpRecord& op, TimeNs coalesce_gap) noexcept
    {
        record(op, coalesce_gap, coalesce_gap);
    }

    // The producer: a batch of operations stamped at one time, as each of
    // them recorded on its own at that time, in turn, and its completions
    // after them would have been: at most two slots (the run's start and
    // its first send), one publication. record() and end_in_flight() are
    // batches of one.
    void record_batch(const OpBatch& b, TimeNs coalesce_gap, TimeNs split_gap,
                      TimeNs hold_gap = kInFlightHoldNs) noexcept
    {
        const TimeNs t = b.first.t_ns;
        if (b.ops != 0) {
            const TimeNs gap   = t - own_.last_t;
            const bool busy    = own_.in_flight() != 0 && gap <= hold_gap;
            const bool new_run = (gap > coalesce_gap && !busy) || own_.ops == 0;
            if (new_run || (b.first.send && !run_has_send_)) {
                push(SerialRecord{b.first, own_});
                run_has_send_ = new_run ? b.first.send : true;
            } else if (gap > split_gap && !busy) {
                ++own_.splits;
            }
            own_.add(b.first);
            std::uint64_t ops  = b.ops - 1;
            std::uint64_t orig = b.orig - std::min<std::uint64_t>(b.orig, b.first.orig_bytes);
            std::uint64_t wire = b.wire - std::min<std::uint64_t>(b.wire, b.first.wire_bytes);
            if (b.has_send && !run_has_send_ && ops != 0) {
                OpRecord send = b.first_send;
                send.t_ns     = t;
                push(SerialRecord{send, own_});
                run_has_send_ = true;
                own_.add(send);
                ops -= 1;
                orig -= std::min<std::uint64_t>(orig, send.orig_bytes);
                wire -= std::min<std::uint64_t>(wire, send.wire_bytes);
            }
            own_.ops += ops;
            own_.orig += orig;
            own_.wire += wire;
            own_.began += b.began;
        }
        // A completion nothing began is ignored, as in end_in_flight().
        const std::uint64_t ended = std::min(b.ended, own_.in_flight());
        if (ended != 0) {
            own_.ended += ended;
            own_.last_t = std::max(own_.last_t, t);
        }
        publish();
    }

    // The producer: an operation recorded in flight completed at `t`. The
    // run it kept going lasts at least until then; never a ring slot (a
    // run with an operation in flight never ended). A completion nothing
    // began is ignored.
    void end_in_flight(TimeNs t) noexcept
    {
        OpBatch b;
        b.first.t_ns = t;
        b.ended      = 1;
        record_batch(b, 0, 0);
    }

    // The producer: appends a record as it is. False when the ring is full
    // (the record is dropped and counted).
    bool push(const SerialRecord& record) noexcept
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

    // The producer: a marker (a wait's begin or end) between its
    // operations: a slot of its own that counts in no totals.
    bool push_marker(const OpRecord& marker) noexcept { return push(SerialRecord{marker, own_}); }

    // The consumer: the oldest record without taking it.
    const SerialRecord *peek() noexcept
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

    // Any thread: the totals as of some recent operation, or nothing when
    // the producer was caught writing them several times in a row (it may
    // be preempted mid-write; the reader never waits for it). Every record
    // of an operation these totals include is already in the ring.
    std::optional<SerialTotals> totals() const noexcept
    {
        for (int attempt = 0; attempt < 64; ++attempt) {
            const std::uint64_t s1 = seq_.load(std::memory_order_acquire);
            if (s1 & 1) {
                cpu_relax();
                continue;
            }
            SerialTotals t;
            t.last_t = pub_last_t_.load(std::memory_order_relaxed);
            t.ops    = pub_ops_.load(std::memory_order_relaxed);
            t.orig   = pub_orig_.load(std::memory_order_relaxed);
            t.wire   = pub_wire_.load(std::memory_order_relaxed);
            t.splits = pub_splits_.load(std::memory_order_relaxed);
            t.began  = pub_began_.load(std::memory_order_relaxed);
            t.ended  = pub_ended_.load(std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_acquire);
            if (seq_.load(std::memory_order_relaxed) == s1) {
                return t;
            }
        }
        return std::nullopt;
    }

    std::size_t capacity() const noexcept { return mask_ + 1; }
    std::uint64_t pushed() const noexcept { return head_.load(std::memory_order_relaxed); }
    std::uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }

private:
    static void cpu_relax() noexcept
    {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    }

    // A sequence lock with one writer: odd while the totals change. On x86
    // the fences are compiler barriers only.
    void publish() noexcept
    {
        const std::uint64_t s = seq_.load(std::memory_order_relaxed);
        seq_.store(s + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        pub_last_t_.store(own_.last_t, std::memory_order_relaxed);
        pub_ops_.store(own_.ops, std::memory_order_relaxed);
        pub_orig_.store(own_.orig, std::memory_order_relaxed);
        pub_wire_.store(own_.wire, std::memory_order_relaxed);
        pub_splits_.store(own_.splits, std::memory_order_relaxed);
        pub_began_.store(own_.began, std::memory_order_relaxed);
        pub_ended_.store(own_.ended, std::memory_order_relaxed);
        seq_.store(s + 2, std::memory_order_release);
    }

    std::size_t mask_ = 0;
    std::unique_ptr<SerialRecord[]> slots_;
    // The producer's line: what it writes, and its copy of the consumer's
    // index.
    alignas(64) std::atomic<std::uint64_t> head_{0};
    std::atomic<std::uint64_t> dropped_{0};
    std::uint64_t tail_seen_ = 0;
    SerialTotals own_;
    bool run_has_send_ = false;
    // The published totals: written by the producer per operation, read by
    // the consumer once per drain round.
    alignas(64) std::atomic<std::uint64_t> seq_{0};
    std::atomic<TimeNs> pub_last_t_{0};
    std::atomic<std::uint64_t> pub_ops_{0};
    std::atomic<std::uint64_t> pub_orig_{0};
    std::atomic<std::uint64_t> pub_wire_{0};
    std::atomic<std::uint64_t> pub_splits_{0};
    std::atomic<std::uint64_t> pub_began_{0};
    std::atomic<std::uint64_t> pub_ended_{0};
    // The consumer's line.
    alignas(64) std::atomic<std::uint64_t> tail_{0};
    std::uint64_t tail_local_ = 0;
    std::uint64_t head_seen_  = 0;
};

}  // namespace slim::live

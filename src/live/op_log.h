/* SPDX-License-Identifier: BSD-3-Clause */
// Everything the drain replays, from every producer: one SerialOpRing per
// UCT interface (the send and receive path: no locked instruction, and a
// ring slot only where a run of operations starts, see SerialOpRing) and
// one shared OpRing for the rest (the application's region calls, a
// transport that records without a ring of its own). The consumer takes
// items oldest first across all of them, so the loop sees one stream in
// time order whichever interface carried each operation.
//
// An item is either one logged operation or a *continuation*: operations an
// interface coalesced, which kept it busy without a gap longer than the
// coalescing gap from `start` (its last operation the log had handed over)
// to `end`. Continuations come from the totals a record carries and, for a
// run still going on, from the interface's published totals, read once at
// the start of each drain.
//
// Rings are opened and closed on UCX's interface open and close, under a
// mutex that the consumer also holds while it drains: never on the data
// path. A closed ring is freed once the consumer has taken all it logged,
// so nothing an interface did before it closed is lost.
#pragma once

#include "live/op_ring.h"
#include "live/record_clock.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

namespace slim::live {

struct LogItem {
    enum class Kind : std::uint8_t { op, continuation };
    Kind kind = Kind::op;
    OpRecord op;               // Kind::op
    TimeNs start         = 0;  // Kind::continuation: busy from start ...
    TimeNs end           = 0;  // ... through end
    std::uint64_t ops    = 0;  // the operations it stands for
    std::uint64_t orig   = 0;  // and their bytes
    std::uint64_t wire   = 0;
    std::uint64_t splits = 0;  // gaps in it longer than the split gap
    std::uint64_t began  = 0;  // operations that went in flight in it
    std::uint64_t ended  = 0;  // and in-flight operations that completed

    // Where the item sits in time order.
    TimeNs at() const noexcept { return kind == Kind::op ? op.t_ns : start; }
};

// What one drain handed over.
struct DrainResult {
    std::uint64_t items = 0;
    std::uint64_t ops   = 0;  // operations, coalesced ones included
    // False when an interface's published totals could not be read (its
    // thread was preempted mid-update): operations of a run going on may be
    // missing, so the caller must not act on idle time after them this
    // round.
    bool complete = true;
};

class OpLog {
public:
    // `shared_capacity`: the shared ring; `serial_capacity`: each serial
    // ring (both rounded up to a power of two). `coalesce_gap`: what
    // serial rings fold (SerialOpRing::record); the live loop's burst gap.
    // Serial rings are stamped with `clock` (in its ticks), the shared ring
    // with the steady clock; items come out in steady nanoseconds.
    OpLog(std::size_t shared_capacity, std::size_t serial_capacity, TimeNs coalesce_gap,
          RecordClock clock = {});
    OpLog(const OpLog&)            = delete;
    OpLog& operator=(const OpLog&) = delete;

    // Any thread, any time.
    OpRing& shared() noexcept { return shared_; }

    // What serial producers stamp with, and their coalescing gap in its
    // ticks (SerialOpRing::record's argument).
    const RecordClock& clock() const noexcept { return clock_; }
    TimeNs coalesce_ticks() const noexcept
    {
        return coalesce_ticks_.load(std::memory_order_relaxed);
    }
    // The gap given at construction, in ticks: gaps longer than it inside
    // a coalesced run are counted (SerialOpRing::record's split_gap).
    TimeNs split_ticks() const noexcept { return split_ticks_; }
    // kInFlightHoldNs in ticks (SerialOpRing::record's hold_gap).
    TimeNs hold_ticks() const noexcept { return hold_ticks_; }
    // The consumer only: producers coalesce with `gap` (never less than
    // the construction's) from their next operation: the live loop's
    // burst gap while dense traffic widened it, so that a stream of
    // operations 20-100 us apart is logged as a few runs, not thousands.
    void set_coalesce_gap(TimeNs gap) noexcept;

    // A ring for one serial producer; throws std::bad_alloc.
    SerialOpRing *open_serial();
    // The producer is done with `ring` (it must not record again); the
    // consumer frees it once it took everything. Null is ignored.
    void close_serial(SerialOpRing *ring) noexcept;

    // The consumer only: hands every item now in the log to `each`, oldest
    // first (items at equal times in ring order), then frees closed rings
    // it emptied.
    template <typename F>
    DrainResult drain(F&& each)
    {
        const std::lock_guard<std::mutex> lock(mutex_);
        DrainResult result;
        clock_.recalibrate();
        for (Source& s : serial_) {
            s.published     = s.ring->totals();
            result.complete = result.complete && s.published.has_value();
        }
        LogItem item;
        while (next_item(item)) {
            ++result.items;
            if (item.kind == LogItem::Kind::continuation) {
                result.ops += item.ops;
            } else if (is_operation(item.op.kind) || item.op.kind == OpKind::region_begin ||
                       item.op.kind == OpKind::region_end) {
                result.ops += 1;
            }
            each(static_cast<const LogItem&>(item));
        }
        free_closed_locked();
        return result;
    }

    // Records lost to a full ring, over every ring the log ever had.
    std::uint64_t dropped() const noexcept;
    // Records written, over every ring the log ever had: far fewer than
    // the operations where runs are long (SerialOpRing::record).
    std::uint64_t logged() const noexcept;
    // Serial rings now open (tests).
    std::size_t serial_open() const noexcept;

private:
    struct Source {
        std::unique_ptr<SerialOpRing> ring;
        bool closed = false;
        // In the clock's ticks:
        SerialTotals consumed;                  // what the log handed over
        std::optional<SerialTotals> published;  // read at this drain's start
        // What the continuation candidate() offered leads to: kept, since a
        // record may arrive before take() and would point elsewhere.
        SerialTotals target;
    };

    // The totals a continuation of `s` would bring it to, if it has one
    // now: those its oldest record carries, or (no record left) the
    // published ones.
    static const SerialTotals *continuation_target(const Source& s) noexcept;
    LogItem continuation(const Source& s, const SerialTotals& target) const noexcept;
    template <typename Count>
    std::uint64_t sum_locked(std::uint64_t closed, Count count) const noexcept;
    bool next_item(LogItem& out) noexcept;
    bool candidate(Source& s, LogItem& out) noexcept;
    void take(Source& s, const LogItem& item) noexcept;
    const OpRecord *shared_head() noexcept;
    void free_closed_locked() noexcept;

    OpRing shared_;
    std::size_t serial_capacity_;
    RecordClock clock_;  // the consumer recalibrates it
    TimeNs split_ticks_;
    TimeNs hold_ticks_;
    std::atomic<TimeNs> coalesce_ticks_;
    mutable std::mutex mutex_;
    std::vector<Source> serial_;        // under mutex_
    std::uint64_t closed_dropped_ = 0;  // under mutex_: freed rings' drops
    std::uint64_t closed_logged_  = 0;  // under mutex_: freed rings' records
    OpRecord shared_next_;              // the consumer's peeked record
    bool shared_peeked_ = false;
};

}  // namespace slim::live

// SPDX-License-Identifier: BSD-3-Clause
#include "live/op_log.h"

#include <algorithm>

namespace slim::live {

OpLog::OpLog(std::size_t shared_capacity, std::size_t serial_capacity, TimeNs coalesce_gap,
             RecordClock clock)
    : shared_(shared_capacity), serial_capacity_(serial_capacity), clock_(clock),
      split_ticks_(static_cast<TimeNs>(clock.ticks_within(coalesce_gap))),
      hold_ticks_(static_cast<TimeNs>(clock.ticks_within(kInFlightHoldNs))),
      coalesce_ticks_(split_ticks_)
{}

void OpLog::set_coalesce_gap(TimeNs gap) noexcept
{
    coalesce_ticks_.store(std::max(static_cast<TimeNs>(clock_.ticks_within(gap)), split_ticks_),
                          std::memory_order_relaxed);
}

const SerialTotals *OpLog::continuation_target(const Source& s) noexcept
{
    if (const SerialRecord *r = s.ring->peek()) {
        return r->before.ahead_of(s.consumed) ? &r->before : nullptr;
    }
    return s.published && s.published->ahead_of(s.consumed) ? &*s.published : nullptr;
}

// The operations `s` coalesced from what was handed over up to `target`.
LogItem OpLog::continuation(const Source& s, const SerialTotals& target) const noexcept
{
    const SerialTotals& consumed = s.consumed;
    LogItem item;
    item.kind = LogItem::Kind::continuation;
    // No operation of this producer handed over yet (its first record was
    // lost to a full ring): all that is known is the end.
    item.start = clock_.to_ns(
            static_cast<std::uint64_t>(consumed.ops > 0 ? consumed.last_t : target.last_t));
    item.end    = clock_.to_ns(static_cast<std::uint64_t>(target.last_t));
    item.ops    = target.ops - consumed.ops;
    item.orig   = target.orig - consumed.orig;
    item.wire   = target.wire - consumed.wire;
    item.splits = target.splits - consumed.splits;
    item.began  = target.began - consumed.began;
    item.ended  = target.ended - consumed.ended;
    return item;
}

SerialOpRing *OpLog::open_serial()
{
    auto ring = std::make_unique<SerialOpRing>(serial_capacity_);
    const std::lock_guard<std::mutex> lock(mutex_);
    serial_.push_back(Source{std::move(ring), false, {}, {}, {}});
    return serial_.back().ring.get();
}

void OpLog::close_serial(SerialOpRing *ring) noexcept
{
    if (ring == nullptr) {
        return;
    }
    const std::lock_guard<std::mutex> lock(mutex_);
    for (Source& s : serial_) {
        if (s.ring.get() == ring) {
            s.closed = true;
        }
    }
}

// The next item of one serial source: the operations it coalesced before
// its oldest record, that record, or the operations of a run still going on.
bool OpLog::candidate(Source& s, LogItem& out) noexcept
{
    if (const SerialTotals *target = continuation_target(s)) {
        s.target = *target;
        out      = continuation(s, s.target);
        return true;
    }
    if (const SerialRecord *r = s.ring->peek()) {
        out         = LogItem{};
        out.kind    = LogItem::Kind::op;
        out.op      = r->op;
        out.op.t_ns = clock_.to_ns(static_cast<std::uint64_t>(r->op.t_ns));
        if (r->op.kind == OpKind::wait_end) {
            // Time blocked, and how far the wait reached before its begin:
            // ticks to nanoseconds, over the wait's end.
            const auto end   = static_cast<std::uint64_t>(r->op.t_ns);
            const auto to_ns = [this, end](std::uint64_t ticks) {
                return clock_.to_ns(end) - clock_.to_ns(end - ticks);
            };
            out.op.peer       = static_cast<std::uintptr_t>(to_ns(r->op.peer));
            out.op.orig_bytes = OpRecord::clamp_bytes(to_ns(r->op.orig_bytes));
        }
        return true;
    }
    return false;
}

// Hands over what candidate() offered for `s`.
void OpLog::take(Source& s, const LogItem& item) noexcept
{
    if (item.kind == LogItem::Kind::continuation) {
        s.consumed = s.target;
        return;
    }
    const OpRecord& op = s.ring->peek()->op;
    if (is_operation(op.kind)) {
        s.consumed.add(op);
    }
    s.ring->pop();
}

bool OpLog::next_item(LogItem& out) noexcept
{
    Source *from         = nullptr;
    const OpRecord *head = shared_head();
    bool have            = head != nullptr;
    if (have) {
        out      = LogItem{};
        out.kind = LogItem::Kind::op;
        out.op   = *head;
    }
    LogItem c;
    for (Source& s : serial_) {
        if (candidate(s, c) && (!have || c.at() < out.at())) {
            out  = c;
            from = &s;
            have = true;
        }
    }
    if (!have) {
        return false;
    }
    if (from != nullptr) {
        take(*from, out);
    } else {
        shared_peeked_ = false;
    }
    return true;
}

const OpRecord *OpLog::shared_head() noexcept
{
    if (!shared_peeked_) {
        shared_peeked_ = shared_.pop(shared_next_);
    }
    return shared_peeked_ ? &shared_next_ : nullptr;
}

void OpLog::free_closed_locked() noexcept
{
    const auto done = [this](Source& s) {
        if (!s.closed || s.ring->peek() != nullptr) {
            return false;
        }
        // Closed: its totals are final. Keep it until they were handed over.
        const std::optional<SerialTotals> last = s.ring->totals();
        if (!last || last->ahead_of(s.consumed)) {
            return false;
        }
        closed_dropped_ += s.ring->dropped();
        closed_logged_ += s.ring->pushed();
        return true;
    };
    serial_.erase(std::remove_if(serial_.begin(), serial_.end(), done), serial_.end());
}

// `closed` plus `count` over the shared ring and every serial ring.
template <typename Count>
std::uint64_t OpLog::sum_locked(std::uint64_t closed, Count count) const noexcept
{
    std::uint64_t n = closed + count(shared_);
    for (const Source& s : serial_) {
        n += count(*s.ring);
    }
    return n;
}

std::uint64_t OpLog::dropped() const noexcept
{
    const std::lock_guard<std::mutex> lock(mutex_);
    return sum_locked(closed_dropped_, [](const auto& ring) { return ring.dropped(); });
}

std::uint64_t OpLog::logged() const noexcept
{
    const std::lock_guard<std::mutex> lock(mutex_);
    return sum_locked(closed_logged_, [](const auto& ring) { return ring.pushed(); });
}

std::size_t OpLog::serial_open() const noexcept
{
    const std::lock_guard<std::mutex> lock(mutex_);
    return static_cast<std::size_t>(std::count_if(serial_.begin(), serial_.end(),
                                                  [](const Source& s) { return !s.closed; }));
}

}  // namespace slim::live

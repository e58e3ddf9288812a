/* SPDX-License-Identifier: BSD-3-Clause */
// Grams (thesis §5.2.2): events separated only by idle time at or below the
// grouping threshold form one gram. Algorithm 1 groups the event stream;
// GramTable interns each distinct gram (its sequence of event ids) as a small
// GramId, so patterns are sequences of integers and gram equality is one
// comparison. Equality looks at event ids only, never at idle time.
//
// Pure and bounded: every buffer is sized in the constructor; nothing
// allocates afterwards.
#pragma once

#include "types.h"

#include "base/hash.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace slim::predict {

using GramId = std::uint32_t;

// A gram the table had no room for. It equals no gram, itself included, so a
// pattern holding it never repeats: such grams are not predicted.
inline constexpr GramId kNoGram = 0xffff'ffffu;

inline bool same_gram(GramId a, GramId b) { return a == b && a != kNoGram; }

// Hashes of event and gram sequences, built one element at a time so a
// pattern grown by one gram (Algorithm 2, line 5) rehashes in O(1).
inline constexpr std::uint64_t kSequenceSeed = 0x243f'6a88'85a3'08d3ull;
inline std::uint64_t hash_append(std::uint64_t hash, std::uint64_t value)
{
    return hash_combine(hash, value) * 0xff51'afd7'ed55'8ccdull;
}

namespace detail {

// Open-addressing hash index of small integers (entries of a caller's table),
// linear probing, backward-shift deletion: no tombstones, so probe lengths
// stay short however many inserts and erases a long run makes.
class OpenIndex {
public:
    static constexpr std::uint32_t kNone = 0xffff'ffffu;

    // Room for `entries` entries at a load factor of at most 1/2.
    explicit OpenIndex(std::size_t entries = 0);

    template <class Matches>
    std::uint32_t find(std::uint64_t hash, Matches&& matches) const
    {
        for (std::size_t i = home(hash);; i = (i + 1) & mask_) {
            const std::uint32_t slot = slots_[i];
            if (slot == 0) {
                return kNone;
            }
            if (matches(slot - 1)) {
                return slot - 1;
            }
        }
    }

    void insert(std::uint64_t hash, std::uint32_t entry);

    // hash_of(entry) must give the hash each stored entry was inserted with.
    template <class HashOf>
    void erase(std::uint64_t hash, std::uint32_t entry, HashOf&& hash_of)
    {
        std::size_t i = home(hash);
        while (slots_[i] != entry + 1) {
            if (slots_[i] == 0) {
                return;
            }
            i = (i + 1) & mask_;
        }
        for (std::size_t j = (i + 1) & mask_; slots_[j] != 0; j = (j + 1) & mask_) {
            const std::size_t h = home(hash_of(slots_[j] - 1));
            // Move j into the hole at i unless its home lies in (i, j].
            if (((j - h) & mask_) >= ((j - i) & mask_)) {
                slots_[i] = slots_[j];
                i         = j;
            }
        }
        slots_[i] = 0;
    }

    void clear();
    std::size_t memory_bytes() const { return slots_.capacity() * sizeof(std::uint32_t); }

private:
    std::size_t home(std::uint64_t hash) const;

    std::vector<std::uint32_t> slots_;  // entry + 1; 0 is empty
    std::size_t mask_ = 0;
};

}  // namespace detail

// The distinct grams alive in the gram array and in the pattern list, with a
// reference count each: a gram is forgotten when nothing refers to it.
class GramTable {
public:
    // capacity: distinct grams; max_gram_events: event ids kept per gram.
    GramTable(std::size_t capacity, std::size_t max_gram_events);

    // The gram with these event ids (the first `stored` of `length`), with
    // one reference taken for the caller; kNoGram when the table is full.
    // `hash` must be the hash_append chain of the stored ids from
    // kSequenceSeed.
    GramId intern(std::uint64_t hash, const EventId *ids, std::size_t stored, std::uint32_t length);

    void acquire(GramId id);
    void release(GramId id);

    // Events in the gram; only the first stored() ids are kept (a gram longer
    // than max_gram_events is known by those and by its length).
    std::uint32_t length(GramId id) const { return kinds_[id].length; }
    std::size_t stored(GramId id) const { return kinds_[id].stored; }
    const EventId *events(GramId id) const { return &arena_[kinds_[id].offset]; }

    std::size_t live() const { return capacity_ - free_.size(); }
    std::size_t capacity() const { return capacity_; }
    std::size_t max_gram_events() const { return max_gram_events_; }
    std::size_t memory_bytes() const;

    // Forgets every gram at once (a predictor restart): outstanding ids die.
    void clear();

private:
    struct Kind {
        std::uint64_t hash   = 0;
        std::uint32_t offset = 0;  // first id in arena_
        std::uint32_t length = 0;
        std::uint32_t stored = 0;
        std::uint32_t refs   = 0;
    };

    // Arena records are [kind, stored, ids...]: a scan can skip dead ones.
    static constexpr std::size_t kRecordHeader = 2;

    bool matches(GramId id, std::uint64_t hash, const EventId *ids, std::size_t stored,
                 std::uint32_t length) const;
    void compact();

    std::size_t capacity_;
    std::size_t max_gram_events_;
    std::vector<Kind> kinds_;
    std::vector<GramId> free_;    // stack of unused kinds
    std::vector<EventId> arena_;  // event ids of all kinds, bump-allocated
    std::size_t arena_top_ = 0;
    detail::OpenIndex index_;
};

// A completed gram and the idle interval that follows it: one element of
// Algorithm 1's `array`. `gram` carries one GramTable reference, which the
// receiver owns.
struct CompletedGram {
    GramId gram          = kNoGram;
    TimeNs idle_after    = 0;
    std::uint32_t events = 0;
};

// The gram in progress (Algorithm 1's currentGram), as Algorithm 4 sees it.
struct PartialGram {
    const EventId *events = nullptr;  // the first `stored` ids
    std::size_t stored    = 0;
    std::uint32_t length  = 0;
};

// Algorithm 1, lines 1-5.
class GramFormer {
public:
    explicit GramFormer(GramTable& table);

    // Appends the event to the gram in progress. When the idle interval
    // before it is longer than the grouping threshold the gram in progress
    // is complete first, and returned. `previous_idle` is none for the first
    // event (of a run, or after clear()).
    std::optional<CompletedGram> on_event(EventId id, std::optional<TimeNs> previous_idle,
                                          TimeNs gt_ns);

    PartialGram current() const { return {ids_.data(), stored_, length_}; }

    // Drops the gram in progress; used together with GramTable::clear().
    void clear();

    std::size_t memory_bytes() const { return ids_.capacity() * sizeof(EventId); }

private:
    GramTable& table_;
    std::vector<EventId> ids_;  // max_gram_events
    std::size_t stored_   = 0;
    std::uint32_t length_ = 0;
    std::uint64_t hash_   = kSequenceSeed;
};

}  // namespace slim::predict

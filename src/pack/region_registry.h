/* SPDX-License-Identifier: BSD-3-Clause */
// Marked memory regions (sender side): which part of [p, p+n) is marked, and
// at what precision. Thread-safe; lookups (the send path) take no lock and
// allocate nothing. Marking and unmarking cost O(log regions): copying the
// whole list on every mark made 10^5 marks take 87 s.
#pragma once

#include "pack/codec.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace slim::pack {

struct MarkedRun {
    std::uintptr_t begin       = 0;  // clipped to the queried range
    std::uintptr_t end         = 0;
    std::uintptr_t region_base = 0;  // element boundaries are relative to this
    Precision precision;
    // The whole region, not clipped: whether an element cut by the queried
    // range's edge is still a whole marked element (frame.h, EdgePatch).
    std::uintptr_t region_begin = 0;
    std::uintptr_t region_end   = 0;
};

class RegionRegistry {
public:
    RegionRegistry();
    ~RegionRegistry();
    RegionRegistry(const RegionRegistry&)            = delete;
    RegionRegistry& operator=(const RegionRegistry&) = delete;

    // Marks [ptr, ptr+bytes). Marking over an existing region replaces the
    // overlap (the old region keeps its non-overlapping parts). `label` is
    // kept for messages (release()). Returns false (and changes nothing) for
    // a null pointer, zero bytes, a range that wraps, or a precision outside
    // keep 2..7.
    bool mark(const void *ptr, std::size_t bytes, Precision precision, std::string_view label = {});
    // Removes the region that starts at ptr; false if none starts there.
    bool unmark(const void *ptr);
    // Drops every mark inside [ptr, ptr+bytes), cutting regions that reach
    // outside it (memory being freed: its marks must not outlive it).
    // Returns how many regions were dropped or cut; `first_label`, when not
    // null, receives the label of the first of them.
    std::size_t release(const void *ptr, std::size_t bytes, std::string *first_label = nullptr);

    // Writes up to max_runs marked runs overlapping [ptr, ptr+bytes), in
    // address order, clipped to the range. Returns how many overlap, but
    // stops counting at max_runs + 1 (so "more than fit" costs no more than
    // what fits). O(log regions + max_runs); no lock, no allocation.
    // A lookup racing a mark of the same memory may miss part of it (that
    // data then travels exact) but never returns overlapping runs.
    std::size_t find(const void *ptr, std::size_t bytes, MarkedRun *runs,
                     std::size_t max_runs) const;

    // Number of regions: one relaxed load (the send path's and free()'s
    // "is anything marked at all?").
    std::size_t size() const noexcept;
    // The word size() reads, for a reader that cannot call in (the UCT
    // module's send path reads it inline). Lives as long as the registry.
    const std::atomic<std::size_t> *size_word() const noexcept;

private:
    struct Impl;
    Impl *impl_;
};

}  // namespace slim::pack

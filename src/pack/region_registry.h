// Marked memory regions (sender side): which part of [p, p+n) is marked, and
// at what precision. Thread-safe; lookups (the send path) take no lock.
#pragma once

#include "pack/codec.h"

#include <cstddef>
#include <cstdint>

namespace slim::pack {

struct MarkedRun {
    std::uintptr_t begin       = 0;   // clipped to the queried range
    std::uintptr_t end         = 0;
    std::uintptr_t region_base = 0;   // element boundaries are relative to this
    Precision      precision;
};

class RegionRegistry {
public:
    RegionRegistry();
    ~RegionRegistry();
    RegionRegistry(const RegionRegistry&) = delete;
    RegionRegistry& operator=(const RegionRegistry&) = delete;

    // Marks [ptr, ptr+bytes). Marking over an existing region replaces the
    // overlap (the old region keeps its non-overlapping parts).
    // Returns false (and changes nothing) for a null pointer, zero bytes, or
    // a precision outside keep 2..7.
    bool mark(const void* ptr, std::size_t bytes, Precision precision);
    // Removes the region that starts at ptr; false if none starts there.
    bool unmark(const void* ptr);

    // Writes up to max_runs marked runs overlapping [ptr, ptr+bytes), in
    // address order, clipped to the range; returns how many overlap (which
    // may exceed max_runs). O(log regions); no lock, no allocation.
    std::size_t find(const void* ptr, std::size_t bytes, MarkedRun* runs,
                     std::size_t max_runs) const;

    std::size_t size() const;   // number of regions

private:
    struct Impl;
    Impl* impl_;
};

}  // namespace slim::pack

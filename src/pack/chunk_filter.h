/* SPDX-License-Identifier: BSD-3-Clause */
// The region registry's chunk filter: how many regions touch each 64 KiB
// chunk, counted in a hashed table. A lookup of a buffer whose chunks all
// count zero (the usual unmarked send: its buffer is not next to marked
// data) returns without walking the list, so its cost does not grow with
// the number of marks. Readers only load; writers (under the registry's
// write mutex) count a region before linking it and uncount it after
// unlinking it, so the filter never hides a linked region.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace slim::pack {

class ChunkFilter {
public:
    static constexpr unsigned kChunkShift = 16;
    static constexpr unsigned kBits       = 16;
    static constexpr std::size_t kSlots   = std::size_t{1} << kBits;
    // Regions wider than this many chunks are counted in `wide_` instead
    // (which turns the filter off while any exists); lookups wider than this
    // always answer "maybe".
    static constexpr std::uintptr_t kMaxChunks = 64;

    // False when no region can touch [begin, end): every chunk counts zero.
    bool maybe_marked(std::uintptr_t begin, std::uintptr_t end) const
    {
        const std::uintptr_t first = begin >> kChunkShift;
        const std::uintptr_t last  = (end - 1) >> kChunkShift;
        if (wide_.load(std::memory_order_relaxed) != 0 || last - first >= kMaxChunks) {
            return true;
        }
        for (std::uintptr_t chunk = first; chunk <= last; ++chunk) {
            if (slots_[slot(chunk)].load(std::memory_order_relaxed) != 0) {
                return true;
            }
        }
        return false;
    }

    // Counts (add) or uncounts the region [begin, end).
    void count(std::uintptr_t begin, std::uintptr_t end, bool add)
    {
        const std::uintptr_t first = begin >> kChunkShift;
        const std::uintptr_t last  = (end - 1) >> kChunkShift;
        if (last - first >= kMaxChunks) {
            add ? wide_.fetch_add(1, std::memory_order_relaxed)
                : wide_.fetch_sub(1, std::memory_order_relaxed);
            return;
        }
        for (std::uintptr_t chunk = first; chunk <= last; ++chunk) {
            auto& s = slots_[slot(chunk)];
            add ? s.fetch_add(1, std::memory_order_relaxed)
                : s.fetch_sub(1, std::memory_order_relaxed);
        }
    }

private:
    // Fibonacci hashing: the top kBits of chunk * 2^64/phi.
    static std::size_t slot(std::uintptr_t chunk)
    {
        return static_cast<std::size_t>((chunk * 0x9e3779b97f4a7c15ULL) >> (64 - kBits));
    }

    std::atomic<std::uint32_t> wide_{0};
    std::atomic<std::uint32_t> slots_[kSlots] = {};
};

}  // namespace slim::pack

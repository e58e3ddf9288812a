/* SPDX-License-Identifier: BSD-3-Clause */
// One marked region as the registry's skip list holds it (region_registry.cpp
// says how readers walk it). Its fields are written before it is published
// and never change afterwards.
#pragma once

#include "pack/codec.h"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <new>

namespace slim::pack {

// The begin of "no next node": past the last node.
constexpr std::uintptr_t kNoRegionKey = std::numeric_limits<std::uintptr_t>::max();

// 32 bytes, followed in the same allocation by `height` links, one per
// level: the atomic next pointer readers follow, and beside it the begin of
// the node it points to (the writer's, so that its searches decide where to
// stop without loading the next node, and so that linking and unlinking
// only store into the neighbours: no cache miss waits for them).
struct RegionNode {
    std::uintptr_t begin = 0;
    std::uintptr_t end   = 0;  // exclusive; begin < end
    std::uintptr_t base  = 0;  // element boundaries are relative to this
    std::uint32_t label  = 0;  // index into the registry's LabelTable
    std::uint8_t keep    = 0;  // Precision, packed
    std::uint8_t mode    = 0;
    std::uint8_t height  = 0;

    struct Link {
        std::atomic<RegionNode *> next;
        std::uintptr_t next_key;  // writer only; kNoRegionKey past the last node
    };

    Link& link(int l) { return reinterpret_cast<Link *>(this + 1)[l]; }
    const Link& link(int l) const { return reinterpret_cast<const Link *>(this + 1)[l]; }
    std::atomic<RegionNode *>& next(int l) { return link(l).next; }
    const std::atomic<RegionNode *>& next(int l) const { return link(l).next; }
    std::uintptr_t& next_key(int l) { return link(l).next_key; }

    Precision precision() const
    {
        Precision p;
        p.keep_bytes = keep;
        p.mode       = static_cast<Rounding>(mode);
        return p;
    }

    static std::size_t bytes_for(int height)
    {
        return sizeof(RegionNode) + sizeof(Link) * static_cast<std::size_t>(height);
    }

    // `raw` holds bytes_for(height).
    static RegionNode *create(void *raw, int height)
    {
        RegionNode *node = new (raw) RegionNode();
        node->height     = static_cast<std::uint8_t>(height);
        for (int l = 0; l < height; ++l) {
            new (&node->link(l)) Link{{nullptr}, kNoRegionKey};
        }
        return node;
    }
};

static_assert(sizeof(RegionNode) == 32 &&
              alignof(RegionNode) == alignof(std::atomic<RegionNode *>));

}  // namespace slim::pack

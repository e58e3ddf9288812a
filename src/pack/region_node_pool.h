/* SPDX-License-Identifier: BSD-3-Clause */
// Where the region registry's nodes live. Nodes of height up to 6 (63 in 64)
// come from 2 MiB slabs, in two slot sizes, that the kernel may back with
// huge pages: a search visits nodes scattered over the whole list, and with
// 4 KiB pages most visits were TLB misses too. Taller nodes use malloc.
// Slabs are kept until the pool ends; freed slots are reused. Writers only
// (the registry's write mutex).
#pragma once

#include "pack/region_node.h"

#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

#include <sys/mman.h>

namespace slim::pack {

class RegionNodePool {
public:
    static constexpr std::size_t kSlabSize = std::size_t{2} << 20;

    RegionNodePool()                                 = default;
    RegionNodePool(const RegionNodePool&)            = delete;
    RegionNodePool& operator=(const RegionNodePool&) = delete;
    ~RegionNodePool()
    {
        for (void *slab : slabs_) {
            ::munmap(slab, kSlabSize);
        }
    }

    RegionNode *create(int height)
    {
        const std::size_t bytes = RegionNode::bytes_for(height);
        const int cls           = size_class(bytes);
        void *memory            = cls >= 0 ? take_slot(classes_[cls]) : std::malloc(bytes);
        if (memory == nullptr) {
            throw std::bad_alloc();
        }
        return RegionNode::create(memory, height);
    }

    void destroy(RegionNode *node)
    {
        const int cls = size_class(RegionNode::bytes_for(node->height));
        if (cls >= 0) {
            auto *slot         = reinterpret_cast<FreeSlot *>(node);
            slot->next         = classes_[cls].free;
            classes_[cls].free = slot;
        } else {
            std::free(node);
        }
    }

private:
    struct FreeSlot {
        FreeSlot *next;
    };
    struct SizeClass {
        std::size_t slot;
        FreeSlot *free          = nullptr;
        unsigned char *bump     = nullptr;
        unsigned char *bump_end = nullptr;
    };

    static int size_class(std::size_t bytes) { return bytes <= 64 ? 0 : bytes <= 128 ? 1 : -1; }

    void *take_slot(SizeClass& c)
    {
        if (c.free != nullptr) {
            FreeSlot *slot = c.free;
            c.free         = slot->next;
            return slot;
        }
        if (c.bump == c.bump_end) {
            void *slab = ::mmap(nullptr, kSlabSize, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (slab == MAP_FAILED) {
                return nullptr;
            }
            ::madvise(slab, kSlabSize, MADV_HUGEPAGE);  // a hint; fine if refused
            slabs_.push_back(slab);
            c.bump     = static_cast<unsigned char *>(slab);
            c.bump_end = c.bump + kSlabSize;
        }
        void *slot = c.bump;
        c.bump += c.slot;
        return slot;
    }

    std::vector<void *> slabs_;
    SizeClass classes_[2] = {SizeClass{64}, SizeClass{128}};
};

}  // namespace slim::pack

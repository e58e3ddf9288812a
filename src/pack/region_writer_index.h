/* SPDX-License-Identifier: BSD-3-Clause */
// The region registry writer's own ordered index of the linked nodes,
// (begin, node, height) in address order, in buckets of at most kBucket
// entries: finding a position costs a binary search over the buckets' first
// keys (which stay in cache) and one within a bucket, two or three cache
// misses instead of the ~20 of a walk down the skip list. The predecessors a
// node needs at each of its levels are then the nearest entries before it
// that are tall enough: a short backward scan of contiguous entries. Readers
// never see it; it changes only with the list, under the write mutex.
#pragma once

#include "pack/region_node.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

namespace slim::pack {

class WriterIndex {
public:
    struct Entry {
        std::uintptr_t begin;
        std::uintptr_t end;
        RegionNode *node;
        int height;
    };
    struct Pos {
        std::size_t bucket = 0;
        std::size_t index  = 0;
    };

    // The first entry whose begin is >= key (or the end).
    Pos lower_bound(std::uintptr_t key) const
    {
        if (buckets_.empty()) {
            return {};
        }
        const auto after     = std::upper_bound(first_keys_.begin(), first_keys_.end(), key);
        std::size_t b        = after == first_keys_.begin()
                                       ? 0
                                       : static_cast<std::size_t>(after - first_keys_.begin()) - 1;
        const Bucket& bucket = *buckets_[b];
        std::size_t i        = static_cast<std::size_t>(
                std::lower_bound(bucket.keys, bucket.keys + bucket.size, key) - bucket.keys);
        if (i == bucket.size && b + 1 < buckets_.size()) {
            ++b;
            i = 0;
        }
        return {b, i};
    }

    bool at_end(Pos p) const
    {
        return buckets_.empty() ||
               (p.bucket + 1 == buckets_.size() && p.index == buckets_[p.bucket]->size);
    }
    std::uintptr_t begin_at(Pos p) const { return buckets_[p.bucket]->keys[p.index]; }
    std::uintptr_t end_at(Pos p) const { return buckets_[p.bucket]->infos[p.index].end; }
    RegionNode *node_at(Pos p) const { return buckets_[p.bucket]->infos[p.index].node; }
    int height_at(Pos p) const
    {
        return static_cast<int>(buckets_[p.bucket]->infos[p.index].height);
    }

    // Steps to the next entry (or the end).
    void next(Pos& p) const
    {
        if (++p.index == buckets_[p.bucket]->size && p.bucket + 1 < buckets_.size()) {
            ++p.bucket;
            p.index = 0;
        }
    }

    // Steps to the previous entry; false at the front.
    bool prev(Pos& p) const
    {
        if (p.index > 0) {
            --p.index;
            return true;
        }
        if (p.bucket == 0) {
            return false;
        }
        --p.bucket;
        p.index = buckets_[p.bucket]->size - 1;
        return true;
    }

    // Inserts before `p` (a lower_bound of e.begin).
    void insert(Pos p, const Entry& e)
    {
        if (buckets_.empty()) {
            buckets_.push_back(std::make_unique<Bucket>());
            first_keys_.push_back(e.begin);
            p = {};
        }
        Bucket& bucket = *buckets_[p.bucket];
        bucket.insert(p.index, e);
        first_keys_[p.bucket] = bucket.keys[0];
        if (bucket.size == kBucket) {  // full: split in halves
            auto upper = std::make_unique<Bucket>();
            bucket.move_upper_half(*upper);
            const auto next = static_cast<std::ptrdiff_t>(p.bucket + 1);
            first_keys_.insert(first_keys_.begin() + next, upper->keys[0]);
            buckets_.insert(buckets_.begin() + next, std::move(upper));
        }
    }

    void erase(Pos p)
    {
        Bucket& bucket = *buckets_[p.bucket];
        bucket.erase(p.index);
        if (bucket.size == 0) {
            const auto b = static_cast<std::ptrdiff_t>(p.bucket);
            buckets_.erase(buckets_.begin() + b);
            first_keys_.erase(first_keys_.begin() + b);
        } else {
            first_keys_[p.bucket] = bucket.keys[0];
        }
    }

private:
    static constexpr std::size_t kBucket = 128;

    // Fixed arrays in one allocation: the keys apart (a binary search
    // touches few cache lines), the rest of an entry together (its
    // neighbours' heights, nodes and ends are read side by side).
    struct Info {
        std::uintptr_t end;
        RegionNode *node;
        std::uintptr_t height;
    };
    struct Bucket {
        std::size_t size = 0;
        std::uintptr_t keys[kBucket];
        Info infos[kBucket];

        void insert(std::size_t i, const Entry& e)
        {
            shift_up(keys, i);
            shift_up(infos, i);
            keys[i]  = e.begin;
            infos[i] = Info{e.end, e.node, static_cast<std::uintptr_t>(e.height)};
            ++size;
        }
        void erase(std::size_t i)
        {
            std::copy(keys + i + 1, keys + size, keys + i);
            std::copy(infos + i + 1, infos + size, infos + i);
            --size;
        }
        void move_upper_half(Bucket& upper)
        {
            const std::size_t half = size / 2;
            upper.size             = size - half;
            std::copy(keys + half, keys + size, upper.keys);
            std::copy(infos + half, infos + size, upper.infos);
            size = half;
        }

    private:
        template <typename T>
        void shift_up(T *array, std::size_t i)
        {
            std::copy_backward(array + i, array + size, array + size + 1);
        }
    };

    // Pointers, so that adding or removing a bucket moves 8 bytes apiece.
    std::vector<std::unique_ptr<Bucket>> buckets_;
    std::vector<std::uintptr_t> first_keys_;  // buckets_[b]->keys[0]
};

}  // namespace slim::pack

// SPDX-License-Identifier: BSD-3-Clause
// Region registry: a skip list of non-overlapping regions sorted by address.
// One writer at a time (a mutex) edits it in place; readers (find, the send
// path) walk it without a lock.
//
// Why a reader never sees overlapping runs: a node's fields are written
// before it is published (release stores of the `next` pointers that reach
// it) and never change afterwards; a mark first unlinks every region it
// overlaps, then links the remainders and the new region. A `next` pointer is
// only ever stored to point at the node that followed its owner in the live
// list at that moment, so any walk visits nodes that were pairwise adjacent at
// some time: sorted and disjoint. While a mark is in progress a reader may see
// a gap (that data then travels exact), never lossy data where none is marked.
//
// Reclamation: unlinked nodes are retired and freed in batches, each after a
// grace period (grace_period.h).
//
// The pieces, one per file: the node (region_node.h) and where nodes live
// (region_node_pool.h), the writer's index (region_writer_index.h), the
// chunk filter that answers most unmarked lookups (chunk_filter.h), the
// grace periods (grace_period.h) and the label table (label_table.h).
#include "pack/region_registry.h"

#include "pack/chunk_filter.h"
#include "pack/grace_period.h"
#include "pack/label_table.h"
#include "pack/region_node.h"
#include "pack/region_node_pool.h"
#include "pack/region_writer_index.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

namespace slim::pack {

namespace {

// p = 1/2 per level: 24 levels index 2^24 regions at O(log) cost. With the
// next node's key beside each pointer the writer's search costs about one
// cache miss per level, so halving p (twice the levels, a quarter of the
// steps per level) halves its misses.
constexpr int kMaxHeight = 24;
// Retired nodes are freed this many at a time (one grace period each).
constexpr std::size_t kRetireBatch = 256;

using Node                      = RegionNode;
constexpr std::uintptr_t kNoKey = kNoRegionKey;

bool valid(Precision p)
{
    return p.keep_bytes >= kMinKeep && p.keep_bytes <= kMaxKeep &&
           (p.mode == Rounding::truncate || p.mode == Rounding::nearest_even);
}

}  // namespace

struct RegionRegistry::Impl {
    // First: head is made from it. Writers only, under write_mutex.
    RegionNodePool pool;
    Node *head;  // sentinel, kMaxHeight levels
    std::atomic<std::size_t> count{0};
    GracePeriod grace;
    ChunkFilter filter;

    // Writers only, under write_mutex.
    std::mutex write_mutex;
    WriterIndex index;
    std::vector<Node *> retired;
    std::uint64_t random_state = 0x9e3779b97f4a7c15ULL;
    LabelTable labels;

    Impl() : head(pool.create(kMaxHeight)) {}
    ~Impl()
    {
        Node *node = head;
        while (node != nullptr) {
            Node *next = node->next(0).load(std::memory_order_relaxed);
            pool.destroy(node);
            node = next;
        }
        for (Node *node_retired : retired) {
            pool.destroy(node_retired);
        }
    }

    // --- writer side (caller holds write_mutex) ---

    int random_height()
    {
        // xorshift64: one bit per level gives p = 1/2.
        random_state ^= random_state << 13;
        random_state ^= random_state >> 7;
        random_state ^= random_state << 17;
        std::uint64_t bits = random_state;
        int height         = 1;
        while (height < kMaxHeight && (bits & 1U) == 0) {
            ++height;
            bits >>= 1;
        }
        return height;
    }

    // preds[l] = the last node at level l whose begin is < key (or head).
    void find_preds(std::uintptr_t key, Node *preds[kMaxHeight]) const
    {
        Node *x = head;
        for (int l = kMaxHeight - 1; l >= 0; --l) {
            while (x->next_key(l) < key) {  // kNoKey past the last node
                x = x->next(l).load(std::memory_order_relaxed);
            }
            preds[l] = x;
        }
    }

    // preds for a node of `height` levels at index position `p` (the first
    // entry at or after its begin), from the index: the nearest entries
    // before it tall enough for each level. False when that would scan
    // too far (tall nodes): find_preds then.
    bool preds_from_index(WriterIndex::Pos p, int height, Node *preds[kMaxHeight]) const
    {
        constexpr int kMaxScan = 64;
        int level              = 0;
        for (int scanned = 0; level < height; ++scanned) {
            if (scanned == kMaxScan) {
                return false;
            }
            if (!index.prev(p)) {
                for (; level < height; ++level) {
                    preds[level] = head;
                }
                break;
            }
            const int tall = index.height_at(p);
            if (tall > level) {
                Node *node = index.node_at(p);
                while (level < height && tall > level) {
                    preds[level++] = node;
                }
            }
        }
        return true;
    }

    // The nodes that follow at each of `height` levels, from the index, and
    // their begins: the nearest entries from `p` on that are tall enough,
    // or none (kNoKey) past the last. Read from the index, not from the
    // predecessors' pointers, which would cost a cache miss each. False
    // when that would scan too far.
    bool succs_from_index(WriterIndex::Pos p, int height, Node *succs[kMaxHeight],
                          std::uintptr_t keys[kMaxHeight]) const
    {
        constexpr int kMaxScan = 64;
        int level              = 0;
        for (int scanned = 0; level < height; ++scanned) {
            if (scanned == kMaxScan) {
                return false;
            }
            if (index.at_end(p)) {
                for (; level < height; ++level) {
                    succs[level] = nullptr;
                    keys[level]  = kNoKey;
                }
                break;
            }
            const int tall = index.height_at(p);
            if (tall > level) {
                Node *const node         = index.node_at(p);
                const std::uintptr_t key = index.begin_at(p);
                while (level < height && tall > level) {
                    succs[level] = node;
                    keys[level]  = key;
                    ++level;
                }
            }
            index.next(p);
        }
        return true;
    }

    // Links a new region; it must not overlap any linked one.
    void link(std::uintptr_t begin, std::uintptr_t end, std::uintptr_t base, Precision precision,
              std::uint32_t label)
    {
        Node *preds[kMaxHeight];
        find_preds(begin, preds);
        link_after(preds, random_height(), begin, end, base, precision, label);
    }

    // The same, with preds already found for `begin` at `height` levels,
    // and `at`, when given, index.lower_bound(begin).
    void link_after(Node *const preds[kMaxHeight], int height, std::uintptr_t begin,
                    std::uintptr_t end, std::uintptr_t base, Precision precision,
                    std::uint32_t label, const WriterIndex::Pos *at = nullptr,
                    Node *const *succs = nullptr, const std::uintptr_t *succ_keys = nullptr)
    {
        filter.count(begin, end, true);
        Node *node  = pool.create(height);
        node->begin = begin;
        node->end   = end;
        node->base  = base;
        node->keep  = static_cast<std::uint8_t>(precision.keep_bytes);
        node->mode  = static_cast<std::uint8_t>(precision.mode);
        node->label = label;
        for (int l = 0; l < node->height; ++l) {
            if (succs != nullptr) {
                node->next(l).store(succs[l], std::memory_order_relaxed);
                node->next_key(l) = succ_keys[l];
            } else {
                node->next(l).store(preds[l]->next(l).load(std::memory_order_relaxed),
                                    std::memory_order_relaxed);
                node->next_key(l) = preds[l]->next_key(l);
            }
        }
        // Bottom level first: a reader that finds it higher up can go down.
        for (int l = 0; l < node->height; ++l) {
            preds[l]->next(l).store(node, std::memory_order_release);
            preds[l]->next_key(l) = begin;
        }
        count.fetch_add(1, std::memory_order_relaxed);
        index.insert(at != nullptr ? *at : index.lower_bound(begin), {begin, end, node, height});
    }

    // Unlinks `node` (linked) and retires it; its own pointers stay intact
    // for readers standing on it.
    void unlink(Node *node)
    {
        Node *preds[kMaxHeight];
        find_preds(node->begin, preds);
        unlink_after(preds, node);
    }

    // The same, with preds already found for node->begin, and `at`, when
    // given, its index position.
    void unlink_after(Node *const preds[kMaxHeight], Node *node,
                      const WriterIndex::Pos *at = nullptr)
    {
        for (int l = node->height - 1; l >= 0; --l) {
            if (preds[l]->next(l).load(std::memory_order_relaxed) == node) {
                preds[l]->next(l).store(node->next(l).load(std::memory_order_relaxed),
                                        std::memory_order_release);
                preds[l]->next_key(l) = node->next_key(l);
            }
        }
        forget(node, node->begin, node->end, at != nullptr ? *at : index.lower_bound(node->begin));
    }

    // unlink_after for the node at index position `at`, with its
    // predecessors and successors from the index: only stores to the
    // neighbours, no loads from them or from the node.
    void unlink_indexed(WriterIndex::Pos at, Node *const preds[kMaxHeight],
                        Node *const succs[kMaxHeight], const std::uintptr_t succ_keys[kMaxHeight])
    {
        Node *const node           = index.node_at(at);
        const int height           = index.height_at(at);
        const std::uintptr_t begin = index.begin_at(at);
        const std::uintptr_t end   = index.end_at(at);
        for (int l = height - 1; l >= 0; --l) {
            preds[l]->next(l).store(succs[l], std::memory_order_release);
            preds[l]->next_key(l) = succ_keys[l];
        }
        forget(node, begin, end, at);
    }

    // A node that has left the list ([begin, end), at index position `at`):
    // uncounted, out of the index, retired.
    void forget(Node *node, std::uintptr_t begin, std::uintptr_t end, WriterIndex::Pos at)
    {
        count.fetch_sub(1, std::memory_order_relaxed);
        filter.count(begin, end, false);
        index.erase(at);
        retired.push_back(node);
        if (retired.size() >= kRetireBatch) {
            free_retired();
        }
    }

    void free_retired()
    {
        grace.wait_for_readers();
        for (Node *node : retired) {
            pool.destroy(node);
        }
        retired.clear();
    }

    // The linked nodes overlapping [begin, end), in address order.
    void overlapping(std::uintptr_t begin, std::uintptr_t end, std::vector<Node *>& out) const
    {
        Node *preds[kMaxHeight];
        find_preds(begin, preds);
        Node *node = preds[0];
        if (node == head || node->end <= begin) {
            node = node->next(0).load(std::memory_order_relaxed);
        }
        for (; node != nullptr && node->begin < end;
             node = node->next(0).load(std::memory_order_relaxed)) {
            out.push_back(node);
        }
    }

    // Unlinks the regions overlapping [begin, end) and links back their
    // parts outside it (with their own base, so element boundaries stay).
    // Returns how many were touched; the first's label in first_label.
    std::size_t cut(std::uintptr_t begin, std::uintptr_t end, std::uint32_t *first_label)
    {
        std::vector<Node *> hit;
        overlapping(begin, end, hit);
        if (hit.empty()) {
            return 0;
        }
        if (first_label != nullptr) {
            *first_label = hit.front()->label;
        }
        struct Part {
            std::uintptr_t begin, end, base;
            Precision precision;
            std::uint32_t label;
        };
        Part parts[2];
        int part_count    = 0;
        const Node *first = hit.front();
        const Node *last  = hit.back();
        if (first->begin < begin) {
            parts[part_count++] =
                    Part{first->begin, begin, first->base, first->precision(), first->label};
        }
        if (last->end > end) {
            parts[part_count++] = Part{end, last->end, last->base, last->precision(), last->label};
        }
        for (Node *node : hit) {
            unlink(node);
        }
        for (int i = 0; i < part_count; ++i) {
            link(parts[i].begin, parts[i].end, parts[i].base, parts[i].precision, parts[i].label);
        }
        return hit.size();
    }
};

RegionRegistry::RegionRegistry() : impl_(new Impl()) {}

RegionRegistry::~RegionRegistry() { delete impl_; }

bool RegionRegistry::mark(const void *ptr, std::size_t bytes, Precision precision,
                          std::string_view label)
{
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    if (ptr == nullptr || bytes == 0 || !valid(precision) ||
        bytes > std::numeric_limits<std::uintptr_t>::max() - begin) {
        return false;
    }
    const std::lock_guard<std::mutex> lock(impl_->write_mutex);
    const std::uint32_t label_id = impl_->labels.intern(label);
    const std::uintptr_t end     = begin + bytes;
    // The common case, marking free space, finds its place in the index.
    const WriterIndex& index  = impl_->index;
    const WriterIndex::Pos at = index.lower_bound(begin);
    WriterIndex::Pos before   = at;
    const bool overlaps       = (index.prev(before) && index.end_at(before) > begin) ||
                          (!index.at_end(at) && index.begin_at(at) < end);
    if (!overlaps) {
        const int height = impl_->random_height();
        Node *preds[kMaxHeight];
        Node *succs[kMaxHeight];
        std::uintptr_t succ_keys[kMaxHeight];
        if (impl_->preds_from_index(at, height, preds) &&
            impl_->succs_from_index(at, height, succs, succ_keys)) {
            impl_->link_after(preds, height, begin, end, begin, precision, label_id, &at, succs,
                              succ_keys);
        } else {
            impl_->find_preds(begin, preds);
            impl_->link_after(preds, height, begin, end, begin, precision, label_id, &at);
        }
        return true;
    }
    impl_->cut(begin, end, nullptr);
    impl_->link(begin, end, begin, precision, label_id);
    return true;
}

bool RegionRegistry::unmark(const void *ptr)
{
    if (ptr == nullptr) {
        return false;
    }
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    const std::lock_guard<std::mutex> lock(impl_->write_mutex);
    const WriterIndex& index  = impl_->index;
    const WriterIndex::Pos at = index.lower_bound(begin);
    if (index.at_end(at) || index.begin_at(at) != begin) {
        return false;
    }
    const int height       = index.height_at(at);
    WriterIndex::Pos after = at;
    index.next(after);
    Node *preds[kMaxHeight];
    Node *succs[kMaxHeight];
    std::uintptr_t succ_keys[kMaxHeight];
    if (impl_->preds_from_index(at, height, preds) &&
        impl_->succs_from_index(after, height, succs, succ_keys)) {
        impl_->unlink_indexed(at, preds, succs, succ_keys);
    } else {
        impl_->find_preds(begin, preds);
        impl_->unlink_after(preds, index.node_at(at), &at);
    }
    return true;
}

std::size_t RegionRegistry::release(const void *ptr, std::size_t bytes, std::string *first_label)
{
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    if (ptr == nullptr || bytes == 0) {
        return 0;
    }
    const std::uintptr_t end = bytes > std::numeric_limits<std::uintptr_t>::max() - begin
                                       ? std::numeric_limits<std::uintptr_t>::max()
                                       : begin + bytes;
    const std::lock_guard<std::mutex> lock(impl_->write_mutex);
    std::uint32_t label   = 0;
    const std::size_t cut = impl_->cut(begin, end, &label);
    if (cut > 0 && first_label != nullptr) {
        *first_label = impl_->labels.text(label);
    }
    return cut;
}

std::size_t RegionRegistry::find(const void *ptr, std::size_t bytes, MarkedRun *runs,
                                 std::size_t max_runs) const
{
    if (ptr == nullptr || bytes == 0 || impl_->count.load(std::memory_order_relaxed) == 0) {
        return 0;
    }
    const auto q_begin = reinterpret_cast<std::uintptr_t>(ptr);
    const auto q_end   = bytes > std::numeric_limits<std::uintptr_t>::max() - q_begin
                                 ? std::numeric_limits<std::uintptr_t>::max()
                                 : q_begin + bytes;

    if (!impl_->filter.maybe_marked(q_begin, q_end)) {
        return 0;
    }
    const GracePeriod::ReadGuard guard(impl_->grace);
    // The last node whose begin is <= q_begin: the only one before the query
    // start that can reach into it.
    const Node *x = impl_->head;
    for (int l = kMaxHeight - 1; l >= 0; --l) {
        for (const Node *n                          = x->next(l).load(std::memory_order_acquire);
             n != nullptr && n->begin <= q_begin; n = x->next(l).load(std::memory_order_acquire)) {
            x = n;
        }
    }
    const Node *node = x;
    if (node == impl_->head || node->end <= q_begin) {
        node = node->next(0).load(std::memory_order_acquire);
    }
    std::size_t count = 0;
    for (; node != nullptr && node->begin < q_end && count <= max_runs;
         node = node->next(0).load(std::memory_order_acquire)) {
        if (count < max_runs && runs != nullptr) {
            runs[count] = MarkedRun{std::max(node->begin, q_begin),
                                    std::min(node->end, q_end),
                                    node->base,
                                    node->precision(),
                                    node->begin,
                                    node->end};
        }
        ++count;
    }
    return count;
}

std::size_t RegionRegistry::size() const noexcept
{
    return impl_->count.load(std::memory_order_relaxed);
}

const std::atomic<std::size_t> *RegionRegistry::size_word() const noexcept { return &impl_->count; }

}  // namespace slim::pack

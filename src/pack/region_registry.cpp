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
// Reclamation: unlinked nodes are retired and freed in batches after a grace
// period, with a two-slot reader counter and a generation flip (the scheme of
// classic userspace RCU / SRCU, reduced to one structure). A reader
//   1. reads the generation g, increments readers[g & 1],
//   2. re-reads the generation; if it changed, undoes the increment and
//      retries (only when a writer flipped meanwhile: lock-free),
//   3. walks the list, decrements readers[g & 1].
// A writer that frees a batch flips the generation and waits until the old
// slot drains: every reader that could have reached a retired node started
// before the flip. All of these are seq_cst.
#include "pack/region_registry.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>

namespace slim::pack {

namespace {

// p = 1/2 per level: 24 levels index 2^24 regions at O(log) cost. With the
// next node's key beside each pointer the writer's search costs about one
// cache miss per level, so halving p (twice the levels, a quarter of the
// steps per level) halves its misses.
constexpr int         kMaxHeight   = 24;
// Retired nodes are freed this many at a time (one grace period each).
constexpr std::size_t kRetireBatch = 256;

// The chunk filter: how many regions touch each 64 KiB chunk, counted in a
// hashed table. A lookup of a buffer whose chunks all count zero (the usual
// unmarked send: its buffer is not next to marked data) returns without
// walking the list, so its cost does not grow with the number of marks.
constexpr unsigned       kChunkShift      = 16;
constexpr unsigned       kFilterBits      = 16;
constexpr std::size_t    kFilterSlots     = std::size_t{1} << kFilterBits;
// Regions wider than this many chunks are counted in `wide` instead (which
// turns the filter off while any exists); lookups wider than this walk.
constexpr std::uintptr_t kFilterMaxChunks = 64;

std::size_t filter_slot(std::uintptr_t chunk)
{
    return static_cast<std::size_t>((chunk * 0x9e3779b97f4a7c15ULL) >> (64 - kFilterBits));
}

constexpr std::uintptr_t kNoKey = std::numeric_limits<std::uintptr_t>::max();

// 32 bytes, followed in the same allocation by `height` links, one per
// level: the atomic next pointer readers follow, and beside it the begin of
// the node it points to (the writer's, so that its searches decide where to
// stop without loading the next node, and so that linking and unlinking
// only store into the neighbours: no cache miss waits for them).
struct Node {
    std::uintptr_t begin = 0;
    std::uintptr_t end   = 0;   // exclusive; begin < end
    std::uintptr_t base  = 0;   // element boundaries are relative to this
    std::uint32_t  label = 0;   // index into Impl::labels
    std::uint8_t   keep  = 0;   // Precision, packed
    std::uint8_t   mode  = 0;
    std::uint8_t   height = 0;

    struct Link {
        std::atomic<Node*> next;
        std::uintptr_t     next_key;   // writer only; kNoKey past the last node
    };

    Link&       link(int l) { return reinterpret_cast<Link*>(this + 1)[l]; }
    const Link& link(int l) const { return reinterpret_cast<const Link*>(this + 1)[l]; }
    std::atomic<Node*>&       next(int l) { return link(l).next; }
    const std::atomic<Node*>& next(int l) const { return link(l).next; }
    std::uintptr_t&           next_key(int l) { return link(l).next_key; }

    Precision precision() const
    {
        Precision p;
        p.keep_bytes = keep;
        p.mode       = static_cast<Rounding>(mode);
        return p;
    }

    static std::size_t bytes_for(int height)
    {
        return sizeof(Node) + sizeof(Link) * static_cast<std::size_t>(height);
    }

    // `raw` holds bytes_for(height).
    static Node* create(void* raw, int height)
    {
        Node* node   = new (raw) Node();
        node->height = static_cast<std::uint8_t>(height);
        for (int l = 0; l < height; ++l) {
            new (&node->link(l)) Link{{nullptr}, kNoKey};
        }
        return node;
    }
};

static_assert(sizeof(Node) == 32 && alignof(Node) == alignof(std::atomic<Node*>));

// Nodes of height up to 6 (63 in 64) come from 2 MiB slabs, in two slot
// sizes, that the kernel may back with huge pages: a search visits nodes
// scattered over the whole list, and with 4 KiB pages most visits were TLB
// misses too. Taller nodes use malloc. Slabs are kept until the registry
// ends; freed slots are reused.
class NodePool {
public:
    static constexpr std::size_t kSlabSize = std::size_t{2} << 20;

    NodePool() = default;
    NodePool(const NodePool&) = delete;
    NodePool& operator=(const NodePool&) = delete;
    ~NodePool()
    {
        for (void* slab : slabs_) {
            ::munmap(slab, kSlabSize);
        }
    }

    Node* create(int height)
    {
        const std::size_t bytes = Node::bytes_for(height);
        const int         cls   = size_class(bytes);
        void* memory = cls >= 0 ? take_slot(classes_[cls]) : std::malloc(bytes);
        if (memory == nullptr) {
            throw std::bad_alloc();
        }
        return Node::create(memory, height);
    }

    void destroy(Node* node)
    {
        const int cls = size_class(Node::bytes_for(node->height));
        if (cls >= 0) {
            auto* slot = reinterpret_cast<FreeSlot*>(node);
            slot->next = classes_[cls].free;
            classes_[cls].free = slot;
        } else {
            std::free(node);
        }
    }

private:
    struct FreeSlot {
        FreeSlot* next;
    };
    struct SizeClass {
        std::size_t    slot;
        FreeSlot*      free     = nullptr;
        unsigned char* bump     = nullptr;
        unsigned char* bump_end = nullptr;
    };

    static int size_class(std::size_t bytes) { return bytes <= 64 ? 0 : bytes <= 128 ? 1 : -1; }

    void* take_slot(SizeClass& c)
    {
        if (c.free != nullptr) {
            FreeSlot* slot = c.free;
            c.free         = slot->next;
            return slot;
        }
        if (c.bump == c.bump_end) {
            void* slab = ::mmap(nullptr, kSlabSize, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (slab == MAP_FAILED) {
                return nullptr;
            }
            ::madvise(slab, kSlabSize, MADV_HUGEPAGE);   // a hint; fine if refused
            slabs_.push_back(slab);
            c.bump     = static_cast<unsigned char*>(slab);
            c.bump_end = c.bump + kSlabSize;
        }
        void* slot = c.bump;
        c.bump += c.slot;
        return slot;
    }

    std::vector<void*> slabs_;
    SizeClass          classes_[2] = {SizeClass{64}, SizeClass{128}};
};

// The writer's own ordered index of the linked nodes, (begin, node, height)
// in address order, in buckets of at most kBucket entries: finding a
// position costs a binary search over the buckets' first keys (which stay
// in cache) and one within a bucket, two or three cache misses instead of
// the ~20 of a walk down the skip list. The predecessors a node needs at
// each of its levels are then the nearest entries before it that are tall
// enough: a short backward scan of contiguous entries. Readers never see
// it; it changes only with the list, under the write mutex.
class WriterIndex {
public:
    struct Entry {
        std::uintptr_t begin;
        std::uintptr_t end;
        Node*          node;
        int            height;
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
        const auto after = std::upper_bound(first_keys_.begin(), first_keys_.end(), key);
        std::size_t b = after == first_keys_.begin()
                                ? 0
                                : static_cast<std::size_t>(after - first_keys_.begin()) - 1;
        const Bucket& bucket = *buckets_[b];
        std::size_t   i      = static_cast<std::size_t>(
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
    Node*          node_at(Pos p) const { return buckets_[p.bucket]->infos[p.index].node; }
    int            height_at(Pos p) const
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
        if (bucket.size == kBucket) {   // full: split in halves
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
        Node*          node;
        std::uintptr_t height;
    };
    struct Bucket {
        std::size_t    size = 0;
        std::uintptr_t keys[kBucket];
        Info           infos[kBucket];

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
        void shift_up(T* array, std::size_t i)
        {
            std::copy_backward(array + i, array + size, array + size + 1);
        }
    };

    // Pointers, so that adding or removing a bucket moves 8 bytes apiece.
    std::vector<std::unique_ptr<Bucket>> buckets_;
    std::vector<std::uintptr_t>          first_keys_;   // buckets_[b]->keys[0]
};

bool valid(Precision p)
{
    return p.keep_bytes >= kMinKeep && p.keep_bytes <= kMaxKeep &&
           (p.mode == Rounding::truncate || p.mode == Rounding::nearest_even);
}

}  // namespace

struct RegionRegistry::Impl {
    // First: head is made from it. Writers only, under write_mutex.
    NodePool                           pool;
    Node*                              head;   // sentinel, kMaxHeight levels
    std::atomic<std::size_t>           count{0};
    std::atomic<std::uint64_t>         generation{0};
    // Mutable: find() is const but registers itself as a reader.
    mutable std::atomic<std::uint64_t> readers[2] = {{0}, {0}};

    std::atomic<std::uint32_t>         wide{0};
    std::atomic<std::uint32_t>         filter[kFilterSlots] = {};

    // Writers only, under write_mutex.
    std::mutex                                     write_mutex;
    WriterIndex                                    index;
    std::vector<Node*>                             retired;
    std::uint64_t                                  random_state = 0x9e3779b97f4a7c15ULL;
    std::vector<std::string>                       labels{std::string()};
    std::unordered_map<std::string, std::uint32_t> label_index;

    Impl() : head(pool.create(kMaxHeight)) {}
    ~Impl()
    {
        Node* node = head;
        while (node != nullptr) {
            Node* next = node->next(0).load(std::memory_order_relaxed);
            pool.destroy(node);
            node = next;
        }
        for (Node* node_retired : retired) {
            pool.destroy(node_retired);
        }
    }

    // RAII read-side critical section: nodes reachable while it lives are
    // not freed.
    class ReadGuard {
    public:
        explicit ReadGuard(const Impl& impl) : impl_(impl)
        {
            for (;;) {
                const std::uint64_t g = impl_.generation.load();
                slot_                 = static_cast<unsigned>(g & 1U);
                impl_.readers[slot_].fetch_add(1);
                if (impl_.generation.load() == g) {
                    break;
                }
                impl_.readers[slot_].fetch_sub(1);
            }
        }
        ~ReadGuard() { impl_.readers[slot_].fetch_sub(1); }
        ReadGuard(const ReadGuard&)            = delete;
        ReadGuard& operator=(const ReadGuard&) = delete;

    private:
        const Impl& impl_;
        unsigned    slot_ = 0;
    };

    // False when no region can touch [begin, end): every chunk counts zero.
    bool maybe_marked(std::uintptr_t begin, std::uintptr_t end) const
    {
        const std::uintptr_t first = begin >> kChunkShift;
        const std::uintptr_t last  = (end - 1) >> kChunkShift;
        if (wide.load(std::memory_order_relaxed) != 0 || last - first >= kFilterMaxChunks) {
            return true;
        }
        for (std::uintptr_t chunk = first; chunk <= last; ++chunk) {
            if (filter[filter_slot(chunk)].load(std::memory_order_relaxed) != 0) {
                return true;
            }
        }
        return false;
    }

    // --- writer side (caller holds write_mutex) ---

    // Counted before a region is linked, uncounted after it is unlinked, so
    // the filter never hides a linked region.
    void count_chunks(std::uintptr_t begin, std::uintptr_t end, bool add)
    {
        const std::uintptr_t first = begin >> kChunkShift;
        const std::uintptr_t last  = (end - 1) >> kChunkShift;
        if (last - first >= kFilterMaxChunks) {
            add ? wide.fetch_add(1, std::memory_order_relaxed)
                : wide.fetch_sub(1, std::memory_order_relaxed);
            return;
        }
        for (std::uintptr_t chunk = first; chunk <= last; ++chunk) {
            auto& slot = filter[filter_slot(chunk)];
            add ? slot.fetch_add(1, std::memory_order_relaxed)
                : slot.fetch_sub(1, std::memory_order_relaxed);
        }
    }

    int random_height()
    {
        // xorshift64: one bit per level gives p = 1/2.
        random_state ^= random_state << 13;
        random_state ^= random_state >> 7;
        random_state ^= random_state << 17;
        std::uint64_t bits   = random_state;
        int           height = 1;
        while (height < kMaxHeight && (bits & 1U) == 0) {
            ++height;
            bits >>= 1;
        }
        return height;
    }

    std::uint32_t intern(std::string_view label)
    {
        if (label.empty()) {
            return 0;
        }
        const std::string key(label);
        const auto        it = label_index.find(key);
        if (it != label_index.end()) {
            return it->second;
        }
        const auto index = static_cast<std::uint32_t>(labels.size());
        labels.push_back(key);
        label_index.emplace(key, index);
        return index;
    }

    // preds[l] = the last node at level l whose begin is < key (or head).
    void find_preds(std::uintptr_t key, Node* preds[kMaxHeight]) const
    {
        Node* x = head;
        for (int l = kMaxHeight - 1; l >= 0; --l) {
            while (x->next_key(l) < key) {   // kNoKey past the last node
                x = x->next(l).load(std::memory_order_relaxed);
            }
            preds[l] = x;
        }
    }

    // preds for a node of `height` levels at index position `p` (the first
    // entry at or after its begin), from the index: the nearest entries
    // before it tall enough for each level. False when that would scan
    // too far (tall nodes): find_preds then.
    bool preds_from_index(WriterIndex::Pos p, int height, Node* preds[kMaxHeight]) const
    {
        constexpr int kMaxScan = 64;
        int           level    = 0;
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
                Node* node = index.node_at(p);
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
    bool succs_from_index(WriterIndex::Pos p, int height, Node* succs[kMaxHeight],
                          std::uintptr_t keys[kMaxHeight]) const
    {
        constexpr int kMaxScan = 64;
        int           level    = 0;
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
                Node* const          node = index.node_at(p);
                const std::uintptr_t key  = index.begin_at(p);
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
        Node* preds[kMaxHeight];
        find_preds(begin, preds);
        link_after(preds, random_height(), begin, end, base, precision, label);
    }

    // The same, with preds already found for `begin` at `height` levels,
    // and `at`, when given, index.lower_bound(begin).
    void link_after(Node* const preds[kMaxHeight], int height, std::uintptr_t begin,
                    std::uintptr_t end, std::uintptr_t base, Precision precision,
                    std::uint32_t label, const WriterIndex::Pos* at = nullptr,
                    Node* const* succs = nullptr, const std::uintptr_t* succ_keys = nullptr)
    {
        count_chunks(begin, end, true);
        Node* node  = pool.create(height);
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
    void unlink(Node* node)
    {
        Node* preds[kMaxHeight];
        find_preds(node->begin, preds);
        unlink_after(preds, node);
    }

    // The same, with preds already found for node->begin, and `at`, when
    // given, its index position.
    void unlink_after(Node* const preds[kMaxHeight], Node* node,
                      const WriterIndex::Pos* at = nullptr)
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
    void unlink_indexed(WriterIndex::Pos at, Node* const preds[kMaxHeight],
                        Node* const succs[kMaxHeight], const std::uintptr_t succ_keys[kMaxHeight])
    {
        Node* const          node   = index.node_at(at);
        const int            height = index.height_at(at);
        const std::uintptr_t begin  = index.begin_at(at);
        const std::uintptr_t end    = index.end_at(at);
        for (int l = height - 1; l >= 0; --l) {
            preds[l]->next(l).store(succs[l], std::memory_order_release);
            preds[l]->next_key(l) = succ_keys[l];
        }
        forget(node, begin, end, at);
    }

    // A node that has left the list ([begin, end), at index position `at`):
    // uncounted, out of the index, retired.
    void forget(Node* node, std::uintptr_t begin, std::uintptr_t end, WriterIndex::Pos at)
    {
        count.fetch_sub(1, std::memory_order_relaxed);
        count_chunks(begin, end, false);
        index.erase(at);
        retired.push_back(node);
        if (retired.size() >= kRetireBatch) {
            free_retired();
        }
    }

    void free_retired()
    {
        const std::uint64_t g    = generation.fetch_add(1);
        const unsigned      slot = static_cast<unsigned>(g & 1U);
        while (readers[slot].load() != 0) {
            std::this_thread::yield();
        }
        for (Node* node : retired) {
            pool.destroy(node);
        }
        retired.clear();
    }

    // The linked nodes overlapping [begin, end), in address order.
    void overlapping(std::uintptr_t begin, std::uintptr_t end, std::vector<Node*>& out) const
    {
        Node* preds[kMaxHeight];
        find_preds(begin, preds);
        Node* node = preds[0];
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
    std::size_t cut(std::uintptr_t begin, std::uintptr_t end, std::uint32_t* first_label)
    {
        std::vector<Node*> hit;
        overlapping(begin, end, hit);
        if (hit.empty()) {
            return 0;
        }
        if (first_label != nullptr) {
            *first_label = hit.front()->label;
        }
        struct Part {
            std::uintptr_t begin, end, base;
            Precision      precision;
            std::uint32_t  label;
        };
        Part parts[2];
        int  part_count = 0;
        const Node* first = hit.front();
        const Node* last  = hit.back();
        if (first->begin < begin) {
            parts[part_count++] = Part{first->begin, begin, first->base, first->precision(),
                                       first->label};
        }
        if (last->end > end) {
            parts[part_count++] = Part{end, last->end, last->base, last->precision(),
                                       last->label};
        }
        for (Node* node : hit) {
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

bool RegionRegistry::mark(const void* ptr, std::size_t bytes, Precision precision,
                          std::string_view label)
{
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    if (ptr == nullptr || bytes == 0 || !valid(precision) ||
        bytes > std::numeric_limits<std::uintptr_t>::max() - begin) {
        return false;
    }
    const std::lock_guard<std::mutex> lock(impl_->write_mutex);
    const std::uint32_t label_id = impl_->intern(label);
    const std::uintptr_t end      = begin + bytes;
    // The common case, marking free space, finds its place in the index.
    const WriterIndex&      index = impl_->index;
    const WriterIndex::Pos  at    = index.lower_bound(begin);
    WriterIndex::Pos        before = at;
    const bool overlaps = (index.prev(before) && index.end_at(before) > begin) ||
                          (!index.at_end(at) && index.begin_at(at) < end);
    if (!overlaps) {
        const int      height = impl_->random_height();
        Node*          preds[kMaxHeight];
        Node*          succs[kMaxHeight];
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

bool RegionRegistry::unmark(const void* ptr)
{
    if (ptr == nullptr) {
        return false;
    }
    const auto                        begin = reinterpret_cast<std::uintptr_t>(ptr);
    const std::lock_guard<std::mutex> lock(impl_->write_mutex);
    const WriterIndex&                index = impl_->index;
    const WriterIndex::Pos            at    = index.lower_bound(begin);
    if (index.at_end(at) || index.begin_at(at) != begin) {
        return false;
    }
    const int        height = index.height_at(at);
    WriterIndex::Pos after  = at;
    index.next(after);
    Node*            preds[kMaxHeight];
    Node*            succs[kMaxHeight];
    std::uintptr_t   succ_keys[kMaxHeight];
    if (impl_->preds_from_index(at, height, preds) &&
        impl_->succs_from_index(after, height, succs, succ_keys)) {
        impl_->unlink_indexed(at, preds, succs, succ_keys);
    } else {
        impl_->find_preds(begin, preds);
        impl_->unlink_after(preds, index.node_at(at), &at);
    }
    return true;
}

std::size_t RegionRegistry::release(const void* ptr, std::size_t bytes, std::string* first_label)
{
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    if (ptr == nullptr || bytes == 0) {
        return 0;
    }
    const std::uintptr_t end = bytes > std::numeric_limits<std::uintptr_t>::max() - begin
                                       ? std::numeric_limits<std::uintptr_t>::max()
                                       : begin + bytes;
    const std::lock_guard<std::mutex> lock(impl_->write_mutex);
    std::uint32_t                     label = 0;
    const std::size_t                 cut   = impl_->cut(begin, end, &label);
    if (cut > 0 && first_label != nullptr) {
        *first_label = impl_->labels[label];
    }
    return cut;
}

std::size_t RegionRegistry::find(const void* ptr, std::size_t bytes, MarkedRun* runs,
                                 std::size_t max_runs) const
{
    if (ptr == nullptr || bytes == 0 || impl_->count.load(std::memory_order_relaxed) == 0) {
        return 0;
    }
    const auto q_begin = reinterpret_cast<std::uintptr_t>(ptr);
    const auto q_end   = bytes > std::numeric_limits<std::uintptr_t>::max() - q_begin
                                 ? std::numeric_limits<std::uintptr_t>::max()
                                 : q_begin + bytes;

    if (!impl_->maybe_marked(q_begin, q_end)) {
        return 0;
    }
    const Impl::ReadGuard guard(*impl_);
    // The last node whose begin is <= q_begin: the only one before the query
    // start that can reach into it.
    const Node* x = impl_->head;
    for (int l = kMaxHeight - 1; l >= 0; --l) {
        for (const Node* n = x->next(l).load(std::memory_order_acquire);
             n != nullptr && n->begin <= q_begin; n = x->next(l).load(std::memory_order_acquire)) {
            x = n;
        }
    }
    const Node* node = x;
    if (node == impl_->head || node->end <= q_begin) {
        node = node->next(0).load(std::memory_order_acquire);
    }
    std::size_t count = 0;
    for (; node != nullptr && node->begin < q_end && count <= max_runs;
         node = node->next(0).load(std::memory_order_acquire)) {
        if (count < max_runs && runs != nullptr) {
            runs[count] = MarkedRun{std::max(node->begin, q_begin), std::min(node->end, q_end),
                                    node->base, node->precision(), node->begin, node->end};
        }
        ++count;
    }
    return count;
}

std::size_t RegionRegistry::size() const noexcept
{
    return impl_->count.load(std::memory_order_relaxed);
}

const std::atomic<std::size_t>* RegionRegistry::size_word() const noexcept
{
    return &impl_->count;
}

}  // namespace slim::pack

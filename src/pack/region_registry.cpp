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
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <sys/mman.h>

namespace slim::pack {

namespace {

// p = 1/4 per level: 16 levels index 4^16 regions at O(log) cost.
constexpr int         kMaxHeight   = 16;
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

struct Node {
    std::uintptr_t      begin = 0;
    std::uintptr_t      end   = 0;   // exclusive; begin < end
    std::uintptr_t      base  = 0;   // element boundaries are relative to this
    Precision           precision;
    std::uint32_t       label  = 0;  // index into Impl::labels
    int                 height = 0;
    std::atomic<Node*>* next   = nullptr;  // `height` of them, right after the node

    static std::size_t bytes_for(int height)
    {
        return sizeof(Node) + sizeof(std::atomic<Node*>) * static_cast<std::size_t>(height);
    }

    // `memory` holds bytes_for(height).
    static Node* create(void* raw, int height)
    {
        auto* memory = static_cast<unsigned char*>(raw);
        Node* node   = new (memory) Node();
        node->height = height;
        node->next   = reinterpret_cast<std::atomic<Node*>*>(memory + sizeof(Node));
        for (int l = 0; l < height; ++l) {
            new (&node->next[l]) std::atomic<Node*>(nullptr);
        }
        return node;
    }
};

// Nodes of height 1 and 2 (15 of 16) come from 2 MiB slabs that the kernel
// may back with huge pages: a search visits ~40 nodes scattered over the
// whole list, and with 4 KiB pages most of those visits were TLB misses
// (10^6 random-order marks: 2.3 s). Taller nodes use malloc. Slabs are kept
// until the registry ends; freed slots are reused.
class NodePool {
public:
    static constexpr std::size_t kSlot     = 64;
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
        void* memory = bytes <= kSlot ? take_slot() : std::malloc(bytes);
        if (memory == nullptr) {
            throw std::bad_alloc();
        }
        return Node::create(memory, height);
    }

    void destroy(Node* node)
    {
        if (Node::bytes_for(node->height) <= kSlot) {
            auto* slot = reinterpret_cast<FreeSlot*>(node);
            slot->next = free_;
            free_      = slot;
        } else {
            std::free(node);
        }
    }

private:
    struct FreeSlot {
        FreeSlot* next;
    };

    void* take_slot()
    {
        if (free_ != nullptr) {
            FreeSlot* slot = free_;
            free_          = slot->next;
            return slot;
        }
        if (bump_ == bump_end_) {
            void* slab = ::mmap(nullptr, kSlabSize, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (slab == MAP_FAILED) {
                return nullptr;
            }
            ::madvise(slab, kSlabSize, MADV_HUGEPAGE);   // a hint; fine if refused
            slabs_.push_back(slab);
            bump_     = static_cast<unsigned char*>(slab);
            bump_end_ = bump_ + kSlabSize;
        }
        void* slot = bump_;
        bump_ += kSlot;
        return slot;
    }

    std::vector<void*> slabs_;
    FreeSlot*          free_     = nullptr;
    unsigned char*     bump_     = nullptr;
    unsigned char*     bump_end_ = nullptr;
};

static_assert(sizeof(Node) % alignof(std::atomic<Node*>) == 0);
static_assert(std::atomic<Node*>::is_always_lock_free);

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
    std::vector<Node*>                             retired;
    std::uint64_t                                  random_state = 0x9e3779b97f4a7c15ULL;
    std::vector<std::string>                       labels{std::string()};
    std::unordered_map<std::string, std::uint32_t> label_index;

    Impl() : head(pool.create(kMaxHeight)) {}
    ~Impl()
    {
        Node* node = head;
        while (node != nullptr) {
            Node* next = node->next[0].load(std::memory_order_relaxed);
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
        // xorshift64: two bits per level give p = 1/4.
        random_state ^= random_state << 13;
        random_state ^= random_state >> 7;
        random_state ^= random_state << 17;
        std::uint64_t bits   = random_state;
        int           height = 1;
        while (height < kMaxHeight && (bits & 3U) == 0) {
            ++height;
            bits >>= 2;
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
            for (Node* n = x->next[l].load(std::memory_order_relaxed);
                 n != nullptr && n->begin < key; n = x->next[l].load(std::memory_order_relaxed)) {
                x = n;
            }
            preds[l] = x;
        }
    }

    // Links a new region; it must not overlap any linked one.
    void link(std::uintptr_t begin, std::uintptr_t end, std::uintptr_t base, Precision precision,
              std::uint32_t label)
    {
        Node* preds[kMaxHeight];
        find_preds(begin, preds);
        link_after(preds, begin, end, base, precision, label);
    }

    // The same, with preds already found for `begin` (find_preds).
    void link_after(Node* const preds[kMaxHeight], std::uintptr_t begin, std::uintptr_t end,
                    std::uintptr_t base, Precision precision, std::uint32_t label)
    {
        count_chunks(begin, end, true);
        Node* node      = pool.create(random_height());
        node->begin     = begin;
        node->end       = end;
        node->base      = base;
        node->precision = precision;
        node->label     = label;
        for (int l = 0; l < node->height; ++l) {
            node->next[l].store(preds[l]->next[l].load(std::memory_order_relaxed),
                                std::memory_order_relaxed);
        }
        // Bottom level first: a reader that finds it higher up can go down.
        for (int l = 0; l < node->height; ++l) {
            preds[l]->next[l].store(node, std::memory_order_release);
        }
        count.fetch_add(1, std::memory_order_relaxed);
    }

    // Unlinks `node` (linked) and retires it; its own pointers stay intact
    // for readers standing on it.
    void unlink(Node* node)
    {
        Node* preds[kMaxHeight];
        find_preds(node->begin, preds);
        unlink_after(preds, node);
    }

    // The same, with preds already found for node->begin.
    void unlink_after(Node* const preds[kMaxHeight], Node* node)
    {
        for (int l = node->height - 1; l >= 0; --l) {
            if (preds[l]->next[l].load(std::memory_order_relaxed) == node) {
                preds[l]->next[l].store(node->next[l].load(std::memory_order_relaxed),
                                        std::memory_order_release);
            }
        }
        count.fetch_sub(1, std::memory_order_relaxed);
        count_chunks(node->begin, node->end, false);
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
            node = node->next[0].load(std::memory_order_relaxed);
        }
        for (; node != nullptr && node->begin < end;
             node = node->next[0].load(std::memory_order_relaxed)) {
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
            parts[part_count++] = Part{first->begin, begin, first->base, first->precision,
                                       first->label};
        }
        if (last->end > end) {
            parts[part_count++] = Part{end, last->end, last->base, last->precision, last->label};
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
    // The common case, marking free space, walks the list once.
    Node* preds[kMaxHeight];
    impl_->find_preds(begin, preds);
    const Node* before = preds[0];
    const Node* after  = before->next[0].load(std::memory_order_relaxed);
    const bool  overlaps = (before != impl_->head && before->end > begin) ||
                          (after != nullptr && after->begin < end);
    if (!overlaps) {
        impl_->link_after(preds, begin, end, begin, precision, label_id);
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
    Node*                             preds[kMaxHeight];
    impl_->find_preds(begin, preds);
    Node* node = preds[0]->next[0].load(std::memory_order_relaxed);
    if (node == nullptr || node->begin != begin) {
        return false;
    }
    impl_->unlink_after(preds, node);
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
        for (const Node* n = x->next[l].load(std::memory_order_acquire);
             n != nullptr && n->begin <= q_begin; n = x->next[l].load(std::memory_order_acquire)) {
            x = n;
        }
    }
    const Node* node = x;
    if (node == impl_->head || node->end <= q_begin) {
        node = node->next[0].load(std::memory_order_acquire);
    }
    std::size_t count = 0;
    for (; node != nullptr && node->begin < q_end && count <= max_runs;
         node = node->next[0].load(std::memory_order_acquire)) {
        if (count < max_runs && runs != nullptr) {
            runs[count] = MarkedRun{std::max(node->begin, q_begin), std::min(node->end, q_end),
                                    node->base, node->precision};
        }
        ++count;
    }
    return count;
}

std::size_t RegionRegistry::size() const noexcept
{
    return impl_->count.load(std::memory_order_relaxed);
}

}  // namespace slim::pack

// Region registry: an immutable, sorted vector of non-overlapping regions
// (a snapshot) published through an atomic pointer. Writers copy, edit and
// publish a new snapshot under a mutex; readers (find, the send path) only
// load the pointer and binary-search.
//
// Reclamation: a two-slot reader counter with a generation flip (the scheme
// of classic userspace RCU / SRCU, reduced to one registry). A reader
//   1. reads the generation g, increments readers_[g & 1],
//   2. re-reads the generation; if it changed, undoes the increment and
//      retries (this only happens when a writer flipped meanwhile, so the
//      loop is lock-free: someone made progress),
//   3. loads the snapshot, searches, decrements readers_[g & 1].
// A writer publishes the new snapshot, flips the generation, waits until the
// old slot drains, then frees the old snapshot. All of these are seq_cst, so
// a reader that passed step 2 with generation g is either seen by the writer
// that flips g (which waits for it) or loaded the snapshot after that
// writer's publish (so it never sees the retired one). Exactly one snapshot
// is alive outside a write, so memory stays bounded however many marks and
// unmarks a program makes; the price is that a writer may wait for a reader
// in progress (a find is a few hundred nanoseconds at most).
// std::atomic<std::shared_ptr> would be simpler but is not lock-free in
// libstdc++ 12 (it uses a spin lock pool).
#include "pack/region_registry.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace slim::pack {

namespace {

struct Region {
    std::uintptr_t begin = 0;
    std::uintptr_t end   = 0;   // exclusive; begin < end
    std::uintptr_t base  = 0;   // element boundaries are relative to this
    Precision      precision;
};

// Sorted by begin; non-overlapping, so also sorted by end.
using Snapshot = std::vector<Region>;

bool valid(Precision p)
{
    return p.keep_bytes >= kMinKeep && p.keep_bytes <= kMaxKeep &&
           (p.mode == Rounding::truncate || p.mode == Rounding::nearest_even);
}

}  // namespace

struct RegionRegistry::Impl {
    std::atomic<const Snapshot*> current{nullptr};
    std::atomic<std::uint64_t>   generation{0};
    // Mutable: find() is const but registers itself as a reader.
    mutable std::atomic<std::uint64_t> readers[2] = {{0}, {0}};
    std::mutex                   write_mutex;   // writers only

    static_assert(std::atomic<const Snapshot*>::is_always_lock_free);
    static_assert(std::atomic<std::uint64_t>::is_always_lock_free);

    Impl() : current(new Snapshot()) {}
    ~Impl() { delete current.load(); }

    // RAII read-side critical section: while it lives, the snapshot it
    // returns is not freed.
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
            snapshot_ = impl_.current.load();
        }
        ~ReadGuard() { impl_.readers[slot_].fetch_sub(1); }
        ReadGuard(const ReadGuard&)            = delete;
        ReadGuard& operator=(const ReadGuard&) = delete;

        const Snapshot& snapshot() const { return *snapshot_; }

    private:
        const Impl&     impl_;
        unsigned        slot_     = 0;
        const Snapshot* snapshot_ = nullptr;
    };

    // Caller holds write_mutex.
    const Snapshot& latest() const { return *current.load(); }

    // Caller holds write_mutex. Publishes `next` and frees the previous
    // snapshot once no reader can still hold it.
    void publish(std::unique_ptr<Snapshot> next)
    {
        std::unique_ptr<const Snapshot> old{current.exchange(next.release())};
        const std::uint64_t g = generation.fetch_add(1);
        const unsigned      slot = static_cast<unsigned>(g & 1U);
        while (readers[slot].load() != 0) {
            std::this_thread::yield();
        }
        // `old` is freed here.
    }
};

RegionRegistry::RegionRegistry() : impl_(new Impl()) {}

RegionRegistry::~RegionRegistry() { delete impl_; }

bool RegionRegistry::mark(const void* ptr, std::size_t bytes, Precision precision)
{
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    if (ptr == nullptr || bytes == 0 || !valid(precision) ||
        bytes > std::numeric_limits<std::uintptr_t>::max() - begin) {
        return false;
    }
    const Region added{begin, begin + bytes, begin, precision};

    const std::lock_guard<std::mutex> lock(impl_->write_mutex);
    const Snapshot& old  = impl_->latest();
    auto            next = std::make_unique<Snapshot>();
    next->reserve(old.size() + 2);
    bool inserted = false;
    for (const Region& r : old) {
        if (r.end <= added.begin || r.begin >= added.end) {
            if (!inserted && r.begin >= added.end) {
                next->push_back(added);
                inserted = true;
            }
            next->push_back(r);
            continue;
        }
        // Overlap: keep the parts outside the new region, with their
        // original base so their element boundaries do not move.
        if (r.begin < added.begin) {
            next->push_back(Region{r.begin, added.begin, r.base, r.precision});
        }
        if (!inserted) {
            next->push_back(added);
            inserted = true;
        }
        if (r.end > added.end) {
            next->push_back(Region{added.end, r.end, r.base, r.precision});
        }
    }
    if (!inserted) {
        next->push_back(added);
    }
    impl_->publish(std::move(next));
    return true;
}

bool RegionRegistry::unmark(const void* ptr)
{
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);

    const std::lock_guard<std::mutex> lock(impl_->write_mutex);
    const Snapshot& old = impl_->latest();
    const auto      it  = std::lower_bound(
            old.begin(), old.end(), begin,
            [](const Region& r, std::uintptr_t p) { return r.begin < p; });
    if (ptr == nullptr || it == old.end() || it->begin != begin) {
        return false;
    }
    auto next = std::make_unique<Snapshot>();
    next->reserve(old.size() - 1);
    next->insert(next->end(), old.begin(), it);
    next->insert(next->end(), it + 1, old.end());
    impl_->publish(std::move(next));
    return true;
}

std::size_t RegionRegistry::find(const void* ptr, std::size_t bytes, MarkedRun* runs,
                                 std::size_t max_runs) const
{
    if (ptr == nullptr || bytes == 0) {
        return 0;
    }
    const auto q_begin = reinterpret_cast<std::uintptr_t>(ptr);
    const auto q_end   = bytes > std::numeric_limits<std::uintptr_t>::max() - q_begin
                                 ? std::numeric_limits<std::uintptr_t>::max()
                                 : q_begin + bytes;

    const Impl::ReadGuard guard(*impl_);
    const Snapshot&       s = guard.snapshot();
    // First region ending after the query start, first region starting at or
    // after the query end: everything between overlaps.
    const auto first = std::partition_point(
            s.begin(), s.end(), [q_begin](const Region& r) { return r.end <= q_begin; });
    const auto last = std::partition_point(
            first, s.end(), [q_end](const Region& r) { return r.begin < q_end; });
    const auto count = static_cast<std::size_t>(last - first);
    if (runs != nullptr) {
        const std::size_t n = std::min(count, max_runs);
        for (std::size_t i = 0; i < n; ++i) {
            const Region& r = first[static_cast<std::ptrdiff_t>(i)];
            runs[i] = MarkedRun{std::max(r.begin, q_begin), std::min(r.end, q_end), r.base,
                                r.precision};
        }
    }
    return count;
}

std::size_t RegionRegistry::size() const
{
    const Impl::ReadGuard guard(*impl_);
    return guard.snapshot().size();
}

}  // namespace slim::pack

// SPDX-License-Identifier: BSD-3-Clause
// Algorithm 1 (thesis §5.2.2) and the gram table behind it.
#include "gram_former.h"

#include "base/hash.h"
#include "base/power_of_two.h"

#include <algorithm>
#include <cstring>

namespace slim::predict {

namespace detail {

OpenIndex::OpenIndex(std::size_t entries)
    : slots_(power_of_two_at_least(std::max<std::size_t>(2 * entries, 2)), 0),
      mask_(slots_.size() - 1)
{}

std::size_t OpenIndex::home(std::uint64_t hash) const
{
    // Sequence hashes differ mostly in high bits: mix them down before masking.
    return static_cast<std::size_t>(splitmix64_mix(hash)) & mask_;
}

void OpenIndex::insert(std::uint64_t hash, std::uint32_t entry)
{
    std::size_t i = home(hash);
    while (slots_[i] != 0) {
        i = (i + 1) & mask_;
    }
    slots_[i] = entry + 1;
}

void OpenIndex::clear() { std::fill(slots_.begin(), slots_.end(), 0); }

}  // namespace detail

// ------------------------------------------------------------------ GramTable

namespace {

// Event ids kept per distinct gram on average; longer grams borrow from
// shorter ones.
constexpr std::size_t kArenaIdsPerGram = 8;

}  // namespace

GramTable::GramTable(std::size_t capacity, std::size_t max_gram_events)
    : capacity_(std::clamp<std::size_t>(capacity, 1, kNoGram - 1)),
      max_gram_events_(std::max<std::size_t>(max_gram_events, 1)), kinds_(capacity_),
      arena_(capacity_ * kArenaIdsPerGram + max_gram_events_ + kRecordHeader), index_(capacity_)
{
    free_.reserve(capacity_);
    clear();
}

void GramTable::clear()
{
    free_.clear();
    for (std::size_t k = capacity_; k-- > 0;) {
        kinds_[k] = Kind{};
        free_.push_back(static_cast<GramId>(k));
    }
    arena_top_ = 0;
    index_.clear();
}

bool GramTable::matches(GramId id, std::uint64_t hash, const EventId *ids, std::size_t stored,
                        std::uint32_t length) const
{
    const Kind& k = kinds_[id];
    return k.hash == hash && k.length == length && k.stored == stored &&
           std::equal(ids, ids + stored, &arena_[k.offset]);
}

GramId GramTable::intern(std::uint64_t hash, const EventId *ids, std::size_t stored,
                         std::uint32_t length)
{
    stored                    = std::min(stored, max_gram_events_);
    const std::uint32_t found = index_.find(
            hash, [&](std::uint32_t id) { return matches(id, hash, ids, stored, length); });
    if (found != detail::OpenIndex::kNone) {
        ++kinds_[found].refs;
        return found;
    }
    if (free_.empty()) {
        return kNoGram;
    }
    const std::size_t need = stored + kRecordHeader;
    if (arena_top_ + need > arena_.size()) {
        compact();
        if (arena_top_ + need > arena_.size()) {
            return kNoGram;
        }
    }
    const GramId id = free_.back();
    free_.pop_back();
    arena_[arena_top_]     = id;
    arena_[arena_top_ + 1] = static_cast<EventId>(stored);
    std::copy(ids, ids + stored, &arena_[arena_top_ + kRecordHeader]);
    Kind& k  = kinds_[id];
    k.hash   = hash;
    k.offset = static_cast<std::uint32_t>(arena_top_ + kRecordHeader);
    k.length = length;
    k.stored = static_cast<std::uint32_t>(stored);
    k.refs   = 1;
    arena_top_ += need;
    index_.insert(hash, id);
    return id;
}

void GramTable::acquire(GramId id)
{
    if (id != kNoGram) {
        ++kinds_[id].refs;
    }
}

void GramTable::release(GramId id)
{
    if (id == kNoGram || kinds_[id].refs == 0) {
        return;
    }
    if (--kinds_[id].refs == 0) {
        index_.erase(kinds_[id].hash, id,
                     [this](std::uint32_t other) { return kinds_[other].hash; });
        free_.push_back(id);
    }
}

// Slides the live records down over the dead ones. Runs only when at least a
// quarter of the arena is dead, so its cost is amortized to a few words moved
// per word allocated; otherwise the table is simply full.
void GramTable::compact()
{
    std::size_t live_words = 0;
    for (const Kind& k : kinds_) {
        live_words += k.refs > 0 ? k.stored + kRecordHeader : 0;
    }
    if (arena_.size() - live_words < arena_.size() / 4) {
        return;
    }
    std::size_t write = 0;
    for (std::size_t read = 0; read < arena_top_;) {
        const GramId id          = arena_[read];
        const std::size_t stored = arena_[read + 1];
        const std::size_t words  = stored + kRecordHeader;
        Kind& k                  = kinds_[id];
        if (k.refs > 0 && k.offset == read + kRecordHeader) {
            std::memmove(&arena_[write], &arena_[read], words * sizeof(EventId));
            k.offset = static_cast<std::uint32_t>(write + kRecordHeader);
            write += words;
        }
        read += words;
    }
    arena_top_ = write;
}

std::size_t GramTable::memory_bytes() const
{
    return kinds_.capacity() * sizeof(Kind) + free_.capacity() * sizeof(GramId) +
           arena_.capacity() * sizeof(EventId) + index_.memory_bytes();
}

// ----------------------------------------------------------------- GramFormer

GramFormer::GramFormer(GramTable& table) : table_(table), ids_(table.max_gram_events()) {}

std::optional<CompletedGram> GramFormer::on_event(EventId id, std::optional<TimeNs> previous_idle,
                                                  TimeNs gt_ns)
{
    std::optional<CompletedGram> completed;
    // Line 1: "previousIdleTime > groupingThreshold" starts a new gram, so an
    // idle interval exactly at the GT still joins (the narrative's "less
    // than" and the pseudo-code's ">" differ only there; the pseudo-code
    // wins).
    if (length_ > 0 && previous_idle && *previous_idle > gt_ns) {
        completed = CompletedGram{table_.intern(hash_, ids_.data(), stored_, length_),
                                  *previous_idle, length_};
        clear();
    }
    if (stored_ < ids_.size()) {
        ids_[stored_++] = id;
        hash_           = hash_append(hash_, id);
    }
    ++length_;
    return completed;
}

void GramFormer::clear()
{
    stored_ = 0;
    length_ = 0;
    hash_   = kSequenceSeed;
}

}  // namespace slim::predict

// SPDX-License-Identifier: BSD-3-Clause
// PPA, thesis §5.2.3: Algorithm 2 (the search), Algorithm 3 (updatePL).
//
// How the pseudo-code was read, checked event by event against Figure 5.3
// (tests/unit/test_pattern_predictor.cpp replays it):
//
// * posNext is always posCur + patSize. The pseudo-code grows patSize
//   (line 6) without moving posNext, but the example then finds the
//   consecutive repeat of the grown tri-gram 41-41-41_10_10 at position 6 =
//   posCur + patSize on event 17 (panel (c): positions 3, 6), not at the old
//   posNext 5. Keeping the invariant gives exactly that.
// * One step per invocation, and Algorithm 1 invokes the PPA only when
//   pos >= posNext + patSize: that is what spaces the example's actions
//   (insert on event 9, check on 10, insert on 11, ...). After a growth the
//   consecutive check runs in the same invocation if the array already holds
//   the next occurrence (event 17), otherwise on a later one. A search that
//   falls well behind catches up with a few steps per event (kCatchUpLag).
// * Lines 13-15, "all previous positions can be extended": the narrative says
//   the grown pattern is dropped when it "cannot be detected at any previous
//   position ... and there's no consecutive repeats", so one previous position
//   that extends is enough (the example cannot tell: both extend).
// * Line 32 shifts posCur by patSize - 1 after a failed check of a new
//   pattern; after a failed check of a known one nothing moves and the next
//   invocation grows it (events 16 and 17 of the example).
// * What the pseudo-code leaves open, chosen so that the search always moves
//   on and never records one position twice:
//   - a grown pattern with neither a previous nor a consecutive occurrence is
//     removed (if this growth created it) and the search restarts with a
//     bi-gram one gram further on; one that does recur elsewhere is grown
//     again on the next invocation;
//   - a known pattern that cannot grow (patSize = maxPatternSize) is left
//     the same way;
//   - consecutiveRepeats restarts at 0 with every new current pattern.
// * Reactivation (lines 9-12, and the policy: "observing the pattern once
//   more causes it to be detected") applies to a previously used pattern met
//   either by growing or by inserting a slice: a used bi-gram can never be
//   met by growing once maxPatternSize is 2.
// * Prediction starts with the gram after the occurrence that switched it on
//   -- unless the search lags behind the array, in which case the grams since
//   must follow the pattern, and they say where in the pattern the gram in
//   progress is.
#include "pattern_predictor.h"

#include "base/power_of_two.h"

#include <algorithm>

namespace slim::predict {

namespace {

// Entries looked at to pick one to forget when the pattern list is full.
constexpr std::size_t kEvictionScan = 16;

// One PPA step per event, as in the thesis, while the search keeps up with
// the array; a search more than kCatchUpLag grams behind Algorithm 1's
// condition takes up to kMaxStepsPerEvent steps. With single-event grams a
// step per event cannot keep up (sliding on takes two steps per gram), and a
// search that lags works on old grams: after a misprediction it would find
// the pattern again only long after it is back. The example of Figure 5.3
// never lags by more than 2, so its timing is unchanged.
constexpr std::size_t kCatchUpLag       = 3;
constexpr std::size_t kMaxStepsPerEvent = 4;

// Not in the thesis. maxPatternSize (line 24) stays at the size of the
// pattern last confirmed, so after a phase with a short iteration a longer
// one could never be found again. Once nothing has been predicted for this
// many times the configured maximum pattern size, in grams, the limit is
// lifted again. A misprediction followed by the same pattern is reactivated
// long before that.
constexpr std::size_t kLiftMaxPatternAfter = 8;

PatternPredictorConfig sanitized(PatternPredictorConfig c)
{
    c.max_pattern_size = std::clamp<std::size_t>(c.max_pattern_size, 2, 0xffff);
    c.gram_capacity    = power_of_two_at_least(std::max(c.gram_capacity, 4 * c.max_pattern_size));
    c.pattern_capacity = std::clamp<std::size_t>(c.pattern_capacity, 4, 0xffff'fffe);
    c.positions_per_pattern = std::max<std::size_t>(c.positions_per_pattern, 2);
    return c;
}

}  // namespace

PatternPredictor::PatternPredictor(GramTable& grams, const PatternPredictorConfig& config)
    : table_(grams), config_(sanitized(config)), ring_(config_.gram_capacity),
      ring_mask_(config_.gram_capacity - 1), entries_(config_.pattern_capacity),
      keys_(config_.pattern_capacity * config_.max_pattern_size, kNoGram),
      positions_(config_.pattern_capacity * config_.positions_per_pattern, 0),
      index_(config_.pattern_capacity), max_pat_(config_.max_pattern_size),
      idles_(config_.max_pattern_size, 0)
{
    free_entries_.reserve(config_.pattern_capacity);
    clear();
}

void PatternPredictor::clear()
{
    std::fill(ring_.begin(), ring_.end(), Slot{});
    pos_ = 0;
    std::fill(entries_.begin(), entries_.end(), Entry{});
    free_entries_.clear();
    for (std::size_t e = entries_.size(); e-- > 0;) {
        free_entries_.push_back(static_cast<std::uint32_t>(e));
    }
    index_.clear();
    clock_           = 0;
    evict_cursor_    = 0;
    max_pat_         = config_.max_pattern_size;
    predicted_entry_ = kNone;
    predicted_at_    = 0;
    search_from(0);
}

// ------------------------------------------------------------ gram array

bool PatternPredictor::holds(std::uint64_t position) const
{
    return position < pos_ && pos_ - position <= ring_.size();
}

GramId PatternPredictor::gram_at(std::uint64_t position) const
{
    return ring_[position & ring_mask_].gram;
}

TimeNs PatternPredictor::idle_after(std::uint64_t position) const
{
    return ring_[position & ring_mask_].idle_after;
}

void PatternPredictor::add_gram(const CompletedGram& gram)
{
    Slot& slot = ring_[pos_ & ring_mask_];
    if (pos_ >= ring_.size()) {
        table_.release(slot.gram);
    }
    slot = Slot{gram.gram, gram.events, gram.idle_after};
    ++pos_;
}

// ------------------------------------------------------------ Algorithm 2

std::optional<Activation> PatternPredictor::on_event(bool prediction_active)
{
    ++events_;
    if (prediction_active) {
        return std::nullopt;
    }
    if (max_pat_ < config_.max_pattern_size &&
        pos_ - predicted_at_ > kLiftMaxPatternAfter * config_.max_pattern_size) {
        max_pat_ = config_.max_pattern_size;
    }
    // The search window must stay inside the ring; a search that fell that
    // far behind starts over at the newest gram.
    if (pos_ - pos_cur_ + 2 * config_.max_pattern_size > ring_.size()) {
        search_from(pos_);
    }
    if (pos_ < pos_cur_ + 2 * pat_size_) {  // Algorithm 1, line 7
        return std::nullopt;
    }
    for (std::size_t i = 0; i < kMaxStepsPerEvent; ++i) {
        ++invocations_;
        if (auto activation = step()) {
            return activation;
        }
        if (pos_ < pos_cur_ + 2 * pat_size_ + kCatchUpLag) {
            break;
        }
    }
    return std::nullopt;
}

std::optional<Activation> PatternPredictor::step()
{
    if (!new_pattern_ && !check_consec_) {  // lines 1-17
        if (pat_size_ < max_pat_) {
            if (auto activation = grow()) {
                return activation;
            }
        } else {
            search_from(pos_cur_ + 1);
            if (pos_ < pos_cur_ + 2 * pat_size_) {
                return std::nullopt;
            }
        }
    }
    if (check_consec_) {  // lines 18-38
        if (pos_ < pos_cur_ + 2 * pat_size_) {
            return std::nullopt;  // the grown pattern's next occurrence is not complete yet
        }
        return check_consecutive();
    }
    return insert_current();  // lines 39-42
}

// Lines 2-17: currPattern + the gram after it.
std::optional<Activation> PatternPredictor::grow()
{
    if (gram_at(pos_cur_ + pat_size_) == kNoGram) {
        search_from(pos_cur_ + 1);  // it cannot grow over a gram the table had no room for
        return std::nullopt;
    }
    const std::uint32_t prefix = cur_entry_;
    check_previous_            = true;
    match_                     = false;
    ++pat_size_;
    const std::uint64_t hash =
            hash_append(entries_[prefix].hash, gram_at(pos_cur_ + pat_size_ - 1));
    const Lookup grown = update_pattern_list(pos_cur_, pat_size_, hash);
    new_pattern_       = grown.is_new;
    grown_inserted_    = grown.is_new;
    check_consec_      = true;
    consecutive_       = 0;
    if (!grown.is_new && entries_[grown.entry].was_used) {
        cur_entry_ = grown.entry;
        if (auto activation = activate(grown.entry, pos_cur_, true)) {
            return activation;
        }
    }
    // Lines 13-15 over the prefix's positions (the kept ones still in the
    // ring), before cur_entry_ stops protecting the prefix.
    const Entry& p            = entries_[prefix];
    const std::size_t per     = config_.positions_per_pattern;
    const std::uint64_t *kept = &positions_[prefix * per];
    for (std::uint32_t i = 0; i < p.npos && !match_; ++i) {
        const std::uint64_t at = kept[(p.pos_next + per - p.npos + i) % per];
        if (at != pos_cur_ && slice_equals(at, grown.entry)) {
            match_ = true;
        }
    }
    cur_entry_ = grown.entry;
    return std::nullopt;
}

// Lines 18-38: is currPattern repeated at posNext?
std::optional<Activation> PatternPredictor::check_consecutive()
{
    const std::uint64_t next = pos_cur_ + pat_size_;
    if (slice_equals(next, cur_entry_)) {
        ++consecutive_;
        Entry& e = entries_[cur_entry_];  // line 21, UpdatePL(currPattern, posNext)
        ++e.frequency;
        e.touched = ++clock_;
        add_position(cur_entry_, next);
        notify(PatternListChange::Kind::repeated, cur_entry_);
        match_          = true;
        check_previous_ = false;
        pos_cur_        = next;
        // Three occurrences in a row. ">=": should the grams since the last
        // one not follow the pattern, the next repeat tries again.
        if (consecutive_ >= 2) {
            max_pat_   = pat_size_;
            e.was_used = true;
            return activate(cur_entry_, pos_cur_, false);
        }
        return std::nullopt;
    }
    check_consec_ = false;
    consecutive_  = 0;
    if (check_previous_) {  // a growth is decided
        check_previous_ = false;
        if (!match_) {  // lines 35-38
            if (grown_inserted_ && !entries_[cur_entry_].was_used) {
                remove_entry(cur_entry_);
            }
            search_from(pos_cur_ + 1);
        } else {
            new_pattern_ = false;  // it recurs, just not back to back: grow on
        }
        return std::nullopt;
    }
    if (new_pattern_) {  // lines 32-34
        pos_cur_ += pat_size_ - 1;
    }
    return std::nullopt;
}

// Lines 39-42.
std::optional<Activation> PatternPredictor::insert_current()
{
    // A pattern holding a gram the table had no room for can never repeat,
    // and all such patterns would share one hash: the search moves past it.
    for (std::size_t i = pat_size_; i-- > 0;) {
        if (gram_at(pos_cur_ + i) == kNoGram) {
            search_from(pos_cur_ + i + 1);
            return std::nullopt;
        }
    }
    const Lookup current =
            update_pattern_list(pos_cur_, pat_size_, slice_hash(pos_cur_, pat_size_));
    cur_entry_      = current.entry;
    new_pattern_    = current.is_new;
    check_consec_   = true;
    check_previous_ = false;
    match_          = false;
    grown_inserted_ = false;
    consecutive_    = 0;
    if (!current.is_new && entries_[current.entry].was_used) {
        return activate(current.entry, pos_cur_, true);
    }
    return std::nullopt;
}

std::optional<Activation> PatternPredictor::activate(std::uint32_t entry, std::uint64_t start,
                                                     bool reactivated)
{
    const std::size_t n = entries_[entry].size;
    if (!holds(start) || start + n > pos_) {
        return std::nullopt;
    }
    const GramId *grams = key(entry);
    for (std::uint64_t at = start + n; at < pos_; ++at) {
        if (!same_gram(gram_at(at), grams[(at - start) % n])) {
            return std::nullopt;
        }
    }
    // The latest value of each idle interval (§5.2.1: "updating the idle
    // intervals with recent values").
    for (std::uint64_t at = start; at < pos_; ++at) {
        idles_[(at - start) % n] = idle_after(at);
    }
    predicted_entry_ = entry;
    predicted_at_    = pos_;
    Activation a;
    a.entry       = entry;
    a.grams       = grams;
    a.idles       = idles_.data();
    a.size        = n;
    a.index       = static_cast<std::size_t>((pos_ - start) % n);
    a.reactivated = reactivated;
    return a;
}

void PatternPredictor::search_from(std::uint64_t position)
{
    pos_cur_        = position;
    pat_size_       = 2;
    cur_entry_      = kNone;
    new_pattern_    = true;
    check_consec_   = false;
    check_previous_ = false;
    match_          = false;
    grown_inserted_ = false;
    consecutive_    = 0;
}

void PatternPredictor::prediction_ended()
{
    predicted_entry_ = kNone;
    predicted_at_    = pos_;
    search_from(pos_);
}

// ------------------------------------------------------------ pattern list

std::uint64_t PatternPredictor::slice_hash(std::uint64_t start, std::size_t size) const
{
    std::uint64_t hash = kSequenceSeed;
    for (std::size_t i = 0; i < size; ++i) {
        hash = hash_append(hash, gram_at(start + i));
    }
    return hash;
}

bool PatternPredictor::slice_equals(std::uint64_t start, std::uint32_t entry) const
{
    const std::size_t n = entries_[entry].size;
    if (!holds(start) || start + n > pos_) {
        return false;
    }
    const GramId *grams = key(entry);
    for (std::size_t i = 0; i < n; ++i) {
        if (!same_gram(gram_at(start + i), grams[i])) {
            return false;
        }
    }
    return true;
}

std::uint32_t PatternPredictor::find(std::uint64_t start, std::size_t size,
                                     std::uint64_t hash) const
{
    return index_.find(hash, [&](std::uint32_t e) {
        return entries_[e].hash == hash && entries_[e].size == size && slice_equals(start, e);
    });
}

// Algorithm 3.
PatternPredictor::Lookup PatternPredictor::update_pattern_list(std::uint64_t start,
                                                               std::size_t size, std::uint64_t hash)
{
    if (const std::uint32_t found = find(start, size, hash); found != kNone) {
        Entry& e = entries_[found];
        ++e.frequency;
        e.touched = ++clock_;
        add_position(found, start);
        notify(PatternListChange::Kind::repeated, found);
        return {found, false};
    }
    const std::uint32_t entry = allocate_entry();
    Entry& e                  = entries_[entry];
    e                         = Entry{};
    e.hash                    = hash;
    e.size                    = static_cast<std::uint32_t>(size);
    e.frequency               = 1;
    e.touched                 = ++clock_;
    GramId *grams             = key(entry);
    for (std::size_t i = 0; i < size; ++i) {
        const Slot& slot = ring_[(start + i) & ring_mask_];
        grams[i]         = slot.gram;
        table_.acquire(slot.gram);
        e.events += slot.events;
    }
    add_position(entry, start);
    index_.insert(hash, entry);
    notify(PatternListChange::Kind::inserted, entry);
    return {entry, true};
}

void PatternPredictor::add_position(std::uint32_t entry, std::uint64_t position)
{
    Entry& e              = entries_[entry];
    const std::size_t per = config_.positions_per_pattern;
    std::uint64_t *kept   = &positions_[entry * per];
    if (e.npos > 0 && kept[(e.pos_next + per - 1) % per] == position) {
        return;
    }
    kept[e.pos_next] = position;
    e.pos_next       = static_cast<std::uint32_t>((e.pos_next + 1) % per);
    e.npos           = static_cast<std::uint32_t>(std::min<std::size_t>(e.npos + 1, per));
}

bool PatternPredictor::is_protected(std::uint32_t entry) const
{
    return entry == cur_entry_ || entry == predicted_entry_;
}

// Full: forget the least recently seen of a few entries, preferring one that
// was never used for prediction (those are kept for reactivation).
std::uint32_t PatternPredictor::allocate_entry()
{
    if (free_entries_.empty()) {
        std::uint32_t victim = kNone;
        for (std::size_t i = 0; i < kEvictionScan; ++i) {
            const auto e  = static_cast<std::uint32_t>(evict_cursor_);
            evict_cursor_ = (evict_cursor_ + 1) % entries_.size();
            if (is_protected(e)) {
                continue;
            }
            const Entry& c = entries_[e];
            if (victim == kNone || c.was_used < entries_[victim].was_used ||
                (c.was_used == entries_[victim].was_used && c.touched < entries_[victim].touched)) {
                victim = e;
            }
        }
        remove_entry(victim);
    }
    const std::uint32_t entry = free_entries_.back();
    free_entries_.pop_back();
    return entry;
}

void PatternPredictor::remove_entry(std::uint32_t entry)
{
    notify(PatternListChange::Kind::removed, entry);
    Entry& e            = entries_[entry];
    const GramId *grams = key(entry);
    for (std::size_t i = 0; i < e.size; ++i) {
        table_.release(grams[i]);
    }
    index_.erase(e.hash, entry, [this](std::uint32_t other) { return entries_[other].hash; });
    e = Entry{};
    free_entries_.push_back(entry);
}

void PatternPredictor::notify(PatternListChange::Kind kind, std::uint32_t entry) const
{
    if (observer_) {
        observer_(PatternListChange{events_, kind, entry});
    }
}

// ------------------------------------------------------------ introspection

std::size_t PatternPredictor::patterns() const { return entries_.size() - free_entries_.size(); }

std::size_t PatternPredictor::pattern_size(std::size_t entry) const { return entries_[entry].size; }

std::uint32_t PatternPredictor::frequency(std::size_t entry) const
{
    return entries_[entry].frequency;
}

std::uint32_t PatternPredictor::event_count(std::size_t entry) const
{
    return entries_[entry].events;
}

bool PatternPredictor::was_used(std::size_t entry) const { return entries_[entry].was_used; }

std::vector<std::uint64_t> PatternPredictor::positions(std::size_t entry) const
{
    const Entry& e        = entries_[entry];
    const std::size_t per = config_.positions_per_pattern;
    std::vector<std::uint64_t> out;
    for (std::uint32_t i = 0; i < e.npos; ++i) {
        out.push_back(positions_[entry * per + (e.pos_next + per - e.npos + i) % per]);
    }
    return out;
}

std::string PatternPredictor::gram_string(GramId gram) const
{
    if (gram == kNoGram) {
        return "?";
    }
    std::string s;
    const EventId *ids       = table_.events(gram);
    const std::size_t stored = table_.stored(gram);
    for (std::size_t i = 0; i < stored; ++i) {
        s += (i ? "-" : "") + std::to_string(ids[i]);
    }
    if (table_.length(gram) > stored) {
        s += "-...(" + std::to_string(table_.length(gram)) + " events)";
    }
    return s;
}

std::string PatternPredictor::pattern_string(std::size_t entry) const
{
    std::string s;
    const GramId *grams = key(static_cast<std::uint32_t>(entry));
    for (std::size_t i = 0; i < entries_[entry].size; ++i) {
        s += (i ? "_" : "") + gram_string(grams[i]);
    }
    return s;
}

std::size_t PatternPredictor::memory_bytes() const
{
    return ring_.capacity() * sizeof(Slot) + entries_.capacity() * sizeof(Entry) +
           keys_.capacity() * sizeof(GramId) + positions_.capacity() * sizeof(std::uint64_t) +
           free_entries_.capacity() * sizeof(std::uint32_t) + index_.memory_bytes() +
           idles_.capacity() * sizeof(TimeNs);
}

}  // namespace slim::predict

/* SPDX-License-Identifier: BSD-3-Clause */
// The Pattern Prediction Algorithm, PPA (thesis §5.2.3, Algorithms 2 and 3):
// finds a sequence of grams that repeats back to back in the gram array and
// switches prediction on after three consecutive occurrences, or at once when
// a pattern that was predicted before is seen again.
//
// The gram array is a ring of the most recent grams (positions are absolute
// and keep growing; a position older than the ring is gone). The pattern list
// is a bounded table keyed by the pattern's gram sequence (a hash of the gram
// ids, with a full comparison on a hash hit); full, it forgets a pattern not
// seen for long, preferring one that was never used for prediction.
//
// Where Algorithm 2's pseudo-code and the worked example of Figure 5.3 (the
// execution table and the narrative around it) disagree, this follows the
// example; pattern_predictor.cpp says where and why.
#pragma once

#include "gram_former.h"
#include "types.h"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace slim::predict {

struct PatternPredictorConfig {
    std::size_t max_pattern_size      = 64;    // grams; PPA grows patterns up to this
    std::size_t gram_capacity         = 4096;  // gram array ring
    std::size_t pattern_capacity      = 1024;  // pattern list entries
    std::size_t positions_per_pattern = 8;     // most recent positions kept per pattern
};

// Prediction switched on: the pattern, the idle interval after each of its
// grams (from its latest occurrence), and which of its grams the gram in
// progress should be. The pointers stay valid until the next call into the
// PatternPredictor.
struct Activation {
    std::size_t entry   = 0;  // pattern list entry
    const GramId *grams = nullptr;
    const TimeNs *idles = nullptr;
    std::size_t size    = 0;
    std::size_t index   = 0;
    bool reactivated    = false;  // a previously used pattern seen again
};

// Pattern list changes, for tests and tools (Figure 5.3 (c)).
struct PatternListChange {
    enum class Kind { inserted, repeated, removed };
    std::uint64_t event = 0;  // 1-based count of on_event() calls
    Kind kind           = Kind::inserted;
    std::size_t entry   = 0;
};
using PatternObserver = std::function<void(const PatternListChange&)>;

class PatternPredictor {
public:
    PatternPredictor(GramTable& grams, const PatternPredictorConfig& config);

    // Algorithm 1, lines 2-3: appends a completed gram to the array and takes
    // over its GramTable reference.
    void add_gram(const CompletedGram& gram);

    // Algorithm 1, lines 6-8, once per event, after add_gram() when the event
    // completed a gram: while no prediction is active and the array holds
    // enough grams (pos >= posNext + patSize), one PPA step.
    std::optional<Activation> on_event(bool prediction_active);

    // Algorithm 4 found a mismatch: the PPA searches again, starting at the
    // gram in progress.
    void prediction_ended();

    // Forgets everything (a restart); used together with GramTable::clear().
    void clear();

    // --- state, for the predictor facade, tests and tools
    std::uint64_t grams() const { return pos_; }  // grams ever added (pos)
    bool holds(std::uint64_t position) const;
    GramId gram_at(std::uint64_t position) const;
    TimeNs idle_after(std::uint64_t position) const;
    std::size_t current_pattern_size() const { return pat_size_; }  // patSize
    std::size_t max_pattern_size() const { return max_pat_; }       // maxPatternSize
    std::uint64_t ppa_invocations() const { return invocations_; }
    std::size_t patterns() const;  // entries in the pattern list

    // A pattern list entry (valid until the list changes).
    std::size_t pattern_size(std::size_t entry) const;
    std::uint32_t frequency(std::size_t entry) const;
    std::uint32_t event_count(std::size_t entry) const;
    bool was_used(std::size_t entry) const;
    std::vector<std::uint64_t> positions(std::size_t entry) const;  // oldest first
    // "41-41-41_10_10": event ids joined by '-', grams by '_'.
    std::string pattern_string(std::size_t entry) const;
    std::string gram_string(GramId gram) const;

    void set_observer(PatternObserver observer) { observer_ = std::move(observer); }

    std::size_t memory_bytes() const;

private:
    static constexpr std::uint32_t kNone = 0xffff'ffffu;

    struct Slot {
        GramId gram          = kNoGram;
        std::uint32_t events = 0;
        TimeNs idle_after    = 0;
    };

    struct Entry {
        std::uint64_t hash      = 0;
        std::uint64_t touched   = 0;  // clock of the last insert/repeat
        std::uint32_t frequency = 0;
        std::uint32_t events    = 0;  // MPI calls in the pattern
        std::uint32_t size      = 0;  // grams; 0: free entry
        std::uint32_t npos      = 0;  // positions kept (<= positions_per_pattern)
        std::uint32_t pos_next  = 0;  // ring slot for the next position
        bool was_used           = false;
    };

    struct Lookup {
        std::uint32_t entry;
        bool is_new;
    };

    std::optional<Activation> step();
    std::optional<Activation> grow();
    std::optional<Activation> check_consecutive();
    std::optional<Activation> insert_current();
    std::optional<Activation> activate(std::uint32_t entry, std::uint64_t start, bool reactivated);
    void search_from(std::uint64_t position);

    // Algorithm 3 over the slice array[start : start + size].
    Lookup update_pattern_list(std::uint64_t start, std::size_t size, std::uint64_t hash);
    void add_position(std::uint32_t entry, std::uint64_t position);
    std::uint32_t find(std::uint64_t start, std::size_t size, std::uint64_t hash) const;
    std::uint32_t allocate_entry();
    void remove_entry(std::uint32_t entry);
    bool slice_equals(std::uint64_t start, std::uint32_t entry) const;
    std::uint64_t slice_hash(std::uint64_t start, std::size_t size) const;
    const GramId *key(std::uint32_t entry) const { return &keys_[entry * key_stride()]; }
    GramId *key(std::uint32_t entry) { return &keys_[entry * key_stride()]; }
    std::size_t key_stride() const { return config_.max_pattern_size; }
    bool is_protected(std::uint32_t entry) const;
    void notify(PatternListChange::Kind kind, std::uint32_t entry) const;

    GramTable& table_;
    PatternPredictorConfig config_;

    // Gram array ring.
    std::vector<Slot> ring_;
    std::uint64_t ring_mask_ = 0;
    std::uint64_t pos_       = 0;

    // Pattern list.
    std::vector<Entry> entries_;
    std::vector<GramId> keys_;              // max_pattern_size per entry
    std::vector<std::uint64_t> positions_;  // positions_per_pattern per entry
    std::vector<std::uint32_t> free_entries_;
    detail::OpenIndex index_;
    std::uint64_t clock_      = 0;
    std::size_t evict_cursor_ = 0;

    // Algorithm 2's state. posNext is always posCur + patSize.
    std::uint64_t pos_cur_         = 0;
    std::size_t pat_size_          = 2;
    std::size_t max_pat_           = 0;
    std::uint32_t cur_entry_       = kNone;  // PL[currPattern]
    std::uint32_t predicted_entry_ = kNone;
    std::uint64_t predicted_at_    = 0;  // pos when a prediction last started or ended
    bool new_pattern_              = true;
    bool check_consec_             = false;
    bool check_previous_           = false;
    bool match_                    = false;
    bool grown_inserted_           = false;  // this growth created cur_entry_
    unsigned consecutive_          = 0;

    std::vector<TimeNs> idles_;  // Activation::idles
    std::uint64_t events_      = 0;
    std::uint64_t invocations_ = 0;
    PatternObserver observer_;
};

}  // namespace slim::predict

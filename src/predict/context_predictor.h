/* SPDX-License-Identifier: BSD-3-Clause */
// A context predictor of idle intervals: the idle interval after
// an event is predicted from the event's context — the ids of the last
// `depth` events and the size classes of the idle intervals between them —
// as the interval that followed the same context the last two times.
//
// Why beside the thesis's PPS: below MPI one MPI call becomes a varying
// number of bursts (rendezvous request, acknowledgement, fragments), so the
// gram sequences PPS matches rarely repeat exactly, while the long idle
// interval after "the last fragment of the halo exchange" does. A short
// context sees that; it needs no grouping threshold and predicts after a
// context has been seen twice with the same interval, so short runs save.
//
// Keyed by runs (ContextKey::runs): bursts closer than `run_gap_ns` form
// one run, and the key is the id of the run's first event and the bytes of
// the run so far, plus the bytes of the previous `depth - 1` runs and the
// idle class after each. How an exchange splits into bursts varies from
// call to call (a rendezvous acknowledgement joins the fragment before it
// or not), but the bytes it moves do not: on a
// solver loop's traces the event key left 32 % of the oracle's idle time
// unpredicted, the run key 10 % (the predictor table's traces).
//
// Pure like the thesis predictor: time is an input, fixed memory (an
// open-addressed table, no allocation after construction).
#pragma once

#include "predictor.h"
#include "types.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace slim::predict {

// What a context is made of: the last events (ids and idle classes), or the
// runs of traffic between idle intervals the link could use.
enum class ContextKey { events, runs };

// (AdaptivePolicy shares one predictor among candidates whose configs are
// equal in every field: same_context() in predict/adaptive_policy.cpp lists
// them; a new field goes there too.)
struct ContextConfig {
    std::size_t depth   = 2;     // events in a context (1..8)
    double displacement = 0.05;  // as Algorithm 4: idle - (idle * d + t_react)
    TimeNs t_react_ns   = 10'000;
    double tolerance    = 0.10;  // two intervals within +-10 % agree
    // Contexts remembered (power of two). 512 (16 KiB): the 56 live traces
    // replay to the same savings with 64 as with 4096, and
    // six run-keyed candidates of 4096 entries (768 KiB together) made the
    // drain's lookups cache and TLB misses: ContextPredictor::find took
    // 0.33 % of both cores in a 512 KiB bandwidth test, slimlink's second
    // most expensive function; 0.07-0.10 % at 512.
    std::size_t table_entries = 512;
    ContextKey key            = ContextKey::events;
    TimeNs run_gap_ns         = 20'000;  // runs: shorter idle joins bursts into one run
                                         // (the adaptive candidates: link::context_run_gap_ns)
};

class ContextPredictor {
public:
    explicit ContextPredictor(const ContextConfig& config = {});

    // Events in order (start >= previous end). The decision's low_power
    // covers the idle interval after `event`.
    Decision on_event(const Event& event);

    const PredictorStats& stats() const { return stats_; }
    const ContextConfig& config() const { return config_; }

private:
    struct Entry {
        std::uint64_t key    = 0;  // 0: empty
        TimeNs last_ns       = 0;  // interval after the context, last time
        TimeNs before_ns     = 0;  // and the time before
        std::uint32_t agreed = 0;  // consecutive agreeing intervals
    };

    Entry *find(std::uint64_t key);
    std::uint64_t context_key() const;
    std::uint64_t run_key() const;

    ContextConfig config_;
    std::vector<Entry> table_;
    std::vector<EventId> ids_;       // ring of the last `depth` ids
    std::vector<unsigned> classes_;  // and of the intervals between them
    std::size_t seen_ = 0;           // events so far
    // ContextKey::runs: the bytes of the run in progress, and a ring of the
    // last `depth` runs before it (bytes, class of the idle after each).
    std::uint64_t run_bytes_ = 0;
    EventId run_first_       = 0;  // id of the run's first event
    std::vector<std::uint64_t> run_sizes_;
    std::vector<unsigned> run_idles_;
    std::size_t runs_          = 0;  // runs completed
    TimeNs last_end_           = 0;
    Entry *pending_            = nullptr;  // context of the last event
    std::uint64_t pending_key_ = 0;
    TimeNs predicted_ns_       = 0;  // interval predicted after it (0: none)
    PredictorStats stats_;
};

}  // namespace slim::predict

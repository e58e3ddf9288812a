// SPDX-License-Identifier: BSD-3-Clause
#include "context_predictor.h"

#include "base/error.h"
#include "base/hash.h"
#include "base/power_of_two.h"

#include <algorithm>
#include <stdexcept>

namespace slim::predict {

namespace {

// Idle intervals by factor-of-two classes: protocol round trips (4-32 us)
// and compute phases (hundreds of us) fall in different classes, jitter
// within one mostly does not.
unsigned interval_class(TimeNs ns)
{
    unsigned c = 0;
    for (TimeNs v = ns / 1'000; v > 0; v >>= 1) {
        ++c;
    }
    return c;
}

bool agree(TimeNs a, TimeNs b, double tolerance)
{
    const TimeNs larger = std::max(a, b);
    return static_cast<double>(std::max(a, b) - std::min(a, b)) <=
           tolerance * static_cast<double>(larger);
}

}  // namespace

ContextPredictor::ContextPredictor(const ContextConfig& config) : config_(config)
{
    if (config_.depth < 1 || config_.depth > 8) {
        throw Error("context depth must be 1..8");
    }
    table_.resize(power_of_two_at_least(std::max<std::size_t>(config_.table_entries, 16)));
    ids_.resize(config_.depth);
    classes_.resize(config_.depth);
    run_sizes_.resize(config_.depth);
    run_idles_.resize(config_.depth);
}

std::uint64_t ContextPredictor::context_key() const
{
    std::uint64_t h = 0x51ed270b27a8d5c3ull;
    for (std::size_t i = 0; i < config_.depth; ++i) {
        const std::size_t at = (seen_ - 1 - i) % config_.depth;  // newest first
        h                    = hash_combine(h, ids_[at]);
        if (i + 1 < config_.depth) {
            h = hash_combine(h, classes_[at]);  // the interval before that event
        }
    }
    return h | 1;  // never 0 (the empty mark)
}

std::uint64_t ContextPredictor::run_key() const
{
    // Exact bytes: an MPI call moves the same payload every time, and the
    // protocol's own messages are of fixed size.
    std::uint64_t h = hash_combine(0x2545f4914f6cdd1dull, run_bytes_);
    h               = hash_combine(h, run_first_);
    for (std::size_t i = 0; i + 1 < config_.depth && i < runs_; ++i) {
        const std::size_t at = (runs_ - 1 - i) % config_.depth;  // newest first
        h                    = hash_combine(h, run_sizes_[at]);
        h                    = hash_combine(h, run_idles_[at]);
    }
    return h | 1;
}

ContextPredictor::Entry *ContextPredictor::find(std::uint64_t key)
{
    const std::size_t mask = table_.size() - 1;
    // Linear probing over a short run; a full run evicts its first slot, so
    // memory stays fixed and old contexts make room for new ones.
    constexpr std::size_t kProbe = 8;
    for (std::size_t i = 0; i < kProbe; ++i) {
        Entry& e = table_[(key + i) & mask];
        if (e.key == key) {
            return &e;
        }
        if (e.key == 0) {
            e     = Entry{};
            e.key = key;
            return &e;
        }
    }
    Entry& victim = table_[key & mask];
    victim        = Entry{};
    victim.key    = key;
    return &victim;
}

Decision ContextPredictor::on_event(const Event& event)
{
    Decision d;
    ++stats_.events;
    const TimeNs idle = seen_ > 0 ? std::max<TimeNs>(0, event.start_ns - last_end_) : 0;
    if (seen_ > 0) {
        stats_.total_idle_ns += idle;
        if (predicted_ns_ > 0) {
            // The request covered [end, end + predicted): a hit when the
            // interval was at least that long.
            d.hit = idle >= predicted_ns_;
            stats_.hits += d.hit ? 1 : 0;
            stats_.mispredictions += d.hit ? 0 : 1;
            stats_.predicted_idle_ns += std::min(idle, predicted_ns_);
        }
        // The context before this event learns the interval that followed it
        // (the entry may have been evicted meanwhile: then it is dropped).
        if (pending_ != nullptr && pending_->key == pending_key_) {
            Entry& e = *pending_;
            e.agreed =
                    (e.last_ns > 0 && agree(idle, e.last_ns, config_.tolerance)) ? e.agreed + 1 : 0;
            e.before_ns = e.last_ns;
            e.last_ns   = idle;
        }
    }
    const std::size_t at = seen_ % config_.depth;
    ids_[at]             = event.id;
    classes_[at]         = interval_class(idle);
    if (seen_ == 0 || idle >= config_.run_gap_ns) {
        if (seen_ > 0) {
            run_sizes_[runs_ % config_.depth] = run_bytes_;
            run_idles_[runs_ % config_.depth] = interval_class(idle);
            ++runs_;
        }
        run_bytes_ = 0;
        run_first_ = event.id;
    }
    run_bytes_ += event.bytes;
    ++seen_;
    last_end_     = event.end_ns;
    predicted_ns_ = 0;
    pending_      = nullptr;
    if (config_.key == ContextKey::events && seen_ < config_.depth) {
        return d;
    }
    pending_key_ = config_.key == ContextKey::runs ? run_key() : context_key();
    pending_     = find(pending_key_);
    if (pending_->agreed == 0) {
        return d;
    }
    // Seen at least twice with agreeing intervals: expect the shorter.
    const TimeNs expected = std::min(pending_->last_ns, pending_->before_ns);
    const TimeNs keep_up =
            static_cast<TimeNs>(static_cast<double>(expected) * config_.displacement) +
            config_.t_react_ns;
    d.prediction_active = true;
    if (expected - keep_up <= config_.t_react_ns) {
        return d;  // too short to go down and come back in time
    }
    predicted_ns_ = expected;
    d.low_power   = LowPowerRequest{event.end_ns, event.end_ns + expected - keep_up};
    ++stats_.predictions;
    return d;
}

}  // namespace slim::predict

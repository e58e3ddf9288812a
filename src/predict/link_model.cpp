// SPDX-License-Identifier: BSD-3-Clause
// The emulated port (thesis §2.6, §4.5.2; IEEE 802.3 Clause 78 for EEE).
// Its specs and presets are parsed in link_profile.cpp.
#include "predict/link_model.h"

#include <algorithm>
#include <cmath>

namespace slim::link {

namespace {
constexpr double kJoulesPerWattNs = 1e-9;
}  // namespace

TimeNs transition_ns(const LinkConfig& config, unsigned from, unsigned to)
{
    return to < from && config.sleep_ns ? *config.sleep_ns : config.tau_ns;
}

double port_watts(const LinkConfig& config, unsigned width)
{
    const double full = static_cast<double>(config.lanes) * config.lane_watts;
    if (!config.low_power_fraction || config.lanes <= config.low_width) {
        return static_cast<double>(width) * config.lane_watts;
    }
    width                 = std::clamp(width, config.low_width, config.lanes);
    const double low      = *config.low_power_fraction * full;
    const double position = static_cast<double>(width - config.low_width) /
                            static_cast<double>(config.lanes - config.low_width);
    return low + (full - low) * position;
}

LinkModel::LinkModel(const LinkConfig& config, TimeNs start_ns)
    : config_(config), now_ns_(start_ns), from_width_(config.lanes), to_width_(config.lanes),
      transition_end_ns_(start_ns), pending_width_(config.lanes), has_pending_(false)
{}

void LinkModel::start_transition(TimeNs t, unsigned width)
{
    transition_end_ns_ = t + transition_ns(config_, from_width_, width);
    to_width_          = width;
    ++stats_.transitions;
}

void LinkModel::integrate_to(TimeNs t)
{
    // Callers split at transition ends, so the state is constant on [now, t].
    const TimeNs dt = t - now_ns_;
    if (dt <= 0) {
        return;
    }
    const unsigned powered = in_transition() ? std::max(from_width_, to_width_) : from_width_;
    if (in_transition()) {
        stats_.time_in_transition_ns += dt;
    } else {
        stats_.time_at_width_ns[from_width_] += dt;
    }
    now_ns_ = t;
    if (!config_.low_power_fraction) {
        lane_ns_ += static_cast<__int128>(powered) * dt;
        stats_.energy_joules =
                static_cast<double>(lane_ns_) * config_.lane_watts * kJoulesPerWattNs;
    } else {
        stats_.energy_joules +=
                port_watts(config_, powered) * static_cast<double>(dt) * kJoulesPerWattNs;
    }
}

void LinkModel::settle(TimeNs t)
{
    // A loop, not an if: with tau = 0 a pending width starts and ends at once.
    while (in_transition() && transition_end_ns_ <= t) {
        integrate_to(transition_end_ns_);
        from_width_ = to_width_;
        if (has_pending_ && pending_width_ != to_width_) {
            start_transition(transition_end_ns_, pending_width_);
        }
        has_pending_ = false;
    }
    integrate_to(t);
}

void LinkModel::request_width(TimeNs t, unsigned width)
{
    t     = std::max(t, now_ns_);
    width = std::clamp(width, config_.low_width, config_.lanes);
    settle(t);
    if (in_transition()) {
        // Never reversed: remembered, the last request wins.
        pending_width_ = width;
        has_pending_   = width != to_width_;
        return;
    }
    if (width == from_width_) {
        return;
    }
    start_transition(t, width);
    settle(t);
}

TimeNs LinkModel::traffic(TimeNs t, unsigned width)
{
    t     = std::max(t, now_ns_);
    width = std::min(width, config_.lanes);
    settle(t);
    TimeNs wait = 0;
    if (!in_transition()) {
        if (from_width_ >= width) {
            return 0;
        }
        start_transition(t, width);
        wait = transition_end_ns_ - t;
    } else {
        const TimeNs remainder = transition_end_ns_ - t;
        if (to_width_ >= width) {
            // Rising to enough (or already wide enough on both ends).
            if (usable_width() < width) {
                wait = remainder;
            }
            if (has_pending_ && pending_width_ < width) {
                has_pending_ = false;
            }
        } else {
            // Falling, or rising to too little: the rise to `width` starts
            // when this transition ends.
            wait           = remainder + config_.tau_ns;
            pending_width_ = has_pending_ ? std::max(pending_width_, width) : width;
            has_pending_   = true;
        }
    }
    if (wait > 0) {
        ++stats_.late_wakeups;
        stats_.added_delay_ns += wait;
    }
    settle(t);  // tau = 0 finishes the transition at once
    return wait;
}

unsigned LinkModel::target_width() const { return has_pending_ ? pending_width_ : to_width_; }

unsigned LinkModel::width_at(TimeNs t) const
{
    // The model is small and heap-free: run a copy forward instead of
    // duplicating the state machine.
    LinkModel ahead = *this;
    ahead.settle(std::max(t, now_ns_));
    return ahead.usable_width();
}

const LinkStats& LinkModel::stats_at(TimeNs t)
{
    settle(std::max(t, now_ns_));
    return stats_;
}

double LinkModel::always_on_joules(TimeNs span_ns) const
{
    // Same expressions as integrate_to() so "never lower" saves exactly 0
    // (with lowP up to the rounding of a sum of doubles).
    if (!config_.low_power_fraction) {
        const __int128 lane_ns = static_cast<__int128>(config_.lanes) * span_ns;
        return static_cast<double>(lane_ns) * config_.lane_watts * kJoulesPerWattNs;
    }
    return port_watts(config_, config_.lanes) * static_cast<double>(span_ns) * kJoulesPerWattNs;
}

unsigned LinkModel::burst_width(unsigned lanes, std::uint64_t original, std::uint64_t packed)
{
    if (lanes <= 1 || original == 0 || packed == 0 || packed >= original) {
        return std::max(lanes, 1u);
    }
    // Smallest w with packed <= w * original / lanes, i.e. ceil(lanes *
    // packed / original), without forming lanes * packed (it may overflow).
    const std::uint64_t per_lane = original / lanes;
    const std::uint64_t rest     = original % lanes;
    for (unsigned w = 1; w < lanes; ++w) {
        if (packed <= w * per_lane + (w * rest) / lanes) {
            return w;
        }
    }
    return lanes;
}

TimeNs LinkModel::burst_duration(TimeNs original_ns, unsigned lanes, unsigned width,
                                 std::uint64_t original, std::uint64_t packed)
{
    if (original == 0 || width == 0) {
        return original_ns;
    }
    // long double holds the 64-bit operands exactly; the quotient is rounded
    // to the nearest ns.
    const long double stretched = static_cast<long double>(original_ns) *
                                  static_cast<long double>(packed) * lanes /
                                  (static_cast<long double>(original) * width);
    const auto stretched_ns = static_cast<TimeNs>(std::llround(stretched));
    return std::max(original_ns, stretched_ns);
}

}  // namespace slim::link

// SPDX-License-Identifier: BSD-3-Clause
// The emulated InfiniBand port (thesis §2.6, §4.5.2).
#include "predict/link_model.h"

#include "base/error.h"
#include "base/parse.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iterator>
#include <stdexcept>
#include <string>
#include <string_view>

namespace slim::link {

namespace {

constexpr double kJoulesPerWattNs = 1e-9;
constexpr double kMaxLaneWatts    = 100.0;
constexpr std::chrono::nanoseconds kMaxTau{1'000'000'000};

// Spaces and tabs only: anything else is left for the value's parser to judge.
std::string_view trim(std::string_view s) { return parse::trim(s, " \t"); }

[[noreturn]] void reject(std::string_view key, std::string_view value, std::string_view accepted)
{
    throw Error(parse::bad_value(key, value, accepted));
}

unsigned parse_lanes(const std::string& value)
{
    for (const char *lanes : {"1", "2", "4", "8", "12"}) {
        if (value == lanes) {
            return static_cast<unsigned>(std::stoul(value));
        }
    }
    reject("L", value, "1, 2, 4, 8 or 12 (lanes)");
}

double parse_lane_watts(const std::string& value)
{
    // parse::real gives a closed range; P = 0 would make the baseline 0 J and
    // every saving 0/0.
    const std::string accepted = "numbers greater than 0 and at most 100 (watts per lane)";
    double watts               = 0.0;
    try {
        watts = parse::real("P", value, 0.0, kMaxLaneWatts);
    } catch (const ConfigError&) {
        reject("P", value, accepted);
    }
    if (watts <= 0.0) {
        reject("P", value, accepted);
    }
    return watts;
}

// Read last: its range depends on L, which may come after it.
unsigned parse_low_width(const std::string& value, unsigned lanes)
{
    return static_cast<unsigned>(parse::integer("low", value, 1, lanes));
}

TimeNs parse_tau(const std::string& value)
{
    return parse::duration("tau", value, std::chrono::nanoseconds{0}, kMaxTau).count();
}

double parse_low_power_fraction(const std::string& value)
{
    // 0 would make a narrow port free; more than 1 costlier than a wide one.
    const std::string accepted =
            "numbers greater than 0 and at most 1 (the low width's power as a fraction of the "
            "full width's, e.g. 0.43)";
    double fraction = 0.0;
    try {
        fraction = parse::real("lowP", value, 0.0, 1.0);
    } catch (const ConfigError&) {
        reject("lowP", value, accepted);
    }
    if (fraction <= 0.0) {
        reject("lowP", value, accepted);
    }
    return fraction;
}

}  // namespace

LinkConfig parse_link_config(const std::string& text)
{
    LinkConfig config;
    std::string low_text;
    constexpr std::string_view keys[] = {"L", "P", "low", "tau", "lowP"};
    bool seen[std::size(keys)]        = {};
    std::string_view rest             = text;
    while (!trim(rest).empty()) {
        const auto comma            = rest.find(',');
        const std::string_view item = trim(rest.substr(0, comma));
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
        const auto equals = item.find('=');
        if (equals == std::string_view::npos) {
            throw Error("link config item '" + std::string(item) +
                        "': expected key=value with a key L, P, low, tau or lowP");
        }
        const std::string_view key = trim(item.substr(0, equals));
        const std::string value{trim(item.substr(equals + 1))};
        const auto index = static_cast<std::size_t>(
                std::find(std::begin(keys), std::end(keys), key) - std::begin(keys));
        if (index == std::size(keys)) {
            throw Error("link config key '" + std::string(key) +
                        "' is unknown: accepted keys are L, P, low, tau and lowP");
        }
        if (seen[index]) {
            throw Error("link config key '" + std::string(key) + "' is given more than once");
        }
        seen[index] = true;
        switch (index) {
        case 0: config.lanes = parse_lanes(value); break;
        case 1: config.lane_watts = parse_lane_watts(value); break;
        case 2: low_text = value; break;
        case 3: config.tau_ns = parse_tau(value); break;
        default: config.low_power_fraction = parse_low_power_fraction(value); break;
        }
    }
    if (seen[2]) {
        config.low_width = parse_low_width(low_text, config.lanes);
    }
    return config;
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
    to_width_          = width;
    transition_end_ns_ = t + config_.tau_ns;
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
        wait = config_.tau_ns;
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

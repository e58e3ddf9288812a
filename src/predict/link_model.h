/* SPDX-License-Identifier: BSD-3-Clause */
// The emulated port: an InfiniBand port that changes width (thesis §2.6,
// §4.5.2, Fig. 5.6), or an Ethernet port with Energy Efficient Ethernet
// (IEEE 802.3 Clause 78), exactly as specified so results can be checked by
// hand. Pure and lazy: time is an input (ns), energy is integrated only when
// asked or when the state changes; no clock, no thread, no I/O.
#pragma once

#include "predict/types.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace slim::link {

using predict::TimeNs;

// Widths a port can have (IB: 1x, 2x, 4x, 8x, 12x).
constexpr unsigned kMaxLanes = 12;

// What kind of saving the port has.
// - infiniband: the port drops lanes (width L down to low) and raises them
//   again; either change takes tau.
// - eee: Energy Efficient Ethernet. The port is active (width 1) or in
//   low-power idle (LPI, width 0). Entering LPI takes Ts (sleep time) and
//   leaving it Tw (wake time); a frame that finds the port asleep waits for
//   the wake. Software does not set the state, only when the PHY may enter
//   it (ethtool's tx-lpi and tx-timer): a "low" request is LPI allowed from
//   then on, a "full" request is LPI off, which wakes the port.
enum class LinkKind { infiniband, eee };

struct LinkConfig {
    LinkKind kind      = LinkKind::infiniband;
    unsigned lanes     = 4;       // L: 1, 2, 4, 8 or 12 (eee: 1)
    double lane_watts  = 0.5;     // P_lane: 0.3 W TX + 0.2 W RX (eee: the port's active watts)
    unsigned low_width = 1;       // W_low: one lane stays up for management (eee: 0, LPI)
    TimeNs tau_ns      = 10'000;  // a rise takes tau (eee: Tw), and so does a fall
    // eee: Ts, the time to enter LPI, for which the port draws active power
    // and carries nothing. None: a fall takes tau, as a rise does.
    std::optional<TimeNs> sleep_ns;
    // The port's power at the low width, as a fraction of its power at
    // full width (key lowP). None: power proportional to the lanes up,
    // low_width / lanes (the thesis's per-lane model). Published figures
    // disagree: the thesis (§2.6) takes a switch "at 43 % of its nominal
    // power" in 1X mode (0.43), a vendor's "cuts power by up to 43 %" reads
    // 0.57. Widths between low and full are interpolated linearly.
    std::optional<double> low_power_fraction;
    // The preset the configuration started from ("ib-hdr"), for reports;
    // empty when none.
    std::string profile;
};

// How long a change from `from` to `to` lanes takes: a fall (to < from)
// takes sleep_ns when set, anything else tau_ns.
TimeNs transition_ns(const LinkConfig& config, unsigned from, unsigned to);
// The shortest idle period a drop can use without a late wake-up: down,
// then up again in time.
inline TimeNs round_trip_ns(const LinkConfig& config)
{
    return transition_ns(config, config.lanes, config.low_width) + config.tau_ns;
}

// Watts the port draws stable at `width` (low_width..lanes): lanes *
// lane_watts at full width.
double port_watts(const LinkConfig& config, unsigned width);

// Parses a link spec (link_profile.h): a preset name ("ib-hdr",
// "eee-10gbase-t"), key=value items ("L=4,P=0.5,low=1,tau=10us,lowP=0.43",
// any subset, any order; durations take ns/us/ms/s), or a preset followed by
// items that change it ("eee-10gbase-t,lowP=0.2"). Throws slim::Error naming
// the preset or key and what is accepted.
LinkConfig parse_link_config(const std::string& text);

struct LinkStats {
    double energy_joules       = 0.0;  // integral of power up to `now`
    std::uint64_t transitions  = 0;    // width changes started
    std::uint64_t late_wakeups = 0;    // traffic that had to wait
    TimeNs added_delay_ns      = 0;    // sum of those waits (late wake-up penalty)
    // Time spent stable at each width (index = width) and in transition.
    std::array<TimeNs, kMaxLanes + 1> time_at_width_ns{};
    TimeNs time_in_transition_ns = 0;
};

// The port. It starts stable at full width at `start_ns`.
//
// - Stable at a width, or in one transition a -> b lasting transition_ns(),
//   drawing
//   max(a, b) * lane_watts and carrying no extra capacity.
// - A transition in progress is never reversed: a request made during one is
//   remembered and started when the transition ends (the last request wins).
// - Traffic that needs width w at time t on a port below w waits (the late
//   wake-up penalty): stable -> a transition starts at t and the traffic
//   waits its length; rising to >= w -> the remainder; falling -> the
//   remainder + the rise.
class LinkModel {
public:
    explicit LinkModel(const LinkConfig& config, TimeNs start_ns = 0);

    // A controller asks for `width` from time t on (clamped to
    // [low_width, lanes]). Times passed to the model never go backwards.
    void request_width(TimeNs t, unsigned width);

    // Traffic needing `width` arrives at t. Returns how long it waits before
    // the port carries it (0 when already wide enough); counts late wake-ups.
    // After the call the port is at least `width` wide from t + wait on.
    TimeNs traffic(TimeNs t, unsigned width);

    // Width the port will have settled to when nothing else is requested.
    unsigned target_width() const;
    // Width usable at t (the lower of a transition's ends while in one).
    unsigned width_at(TimeNs t) const;

    // Integrates energy and time-at-width up to t and returns the totals.
    const LinkStats& stats_at(TimeNs t);

    const LinkConfig& config() const { return config_; }

    // Always-on energy over [first, last]: lanes * lane_watts * span.
    double always_on_joules(TimeNs span_ns) const;

    // Thesis §4.5.2: width that keeps the original speed for a burst whose
    // wire bytes are `packed` of `original`: max(1, ceil(L * packed/original)).
    static unsigned burst_width(unsigned lanes, std::uint64_t original, std::uint64_t packed);
    // Duration of a burst sent at `width`: original * (packed/original) *
    // (lanes/width) when that is longer than the original, else the original.
    static TimeNs burst_duration(TimeNs original_ns, unsigned lanes, unsigned width,
                                 std::uint64_t original, std::uint64_t packed);

private:
    // implementation-defined state (owned by the link-model engineer)
    LinkConfig config_;
    LinkStats stats_;
    TimeNs now_ns_;        // energy and times are integrated up to here
    unsigned from_width_;  // stable width, or transition start width
    unsigned to_width_;    // == from_width_ when stable
    TimeNs transition_end_ns_;
    unsigned pending_width_;  // request made during a transition
    bool has_pending_;
    // Energy is kept as an exact integer (lanes powered x ns) and converted
    // to joules on demand, so long runs do not accumulate rounding error;
    // with low_power_fraction, where a width's power is no whole number of
    // lanes, it is summed in joules. 128 bits: 12 lanes over the longest
    // accepted span (2^62 ns) overflow 64.
    __int128 lane_ns_ = 0;

    bool in_transition() const { return from_width_ != to_width_; }
    unsigned usable_width() const { return from_width_ < to_width_ ? from_width_ : to_width_; }
    void start_transition(TimeNs t, unsigned width);
    // Advances the state machine to t (finishing transitions, starting the
    // pending one) and integrates up to t.
    void integrate_to(TimeNs t);
    void settle(TimeNs t);
};

}  // namespace slim::link

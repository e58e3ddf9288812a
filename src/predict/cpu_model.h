/* SPDX-License-Identifier: BSD-3-Clause */
// The emulated core: what a rank's core spends while it waits in MPI, at
// full frequency or lowered to a low performance state, and what lowering
// it costs. The CPU side's counterpart of the link model (link_model.h),
// kept as simple so that a replay can be checked by hand
// (slim-replay(1), CPU MODEL).
//
// - A core is at `full` (frequency, power while polling) or at `low`.
//   Each change takes `tau` and draws the full state's power while it lasts
//   (as a link transition draws the wider width's).
// - Baseline: always at full, P_full over the rank's whole span (compute
//   and waits alike: MPICH and Open MPI busy-poll).
// - A wait's arrival that finds the core low (or going low) pays a wake:
//   the rest of a transition down in progress, then tau to come back up,
//   plus the handling of the arrival at the low frequency: `handle` of
//   work (measured at full frequency) takes f_full / f_low times longer.
//   An upper bound: on real cores the change to full overlaps the handling.
//   An arrival during a transition up waits only for its remainder.
// - The penalty lengthens the run; that time is drawn at P_full.
//
// Pure and per wait: times in, a tally out; no clock, no I/O.
#pragma once

#include "predict/types.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slim::cpu {

using predict::TimeNs;
using predict::Wait;

// One performance state of a core.
struct PState {
    double ghz   = 0.0;  // core frequency
    double watts = 0.0;  // power of one core busy-polling at that frequency
};

// Defaults: an AMD EPYC 7763 (Zen 3, 64 cores, 280 W TDP), whose ACPI
// P-states are 2.45, 2.0 and 1.5 GHz; full = P0, low = P2. Per-core powers
// are estimates from the TDP and the f V^2 law (slim-replay(1), CPU MODEL,
// has the sources and the arithmetic).
struct CpuConfig {
    PState full{2.45, 3.0};
    PState low{1.5, 1.4};
    TimeNs tau_ns    = 20'000;  // one change of performance state
    TimeNs handle_ns = 5'000;   // work after an arrival that runs at f_low before the raise
};

// The other P-state of the default table (P1), for the man page's table.
inline constexpr PState epyc_7763_p1{2.0, 2.1};

// Parses "f=2.45,P=3,f_low=1.5,P_low=1.4,tau=20us,handle=5us" (any subset,
// any order; frequencies in GHz, powers in W, durations take ns/us/ms/s).
// Throws slim::Error naming the key and what it accepts.
CpuConfig parse_cpu_config(const std::string& text);
// The spec of a config, in parse_cpu_config's form.
std::string format_cpu_config(const CpuConfig& c);

// What a policy does with one wait, in recorded time: low from `low_from`
// (when set) until `low_until` (none: until the arrival), and low once more
// from `again_at` when the core is back at full by then and the wait still
// lasts. Times before the wait's start count from its start.
struct CpuPlan {
    std::optional<TimeNs> low_from;
    std::optional<TimeNs> low_until;
    std::optional<TimeNs> again_at;
};

// What the waits cost and saved, summed.
struct CpuTally {
    std::uint64_t waits       = 0;
    TimeNs wait_ns            = 0;  // time in waits
    TimeNs low_ns             = 0;  // at the low state
    TimeNs transition_ns      = 0;  // in a change of state (inside waits or the penalty)
    std::uint64_t transitions = 0;
    std::uint64_t late_wakes  = 0;  // arrivals that found the core not at full
    TimeNs penalty_ns         = 0;  // the run lengthened by those

    CpuTally& operator+=(const CpuTally& o);
};

// A wait under a plan (a pure function of the two).
CpuTally account_wait(const CpuConfig& c, const Wait& wait, const CpuPlan& plan);

// A stretch of time the core spends away from full: going down, low, or
// coming back up (an up may end after the wait, when the arrival found the
// core not at full).
struct CorePeriod {
    enum class State { down, low, up };
    TimeNs from_ns = 0;
    TimeNs to_ns   = 0;
    State state    = State::low;
};

const char *to_string(CorePeriod::State s) noexcept;

// The same, also appending the wait's periods away from full, in time order
// (slim-replay --timeline): the low ones add up to the tally's low_ns.
CpuTally account_wait(const CpuConfig& c, const Wait& wait, const CpuPlan& plan,
                      std::vector<CorePeriod>& periods);

// The rank's figures over its span (first start to last end of its events
// and waits, as recorded).
struct CpuResult {
    CpuTally tally;
    TimeNs span_ns           = 0;
    double baseline_joules   = 0.0;  // P_full over the span
    double wait_joules       = 0.0;  // P_full over the waits: what lowering can touch
    double energy_joules     = 0.0;  // the replay: baseline - saved
    double saved_joules      = 0.0;  // (P_full - P_low) low - P_full penalty
    double transition_joules = 0.0;  // P_full tau per transition (part of energy)
    // 100 saved / baseline, 100 saved / wait energy, 100 penalty / span;
    // none when the denominator is 0.
    std::optional<double> saved_pct;
    std::optional<double> saved_of_waits_pct;
    std::optional<double> penalty_pct;
};

CpuResult cpu_result(const CpuConfig& c, const CpuTally& t, TimeNs span_ns);

// Joules saved by a tally against full (negative when the penalty costs more).
double saved_joules(const CpuConfig& c, const CpuTally& t);

// What one wake from low costs when the arrival finds the core low: tau to
// come back up plus the handling at f_low, handle * (f / f_low - 1)
// (rounded to the ns). The node service's emulated backend charges it per
// raise.
TimeNs wake_penalty_ns(const CpuConfig& c);

}  // namespace slim::cpu

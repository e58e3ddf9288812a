/* SPDX-License-Identifier: BSD-3-Clause */
// Value types shared by the predictor (thesis chapter 5). Time is always an
// input, in nanoseconds: the predictor has no clock.
#pragma once

#include <cstdint>

namespace slim::predict {

using TimeNs  = std::int64_t;
using EventId = std::uint32_t;

// One MPI-level or link-level event: a burst of traffic from start to end.
// The idle time before an event is its start minus the previous event's end.
struct Event {
    TimeNs start_ns            = 0;
    TimeNs end_ns              = 0;
    EventId id                 = 0;
    std::uint64_t bytes        = 0;  // original bytes (0 when unknown)
    std::uint64_t packed_bytes = 0;  // bytes on the wire after packing (0: same)
};

// A wait of one rank, seen from below MPI: a run of progress rounds in
// which no operation of the rank completes and nothing arrives, from the
// first such round to the next arrival or send. While it lasts the rank's
// core only polls: the CPU side's idle interval, as an event gap is the
// link's. Waits may overlap events (data of the rank's own rendezvous still
// crosses while it waits for the completion).
struct Wait {
    TimeNs start_ns = 0;
    TimeNs end_ns   = 0;
};

// "Keep the link in low power until this time" (Algorithm 4's WRPS call).
struct LowPowerRequest {
    TimeNs from_ns  = 0;  // end of the gram that completed the match
    TimeNs until_ns = 0;  // from_ns + predicted idle - safety limit
};

}  // namespace slim::predict

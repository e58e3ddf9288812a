/* SPDX-License-Identifier: BSD-3-Clause */
// The PortService's bookkeeping per client and per job, shared by the files
// that implement it (port_service.cpp: clients coming and going;
// demand_merge.cpp: the merge; port_driver.cpp: the backend; job_reports.cpp:
// the reports). Internal to src/service.
#pragma once

#include "service/port_service.h"

#include <deque>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace slim::link {

inline constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

inline TimeNs saturating_add(TimeNs a, TimeNs b)
{
    if (b > 0 && a > kNever - b) {
        return kNever;
    }
    return a + b;
}

struct PortService::Snapshot {
    TimeNs at = 0;
    LinkStats stats;
    std::uint64_t commands     = 0;  // width changes the backend confirmed
    std::uint64_t late_records = 0;
    std::uint64_t stalls       = 0;
    std::uint32_t stalled_now  = 0;
};

// A client's lifetime [from, to): kept beyond the client for the reports'
// count of other jobs sharing the port.
struct PortService::Interval {
    std::uint64_t job_serial = 0;
    std::uint32_t client     = 0;
    TimeNs from              = 0;
    TimeNs to                = kNever;  // until it leaves
};

struct PortService::Client {
    struct Pending {
        service::DemandRecord record;
        std::uint64_t seq = 0;  // publication order
    };

    std::uint32_t id = 0;
    ClientInfo info;
    // Its job's key in jobs_ (job_id()), made once: job_of() runs for each
    // record the merge applies.
    std::string job_id;
    std::uint64_t job_serial = 0;
    TimeNs attach_ns         = 0;

    // What it published.
    TimeNs through_ns      = 0;
    bool has_record        = false;
    TimeNs last_t          = 0;
    std::uint64_t next_seq = 1;
    std::deque<Pending> queue;     // published, not yet applied
    TimeNs latest_until      = 0;  // of its latest published record
    std::uint64_t latest_seq = 0;

    // Lifecycle.
    bool joined     = false;  // its join event was applied
    bool dropped    = false;  // gone (drop()); leaves at leave_at
    TimeNs leave_at = 0;
    std::optional<TimeNs> leave_ns;  // pending leave event
    bool left               = false;
    bool overflow_requested = false;
    std::optional<TimeNs> overflow_ns;  // pending "full for good" event
    bool overflowed = false;

    // Applied demand.
    unsigned width = 0;               // from its records and expiries
    std::optional<TimeNs> expiry_ns;  // the applied record's until_ns
    std::uint64_t applied_seq = 0;
    // Raised ahead of the replay (act_on_deadlines: full width; a raise
    // published while the horizon lags: its width) until a record newer
    // than forced_seq is applied.
    bool forced              = false;
    std::uint64_t forced_seq = 0;
    unsigned forced_width    = 0;
    unsigned counted         = 0;  // 1 + its width in demand_count_ (0: none)

    std::uint64_t late_wakeups = 0;
    TimeNs delay_ns            = 0;

    // Fell more than kMaxHorizonLag behind: no longer holds the horizon.
    bool stalled               = false;
    std::uint64_t late_records = 0;

    bool deposited               = false;
    std::uint32_t record_version = 0;
    std::vector<std::uint8_t> record;

    std::optional<Key> key;  // in schedule_
};

struct PortService::Job {
    std::string key;
    std::uint64_t serial = 0;
    std::vector<std::uint32_t> members;  // client ids, attach order
    std::int32_t local_size = 0;
    std::size_t bounding    = 0;  // members holding the horizon back
    std::optional<std::uint32_t> reporter;
    TimeNs deadline = kNever;
    std::optional<Snapshot> start;
    bool start_from_record = false;
    std::optional<Snapshot> end;
};

}  // namespace slim::link

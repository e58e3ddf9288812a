/* SPDX-License-Identifier: BSD-3-Clause */
// Node-level arbitration of one port's width between the local processes
// that share it (thesis §4.5.4): the port runs at the maximum width any live
// local process requests, so it drops to low power only when all are idle.
//
// Each process holds one slot in a per-user POSIX shared-memory segment
// ("/slimlink-<uid>-<device>-<port>", mode 0600) guarded by a process-shared
// robust mutex, so a process killed while holding the lock does not block the
// others. A slot whose owner is gone (kill(pid, 0) == ESRCH, a zombie, or a
// pid reused by another process — the start time differs) or whose heartbeat
// is older than the stale limit is ignored and reclaimed.
//
// Every failure throws ArbiterError with the syscall and the segment name; the
// caller then applies full width (effective_width_or_full does that for it).
#pragma once

#include "predict/types.h"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <sys/types.h>

namespace slim::link {

using predict::TimeNs;

class ArbiterError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct ArbiterOptions {
    // Empty: segment_name(geteuid(), device, port). Tests pass their own.
    std::string segment_name;
    // A slot whose heartbeat is older than this is ignored and reclaimed.
    TimeNs stale_ns = 1'000'000'000;
    // How long join() waits for another process to finish creating the segment.
    TimeNs init_wait_ns = 1'000'000'000;
};

// CLOCK_MONOTONIC in ns: the heartbeat clock, comparable between processes.
TimeNs monotonic_now_ns();

class NodeArbiter {
public:
    static constexpr std::size_t kSlots = 64;

    // "/slimlink-<uid>-<device>-<port>", every character of the device
    // outside [A-Za-z0-9_.] replaced by '_' (shm names allow one '/').
    static std::string segment_name(uid_t uid, const std::string& device, unsigned port);

    // Opens (or creates) the segment and takes a free slot requesting
    // full_width. Throws ArbiterError: syscall failure, segment owned by
    // another user or not mode 0600, full width differing from the one the
    // segment was created with, or all kSlots slots held by live processes.
    static NodeArbiter join(const std::string& device, unsigned port, unsigned full_width,
                            const ArbiterOptions& options = {});

    NodeArbiter(NodeArbiter&& other) noexcept;
    NodeArbiter& operator=(NodeArbiter&& other) noexcept;
    NodeArbiter(const NodeArbiter&) = delete;
    NodeArbiter& operator=(const NodeArbiter&) = delete;
    ~NodeArbiter();  // leave()

    // Publishes this process's width (clamped to 1..full_width) and counts as
    // a heartbeat. If the slot was reclaimed meanwhile (we were stale), a new
    // one is taken.
    void request(unsigned width, TimeNs now);
    void heartbeat(TimeNs now);

    // Max requested width over live slots (ours included), reclaiming dead
    // and stale ones on the way; full width if no slot is live.
    unsigned effective_width(TimeNs now);
    // Same, but any failure yields full width (the safe answer) instead of
    // throwing; the message is kept in last_error().
    unsigned effective_width_or_full(TimeNs now) noexcept;

    // Live slots other than ours (reclaiming dead/stale ones).
    std::size_t live_peers(TimeNs now);
    // True when no other live process holds a slot: the caller, on leaving,
    // must restore full width through the controller.
    bool is_last_out(TimeNs now) { return live_peers(now) == 0; }

    // Frees the slot. Returns true when we were the last live process out
    // (restore full width). Idempotent; never throws (false on failure).
    bool leave(TimeNs now) noexcept;

    bool joined() const { return slot_ >= 0; }
    int slot() const { return slot_; }
    unsigned full_width() const { return full_width_; }
    unsigned requested_width() const { return requested_; }
    const std::string& name() const { return name_; }
    const std::string& last_error() const { return last_error_; }

private:
    struct Segment;
    class Lock;

    NodeArbiter() = default;
    void close_segment() noexcept;
    bool owns_slot() const;
    void claim_slot(TimeNs now);
    bool slot_live(std::size_t index, TimeNs now) const;  // pid, start time, heartbeat
    void reclaim_dead(TimeNs now);

    Segment* seg_ = nullptr;
    std::string name_;
    TimeNs stale_ns_ = 0;
    unsigned full_width_ = 0;
    unsigned requested_ = 0;
    int slot_ = -1;
    std::uint64_t generation_ = 0;  // tells our slot from a later owner's
    pid_t pid_ = 0;                 // at join: a fork()ed copy owns nothing
    std::uint64_t start_time_ = 0;  // /proc/self/stat field 22
    std::string last_error_;
};

// Start time of a process (/proc/<pid>/stat field 22, clock ticks since boot),
// 0 if it is gone or a zombie. Tells a live pid from a reused one.
std::uint64_t process_start_time(pid_t pid);

}  // namespace slim::link

/* SPDX-License-Identifier: BSD-3-Clause */
// The shared-memory layout of the node arbiter (the ABI between processes of
// one user on one node; bump kSegmentVersion on any change). Internal: used
// by node_arbiter.cpp and by the tests that play a crashed process.
#pragma once

#include "link/node_arbiter.h"

#include <atomic>
#include <cstdint>

#include <pthread.h>
#include <sys/types.h>

namespace slim::link::arbiter_segment {

constexpr std::uint64_t kMagic   = 0x736c696d61726231ULL;  // "slimarb1"
constexpr std::uint32_t kVersion = 1;

struct Slot {
    pid_t         pid;         // 0: free
    std::uint32_t width;       // requested lanes
    std::uint64_t generation;  // unique per claim: tells owners of a slot apart
    std::uint64_t start_time;  // owner's /proc start time: a reused pid differs
    TimeNs        heartbeat_ns;
};

// Plain data plus one robust, process-shared mutex that guards everything but
// `magic`; the creator publishes `magic` last (release) so a joiner never
// sees a half-initialised mutex.
struct Segment {
    std::atomic<std::uint64_t> magic;
    std::uint32_t version;
    std::uint32_t full_width;
    std::uint32_t slot_count;
    std::uint32_t closed;  // set (under the lock) just before shm_unlink
    std::uint64_t next_generation;
    pthread_mutex_t mutex;
    Slot slots[NodeArbiter::kSlots];
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the segment's magic must be address-free between processes");

}  // namespace slim::link::arbiter_segment

/* SPDX-License-Identifier: BSD-3-Clause */
// A per-user POSIX shared-memory segment guarded by one robust,
// process-shared mutex: what the node arbiter (src/link/node_arbiter*) and
// the node report (src/runtime/node_report*) share between the processes of
// one user on one node. Each keeps its own layout; this opens, checks and
// maps the segment and locks its mutex safely.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <pthread.h>

namespace slim::base {

// Names what failed and the segment; callers add who they are and what
// happens next ("node arbiter: ...; using full width").
class SharedSegmentError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct SegmentMapping {
    void* addr    = nullptr;  // `bytes` long, MAP_SHARED; the caller unmaps it
    bool  creator = false;    // we created it: initialise it, then publish
    // init_wait from the open: the caller waits for the creator's publication
    // (wait_published) within the same budget.
    std::chrono::steady_clock::time_point deadline;
};

// Opens `name` ("/x", no other '/'), or creates it with mode 0600 whatever
// the umask and `bytes` long. Refuses a segment of another user (checked
// before mapping: it is not to be trusted) or of another mode; waits up to
// init_wait for a concurrent creator to size it, then requires exactly
// `bytes`. Returns none when the segment was unlinked between the two
// opens: try again. Throws SharedSegmentError.
std::optional<SegmentMapping> map_private_segment(const std::string& name, std::size_t bytes,
                                                  std::chrono::nanoseconds init_wait);

// pthread_mutex_init as robust and process-shared; 0 or the pthread error.
int init_robust_mutex(pthread_mutex_t* mutex);

// Waits (polling every millisecond) until the creator stored `expected` in
// `magic` (release) after initialising the segment; false at the deadline.
bool wait_published(const std::atomic<std::uint64_t>& magic, std::uint64_t expected,
                    std::chrono::steady_clock::time_point deadline);

// "<what> failed for shared-memory segment '<name>': <errno text>".
[[noreturn]] void throw_segment_error(const std::string& what, const std::string& name, int err);

// pthread_mutex_lock on a robust process-shared mutex; 0 or the pthread
// error. A lock whose owner died is recovered and logged as a warning by
// `who`: each owner writes only its own slots, and the users' liveness
// checks repair what a dead one left. Callers throw their own error type.
int lock_robust_mutex(pthread_mutex_t* mutex, const char* who, const std::string& name);

}  // namespace slim::base

/* SPDX-License-Identifier: BSD-3-Clause */
// Link backends, the libfabric way: the Controller decides, a backend only
// applies a width and reports what it did. One file per backend
// (backend_<name>.cpp); the node service lists them by name
// (service/backend_registry.h).
//
// No exceptions leave this interface: it will sit behind the C API and the
// UCX module, so every operation returns a Status.
#pragma once

#include "predict/link_model.h"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace slim::link {

// Success, or an error with a message meant for the user (it names the
// backend and says what to do).
class Status {
public:
    static Status success() { return Status(); }
    static Status error(std::string message) { return Status(std::move(message)); }

    bool ok() const { return !failed_; }
    explicit operator bool() const { return ok(); }
    const std::string& message() const { return message_; }

private:
    Status() = default;
    explicit Status(std::string message) : failed_(true), message_(std::move(message)) {}
    bool failed_ = false;
    std::string message_;
};

// Time source for live backends; tests pass a manual one. The models behind
// it stay pure: they only ever see the numbers it returns.
using Clock = std::function<TimeNs()>;
Clock steady_clock_ns();

// steady_clock in ns, as a plain call: the send path stamps every operation
// with it and cannot afford a std::function.
inline TimeNs steady_now_ns() noexcept
{
    return static_cast<TimeNs>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now().time_since_epoch())
                                       .count());
}

// Waits `ns` of real time: sleeps for the bulk of long waits (the scheduler
// overshoots by ~50 us), then spins to the deadline, so waits of ~tau
// (10 us), far below a sleep's resolution, are kept.
void wait_real_time(TimeNs ns) noexcept;

struct BackendConfig {
    LinkConfig link;            // lanes = the port's full width
    std::string device;         // "mlx5_0" (ibmad, {device}); may be empty
    unsigned port = 1;          // HCA port number ({port})
    std::string exec_template;  // UCX_SLIM_LINK_EXEC (exec)
    bool inject_delay = false;  // UCX_SLIM_INJECT_DELAY (emulated)
    std::chrono::milliseconds exec_timeout{2000};
    // --eee-timer (ethtool): the LPI entry timer at width 0, in µs; none:
    // the timer the interface had at the start.
    std::optional<std::uint32_t> eee_timer_us;
    Clock clock;  // empty: steady_clock
};

class LinkBackend {
public:
    virtual ~LinkBackend()                     = default;
    LinkBackend()                              = default;
    LinkBackend(const LinkBackend&)            = delete;
    LinkBackend& operator=(const LinkBackend&) = delete;

    virtual std::string name() const = 0;
    // The width the port has when nothing is lowered (what restores go to).
    virtual unsigned full_width() const = 0;
    // One line for the log at start: what this backend will really do.
    virtual std::string describe() const { return name(); }

    // Applies `width` (1..full_width) now. May be asynchronous (exec): an
    // error of a command still running is reported by a later poll().
    virtual Status set_width(unsigned width) = 0;
    // Applies `width` as of time `at_ns` (<= now). Real hardware cannot act in
    // the past and applies it now; the emulated port accounts it at `at_ns`,
    // which is when a timer-driven controller would have acted.
    virtual Status set_width_at(unsigned width, TimeNs /*at_ns*/) { return set_width(width); }
    // The same, for a width the predictor holds only until `until_ns` (a
    // "low until t" request): a node service raises the port at `until_ns`
    // by itself if the rank says nothing more. Local backends ignore it (the
    // Controller raises the width when the request expires).
    virtual Status set_width_until(unsigned width, TimeNs at_ns, TimeNs /*until_ns*/)
    {
        return set_width_at(width, at_ns);
    }
    // The caller's decisions are complete up to `through_ns` (the drain
    // finished a round): a service backend publishes that and checks the
    // service is still there. False once the backend can no longer act
    // (the service is gone): the caller then reports it.
    virtual bool sync(TimeNs /*through_ns*/) { return true; }

    // Traffic needing `width` starts now. Returns how long it had to wait for
    // the port (late wake-up); 0 for backends that cannot know.
    virtual TimeNs traffic(unsigned /*width*/) { return 0; }

    // Reports the outcome of asynchronous work (exec: a finished or timed-out
    // command). Cheap; called by the controller on every request.
    virtual Status poll() { return Status::success(); }
    // Blocks until no command is in flight (bounded by the backend's timeout).
    virtual Status drain() { return poll(); }
    // Puts the port back to full width and waits for it (bounded): the last
    // request, at exit or after a failure. A lower width still being applied
    // is abandoned (exec: its command is killed), not waited for.
    virtual Status restore_full_width()
    {
        const Status status  = set_width(full_width());
        const Status drained = drain();
        return !status ? status : drained;
    }

    // No client is live any more (the last one left or died): the port is
    // at full width already. A backend whose full width is a setting of
    // its own rather than the site's (ethtool: TX LPI held off while ranks
    // communicate) puts the site's settings back here. Called from the
    // service's loop: it must not block for long.
    virtual Status release() { return Status::success(); }

    // Emulated accounting (nullptr for backends without a model).
    virtual const LinkStats *stats() { return nullptr; }

    // What the port confirmed, for backends whose commands finish later
    // than set_width returns (exec): a command started is not a width
    // applied, and a report must count only what the port did. nullopt:
    // each command is done when set_width returns success.
    struct Confirmed {
        std::uint64_t changes = 0;      // commands that ended well and changed the width
        unsigned width        = 0;      // of the last one that ended well; 0: none yet
        bool in_flight        = false;  // a command is running or waiting to run
    };
    virtual std::optional<Confirmed> confirmed() const { return std::nullopt; }
};

struct BackendResult {
    std::unique_ptr<LinkBackend> backend;  // null when !status
    Status status = Status::success();
};

// The emulated port (backend_emulated.cpp): what a rank drives, alone or
// beside the node service's client (tee_backend.h). The real backends and
// the table of backends by name are the service's (service/backend_registry.h).
BackendResult make_emulated_backend(const BackendConfig& config);

}  // namespace slim::link

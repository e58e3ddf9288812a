/* SPDX-License-Identifier: BSD-3-Clause */
// The live link-width Controller: the one place that
// decides widths. Requests from the predictor ("low power until t"), from
// regions/packing ("burst at ratio r") and from traffic ("wake") are merged —
// the highest demanded width wins, nothing demanded means full width — and
// turned into commands on one LinkBackend, which only applies them.
//
// Safe by construction: any backend error -> full width for good, the
// error reported once; the destructor restores full width. In a rank the
// backend is the node service's client (or an emulated link of its own):
// a rank that dies by any means, SIGKILL included, is seen by slimlinkd,
// which drops its demand (service_protocol.h), so no signal handler here.
//
// Lazy like the model: no thread. A low-power request that expires is acted
// on at the next call (tick(), traffic(), ...), dated at its expiry time for
// backends that account time (the emulated port). Not thread-safe: the
// engine serialises calls.
#pragma once

#include "link/backend.h"

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace slim::link {

using ErrorReporter = std::function<void(const std::string&)>;

struct ControllerOptions {
    Clock clock;             // empty: steady_clock (must match the backend's)
    ErrorReporter on_error;  // empty: the "slim" spdlog logger, level error
    unsigned low_width = 1;  // W_low (LinkConfig::low_width)
};

// Who asks for a width. Each source holds at most one live demand.
enum class Source : unsigned { predictor, burst, count };

class Controller {
public:
    Controller(std::unique_ptr<LinkBackend> backend, ControllerOptions options = {});
    ~Controller();  // restores full width (synchronously)
    Controller(const Controller&)            = delete;
    Controller& operator=(const Controller&) = delete;

    // Predictor: the link may stay at its low width until `until_ns`.
    void low_power_until(TimeNs until_ns);
    // Regions/packing: a burst whose wire bytes are `ratio` of the original
    // (0 < ratio <= 1) runs at max(1, ceil(L * ratio)) lanes until end_burst().
    void burst(double ratio);
    void end_burst();
    // Traffic now: ends any low-power request (wake) and tells the backend;
    // returns how long the traffic waited for the port (emulated: the late
    // wake-up penalty; 0 otherwise).
    TimeNs traffic();
    // Acts on expired requests and on finished asynchronous commands.
    void tick();
    // Every decision up to `through_ns` has been made (LinkBackend::sync):
    // a backend that can no longer act (its node service is gone) fails
    // the controller, which goes to full width for good and says why.
    void sync(TimeNs through_ns);

    // Waits until the backend has no command in flight (bounded by its
    // timeout) and acts on the outcome: a failed command -> full width.
    void wait_idle();

    // Full width now, synchronously (waits for asynchronous backends), and
    // from then on: later requests are ignored. Used at exit and by tests.
    Status restore_full_width();

    unsigned width() const { return applied_; }  // last width commanded
    // When the live low-power request expires (a timer may act on it then).
    std::optional<TimeNs> low_until() const { return low_until_; }
    unsigned full_width() const { return full_; }
    bool failed() const { return failed_; }
    // Why it failed, and the port's width as far as it was confirmed
    // ("set to full width", or unknown and why).
    const std::string& error() const { return error_; }
    LinkBackend& backend() { return *backend_; }

private:
    unsigned merged_width(TimeNs now) const;
    void update(TimeNs now);
    void command(unsigned width, TimeNs at_ns);
    void fail(const Status& status);
    void report(const std::string& message);

    std::unique_ptr<LinkBackend> backend_;
    Clock clock_;
    ErrorReporter on_error_;
    unsigned full_;
    unsigned low_;
    unsigned applied_;
    std::array<std::optional<unsigned>, static_cast<unsigned>(Source::count)> demand_{};
    std::optional<TimeNs> low_until_;
    bool failed_ = false;  // sticky: full width for good
    bool closed_ = false;  // restored at exit
    std::string error_;
};

}  // namespace slim::link

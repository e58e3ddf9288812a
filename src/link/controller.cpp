// SPDX-License-Identifier: BSD-3-Clause
#include "link/controller.h"

#include "base/log.h"

#include <algorithm>
#include <cmath>

namespace slim::link {

Controller::Controller(std::unique_ptr<LinkBackend> backend, ControllerOptions options)
    : backend_(std::move(backend)),
      clock_(options.clock ? std::move(options.clock) : steady_clock_ns()),
      on_error_(std::move(options.on_error)), full_(backend_->full_width()),
      // An EEE port's low width is 0 (LPI); an InfiniBand port's at least 1.
      low_(std::min(options.low_width, backend_->full_width())), applied_(full_)
{}

Controller::~Controller() { (void)restore_full_width(); }

void Controller::low_power_until(TimeNs until_ns)
{
    const TimeNs now = clock_();
    if (until_ns <= now) {
        return update(now);
    }
    low_until_                                        = until_ns;
    demand_[static_cast<unsigned>(Source::predictor)] = low_;
    update(now);
}

void Controller::burst(double ratio)
{
    // Thesis §4.5.2: the packed burst keeps the original speed on
    // ceil(L * r) lanes. r outside (0, 1] (or NaN) means "no saving".
    const double r       = (ratio > 0.0 && ratio <= 1.0) ? ratio : 1.0;
    const unsigned width = std::clamp(static_cast<unsigned>(std::ceil(full_ * r)), 1u, full_);
    demand_[static_cast<unsigned>(Source::burst)] = width;
    update(clock_());
}

void Controller::end_burst()
{
    demand_[static_cast<unsigned>(Source::burst)].reset();
    update(clock_());
}

TimeNs Controller::traffic()
{
    const TimeNs now = clock_();
    // A request that expired before this traffic ends at its own time (when
    // a timer would have woken the port), as on every other call.
    update(now);
    low_until_.reset();
    demand_[static_cast<unsigned>(Source::predictor)].reset();
    const unsigned needed = merged_width(now);
    const TimeNs wait     = backend_->traffic(needed);
    update(now);
    return wait;
}

void Controller::tick() { update(clock_()); }

void Controller::sync(TimeNs through_ns)
{
    if (!backend_->sync(through_ns)) {
        fail(Status::error("link " + backend_->name() + ": the node service is gone"));
    }
}

void Controller::wait_idle()
{
    const Status status = backend_->drain();
    if (!status) {
        fail(status);
    }
}

Status Controller::restore_full_width()
{
    if (closed_) {
        return failed_ ? Status::error(error_) : Status::success();
    }
    closed_ = true;
    demand_ = {};
    low_until_.reset();
    // Asked of the backend even when full width was the last request: a
    // command applying a lower one may still be running (exec).
    const Status status = backend_->restore_full_width();
    applied_            = full_;
    if (!status) {
        // Said as it is: the port's width is not known to be full.
        const std::string what = "restoring link " + backend_->name() + " to full width (" +
                                 std::to_string(full_) +
                                 " lanes) failed: the port's width is "
                                 "unknown (" +
                                 status.message() + ")";
        error_ += (failed_ ? "; at exit: " : "") + what;
        failed_ = true;
        report(what);
    }
    return status;
}

unsigned Controller::merged_width(TimeNs now) const
{
    if (failed_ || closed_) {
        return full_;
    }
    std::optional<unsigned> width;
    for (unsigned s = 0; s < demand_.size(); ++s) {
        const auto& d = demand_[s];
        if (!d) {
            continue;
        }
        if (s == static_cast<unsigned>(Source::predictor) && low_until_ && now >= *low_until_) {
            continue;  // expired; update() clears it
        }
        width = std::max(width.value_or(0u), *d);
    }
    return width.value_or(full_);
}

void Controller::update(TimeNs now)
{
    const Status polled = backend_->poll();
    if (!polled) {
        return fail(polled);
    }
    TimeNs at = now;
    if (low_until_ && now >= *low_until_) {
        at = *low_until_;  // when a timer would have woken the port
        low_until_.reset();
        demand_[static_cast<unsigned>(Source::predictor)].reset();
    }
    const unsigned width = merged_width(now);
    if (width != applied_) {
        command(width, at);
    }
}

void Controller::command(unsigned width, TimeNs at_ns)
{
    // A width below full held by a "low until t" request: a node service
    // raises the port at t by itself if this process falls silent.
    const Status status = (low_until_ && width < full_)
                                  ? backend_->set_width_until(width, at_ns, *low_until_)
                                  : backend_->set_width_at(width, at_ns);
    if (!status) {
        return fail(status);
    }
    applied_ = width;
}

void Controller::fail(const Status& status)
{
    if (failed_) {
        return;  // reported once; already at full width
    }
    failed_ = true;
    error_  = status.message();
    demand_ = {};
    low_until_.reset();
    // Best effort: the backend that just failed is asked once more, and
    // waited for (bounded), so that the message says what happened.
    const Status restored = backend_->restore_full_width();
    applied_              = full_;
    // Said as confirmed: a restore that failed (or a node service that is
    // gone) leaves the width unknown, not "full".
    error_ += restored ? "; link " + backend_->name() + " set to full width (" +
                                 std::to_string(full_) + " lanes)"
                       : "; link " + backend_->name() + ": the port's width is unknown (" +
                                 restored.message() + ")";
    report(error_);
}

void Controller::report(const std::string& message)
{
    if (on_error_) {
        on_error_(message);
        return;
    }
    slim::logger().error("{}", message);
}

}  // namespace slim::link

// SPDX-License-Identifier: BSD-3-Clause
// Driving the port (port_service.h): the widths the merge decides go to the
// backend; a backend error stops the service driving the port and asks for
// full width, which is polled, not waited for, until confirmed; the state
// file tells a later service that a port may have been left narrow.
#include "service/port_service.h"

#include "base/log.h"
#include "service/port_service_state.h"
#include "service/state_file.h"

#include <algorithm>
#include <string>
#include <unistd.h>

namespace slim::link {

void PortService::set_port(unsigned width, TimeNs t)
{
    if (failed_) {
        return;
    }
    command(width, t);
}

Status PortService::command(unsigned width, std::optional<TimeNs> at)
{
    ++commands_;
    const unsigned before = applied_;
    applied_              = width;
    const Status status   = at ? backend_->set_width_at(width, *at) : backend_->set_width(width);
    if (!status) {
        fail(status);
        return status;
    }
    sync_changes_ += width != before ? 1 : 0;
    if (width < full_ && !state_.written()) {
        // Should this service die now, the next one learns that the port
        // may be narrow (use_state_file).
        write_state("slimlinkd pid " + std::to_string(::getpid()) + " drove port " +
                    options_.port_name + " (" + backend_->name() + ") below full width");
    }
    return status;
}

// The last counted client has gone (left or died): the merge has put the
// port at full width, and a backend whose full width is not the site's own
// setting puts that back (ethtool). Called once each time the count falls
// to zero, not at every instant of the merge.
void PortService::release_if_unused()
{
    const bool unused = std::all_of(demand_count_.begin(), demand_count_.end(),
                                    [](std::size_t n) { return n == 0; });
    if (!unused) {
        released_ = false;
        return;
    }
    if (released_) {
        return;
    }
    released_           = true;
    const Status status = backend_->release();
    if (!status) {
        fail(status);
    }
}

std::uint64_t PortService::confirmed_changes() const
{
    const std::optional<LinkBackend::Confirmed> c = backend_->confirmed();
    return c ? c->changes : sync_changes_;
}

void PortService::poll_backend()
{
    const Status polled = backend_->poll();
    if (!polled) {
        if (restore_pending_) {
            restore_failed(polled);
        } else {
            fail(polled);
        }
        return;
    }
    if (restore_pending_) {
        check_restored();
    }
}

void PortService::check_restored()
{
    const std::optional<LinkBackend::Confirmed> c = backend_->confirmed();
    if (c && c->in_flight) {
        return;  // not yet
    }
    if (c && c->width != full_) {
        return restore_failed(Status::error("the backend did not confirm full width"));
    }
    restore_pending_ = false;
    if (width_unknown_) {
        logger().info("slimlinkd: port {} ({}) is back at full width ({} lanes), as the backend "
                      "confirmed{}",
                      options_.port_name, backend_->name(), full_,
                      restore_retries_ == 0
                              ? std::string()
                              : " (after " + std::to_string(restore_retries_) +
                                        (restore_retries_ == 1 ? " retry)" : " retries)"));
    }
    restore_failing_ = false;
    restore_failure_.clear();
    retry_at_.reset();
    retry_wait_      = kRestoreRetryFirstNs;
    restore_retries_ = 0;
    width_unknown_   = false;
    width_note_.clear();
    state_origin_.clear();
    // A failed backend drives the port no more: nothing is narrow now.
    if (failed_ || !state_.written()) {
        state_.remove();
    }
}

void PortService::fail(const Status& status)
{
    ++backend_errors_;
    if (!failed_) {
        failed_  = true;
        failure_ = status.message();
        logger().error("slimlinkd: port {} ({}): {}; the service stops driving the port and "
                       "restores full width",
                       options_.port_name, backend_->name(), status.message());
    }
    applied_ = full_;
    // Unknown until the backend confirms the restore.
    width_unknown_ = true;
    width_note_    = "restoring full width after the failure, not confirmed yet";
    // Asked, not waited for: a hung command (exec) must not stop the loop,
    // which meanwhile sees ranks attach and die. The outcome comes from
    // poll_backend().
    restore_pending_     = true;
    const Status restore = backend_->set_width(full_);
    if (!restore) {
        restore_failed(restore);
        return;
    }
    check_restored();
}

void PortService::restore_failed(const Status& status)
{
    ++backend_errors_;
    restore_pending_ = false;
    if (!failed_) {
        failed_  = true;
        failure_ = status.message();
    }
    width_unknown_ = true;
    width_note_    = (state_origin_.empty() ? std::string() : state_origin_ + "; ") +
                  "restoring full width failed: " + status.message() +
                  "; the port's width is unknown (the service retries)";
    // A retry that fails as the one before changes nothing worth a line:
    // a port broken for a day would otherwise log every minute.
    const bool changed = !restore_failing_ || status.message() != restore_failure_;
    restore_failing_   = true;
    restore_failure_   = status.message();
    if (!changed) {
        logger().debug("slimlinkd: port {} ({}): retry {} of the restore failed the same way",
                       options_.port_name, backend_->name(), restore_retries_);
        return;
    }
    logger().error("slimlinkd: port {} ({}): restoring full width failed: {}; the port's "
                   "width is unknown; retrying in {} s, the wait doubling up to {} s",
                   options_.port_name, backend_->name(), status.message(),
                   retry_wait_ / 1'000'000'000, kRestoreRetryMaxNs / 1'000'000'000);
    write_state("restoring full width failed: " + status.message());
}

std::optional<TimeNs> PortService::retry_restore(TimeNs now)
{
    if (!restore_failing_ || restore_pending_) {
        return std::nullopt;  // nothing failing, or a retry being polled
    }
    if (!retry_at_) {
        retry_at_ = saturating_add(now, retry_wait_);
    }
    if (now < *retry_at_) {
        return retry_at_;
    }
    retry_at_.reset();
    retry_wait_ = std::min(retry_wait_ * 2, kRestoreRetryMaxNs);
    ++restore_retries_;
    // Asked, not waited for, as after the failure (fail()): the outcome
    // comes from poll_backend().
    restore_pending_     = true;
    const Status restore = backend_->set_width(full_);
    if (!restore) {
        restore_failed(restore);
        return retry_restore(now);  // schedules the next one
    }
    check_restored();
    return std::nullopt;
}

void PortService::write_state(const std::string& text)
{
    if (!has_stats_) {  // the emulated port has no state beyond this process
        state_.write(text);
    }
}

void PortService::use_state_file(const std::string& path)
{
    state_.set_path(path);
    if (path.empty()) {
        return;
    }
    const std::optional<std::string> left = read_state_file(path);
    if (!left) {
        return;
    }
    if (has_stats_) {
        state_.remove();  // an emulated port starts afresh with its service
        return;
    }
    logger().warn("slimlinkd: port {} ({}): the previous slimlinkd left it possibly not at full "
                  "width ({}); restoring full width",
                  options_.port_name, backend_->name(), *left);
    const std::string previous =
            "a previous slimlinkd left the port possibly narrow (" + *left + ")";
    if (failed_) {
        // start()'s full-width command failed already (fail() logged it).
        width_unknown_ = true;
        width_note_    = previous + "; " + (width_note_.empty() ? failure_ : width_note_);
        return;
    }
    width_unknown_   = true;
    state_origin_    = previous;
    width_note_      = previous + "; full width not confirmed yet";
    restore_pending_ = true;
    poll_backend();
}

}  // namespace slim::link

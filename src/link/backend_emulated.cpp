// SPDX-License-Identifier: BSD-3-Clause
// The "emulated" backend (default): the LinkModel in live time. Lazy — no
// thread: the model integrates energy only when asked or when the width
// changes, with time read from the clock at this edge; the model stays pure.
//
// With UCX_SLIM_INJECT_DELAY=y, traffic that the model says must wait for the
// port (a late wake-up) really waits that long here, so a live run's wall
// time shows the cost of wrong predictions, not only the report.
#include "link/backend.h"

#include <algorithm>

namespace slim::link {

namespace {

class EmulatedBackend final : public LinkBackend {
public:
    EmulatedBackend(const BackendConfig& config, Clock clock)
        : clock_(std::move(clock)), model_(config.link, clock_()),
          inject_delay_(config.inject_delay)
    {}

    std::string name() const override { return "emulated"; }
    unsigned full_width() const override { return model_.config().lanes; }
    std::string describe() const override
    {
        return "emulated link (" + std::to_string(model_.config().lanes) +
               " lanes, no hardware is changed; late wake-ups " +
               (inject_delay_ ? "really delay traffic" : "are only counted") + ")";
    }

    Status set_width(unsigned width) override { return set_width_at(width, now()); }

    Status set_width_at(unsigned width, TimeNs at_ns) override
    {
        // Times never go backwards in the model; an "at" before the last event
        // the model saw is applied at that event.
        at_ns    = std::max(at_ns, last_ns_);
        last_ns_ = at_ns;
        if (width != model_.target_width()) {
            model_.request_width(at_ns, width);
        }
        return Status::success();
    }

    TimeNs traffic(unsigned width) override
    {
        const TimeNs t    = now();
        const TimeNs wait = model_.traffic(t, width);
        if (wait > 0 && inject_delay_) {
            wait_real_time(wait);
        }
        return wait;
    }

    const LinkStats *stats() override { return &model_.stats_at(now()); }

private:
    TimeNs now()
    {
        last_ns_ = std::max(clock_(), last_ns_);
        return last_ns_;
    }

    Clock clock_;
    LinkModel model_;
    bool inject_delay_;
    TimeNs last_ns_ = 0;
};

}  // namespace

BackendResult make_emulated_backend(const BackendConfig& config)
{
    Clock clock = config.clock ? config.clock : steady_clock_ns();
    return {std::make_unique<EmulatedBackend>(config, std::move(clock)), Status::success()};
}

}  // namespace slim::link

/* SPDX-License-Identifier: BSD-3-Clause */
// A rank's backend when a node service drives the port: every
// command goes to the port's owner (the service's client) and, as well, to
// an emulated port that only this process's demand drives. The port's
// energy is the service's, accounted once for the node; the model here
// answers another question, per rank: what the predictor's decisions would
// save and cost on a port of its own (what slim-replay computes from the
// rank's trace, so live and replayed numbers stay comparable). Reports
// label the two apart (report.cpp, node_report.cpp).
#pragma once

#include "link/backend.h"

#include <memory>
#include <string>

namespace slim::link {

class TeeBackend final : public LinkBackend {
public:
    // `owner`: the service's client backend; `demand`: an emulated one.
    TeeBackend(std::unique_ptr<LinkBackend> owner, std::unique_ptr<LinkBackend> demand)
        : owner_(std::move(owner)), demand_(std::move(demand))
    {}

    std::string name() const override { return owner_->name(); }
    unsigned full_width() const override { return owner_->full_width(); }
    std::string describe() const override { return owner_->describe(); }

    Status set_width(unsigned width) override
    {
        (void)demand_->set_width(width);
        return owner_->set_width(width);
    }
    Status set_width_at(unsigned width, TimeNs at_ns) override
    {
        (void)demand_->set_width_at(width, at_ns);
        return owner_->set_width_at(width, at_ns);
    }
    Status set_width_until(unsigned width, TimeNs at_ns, TimeNs until_ns) override
    {
        (void)demand_->set_width_at(width, at_ns);
        return owner_->set_width_until(width, at_ns, until_ns);
    }
    // The wait of this rank's own port: the shared port's late wake-ups are
    // counted by the service, per client.
    TimeNs traffic(unsigned width) override
    {
        (void)owner_->traffic(width);
        return demand_->traffic(width);
    }
    Status poll() override { return owner_->poll(); }
    Status drain() override { return owner_->drain(); }
    Status restore_full_width() override
    {
        (void)demand_->restore_full_width();
        return owner_->restore_full_width();
    }
    bool sync(TimeNs through_ns) override { return owner_->sync(through_ns); }
    const LinkStats *stats() override { return demand_->stats(); }
    std::optional<Confirmed> confirmed() const override { return owner_->confirmed(); }

private:
    std::unique_ptr<LinkBackend> owner_;
    std::unique_ptr<LinkBackend> demand_;
};

}  // namespace slim::link

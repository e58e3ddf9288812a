// SPDX-License-Identifier: BSD-3-Clause
// slimlinkd's CPU frequency controller (cpu_controller.h).
#include "service/cpu_controller.h"

#include "base/log.h"
#include "link/backend.h"
#include "link/service_io.h"

#include <cstdio>

namespace slim::link {

namespace svc = service;

CpuController::CpuController(std::unique_ptr<CpuBackend> backend)
    : backend_(std::move(backend)), all_(backend_->cores())
{}

CpuController::~CpuController() { stop(steady_now_ns()); }

void CpuController::set_cores(std::uint32_t client, const CoreSet& cores, TimeNs now)
{
    Rank& r  = ranks_[client];
    r.cores  = cores & all_;
    r.pinned = r.cores.any() && r.cores != all_;
    apply(now);
}

void CpuController::request(std::uint32_t client, bool low, TimeNs now)
{
    ++requests_;
    const auto it = ranks_.find(client);
    if (it == ranks_.end() || it->second.low == low) {
        return;
    }
    it->second.low = low;
    apply(now);
}

void CpuController::drop(std::uint32_t client, TimeNs now)
{
    if (ranks_.erase(client) != 0) {
        apply(now);
    }
}

void CpuController::stop(TimeNs now) noexcept
{
    if (stopped_) {
        return;
    }
    stopped_               = true;
    const std::string left = backend_->restore(now);
    lowered_.reset();
    if (!left.empty()) {
        logger().error("slimlinkd: CPU: restoring the cores at the stop failed: {}", left);
    }
}

CoreSet CpuController::wanted() const
{
    CoreSet pinned_here;  // cores some pinned rank may run on
    CoreSet held;         // cores some rank that works may run on
    for (const auto& [id, r] : ranks_) {
        if (r.pinned) {
            pinned_here |= r.cores;
        }
        if (!r.low) {
            held |= r.cores;
        }
    }
    return pinned_here & ~held & all_;
}

void CpuController::apply(TimeNs now)
{
    if (failed_ || stopped_) {
        return;
    }
    const CoreSet want  = wanted();
    const CoreSet raise = lowered_ & ~want;
    const CoreSet lower = want & ~lowered_;
    try {
        // Raised first: a rank that works again is never kept waiting
        // behind another's lowering.
        if (raise.any()) {
            backend_->set(raise, false, now);
            lowered_ &= ~raise;
            transitions_ += raise.count();
        }
        if (lower.any()) {
            backend_->set(lower, true, now);
            lowered_ |= lower;
            transitions_ += lower.count();
        }
    } catch (const CpuBackendError& e) {
        fail(e.what(), now);
    }
}

void CpuController::fail(const std::string& why, TimeNs now) noexcept
{
    failed_                = true;
    problem_               = why;
    const std::string left = backend_->restore(now);
    lowered_.reset();
    if (!left.empty()) {
        problem_ += "; restoring the cores failed too: " + left;
    }
    logger().error("slimlinkd: CPU backend {} failed: {}; every core it touched is restored and "
                   "the cores are no longer driven",
                   backend_->name(), problem_);
}

svc::CpuStatusReply CpuController::status(TimeNs now) const
{
    svc::CpuStatusReply s;
    service_io::set_text(s.backend, backend_->name());
    s.cores     = static_cast<std::uint32_t>(all_.count());
    s.cores_low = static_cast<std::uint32_t>(lowered_.count());
    s.ranks     = static_cast<std::uint32_t>(ranks_.size());
    for (const auto& [id, r] : ranks_) {
        s.ranks_low += r.low ? 1 : 0;
    }
    s.failed      = failed_ ? 1 : 0;
    s.transitions = transitions_;
    s.requests    = requests_;
    if (const std::optional<CpuEnergy> e = backend_->energy(now)) {
        s.has_energy      = 1;
        s.span_ns         = e->span_ns;
        s.time_low_ns     = e->time_low_ns;
        s.penalty_ns      = e->penalty_ns;
        s.energy_joules   = e->joules;
        s.baseline_joules = e->baseline_joules;
    }
    service_io::set_text(s.problem, problem_);
    return s;
}

std::vector<svc::CpuStatusCore> CpuController::core_status(std::size_t limit) const
{
    std::vector<svc::CpuStatusCore> cores;
    for (std::size_t c = 0; c < all_.size() && cores.size() < limit; ++c) {
        if (!all_.test(c)) {
            continue;
        }
        svc::CpuStatusCore e;
        e.core = static_cast<std::uint32_t>(c);
        e.low  = lowered_.test(c) ? 1 : 0;
        for (const auto& [id, r] : ranks_) {
            if (r.cores.test(c)) {
                ++e.ranks;
                e.ranks_low += r.low ? 1 : 0;
            }
        }
        cores.push_back(e);
    }
    return cores;
}

std::string CpuController::summary(TimeNs now) const
{
    std::string text = backend_->name() + ": " + std::to_string(lowered_.count()) + " of " +
                       std::to_string(all_.count()) + " cores low, " +
                       std::to_string(ranks_.size()) + " ranks, " + std::to_string(requests_) +
                       " requests, " + std::to_string(transitions_) + " transitions";
    if (const std::optional<CpuEnergy> e = backend_->energy(now)) {
        char buf[256];
        const double saved = e->baseline_joules - e->joules;
        std::snprintf(buf, sizeof buf,
                      "; emulated energy %.6g J against %.6g J always at full (%.3g %% saved), "
                      "%.6g s at low over the cores, modelled penalty %.6g s",
                      e->joules, e->baseline_joules,
                      e->baseline_joules > 0 ? 100.0 * saved / e->baseline_joules : 0.0,
                      static_cast<double>(e->time_low_ns) * 1e-9,
                      static_cast<double>(e->penalty_ns) * 1e-9);
        text += buf;
    }
    if (failed_) {
        text += "; failed: " + problem_;
    }
    return text;
}

}  // namespace slim::link

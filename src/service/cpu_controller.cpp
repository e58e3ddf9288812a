// SPDX-License-Identifier: BSD-3-Clause
// slimlinkd's CPU frequency controller (cpu_controller.h).
#include "service/cpu_controller.h"

#include "base/log.h"
#include "link/backend.h"
#include "link/service_io.h"

#include <algorithm>
#include <cstdio>

namespace slim::link {

namespace svc = service;

CpuController::CpuController(std::unique_ptr<CpuBackend> backend)
    : backend_(std::move(backend)), all_(backend_->cores()), accounts_(svc::kMaxCpus)
{
    if (const cpu::CpuConfig *table = backend_->table()) {
        tau_ns_ = table->tau_ns;
    }
}

CpuController::~CpuController() { stop(steady_now_ns()); }

void CpuController::set_cores(std::uint32_t client, const CoreSet& cores, TimeNs now,
                              std::uint64_t job)
{
    Rank& r  = ranks_[client];
    r.cores  = cores & all_;
    r.pinned = r.cores.any() && r.cores != all_;
    r.job    = job != 0 ? job : r.job;
    if (r.job != 0) {
        JobAccount& account = jobs_[r.job];
        Member& member      = account.members[client];
        member.cores |= r.cores;
        for (std::size_t c = 0; c < r.cores.size(); ++c) {
            if (r.cores.test(c) && account.cores.count(c) == 0) {
                account.cores.emplace(c, std::make_pair(now, mark(c, now)));
            }
        }
    }
    apply(now);
}

void CpuController::request(std::uint32_t client, bool low, TimeNs now)
{
    ++requests_;
    const auto it = ranks_.find(client);
    if (it == ranks_.end()) {
        return;
    }
    JobAccount *account = nullptr;
    if (const auto job = jobs_.find(it->second.job); job != jobs_.end()) {
        account        = &job->second;
        Member& member = account->members[client];
        ++(low ? member.low_requests : member.full_requests);
    }
    if (it->second.low != low) {
        it->second.low = low;
        apply(now);
    }
    if (low && account != nullptr && !failed_ && !stopped_) {
        // What the sharing rule kept at full: another rank may run there.
        const CoreSet kept = it->second.cores & ~lowered_;
        for (std::size_t c = 0; c < kept.size(); ++c) {
            if (kept.test(c)) {
                ++account->refused[c];
            }
        }
    }
}

void CpuController::drop(std::uint32_t client, TimeNs now)
{
    const auto it = ranks_.find(client);
    if (it == ranks_.end()) {
        return;
    }
    if (const auto job = jobs_.find(it->second.job); job != jobs_.end()) {
        job->second.members[client].live = false;
        bool live                        = false;
        for (const auto& [id, m] : job->second.members) {
            live = live || m.live;
        }
        if (!live) {
            jobs_.erase(job);  // its report, if any, was made while a rank was there
        }
    }
    ranks_.erase(it);
    apply(now);
}

CpuController::CoreMark CpuController::mark(std::size_t core, TimeNs now) const
{
    const CoreAccount& a = accounts_[core];
    CoreMark m{a.transitions, a.raises, a.low_ns, a.at_low_ns};
    if (lowered_.test(core)) {
        const TimeNs d = std::max<TimeNs>(0, now - a.since);
        m.low_ns += d;
        m.at_low_ns += std::max<TimeNs>(0, d - tau_ns_);
    }
    return m;
}

void CpuController::opened(const CoreSet& cores, TimeNs now)
{
    for (std::size_t c = 0; c < cores.size(); ++c) {
        if (cores.test(c) && !lowered_.test(c)) {
            ++accounts_[c].transitions;
            accounts_[c].since = now;
        }
    }
}

void CpuController::closed(const CoreSet& cores, TimeNs now)
{
    for (std::size_t c = 0; c < cores.size(); ++c) {
        if (cores.test(c) && lowered_.test(c)) {
            // The low period that ends now, as mark() counts it open.
            const CoreMark ended = mark(c, now);
            CoreAccount& a       = accounts_[c];
            a.low_ns             = ended.low_ns;
            a.at_low_ns          = ended.at_low_ns;
            ++a.transitions;
            ++a.raises;
        }
    }
}

void CpuController::stop(TimeNs now) noexcept
{
    if (stopped_) {
        return;
    }
    stopped_               = true;
    const std::string left = backend_->restore(now);
    closed(lowered_, now);
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
            closed(raise, now);
            lowered_ &= ~raise;
            transitions_ += raise.count();
        }
        if (lower.any()) {
            backend_->set(lower, true, now);
            opened(lower, now);
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
    closed(lowered_, now);
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

std::optional<CpuController::JobSection> CpuController::job_section(std::uint64_t job, TimeNs now,
                                                                    std::size_t limit) const
{
    const auto it = jobs_.find(job);
    if (it == jobs_.end() || it->second.cores.empty()) {
        return std::nullopt;
    }
    const JobAccount& account   = it->second;
    const cpu::CpuConfig *table = backend_->table();
    JobSection section;
    svc::CpuSection& t = section.totals;
    service_io::set_text(t.backend, backend_->name());
    service_io::set_text(t.problem, problem_);
    t.has_energy = table != nullptr ? 1 : 0;
    t.failed     = failed_ ? 1 : 0;
    TimeNs first = now;
    for (const auto& [c, start] : account.cores) {
        const CoreMark end = mark(c, now);
        svc::CpuSectionCore e;
        e.core = static_cast<std::uint32_t>(c);
        for (const auto& [id, m] : account.members) {
            if (m.cores.test(c)) {
                ++e.ranks;
                e.low_requests += m.low_requests;
                e.full_requests += m.full_requests;
            }
        }
        if (const auto r = account.refused.find(c); r != account.refused.end()) {
            e.refused = r->second;
        }
        e.span_ns     = std::max<TimeNs>(0, now - start.first);
        e.transitions = end.transitions - start.second.transitions;
        e.time_low_ns = end.low_ns - start.second.low_ns;
        if (table != nullptr) {
            // As the emulated backend counts (cpu_backend_emulated.cpp): P
            // but for the time beyond the first tau of each low period.
            const TimeNs at_low = end.at_low_ns - start.second.at_low_ns;
            e.penalty_ns        = static_cast<TimeNs>(end.raises - start.second.raises) *
                           cpu::wake_penalty_ns(*table);
            e.baseline_joules = table->full.watts * static_cast<double>(e.span_ns) * 1e-9;
            e.energy_joules   = e.baseline_joules - (table->full.watts - table->low.watts) *
                                                          static_cast<double>(at_low) * 1e-9;
        }
        first = std::min(first, start.first);
        ++t.cores_mapped;
        t.cores_refused += e.refused > 0 ? 1 : 0;
        t.low_requests += e.low_requests;
        t.full_requests += e.full_requests;
        t.transitions += e.transitions;
        t.time_low_ns += e.time_low_ns;
        t.penalty_ns += e.penalty_ns;
        t.energy_joules += e.energy_joules;
        t.baseline_joules += e.baseline_joules;
        if (section.cores.size() < limit) {
            section.cores.push_back(e);
        }
    }
    // The requests of the job's ranks, each counted once (a rank's request
    // is on every core it maps to).
    t.low_requests  = 0;
    t.full_requests = 0;
    for (const auto& [id, m] : account.members) {
        t.low_requests += m.low_requests;
        t.full_requests += m.full_requests;
    }
    t.span_ns = std::max<TimeNs>(0, now - first);
    t.cores   = static_cast<std::uint32_t>(section.cores.size());
    return section;
}

}  // namespace slim::link

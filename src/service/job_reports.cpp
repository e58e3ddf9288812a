// SPDX-License-Identifier: BSD-3-Clause
// End-of-job reports (port_service.h, deposit() and ready_reports()): the
// port's numbers between snapshots taken at a job's first and last events,
// the other jobs that shared the port meanwhile, and one entry per local
// rank with the record it deposited.
#include "service/port_service.h"

#include "base/log.h"
#include "service/port_service_state.h"

#include <algorithm>
#include <string>
#include <vector>

namespace slim::link {

PortService::Snapshot PortService::take_snapshot(TimeNs t)
{
    *replay_now_ = std::max(*replay_now_, t);
    Snapshot s;
    s.at           = *replay_now_;
    s.commands     = confirmed_changes();
    s.late_records = late_records_;
    s.stalls       = stalls_;
    s.stalled_now  = stalled_now_;
    if (has_stats_) {
        if (const LinkStats *stats = backend_->stats()) {
            s.stats = *stats;
        }
    }
    return s;
}

TimeNs PortService::job_end(const Job& job) const
{
    TimeNs end = 0;
    for (const std::uint32_t id : job.members) {
        const Client *client = find(id);
        if (!client) {
            continue;
        }
        TimeNs e = client->dropped ? client->leave_at : client->through_ns;
        if (!client->dropped && client->has_record) {
            e = std::max(e, client->last_t);
        }
        end = std::max(end, e);
    }
    return end;
}

void PortService::snapshot_job_ends(std::optional<TimeNs> before)
{
    // In time order, since the port's accounting only goes forward.
    std::vector<std::pair<TimeNs, Job *>> due;
    const bool everything = !before || *before == kNever;
    for (auto& [key, job] : jobs_) {
        // A member still publishing may move the end.
        if (!everything && job_open(*job)) {
            continue;
        }
        const TimeNs end = job_end(*job);
        if (!everything && end >= *before) {
            continue;
        }
        if (!job->start || (job->end && job->end->at == end) || end < *replay_now_) {
            continue;
        }
        due.emplace_back(end, job.get());
    }
    std::sort(due.begin(), due.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [end, job] : due) {
        job->end = take_snapshot(end);
    }
}

bool PortService::deposit(std::uint32_t id, std::uint32_t record_version,
                          std::vector<std::uint8_t> record, TimeNs now, TimeNs wait_ns)
{
    Client *client = find(id);
    if (!client || client->dropped) {
        return false;
    }
    client->deposited      = true;
    client->record_version = record_version;
    client->record         = std::move(record);
    Job *job               = job_of(*client);
    if (!job) {
        return false;
    }
    if (job->reporter) {
        return *job->reporter == id;
    }
    // The first to hand its numbers over reports, and waits for the others
    // (as the old node leader did): whoever dies later, in whatever order,
    // a live reporter is there for the job's report.
    job->reporter = id;
    job->deadline = saturating_add(now, std::max<TimeNs>(wait_ns, 0));
    return true;
}

bool PortService::job_open(const Job& job) const
{
    for (const std::uint32_t id : job.members) {
        const Client *c = find(id);
        if (c && !c->dropped && !c->deposited) {
            return true;
        }
    }
    return false;
}

TimeNs PortService::job_start(const Job& job) const
{
    if (job.start) {
        return job.start->at;
    }
    TimeNs first = kNever;
    for (const std::uint32_t id : job.members) {
        if (const Client *c = find(id)) {
            first = std::min(first, c->attach_ns);
        }
    }
    return first == kNever ? 0 : first;
}

bool PortService::job_complete(const Job& job) const
{
    const auto done = [](const Client& c) { return c.deposited || c.dropped; };
    if (job.local_size <= 0) {
        for (const std::uint32_t id : job.members) {
            const Client *c = find(id);
            if (c && !done(*c)) {
                return false;
            }
        }
        return true;
    }
    for (std::int32_t rank = 0; rank < job.local_size; ++rank) {
        bool found = false;
        for (const std::uint32_t id : job.members) {
            const Client *c = find(id);
            if (c && c->info.local_rank == rank && done(*c)) {
                found = true;
                break;
            }
        }
        if (!found) {
            return false;
        }
    }
    return true;
}

std::vector<std::pair<std::uint32_t, JobReport>> PortService::ready_reports(TimeNs now)
{
    see(now);
    advance();
    const std::optional<TimeNs> h = horizon();
    std::vector<std::pair<std::uint32_t, JobReport>> ready;
    std::vector<std::string> forget;
    for (auto& [key, job] : jobs_) {
        const Client *reporter = job->reporter ? find(*job->reporter) : nullptr;
        bool anyone_attached   = false;
        for (const std::uint32_t id : job->members) {
            const Client *c = find(id);
            anyone_attached = anyone_attached || (c && !c->dropped);
        }
        const bool complete = job_complete(*job);
        if (job->reporter && (!reporter || reporter->dropped)) {
            logger().warn("slimlinkd: the reporter of job '{}' left before its report; no node "
                          "report for it",
                          key);
            forget.push_back(key);
            continue;
        }
        if (!job->reporter) {
            if (complete || !anyone_attached) {
                forget.push_back(key);  // nobody waits for this report
            }
            continue;
        }
        if (!complete && now < job->deadline) {
            continue;
        }
        // Complete: worth waiting (at most kMaxHorizonLag, whatever its
        // deadline for missing ranks) for the merge to pass the job's end,
        // rather than reporting a span cut short.
        if (complete && h && *h < job_end(*job)) {
            continue;
        }
        ready.emplace_back(*job->reporter, make_report(*job));
        forget.push_back(key);
    }
    for (const auto& key : forget) {
        forget_job(key);
    }
    return ready;
}

std::optional<TimeNs> PortService::next_report_deadline() const
{
    std::optional<TimeNs> next;
    for (const auto& [key, job] : jobs_) {
        if (!job->reporter) {
            continue;
        }
        TimeNs due = job->deadline;
        if (job_complete(*job)) {
            due = saturating_add(job_end(*job), kMaxHorizonLag);
        }
        if (!next || due < *next) {
            next = due;
        }
    }
    return next;
}

std::uint64_t PortService::job_serial(std::uint32_t id) const
{
    const Client *c = find(id);
    return c != nullptr ? c->job_serial : 0;
}

JobReport PortService::make_report(Job& job)
{
    JobReport report;
    report.job_serial          = job.serial;
    service::PortSection& port = report.port;
    const auto copy_name       = [](char *to, const std::string      &from) {
        const std::size_t n = std::min(from.size(), service::kNameBytes - 1);
        from.copy(to, n);
        to[n] = '\0';
    };
    copy_name(port.backend, backend_->name());
    copy_name(port.port, options_.port_name);
    port.lanes          = full_;
    port.has_energy     = has_stats_ ? 1 : 0;
    port.backend_failed = failed_ ? 1 : 0;
    port.width_unknown  = width_unknown_ ? 1 : 0;
    {
        const std::string why = problem();  // cut to the field, as names are
        const std::size_t n   = std::min(why.size(), service::kTextBytes - 1);
        why.copy(port.problem, n);
        port.problem[n] = '\0';
    }

    const TimeNs end   = job_end(job);
    const TimeNs first = job_start(job);
    port.job_span_ns   = std::max<TimeNs>(0, end - first);
    if (!job.start) {
        // The merge has not reached the job's first attach: the port's
        // numbers cover none of it. Nothing is snapshotted: that would move
        // the replay clock past events not applied yet.
        port.uncovered_ns = port.job_span_ns;
        port.has_energy   = 0;
    } else {
        // The end as far as the horizon allows (port_service.h, ready_reports).
        if (!job.end || job.end->at != end) {
            const std::optional<TimeNs> h = horizon();
            TimeNs cut                    = end;
            if (h && *h < cut) {
                cut = *h;
            }
            job.end = take_snapshot(std::max(cut, job.start->at));
        }
    }
    const Snapshot a = job.start ? *job.start : Snapshot{first, {}, 0, 0, 0, 0};
    const Snapshot b = job.start ? *job.end : Snapshot{end, {}, 0, 0, 0, 0};
    if (job.start) {
        port.span_ns         = std::max<TimeNs>(0, b.at - a.at);
        port.uncovered_ns    = std::max<TimeNs>(0, end - b.at);
        port.transitions     = b.commands - a.commands;
        port.late_records    = b.late_records - a.late_records;
        port.stalled_clients = static_cast<std::uint32_t>(b.stalls - a.stalls) + a.stalled_now;
    }
    if (job.start && has_stats_) {
        port.energy_joules         = b.stats.energy_joules - a.stats.energy_joules;
        port.transitions           = b.stats.transitions - a.stats.transitions;
        port.late_wakeups          = b.stats.late_wakeups - a.stats.late_wakeups;
        port.wakeup_delay_ns       = b.stats.added_delay_ns - a.stats.added_delay_ns;
        port.time_in_transition_ns = b.stats.time_in_transition_ns - a.stats.time_in_transition_ns;
        for (unsigned w = 0; w <= kMaxLanes; ++w) {
            port.time_at_width_ns[w] = b.stats.time_at_width_ns[w] - a.stats.time_at_width_ns[w];
        }
        LinkConfig config;
        config.lanes         = full_;
        config.lane_watts    = options_.lane_watts;
        port.baseline_joules = LinkModel(config).always_on_joules(port.span_ns);
    }

    // Other jobs' clients whose lifetime overlaps the span.
    std::vector<std::uint64_t> other_jobs;
    for (const Interval& i : history_) {
        if (i.job_serial == job.serial || i.to < a.at || i.from > b.at) {
            continue;
        }
        ++port.clients_seen;
        if (std::find(other_jobs.begin(), other_jobs.end(), i.job_serial) == other_jobs.end()) {
            other_jobs.push_back(i.job_serial);
        }
    }
    port.other_jobs = static_cast<std::uint32_t>(other_jobs.size());

    const auto entry_of = [&report](const Client& c) {
        JobReport::Entry e;
        e.entry.rank              = c.info.rank;
        e.entry.local_rank        = c.info.local_rank;
        e.entry.pid               = c.info.pid;
        e.entry.late_wakeups      = c.late_wakeups;
        e.entry.wakeup_delay_ns   = c.delay_ns;
        service::EntryState state = service::EntryState::timed_out;
        if (c.deposited) {
            state                 = service::EntryState::reported;
            e.record              = c.record;
            e.entry.record_bytes  = static_cast<std::uint32_t>(c.record.size());
            report.record_version = c.record_version;
        } else if (c.dropped) {
            state = service::EntryState::died;
        }
        e.entry.state = static_cast<std::uint32_t>(state);
        return e;
    };
    // Members sorted by local rank; a local rank attached twice shows its
    // latest client.
    std::vector<const Client *> members;
    for (const std::uint32_t id : job.members) {
        if (const Client *c = find(id)) {
            members.push_back(c);
        }
    }
    std::stable_sort(members.begin(), members.end(), [](const Client *x, const Client *y) {
        return x->info.local_rank < y->info.local_rank;
    });
    for (std::int32_t rank = 0; rank < job.local_size; ++rank) {
        const Client *latest = nullptr;
        for (const Client *c : members) {
            if (c->info.local_rank == rank) {
                latest = c;
            }
        }
        if (latest) {
            report.entries.push_back(entry_of(*latest));
            continue;
        }
        JobReport::Entry e;
        e.entry.local_rank = rank;
        e.entry.state      = static_cast<std::uint32_t>(service::EntryState::never_started);
        report.entries.push_back(std::move(e));
    }
    for (const Client *c : members) {
        if (job.local_size > 0 && c->info.local_rank >= 0 && c->info.local_rank < job.local_size) {
            continue;  // listed above
        }
        report.entries.push_back(entry_of(*c));
    }
    if (job.reporter) {
        if (const Client *r = find(*job.reporter)) {
            report.record_version = r->record_version;
        }
    }
    return report;
}

void PortService::forget_job(const std::string& key)
{
    const auto it = jobs_.find(key);
    if (it == jobs_.end()) {
        return;
    }
    for (const std::uint32_t id : it->second->members) {
        const Client *c = find(id);
        if (c && c->left) {
            clients_.erase(id);
        }
    }
    jobs_.erase(it);
    prune_history();
}

void PortService::prune_history()
{
    // An ended lifetime matters only to a job whose span it may overlap:
    // the open jobs' spans start no earlier than their first attach.
    TimeNs oldest = kNever;
    for (const auto& [key, job] : jobs_) {
        for (const std::uint32_t id : job->members) {
            if (const Client *c = find(id)) {
                oldest = std::min(oldest, c->attach_ns);
            }
        }
    }
    history_.erase(
            std::remove_if(history_.begin(), history_.end(),
                           [oldest](const Interval& i) { return i.to != kNever && i.to < oldest; }),
            history_.end());
}

}  // namespace slim::link

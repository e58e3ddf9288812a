// SPDX-License-Identifier: BSD-3-Clause
// The merge (port_service.h): each client is a small queue of events in its
// own time order (join, records, overflow, expiry of a "low until", leave);
// `schedule_` orders the clients by their next event, so merging N clients
// costs log N per event. All events of one instant are applied before the
// port is set, so the port sees the maximum at that instant and never flaps
// inside it; traffic of that instant then meets the port as set.
#include "service/port_service.h"

#include "base/log.h"
#include "service/port_service_state.h"

#include <algorithm>
#include <vector>

namespace slim::link {

std::optional<TimeNs> PortService::next_event(const Client& client) const
{
    if (client.left) {
        return std::nullopt;
    }
    if (!client.joined) {
        return client.attach_ns;
    }
    std::optional<TimeNs> next;
    const auto consider = [&next](std::optional<TimeNs> t) {
        if (t && (!next || *t < *next)) {
            next = t;
        }
    };
    if (!client.queue.empty()) {
        consider(client.queue.front().record.t_ns);
    }
    consider(client.expiry_ns);
    consider(client.overflow_ns);
    consider(client.leave_ns);
    return next;
}

void PortService::reschedule(Client& client)
{
    const std::optional<TimeNs> t = next_event(client);
    if (client.key && t && client.key->first == *t) {
        return;  // where it was
    }
    // The node moves to its new place: no allocation per applied record.
    std::set<Key>::node_type node;
    if (client.key) {
        node = schedule_.extract(*client.key);
        client.key.reset();
    }
    if (t) {
        client.key = Key{*t, client.id};
        if (node) {
            node.value() = *client.key;
            schedule_.insert(std::move(node));
        } else {
            schedule_.insert(*client.key);
        }
    }
}

void PortService::recount(Client& client)
{
    // 1 + the width, so that an EEE port's 0 (LPI allowed) counts too.
    unsigned counted = 0;
    if (client.joined && !client.left) {
        counted = 1 + (client.overflowed ? full_
                       : client.forced   ? std::max(client.width, client.forced_width)
                                         : client.width);
    }
    if (counted == client.counted) {
        return;
    }
    if (client.counted != 0) {
        --demand_count_[client.counted - 1];
    }
    if (counted != 0) {
        ++demand_count_[counted - 1];
    }
    client.counted = counted;
}

unsigned PortService::target() const
{
    if (failed_) {
        return full_;
    }
    for (unsigned w = full_ + 1; w-- > 0;) {
        if (demand_count_[w] != 0) {
            return w;
        }
    }
    return full_;  // nobody counted: full width
}

std::optional<TimeNs> PortService::horizon() const
{
    std::optional<TimeNs> h;
    for (const auto& [id, client] : clients_) {
        // A client that deposited its record has finished: its last record
        // is in, and it must not hold its own job's report back.
        if (client->dropped || client->overflow_requested || client->deposited) {
            continue;
        }
        TimeNs complete = client->through_ns;
        if (client->has_record) {
            complete = std::max(complete, client->last_t);
        }
        if (!h || complete < *h) {
            h = complete;
        }
    }
    // A stalled client holds everyone back only so long.
    if (h && now_ > kMaxHorizonLag) {
        h = std::max(*h, now_ - kMaxHorizonLag);
    }
    return h;
}

void PortService::note_stalls(std::optional<TimeNs> h)
{
    for (auto& [id, client] : clients_) {
        const bool counts = !client->dropped && !client->overflow_requested && !client->deposited;
        TimeNs complete   = client->through_ns;
        if (client->has_record) {
            complete = std::max(complete, client->last_t);
        }
        const bool behind = counts && h && complete < *h;
        if (behind && !client->stalled) {
            client->stalled = true;
            ++stalls_;
            ++stalled_now_;
            logger().warn("slimlinkd: client {} (rank {}, pid {}, job '{}') has published "
                          "nothing for more than {} ms; the port's accounting goes on without "
                          "it, and its later records count as late",
                          id, client->info.rank, client->info.pid, client->info.job_key,
                          kMaxHorizonLag / 1'000'000);
        } else if (!behind && client->stalled) {
            client->stalled = false;
            --stalled_now_;
            if (counts) {
                logger().info("slimlinkd: client {} (rank {}, pid {}) caught up; {} of its "
                              "records were applied late",
                              id, client->info.rank, client->info.pid, client->late_records);
            }
        }
    }
}

TimeNs PortService::advance()
{
    poll_backend();
    const std::optional<TimeNs> h = horizon();
    note_stalls(h);
    apply_until(h);
    return h ? std::max(*h, *replay_now_) : *replay_now_;
}

void PortService::apply_until(std::optional<TimeNs> h)
{
    std::vector<std::pair<Client *, unsigned>> traffic;
    std::vector<std::uint32_t> batch;
    std::vector<std::uint32_t> gone;
    while (!schedule_.empty()) {
        const TimeNs t = schedule_.begin()->first;
        if (h && t >= *h) {
            break;
        }
        // An event before the point the merge has passed (a stalled
        // client's) happens now, late: the port cannot act in the past.
        const TimeNs at = std::max(t, floor_);
        snapshot_job_ends(at);  // jobs whose end lies before this instant
        *replay_now_ = std::max(*replay_now_, at);

        batch.clear();
        for (auto it = schedule_.begin(); it != schedule_.end() && it->first == t; ++it) {
            batch.push_back(it->second);
        }
        traffic.clear();
        for (const std::uint32_t id : batch) {
            Client& client = *clients_.at(id);
            apply_client_at(client, t, at, traffic);
            recount(client);
            reschedule(client);
            if (client.left && !job_of(client)) {
                gone.push_back(id);
            }
        }
        const unsigned width = target();
        if (width != applied_) {
            set_port(width, at);
        }
        release_if_unused();
        for (const auto& [client, needs] : traffic) {
            const TimeNs wait = backend_->traffic(needs);
            if (wait > 0) {
                ++client->late_wakeups;
                client->delay_ns += wait;
            }
        }
    }
    // Jobs ending before the horizon; with no live client everything is
    // applied, so every end is reached.
    snapshot_job_ends(h ? h : std::optional<TimeNs>(kNever));
    floor_ = std::max(floor_, h ? *h : *replay_now_);
    for (const std::uint32_t id : gone) {
        clients_.erase(id);
    }
    prune_history();
}

void PortService::apply_client_at(Client& client, TimeNs t, TimeNs at,
                                  std::vector<std::pair<Client *, unsigned>>& traffic)
{
    Job *job = job_of(client);
    if (!client.joined && client.attach_ns == t) {
        client.joined = true;
        client.width  = full_;
        if (job && !job->start) {
            job->start = take_snapshot(at);
        }
    }
    while (!client.queue.empty() && client.queue.front().record.t_ns == t) {
        const Client::Pending p = client.queue.front();
        client.queue.pop_front();
        if (job && !job->start_from_record) {
            job->start             = take_snapshot(at);
            job->start_from_record = true;
        }
        client.width       = p.record.width;
        client.applied_seq = p.seq;
        client.expiry_ns =
                p.record.until_ns != 0 ? std::optional<TimeNs>(p.record.until_ns) : std::nullopt;
        if (t < at) {
            ++late_records_;
            ++client.late_records;
            if (client.expiry_ns && *client.expiry_ns <= at) {
                // Its "low until" lies in the past too: nothing of it is left.
                client.width = full_;
                client.expiry_ns.reset();
            }
        }
        if (client.forced && p.seq > client.forced_seq) {
            client.forced = false;
        }
        if (p.record.flags & service::kTraffic) {
            traffic.emplace_back(&client, p.record.width);
        }
    }
    if (client.overflow_ns && *client.overflow_ns == t) {
        client.overflow_ns.reset();
        client.overflowed = true;
        client.expiry_ns.reset();
    }
    if (client.expiry_ns && *client.expiry_ns == t) {
        client.expiry_ns.reset();
        client.width = full_;
    }
    if (client.leave_ns && *client.leave_ns == t) {
        client.leave_ns.reset();
        client.left = true;
        client.expiry_ns.reset();
        client.queue.clear();
    }
}

void PortService::raise_ahead(Client& client, const service::DemandRecord& latest)
{
    // A real port cannot wait for the horizon: another rank that has been
    // quiet for a drain round (up to 16 ms) holds the merge back, and this
    // rank's traffic would find the port low all that time. A client whose
    // newest record needs more than the port has gets that width now, held
    // until a newer record of it is applied (as act_on_deadlines holds full
    // width). The emulated port is the replay's: exact, however late.
    if (has_stats_ || failed_ || client.overflow_requested || latest.width <= applied_) {
        return;
    }
    client.forced       = true;
    client.forced_seq   = client.latest_seq;
    client.forced_width = std::max(client.forced ? client.forced_width : 0u, latest.width);
    recount(client);
    command(latest.width, std::nullopt);
}

std::optional<TimeNs> PortService::act_on_deadlines(TimeNs now)
{
    see(now);
    std::optional<TimeNs> next;
    if (!has_stats_) {
        poll_backend();
        next = retry_restore(now);
    }
    if (restore_pending_) {
        // Polled until the backend confirms or fails it (exec: within its
        // own 2 s timeout).
        constexpr TimeNs kRestorePoll = 10'000'000;
        next                          = now + kRestorePoll;
    }
    bool raise = false;
    for (auto& [id, client] : clients_) {
        if (client->dropped || client->overflow_requested || client->latest_seq == 0) {
            continue;
        }
        const TimeNs until = client->latest_until;
        if (until == 0) {
            continue;
        }
        if (until > now) {
            if (!next || until < *next) {
                next = until;
            }
            continue;
        }
        // The emulated port is raised by the replay at until_ns itself.
        if (has_stats_ || failed_ || client->forced) {
            continue;
        }
        client->forced       = true;
        client->forced_seq   = client->latest_seq;
        client->forced_width = full_;
        recount(*client);
        raise = raise || applied_ < full_;
    }
    if (raise) {
        *replay_now_ = std::max(*replay_now_, now);
        command(full_, std::nullopt);
    }
    return next;
}

}  // namespace slim::link

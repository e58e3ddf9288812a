// SPDX-License-Identifier: BSD-3-Clause
// The node service's decisions (port_service.h says what they are): the
// service's start and end, clients joining, publishing, overflowing and
// leaving, and what status replies show. The merge of their demand is in
// demand_merge.cpp, the backend's commands in port_driver.cpp, the end-of-
// job reports in job_reports.cpp.
#include "service/port_service.h"

#include "base/log.h"
#include "service/port_service_state.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace slim::link {

PortService::PortService(const BackendMaker& make_backend, PortServiceOptions options)
    : PortService(std::make_shared<TimeNs>(0), nullptr, std::move(options))
{
    if (!make_backend) {
        throw std::invalid_argument("PortService: no backend maker");
    }
    backend_ = make_backend(replay_clock());
    if (!backend_) {
        throw std::invalid_argument("PortService: the backend maker made no backend");
    }
    start();
}

PortService::PortService(std::unique_ptr<LinkBackend> backend, PortServiceOptions options)
    : PortService(std::make_shared<TimeNs>(0), std::move(backend), std::move(options))
{
    if (!backend_) {
        throw std::invalid_argument("PortService: no backend");
    }
    start();
}

PortService::PortService(std::shared_ptr<TimeNs> replay_now, std::unique_ptr<LinkBackend> backend,
                         PortServiceOptions options)
    : backend_(std::move(backend)), options_(std::move(options)), replay_now_(std::move(replay_now))
{}

void PortService::start()
{
    full_ = backend_->full_width();
    if (full_ < 1 || full_ > kMaxLanes) {
        throw std::invalid_argument("PortService: backend " + backend_->name() + " has " +
                                    std::to_string(full_) + " lanes, not 1.." +
                                    std::to_string(kMaxLanes));
    }
    applied_   = full_;
    has_stats_ = backend_->stats() != nullptr;
    set_port(full_, *replay_now_);
}

PortService::~PortService()
{
    if (!backend_) {
        return;
    }
    const Status status = backend_->restore_full_width();
    if (!status) {
        logger().error("slimlinkd: could not restore port {} to full width: {}; the port's "
                       "width is unknown",
                       options_.port_name, status.message());
        write_state("restoring full width at exit failed: " + status.message());
        return;
    }
    state_.remove();
}

std::string PortService::problem() const
{
    std::string text = failed_ ? failure_ : std::string();
    if (width_unknown_ && !failure_.empty() && width_note_.find(failure_) != std::string::npos) {
        return width_note_;  // says it already
    }
    if (width_unknown_ && !width_note_.empty()) {
        text += (text.empty() ? "" : "; ") + width_note_;
    }
    return text;
}

Clock PortService::replay_clock()
{
    std::shared_ptr<const TimeNs> now = replay_now_;
    return [now] { return *now; };
}

unsigned PortService::full_width() const { return full_; }

PortService::Client *PortService::find(std::uint32_t client) const
{
    const auto it = clients_.find(client);
    return it == clients_.end() ? nullptr : it->second.get();
}

namespace {

// A job is its key *and* its user. The key is a claim (a launcher's pid
// and start time, readable by anyone in /proc); the uid comes from the
// socket's credentials and cannot be forged. Keyed by both, a client of
// another user that names a victim's key starts a job of its own, and never
// joins, reports for, or receives the victim's. Root is one uid among the
// others here: a root rank joins only root's jobs.
std::string job_id(const ClientInfo& info)
{
    return "uid " + std::to_string(info.uid) + ": " + info.job_key;
}

}  // namespace

PortService::Job *PortService::job_of(const Client& client) const
{
    const auto it = jobs_.find(client.job_id);
    if (it == jobs_.end() || it->second->serial != client.job_serial) {
        return nullptr;
    }
    return it->second.get();
}

std::uint32_t PortService::attach(const ClientInfo& info, TimeNs now, std::string *why)
{
    const std::string id = job_id(info);
    if (const auto it = jobs_.find(id); it != jobs_.end() && info.local_rank >= 0) {
        // Two live clients claiming one local rank would hide each other in
        // the report (only the latest is listed): the second is refused.
        // A rank that died or left may come back (a fresh connection).
        for (const std::uint32_t member : it->second->members) {
            const Client *other = find(member);
            if (other && !other->dropped && other->info.local_rank == info.local_rank) {
                if (why) {
                    *why = "local rank " + std::to_string(info.local_rank) + " of job '" +
                           info.job_key + "' (uid " + std::to_string(info.uid) +
                           ") is attached already, as client " + std::to_string(other->id) +
                           " (pid " + std::to_string(other->info.pid) +
                           "); one client per local rank and job";
                }
                return 0;
            }
        }
    }
    auto client        = std::make_unique<Client>();
    client->id         = next_id_++;
    client->info       = info;
    client->job_id     = id;
    client->attach_ns  = now;
    client->through_ns = now;
    client->width      = full_;

    auto& job = jobs_[id];
    if (!job) {
        job         = std::make_unique<Job>();
        job->key    = id;
        job->serial = next_job_serial_++;
    }
    job->members.push_back(client->id);
    ++job->bounding;
    job->local_size    = std::max(job->local_size, info.local_size);
    client->job_serial = job->serial;

    history_.push_back(Interval{job->serial, client->id, now, kNever});
    Client& c = *client;
    clients_.emplace(c.id, std::move(client));
    reschedule(c);
    return c.id;
}

bool PortService::publish(std::uint32_t id, const service::DemandRecord *records, std::size_t count,
                          TimeNs through_ns, std::string *why, bool *queue_full)
{
    if (queue_full) {
        *queue_full = false;
    }
    const auto refuse = [why](std::string message) {
        if (why) {
            *why = std::move(message);
        }
        return false;
    };
    Client *client = find(id);
    if (!client || client->dropped) {
        return refuse("client " + std::to_string(id) + " is not attached");
    }
    if (count > service::kRingCapacity) {
        return refuse("count " + std::to_string(count) + " is above the ring's " +
                      std::to_string(service::kRingCapacity) + " records");
    }
    if (count > 0 && !records) {
        return refuse("no records for count " + std::to_string(count));
    }
    if (through_ns < client->through_ns) {
        return refuse("through_ns " + std::to_string(through_ns) + " goes back from " +
                      std::to_string(client->through_ns));
    }
    // Everything is checked before anything is taken: a client that sends
    // garbage is dropped, and its good records before the garbage must not
    // have moved the port.
    bool has_last = client->has_record;
    TimeNs last_t = client->last_t;
    for (std::size_t i = 0; i < count; ++i) {
        const service::DemandRecord& r = records[i];
        // Built only for a refusal: a busy client publishes thousands of
        // records a second, and each check runs on every one of them.
        const auto at = [i] { return "record " + std::to_string(i) + ": "; };
        if (r.width < options_.low_width || r.width > full_) {
            return refuse(at() + "width " + std::to_string(r.width) + " is outside " +
                          std::to_string(options_.low_width) + ".." + std::to_string(full_));
        }
        if (r.t_ns < client->through_ns) {
            return refuse(at() + "t_ns " + std::to_string(r.t_ns) + " is before through_ns " +
                          std::to_string(client->through_ns));
        }
        if (has_last && r.t_ns < last_t) {
            return refuse(at() + "t_ns " + std::to_string(r.t_ns) +
                          " is before the previous record's " + std::to_string(last_t));
        }
        if (r.until_ns != 0 && r.until_ns <= r.t_ns) {
            return refuse(at() + "until_ns " + std::to_string(r.until_ns) + " is not after t_ns " +
                          std::to_string(r.t_ns));
        }
        if ((r.flags & ~static_cast<std::uint32_t>(service::kTraffic)) != 0) {
            return refuse(at() + "flags " + std::to_string(r.flags) + " has unknown bits");
        }
        has_last = true;
        last_t   = r.t_ns;
    }
    // Records wait in the queue until the horizon (the slowest live client)
    // passes them. A client that publishes while another holds the horizon
    // back would grow it without end (future-dated records, or a flood at
    // any time): past the bound it is dropped (by the caller) rather than
    // take the node's memory.
    if (!client->overflow_requested && count > kMaxQueuedRecords - client->queue.size()) {
        if (queue_full) {
            *queue_full = true;
        }
        return refuse(std::to_string(client->queue.size() + count) +
                      " records waiting for the merge horizon (at " +
                      std::to_string(horizon().value_or(*replay_now_)) + " ns), more than the " +
                      std::to_string(kMaxQueuedRecords) +
                      " a client may queue ahead of the other clients");
    }

    client->through_ns = through_ns;
    if (count == 0) {
        reschedule(*client);
        return true;
    }
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint64_t seq = client->next_seq++;
        client->has_record      = true;
        client->last_t          = records[i].t_ns;
        client->latest_until    = records[i].until_ns;
        client->latest_seq      = seq;
        if (!client->overflow_requested) {
            client->queue.push_back(Client::Pending{records[i], seq});
        }
    }
    reschedule(*client);
    raise_ahead(*client, records[count - 1]);
    return true;
}

void PortService::overflowed(std::uint32_t id)
{
    Client *client = find(id);
    if (!client || client->dropped || client->overflow_requested) {
        return;
    }
    client->overflow_requested = true;
    if (Job *job = job_of(*client)) {
        --job->bounding;
    }
    TimeNs at = std::max(client->attach_ns, *replay_now_);
    if (client->has_record) {
        at = std::max(at, client->last_t);
    }
    client->overflow_ns = at;
    reschedule(*client);
}

void PortService::drop(std::uint32_t id, TimeNs now, bool died)
{
    see(now);
    Client *client = find(id);
    if (!client || client->dropped) {
        return;
    }
    // A clean leave without a deposit is listed as died too (`died` only
    // says how it went): the report has no other state for a rank that
    // will never deposit.
    (void)died;
    client->dropped = true;
    if (Job *job = job_of(*client); job && !client->overflow_requested) {
        --job->bounding;
    }
    TimeNs end = client->through_ns;
    if (client->has_record) {
        end = std::max(end, client->last_t);
    }
    TimeNs leave     = std::min(end, now);
    leave            = std::max({leave, client->attach_ns, *replay_now_});
    client->leave_at = leave;
    client->leave_ns = leave;
    while (!client->queue.empty() && client->queue.back().record.t_ns > leave) {
        client->queue.pop_back();
    }
    // A client dropped with a long queue (flooded) gives the memory back.
    client->queue.shrink_to_fit();
    if (client->overflow_ns && *client->overflow_ns > leave) {
        client->overflow_ns.reset();
    }
    for (auto& interval : history_) {
        if (interval.client == id) {
            interval.to = leave;
        }
    }
    reschedule(*client);
}

// ------------------------------------------------------------------- status

unsigned PortService::demand(std::uint32_t id) const
{
    const Client *client = find(id);
    if (!client || client->left) {
        return 0;
    }
    if (!client->joined || client->overflowed || client->forced) {
        return full_;
    }
    return client->width;
}

std::size_t PortService::live_clients() const
{
    return static_cast<std::size_t>(std::count_if(
            clients_.begin(), clients_.end(), [](const auto& c) { return !c.second->dropped; }));
}

std::vector<service::StatusClient> PortService::clients(std::optional<std::int32_t> of_uid,
                                                        std::size_t *others) const
{
    std::vector<service::StatusClient> list;
    std::size_t hidden = 0;
    for (const auto& [id, client] : clients_) {
        if (client->dropped) {
            continue;
        }
        if (of_uid && client->info.uid != *of_uid) {
            ++hidden;
            continue;
        }
        service::StatusClient s;
        s.client_id = id;
        s.demand    = demand(id);
        s.rank      = client->info.rank;
        s.uid       = client->info.uid;
        s.pid       = client->info.pid;
        list.push_back(s);
    }
    if (others) {
        *others = hidden;
    }
    return list;
}

std::size_t PortService::queued(std::uint32_t id) const
{
    const Client *client = find(id);
    return client ? client->queue.size() : 0;
}

std::uint64_t PortService::late_wakeups(std::uint32_t id) const
{
    const Client *client = find(id);
    return client ? client->late_wakeups : 0;
}

}  // namespace slim::link

// SPDX-License-Identifier: BSD-3-Clause
// The node service's decisions (issue 13): clients' demand records merged
// in time order up to the horizon, the port at the maximum demand, and the
// end-of-job reports. See port_service.h for the contract.
//
// Each client is a small queue of events in its own time order (join,
// records, overflow, expiry of a "low until", leave); `schedule_` orders
// the clients by their next event, so merging N clients costs log N per
// event. All events of one instant are applied before the port is set, so
// the port sees the maximum at that instant and never flaps inside it;
// traffic of that instant then meets the port as set.
#include "service/port_service.h"

#include "base/log.h"
#include "base/output_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

namespace slim::link {

namespace {

constexpr TimeNs kNever = std::numeric_limits<TimeNs>::max();

TimeNs saturating_add(TimeNs a, TimeNs b)
{
    if (b > 0 && a > kNever - b) {
        return kNever;
    }
    return a + b;
}

}  // namespace

struct PortService::Snapshot {
    TimeNs        at = 0;
    LinkStats     stats;
    std::uint64_t commands = 0;     // width changes the backend confirmed
    std::uint64_t late_records = 0;
    std::uint64_t stalls = 0;
    std::uint32_t stalled_now = 0;
};

// A client's lifetime [from, to): kept beyond the client for the reports'
// count of other jobs sharing the port.
struct PortService::Interval {
    std::uint64_t job_serial = 0;
    std::uint32_t client     = 0;
    TimeNs        from       = 0;
    TimeNs        to         = kNever;  // until it leaves
};

struct PortService::Client {
    struct Pending {
        service::DemandRecord record;
        std::uint64_t         seq = 0;  // publication order
    };

    std::uint32_t id = 0;
    ClientInfo    info;
    std::uint64_t job_serial = 0;
    TimeNs        attach_ns  = 0;

    // What it published.
    TimeNs              through_ns = 0;
    bool                has_record = false;
    TimeNs              last_t     = 0;
    std::uint64_t       next_seq   = 1;
    std::deque<Pending> queue;              // published, not yet applied
    TimeNs              latest_until = 0;   // of its latest published record
    std::uint64_t       latest_seq   = 0;

    // Lifecycle.
    bool                  joined  = false;  // its join event was applied
    bool                  dropped = false;  // gone (drop()); leaves at leave_at
    TimeNs                leave_at = 0;
    std::optional<TimeNs> leave_ns;         // pending leave event
    bool                  left = false;
    bool                  overflow_requested = false;
    std::optional<TimeNs> overflow_ns;      // pending "full for good" event
    bool                  overflowed = false;

    // Applied demand.
    unsigned              width = 0;        // from its records and expiries
    std::optional<TimeNs> expiry_ns;        // the applied record's until_ns
    std::uint64_t         applied_seq = 0;
    // Raised ahead of the replay (act_on_deadlines: full width; a raise
    // published while the horizon lags: its width) until a record newer
    // than forced_seq is applied.
    bool                  forced       = false;
    std::uint64_t         forced_seq   = 0;
    unsigned              forced_width = 0;
    unsigned              counted     = 0;  // its width in demand_count_ (0: none)

    std::uint64_t late_wakeups = 0;
    TimeNs        delay_ns     = 0;

    // Fell more than kMaxHorizonLag behind: no longer holds the horizon.
    bool          stalled      = false;
    std::uint64_t late_records = 0;

    bool                      deposited = false;
    std::uint32_t             record_version = 0;
    std::vector<std::uint8_t> record;

    std::optional<Key> key;  // in schedule_
};

struct PortService::Job {
    std::string                key;
    std::uint64_t              serial = 0;
    std::vector<std::uint32_t> members;  // client ids, attach order
    std::int32_t               local_size = 0;
    std::size_t                bounding = 0;  // members holding the horizon back
    std::optional<std::uint32_t> reporter;
    TimeNs                     deadline = kNever;
    std::optional<Snapshot>    start;
    bool                       start_from_record = false;
    std::optional<Snapshot>    end;
};

// ---------------------------------------------------------------- lifecycle

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
{
}

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
    remove_state();
}

// ------------------------------------------------------------- state file

// Reads only a regular file of ours: the folder is the socket's (checked
// by the server), but a state file that is anything else was not written by
// a service of ours.
std::optional<std::string> read_state_file(const std::string& path)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT) {
            logger().warn("slimlinkd: state file {}: {}; ignored", path, std::strerror(errno));
        }
        return std::nullopt;
    }
    struct stat st{};
    std::string text;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
        logger().warn("slimlinkd: state file {} is not a regular file of uid {}; ignored", path,
                      ::geteuid());
        ::close(fd);
        return std::nullopt;
    }
    char buf[service::kTextBytes];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n > 0) {
        text.assign(buf, static_cast<std::size_t>(n));
    }
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) {
        text.pop_back();
    }
    for (char& c : text) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
            c = '?';  // it goes into logs and reports
        }
    }
    return text.empty() ? std::string("no reason recorded") : text;
}

void PortService::write_state(const std::string& text)
{
    if (state_path_.empty() || has_stats_) {
        return;  // the emulated port has no state beyond this process
    }
    try {
        const int fd = base::open_output_file(state_path_, base::ExistingFile::truncate, 0600);
        const std::string line = text + "\n";
        const ssize_t n = ::write(fd, line.data(), line.size());
        const int err = n < 0 ? errno : 0;
        ::close(fd);
        if (n != static_cast<ssize_t>(line.size())) {
            logger().warn("slimlinkd: writing state file {}: {}", state_path_,
                          err != 0 ? std::strerror(err) : "short write");
            return;
        }
        state_written_ = true;
    } catch (const std::exception& e) {
        logger().warn("slimlinkd: cannot write the port's state file: {}", e.what());
    }
}

void PortService::remove_state()
{
    if (state_path_.empty()) {
        return;
    }
    if (::unlink(state_path_.c_str()) != 0 && errno != ENOENT) {
        logger().warn("slimlinkd: removing state file {}: {}", state_path_, std::strerror(errno));
    }
    state_written_ = false;
}

void PortService::use_state_file(const std::string& path)
{
    state_path_ = path;
    if (path.empty()) {
        return;
    }
    const std::optional<std::string> left = read_state_file(path);
    if (!left) {
        return;
    }
    if (has_stats_) {
        remove_state();  // an emulated port starts afresh with its service
        return;
    }
    logger().warn("slimlinkd: port {} ({}): the previous slimlinkd left it possibly not at full "
                  "width ({}); restoring full width",
                  options_.port_name, backend_->name(), *left);
    const std::string previous = "a previous slimlinkd left the port possibly narrow (" + *left + ")";
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

PortService::Client* PortService::find(std::uint32_t client) const
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

PortService::Job* PortService::job_of(const Client& client) const
{
    const auto it = jobs_.find(job_id(client.info));
    if (it == jobs_.end() || it->second->serial != client.job_serial) {
        return nullptr;
    }
    return it->second.get();
}

std::uint32_t PortService::attach(const ClientInfo& info, TimeNs now, std::string* why)
{
    const std::string id = job_id(info);
    if (const auto it = jobs_.find(id); it != jobs_.end() && info.local_rank >= 0) {
        // Two live clients claiming one local rank would hide each other in
        // the report (only the latest is listed): the second is refused.
        // A rank that died or left may come back (a fresh connection).
        for (const std::uint32_t member : it->second->members) {
            const Client* other = find(member);
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
    job->local_size  = std::max(job->local_size, info.local_size);
    client->job_serial = job->serial;

    history_.push_back(Interval{job->serial, client->id, now, kNever});
    Client& c = *client;
    clients_.emplace(c.id, std::move(client));
    reschedule(c);
    return c.id;
}

bool PortService::publish(std::uint32_t id, const service::DemandRecord* records, std::size_t count,
                          TimeNs through_ns, std::string* why, bool* queue_full)
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
    Client* client = find(id);
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
    bool   has_last = client->has_record;
    TimeNs last_t   = client->last_t;
    for (std::size_t i = 0; i < count; ++i) {
        const service::DemandRecord& r = records[i];
        const std::string at = "record " + std::to_string(i) + ": ";
        if (r.width < 1 || r.width > full_) {
            return refuse(at + "width " + std::to_string(r.width) + " is outside 1.." +
                          std::to_string(full_));
        }
        if (r.t_ns < client->through_ns) {
            return refuse(at + "t_ns " + std::to_string(r.t_ns) + " is before through_ns " +
                          std::to_string(client->through_ns));
        }
        if (has_last && r.t_ns < last_t) {
            return refuse(at + "t_ns " + std::to_string(r.t_ns) +
                          " is before the previous record's " + std::to_string(last_t));
        }
        if (r.until_ns != 0 && r.until_ns <= r.t_ns) {
            return refuse(at + "until_ns " + std::to_string(r.until_ns) + " is not after t_ns " +
                          std::to_string(r.t_ns));
        }
        if ((r.flags & ~static_cast<std::uint32_t>(service::kTraffic)) != 0) {
            return refuse(at + "flags " + std::to_string(r.flags) + " has unknown bits");
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
                      std::to_string(horizon().value_or(*replay_now_)) +
                      " ns), more than the " + std::to_string(kMaxQueuedRecords) +
                      " a client may queue ahead of the other clients");
    }

    client->through_ns = through_ns;
    if (count == 0) {
        reschedule(*client);
        return true;
    }
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint64_t seq = client->next_seq++;
        client->has_record   = true;
        client->last_t       = records[i].t_ns;
        client->latest_until = records[i].until_ns;
        client->latest_seq   = seq;
        if (!client->overflow_requested) {
            client->queue.push_back(Client::Pending{records[i], seq});
        }
    }
    reschedule(*client);
    raise_ahead(*client, records[count - 1]);
    return true;
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

void PortService::overflowed(std::uint32_t id)
{
    Client* client = find(id);
    if (!client || client->dropped || client->overflow_requested) {
        return;
    }
    client->overflow_requested = true;
    if (Job* job = job_of(*client)) {
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
    Client* client = find(id);
    if (!client || client->dropped) {
        return;
    }
    // A clean leave without a deposit is listed as died too (`died` only
    // says how it went): the report has no other state for a rank that
    // will never deposit.
    (void)died;
    client->dropped = true;
    if (Job* job = job_of(*client); job && !client->overflow_requested) {
        --job->bounding;
    }
    TimeNs end = client->through_ns;
    if (client->has_record) {
        end = std::max(end, client->last_t);
    }
    TimeNs leave = std::min(end, now);
    leave        = std::max({leave, client->attach_ns, *replay_now_});
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

// ------------------------------------------------------------------ merging

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
    if (client.key) {
        schedule_.erase(*client.key);
        client.key.reset();
    }
    if (const auto t = next_event(client)) {
        client.key = Key{*t, client.id};
        schedule_.insert(*client.key);
    }
}

void PortService::recount(Client& client)
{
    unsigned width = 0;
    if (client.joined && !client.left) {
        width = client.overflowed ? full_
                : client.forced   ? std::max(client.width, client.forced_width)
                                  : client.width;
    }
    if (width == client.counted) {
        return;
    }
    if (client.counted != 0) {
        --demand_count_[client.counted];
    }
    if (width != 0) {
        ++demand_count_[width];
    }
    client.counted = width;
}

unsigned PortService::target() const
{
    if (failed_) {
        return full_;
    }
    for (unsigned w = full_; w >= 1; --w) {
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
        TimeNs complete = client->through_ns;
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
    std::vector<std::pair<Client*, unsigned>> traffic;
    std::vector<std::uint32_t>                batch;
    std::vector<std::uint32_t>                gone;
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
                                  std::vector<std::pair<Client*, unsigned>>& traffic)
{
    Job* job = job_of(client);
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
        client.expiry_ns   = p.record.until_ns != 0 ? std::optional<TimeNs>(p.record.until_ns)
                                                    : std::nullopt;
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
    if (width < full_ && !state_written_) {
        // Should this service die now, the next one learns that the port
        // may be narrow (use_state_file).
        write_state("slimlinkd pid " + std::to_string(::getpid()) + " drove port " +
                    options_.port_name + " (" + backend_->name() + ") below full width");
    }
    return status;
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
                      "confirmed",
                      options_.port_name, backend_->name(), full_);
    }
    width_unknown_ = false;
    width_note_.clear();
    state_origin_.clear();
    // A failed backend drives the port no more: nothing is narrow now.
    if (failed_ || !state_written_) {
        remove_state();
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
                  "; the port's width is unknown";
    logger().error("slimlinkd: port {} ({}): restoring full width failed: {}; the port's "
                   "width is unknown",
                   options_.port_name, backend_->name(), status.message());
    write_state("restoring full width failed: " + status.message());
}

std::optional<TimeNs> PortService::act_on_deadlines(TimeNs now)
{
    see(now);
    std::optional<TimeNs> next;
    if (!has_stats_) {
        poll_backend();
    }
    if (restore_pending_) {
        // Polled until the backend confirms or fails it (exec: within its
        // own 2 s timeout).
        constexpr TimeNs kRestorePoll = 10'000'000;
        next = now + kRestorePoll;
    }
    bool                  raise = false;
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

// ------------------------------------------------------------------ reports

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
        if (const LinkStats* stats = backend_->stats()) {
            s.stats = *stats;
        }
    }
    return s;
}

TimeNs PortService::job_end(const Job& job) const
{
    TimeNs end = 0;
    for (const std::uint32_t id : job.members) {
        const Client* client = find(id);
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
    std::vector<std::pair<TimeNs, Job*>> due;
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
    Client* client = find(id);
    if (!client || client->dropped) {
        return false;
    }
    client->deposited      = true;
    client->record_version = record_version;
    client->record         = std::move(record);
    Job* job = job_of(*client);
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
        const Client* c = find(id);
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
        if (const Client* c = find(id)) {
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
            const Client* c = find(id);
            if (c && !done(*c)) {
                return false;
            }
        }
        return true;
    }
    for (std::int32_t rank = 0; rank < job.local_size; ++rank) {
        bool found = false;
        for (const std::uint32_t id : job.members) {
            const Client* c = find(id);
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
    std::vector<std::string>                         forget;
    for (auto& [key, job] : jobs_) {
        const Client* reporter = job->reporter ? find(*job->reporter) : nullptr;
        bool          anyone_attached = false;
        for (const std::uint32_t id : job->members) {
            const Client* c = find(id);
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

JobReport PortService::make_report(Job& job)
{
    JobReport report;
    service::PortSection& port = report.port;
    const auto copy_name = [](char* to, const std::string& from) {
        const std::size_t n = std::min(from.size(), service::kNameBytes - 1);
        from.copy(to, n);
        to[n] = '\0';
    };
    copy_name(port.backend, backend_->name());
    copy_name(port.port, options_.port_name);
    port.lanes      = full_;
    port.has_energy = has_stats_ ? 1 : 0;
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
            TimeNs cut = end;
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
        config.lanes      = full_;
        config.lane_watts = options_.lane_watts;
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
        e.entry.rank            = c.info.rank;
        e.entry.local_rank      = c.info.local_rank;
        e.entry.pid             = c.info.pid;
        e.entry.late_wakeups    = c.late_wakeups;
        e.entry.wakeup_delay_ns = c.delay_ns;
        service::EntryState state = service::EntryState::timed_out;
        if (c.deposited) {
            state               = service::EntryState::reported;
            e.record            = c.record;
            e.entry.record_bytes = static_cast<std::uint32_t>(c.record.size());
            report.record_version = c.record_version;
        } else if (c.dropped) {
            state = service::EntryState::died;
        }
        e.entry.state = static_cast<std::uint32_t>(state);
        return e;
    };
    // Members sorted by local rank; a local rank attached twice shows its
    // latest client.
    std::vector<const Client*> members;
    for (const std::uint32_t id : job.members) {
        if (const Client* c = find(id)) {
            members.push_back(c);
        }
    }
    std::stable_sort(members.begin(), members.end(), [](const Client* x, const Client* y) {
        return x->info.local_rank < y->info.local_rank;
    });
    for (std::int32_t rank = 0; rank < job.local_size; ++rank) {
        const Client* latest = nullptr;
        for (const Client* c : members) {
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
    for (const Client* c : members) {
        if (job.local_size > 0 && c->info.local_rank >= 0 && c->info.local_rank < job.local_size) {
            continue;  // listed above
        }
        report.entries.push_back(entry_of(*c));
    }
    if (job.reporter) {
        if (const Client* r = find(*job.reporter)) {
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
        const Client* c = find(id);
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
            if (const Client* c = find(id)) {
                oldest = std::min(oldest, c->attach_ns);
            }
        }
    }
    history_.erase(std::remove_if(history_.begin(), history_.end(),
                                  [oldest](const Interval& i) {
                                      return i.to != kNever && i.to < oldest;
                                  }),
                   history_.end());
}

// ------------------------------------------------------------------- status

unsigned PortService::demand(std::uint32_t id) const
{
    const Client* client = find(id);
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

std::vector<service::StatusClient> PortService::clients() const
{
    std::vector<service::StatusClient> list;
    for (const auto& [id, client] : clients_) {
        if (client->dropped) {
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
    return list;
}

std::size_t PortService::queued(std::uint32_t id) const
{
    const Client* client = find(id);
    return client ? client->queue.size() : 0;
}

std::uint64_t PortService::late_wakeups(std::uint32_t id) const
{
    const Client* client = find(id);
    return client ? client->late_wakeups : 0;
}

}  // namespace slim::link

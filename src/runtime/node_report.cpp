// SPDX-License-Identifier: BSD-3-Clause
#include "node_report.h"

#include "link/node_arbiter.h"
#include "base/shared_segment.h"
#include "base/log.h"
#include "base/no_destructor.h"
#include "report.h"
#include "report_json.h"
#include "traffic_monitor.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

namespace slim {

// ---- records and totals -----------------------------------------------------

RankRecord make_rank_record(const ProcessIdentity &who, const slim_traffic_t &traffic,
                            const slim_packing_stats_t &packing, ErrorBound bound,
                            const live::LiveSummary *live)
{
    RankRecord r;
    r.rank       = who.rank;
    r.local_rank = who.local.local_rank;
    r.pid        = who.pid;
    r.bytes_sent       = total(traffic, SLIM_DIR_SEND).bytes;
    r.payload_bytes    = packing.payload_bytes;
    r.wire_bytes       = packing.wire_bytes;
    r.packed_bytes     = packing.packed_bytes;
    r.missed_bytes     = packing.missed_bytes;
    r.error_bound_bits = bound.min_bits;
    if (live == nullptr) {
        return r;
    }
    r.has_link           = true;
    r.has_savings        = live->energy_savings_pct.has_value();
    r.has_penalty        = live->time_penalty_pct.has_value();
    r.has_gt             = live->gt_ns.has_value();
    r.controller_failed  = live->controller_failed;
    r.lanes              = std::min<unsigned>(live->lanes, link::kMaxLanes);
    r.events             = live->events;
    r.span_ns            = live->span_ns;
    r.energy_joules      = live->energy_joules;
    r.baseline_joules    = live->baseline_joules;
    r.energy_savings_pct = live->energy_savings_pct.value_or(0.0);
    r.time_penalty_pct   = live->time_penalty_pct.value_or(0.0);
    r.late_wakeups       = live->late_wakeups;
    r.wakeup_delay_ns    = live->wakeup_delay_ns;
    r.predictions        = live->predictions;
    r.hits               = live->hits;
    r.restarts           = live->restarts;
    r.gt_ns              = live->gt_ns.value_or(0);
    for (std::size_t w = 0; w < live->time_at_width_ns.size() && w <= link::kMaxLanes; ++w) {
        r.time_at_width_ns[w] = live->time_at_width_ns[w];
    }
    return r;
}

const char *to_string(MissingRank::Reason reason) noexcept
{
    switch (reason) {
    case MissingRank::Reason::never_started: return "never_started";
    case MissingRank::Reason::died:          return "died";
    case MissingRank::Reason::timed_out:     return "timed_out";
    }
    return "?";
}

NodeTotals node_totals(const std::vector<RankRecord> &ranks)
{
    NodeTotals t;
    double     penalty_sum   = 0.0;
    std::size_t penalty_ranks = 0;
    for (const RankRecord &r : ranks) {
        t.bytes_sent   += r.bytes_sent;
        t.packed_bytes += r.packed_bytes;
        t.saved_bytes  += r.saved_bytes();
        t.missed_bytes += r.missed_bytes;
        if (r.error_bound_bits > 0 &&
            (!t.error_bound.packed() || r.error_bound_bits < t.error_bound.min_bits)) {
            t.error_bound.min_bits = r.error_bound_bits;
        }
        if (!r.has_link) {
            continue;
        }
        ++t.ranks_with_link;
        t.events          += r.events;
        t.energy_joules   += r.energy_joules;
        t.baseline_joules += r.baseline_joules;
        t.late_wakeups    += r.late_wakeups;
        t.wakeup_delay_ns += r.wakeup_delay_ns;
        t.predictions     += r.predictions;
        t.hits            += r.hits;
        t.restarts        += r.restarts;
        t.lanes = std::max<unsigned>(t.lanes, r.lanes);
        t.controllers_failed += r.controller_failed ? 1 : 0;
        for (std::size_t w = 0; w <= link::kMaxLanes; ++w) {
            t.time_at_width_ns[w] += r.time_at_width_ns[w];
        }
        if (r.has_penalty) {
            t.time_penalty_pct_max = std::max(t.time_penalty_pct_max.value_or(r.time_penalty_pct),
                                              r.time_penalty_pct);
            penalty_sum += r.time_penalty_pct;
            ++penalty_ranks;
        }
    }
    // Over the sums, not a mean of percentages: a rank that ran longer weighs more.
    if (t.baseline_joules > 0.0) {
        t.energy_savings_pct = 100.0 * (1.0 - t.energy_joules / t.baseline_joules);
    }
    if (penalty_ranks > 0) {
        t.time_penalty_pct_mean = penalty_sum / static_cast<double>(penalty_ranks);
    }
    // Hits per event, as the per-rank report counts its hit rate.
    if (t.events > 0) {
        t.hit_rate_pct = 100.0 * static_cast<double>(t.hits) / static_cast<double>(t.events);
    }
    return t;
}

// ---- formatting -------------------------------------------------------------

namespace {

std::string u64(std::uint64_t v) { return std::to_string(v); }

std::optional<double> hit_rate(const RankRecord &r)
{
    if (!r.has_link || r.events == 0) {
        return std::nullopt;
    }
    return 100.0 * static_cast<double>(r.hits) / static_cast<double>(r.events);
}

std::string text_or_dash(const std::optional<double> &v, int decimals)
{
    return v ? format_fixed(*v, decimals) : std::string("-");
}

std::string describe_missing(const MissingRank &m)
{
    std::string who = m.rank >= 0 ? "rank " + std::to_string(m.rank) + " (local " +
                                            std::to_string(m.local_rank)
                                  : "local rank " + std::to_string(m.local_rank) + " (rank unknown";
    if (m.pid > 0) {
        who += ", pid " + std::to_string(m.pid);
    }
    switch (m.reason) {
    case MissingRank::Reason::never_started:
        return who + "): never started slim";
    case MissingRank::Reason::died:
        return who + "): ended without a report";
    case MissingRank::Reason::timed_out:
        return who + "): no report within UCX_SLIM_REPORT_WAIT";
    }
    return who + ")";
}

std::string table_row(const std::string &label, const std::string &events,
                      const std::string &saved, const std::string &penalty,
                      const std::string &late, const std::string &hits, const std::string &gt,
                      const std::string &restarts, std::uint64_t sent, std::uint64_t packed,
                      std::uint64_t saved_bytes, std::uint64_t missed, const std::string &error)
{
    std::array<char, 512> line{};
    std::snprintf(line.data(), line.size(),
                  "  %7s %8s %8s %10s %6s %7s %10s %8s %14" PRIu64 " %12" PRIu64 " %12" PRIu64
                  " %12" PRIu64 "  %s\n",
                  label.c_str(), events.c_str(), saved.c_str(), penalty.c_str(), late.c_str(),
                  hits.c_str(), gt.c_str(), restarts.c_str(), sent, packed, saved_bytes, missed,
                  error.c_str());
    return line.data();
}

} // namespace

std::string format_node_text(const NodeInfo &node, const NodeCollection &collection)
{
    const NodeTotals t = node_totals(collection.reported);
    std::string out = "slimlink node report: host " + node.host + ", job " + node.job.key +
                      ", " + std::to_string(node.job.local_size) + " local ranks, " +
                      std::to_string(collection.reported.size()) + " reported, " +
                      std::to_string(collection.missing.size()) + " missing\n";
    for (const MissingRank &m : collection.missing) {
        out += "  missing: " + describe_missing(m) + "\n";
    }
    std::array<char, 512> header{};
    std::snprintf(header.data(), header.size(),
                  "  %7s %8s %8s %10s %6s %7s %10s %8s %14s %12s %12s %12s  %s\n", "rank",
                  "events", "saved %", "penalty %", "late", "hit %", "GT", "restarts",
                  "bytes sent", "packed", "saved", "missed", "max rel error");
    out += header.data();
    for (const RankRecord &r : collection.reported) {
        const auto dash = std::string("-");
        out += table_row(
                r.rank >= 0 ? std::to_string(r.rank) : "l" + std::to_string(r.local_rank),
                r.has_link ? u64(r.events) : dash,
                r.has_savings ? format_fixed(r.energy_savings_pct, 1) : dash,
                r.has_penalty ? format_fixed(r.time_penalty_pct, 2) : dash,
                r.has_link ? u64(r.late_wakeups) : dash, text_or_dash(hit_rate(r), 1),
                r.has_gt ? format_fixed(static_cast<double>(r.gt_ns) * 1e-3, 1) + "us" : dash,
                r.has_link ? u64(r.restarts) : dash, r.bytes_sent, r.packed_bytes,
                r.saved_bytes(), r.missed_bytes, text_error_bound(ErrorBound{r.error_bound_bits}));
    }
    const bool any_link = t.ranks_with_link > 0;
    out += table_row("total", any_link ? u64(t.events) : "-",
                     text_or_dash(t.energy_savings_pct, 1),
                     t.time_penalty_pct_max ? "max " + format_fixed(*t.time_penalty_pct_max, 2)
                                            : std::string("-"),
                     any_link ? u64(t.late_wakeups) : "-", text_or_dash(t.hit_rate_pct, 1), "-",
                     any_link ? u64(t.restarts) : "-", t.bytes_sent, t.packed_bytes,
                     t.saved_bytes, t.missed_bytes, text_error_bound(t.error_bound));
    if (!any_link) {
        return out;
    }
    out += "  energy " + format_fixed(t.energy_joules, 6) + " J of " +
           format_fixed(t.baseline_joules, 6) + " J always on; time penalty max " +
           text_or_dash(t.time_penalty_pct_max, 2) + "%, mean " +
           text_or_dash(t.time_penalty_pct_mean, 2) + "%; " + u64(t.predictions) +
           " low-power predictions, " + u64(t.hits) + " hits\n";
    out += "  time at width (all ranks):";
    for (unsigned w = 1; w <= t.lanes; ++w) {
        if (t.time_at_width_ns[w] > 0) {
            out += " " + std::to_string(w) + "x " +
                   format_fixed(static_cast<double>(t.time_at_width_ns[w]) * 1e-9, 3) + " s";
        }
    }
    out += "\n";
    if (t.controllers_failed > 0) {
        out += "  " + std::to_string(t.controllers_failed) +
               " rank(s) left the link at full width after a controller failure\n";
    }
    return out;
}

std::string format_node_json(const NodeInfo &node, const NodeCollection &collection)
{
    const NodeTotals t       = node_totals(collection.reported);
    ReportJson       missing = ReportJson::array();
    for (const MissingRank &m : collection.missing) {
        missing.push_back({
                {"local_rank", m.local_rank},
                {"rank", m.rank >= 0 ? ReportJson(m.rank) : ReportJson(nullptr)},
                {"pid", m.pid > 0 ? ReportJson(m.pid) : ReportJson(nullptr)},
                {"reason", to_string(m.reason)},
        });
    }
    ReportJson widths = ReportJson::object();
    for (unsigned w = 1; w <= t.lanes; ++w) {
        widths[std::to_string(w)] = t.time_at_width_ns[w];
    }
    const ReportJson totals = {
            {"events", t.events},
            {"energy_joules", json_fixed(t.energy_joules, 6)},
            {"baseline_joules", json_fixed(t.baseline_joules, 6)},
            {"energy_savings_pct", json_fixed(t.energy_savings_pct, 4)},
            {"time_penalty_pct_max", json_fixed(t.time_penalty_pct_max, 4)},
            {"time_penalty_pct_mean", json_fixed(t.time_penalty_pct_mean, 4)},
            {"late_wakeups", t.late_wakeups},
            {"wakeup_delay_ns", t.wakeup_delay_ns},
            {"predictions", t.predictions},
            {"hits", t.hits},
            {"hit_rate_pct", json_fixed(t.hit_rate_pct, 4)},
            {"restarts", t.restarts},
            {"time_at_width_ns", widths},
            {"bytes_sent", t.bytes_sent},
            {"packed_bytes", t.packed_bytes},
            {"saved_bytes", t.saved_bytes},
            {"missed_bytes", t.missed_bytes},
            {"max_rel_error_bound", json_error_bound(t.error_bound)},
            {"controllers_failed", t.controllers_failed},
    };
    ReportJson ranks = ReportJson::array();
    for (const RankRecord &r : collection.reported) {
        ranks.push_back({
                {"rank", r.rank},
                {"local_rank", r.local_rank},
                {"pid", r.pid},
                {"link", r.has_link},
                {"events", r.events},
                {"energy_savings_pct",
                 r.has_savings ? json_fixed(r.energy_savings_pct, 4) : ReportJson(nullptr)},
                {"time_penalty_pct",
                 r.has_penalty ? json_fixed(r.time_penalty_pct, 4) : ReportJson(nullptr)},
                {"late_wakeups", r.late_wakeups},
                {"predictions", r.predictions},
                {"hits", r.hits},
                {"hit_rate_pct", json_fixed(hit_rate(r), 4)},
                {"gt_ns", r.has_gt ? ReportJson(r.gt_ns) : ReportJson(nullptr)},
                {"restarts", r.restarts},
                {"bytes_sent", r.bytes_sent},
                {"packed_bytes", r.packed_bytes},
                {"saved_bytes", r.saved_bytes()},
                {"missed_bytes", r.missed_bytes},
                {"max_rel_error_bound", json_error_bound(ErrorBound{r.error_bound_bits})},
                {"controller_failed", r.controller_failed},
        });
    }
    const ReportJson report = {
            {"schema", node_report_schema},
            {"host", node.host},
            {"job", node.job.key},
            {"launcher", node.job.launcher},
            {"local_size", node.job.local_size},
            {"ranks_reported", collection.reported.size()},
            {"ranks_missing", missing},
            {"totals", totals},
            {"ranks", ranks},
    };
    return json_line(report);
}

// ---- the shared-memory exchange --------------------------------------------

std::string node_segment_name(uid_t uid, const std::string &job_key)
{
    std::string clean = job_key.empty() ? std::string("unknown") : job_key;
    for (char &c : clean) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
        if (!ok) {
            c = '_';
        }
    }
    // NAME_MAX is 255 for the file under /dev/shm.
    if (clean.size() > 200) {
        clean.resize(200);
    }
    return "/slimlink-" + std::to_string(uid) + "-report-" + clean;
}

namespace {

constexpr std::uint64_t kMagic   = 0x736c696d72707431ULL; // "slimrpt1"
constexpr std::uint32_t kVersion = 1;
constexpr int           kOpenAttempts = 16;

enum SlotState : std::uint32_t { kEmpty = 0, kJoined = 1, kDeposited = 2 };

struct Slot {
    std::uint32_t state;
    std::int32_t  rank;
    pid_t         pid;
    std::uint64_t start_time; // /proc start time: a reused pid differs
    RankRecord    record;
};

// Plain data plus one robust, process-shared mutex that guards everything
// but `magic`; the creator publishes `magic` last (release). The slots
// follow the header.
struct Header {
    std::atomic<std::uint64_t> magic;
    std::uint32_t version;
    std::uint32_t local_size;
    std::uint32_t slot_size;
    std::uint32_t closed;   // set by the leader (under the lock) once it has collected
    std::uint32_t unlinked; // the name is gone: every local rank had joined
    pthread_mutex_t mutex;
};

static_assert(std::atomic<std::uint64_t>::is_always_lock_free,
              "the segment's magic must be address-free between processes");

constexpr std::size_t kSlotsOffset = (sizeof(Header) + alignof(Slot) - 1) / alignof(Slot) * alignof(Slot);

std::size_t segment_bytes(int local_size)
{
    return kSlotsOffset + static_cast<std::size_t>(local_size) * sizeof(Slot);
}

[[noreturn]] void throw_sys(const std::string &what, const std::string &name, int err)
{
    throw NodeReportError("node report: " + what + " failed for shared-memory segment '" + name +
                          "': " + std::strerror(err));
}

// Gone, a zombie, or its pid reused by another process.
bool process_alive(pid_t pid, std::uint64_t start_time)
{
    if (pid <= 0) {
        return false;
    }
    if (::kill(pid, 0) != 0 && errno == ESRCH) {
        return false;
    }
    return link::process_start_time(pid) == start_time;
}

} // namespace

struct NodeExchange::Segment : Header {
    Slot *slots() { return reinterpret_cast<Slot *>(reinterpret_cast<char *>(this) + kSlotsOffset); }
};

class NodeExchange::Lock {
public:
    Lock(Segment *seg, const std::string &name) : seg_(seg)
    {
        if (const int rc = base::lock_robust_mutex(&seg_->mutex, "node report", name); rc != 0) {
            throw_sys("pthread_mutex_lock", name, rc);
        }
    }
    ~Lock() { pthread_mutex_unlock(&seg_->mutex); }
    Lock(const Lock &)            = delete;
    Lock &operator=(const Lock &) = delete;

private:
    Segment *seg_;
};

NodeExchange NodeExchange::join(const std::string &name, int local_rank, int local_size, int rank,
                                std::chrono::nanoseconds init_wait)
{
    NodeExchange self;
    self.name_       = name;
    self.local_rank_ = local_rank;
    self.local_size_ = local_size;
    self.pid_        = ::getpid();
    if (local_size <= 0 || local_size > kMaxLocalRanks || local_rank < 0 ||
        local_rank >= local_size) {
        throw NodeReportError("node report: local rank " + std::to_string(local_rank) + " of " +
                              std::to_string(local_size) + " is out of range (at most " +
                              std::to_string(kMaxLocalRanks) + " local ranks)");
    }
    if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos) {
        throw NodeReportError("node report: segment name '" + name +
                              "' must be one '/' followed by a name without '/'");
    }
    const std::uint64_t start_time = link::process_start_time(self.pid_);
    if (start_time == 0) {
        throw NodeReportError("node report: cannot read /proc/self/stat (is /proc mounted?)");
    }
    const std::size_t bytes = segment_bytes(local_size);

    // At least kOpenAttempts tries, and on until init_wait has passed.
    const auto give_up = std::chrono::steady_clock::now() + init_wait;
    for (int attempt = 0; attempt < kOpenAttempts || std::chrono::steady_clock::now() < give_up;
         ++attempt) {
        std::optional<base::SegmentMapping> mapped;
        try {
            mapped = base::map_private_segment(name, bytes, init_wait);
        } catch (const base::SharedSegmentError &e) {
            throw NodeReportError(std::string("node report: ") + e.what());
        }
        if (!mapped) {
            continue; // unlinked by the leader meanwhile
        }
        self.seg_   = static_cast<Segment *>(mapped->addr);
        self.bytes_ = bytes;
        Segment *seg = self.seg_;

        if (mapped->creator) {
            if (const int rc = base::init_robust_mutex(&seg->mutex); rc != 0) {
                self.unmap();
                ::shm_unlink(name.c_str());
                throw_sys("pthread_mutex_init (robust, process-shared)", name, rc);
            }
            seg->version    = kVersion;
            seg->local_size = static_cast<std::uint32_t>(local_size);
            seg->slot_size  = sizeof(Slot);
            seg->magic.store(kMagic, std::memory_order_release);
        } else {
            if (!base::wait_published(seg->magic, kMagic, mapped->deadline)) {
                throw NodeReportError("node report: shared-memory segment '" + name +
                                      "' was never initialised (creator crashed? remove "
                                      "/dev/shm" + name + ")");
            }
            if (seg->version != kVersion || seg->slot_size != sizeof(Slot) ||
                seg->local_size != static_cast<std::uint32_t>(local_size)) {
                throw NodeReportError("node report: shared-memory segment '" + name +
                                      "' has another layout (version " +
                                      std::to_string(seg->version) + ", " +
                                      std::to_string(seg->local_size) + " local ranks)");
            }
        }

        bool closed = false;
        {
            Lock lock(seg, name);
            closed = seg->closed != 0;
            if (!closed) {
                Slot *slots = seg->slots();
                // Every process joins inside MPI_Init, before any can have
                // finished; if every process in the segment is gone, it was
                // left by an earlier job with the same key whose leader died
                // before collecting, and its records are not ours.
                bool any_alive = false;
                for (int i = 0; i < local_size && !any_alive; ++i) {
                    any_alive = slots[i].state != kEmpty &&
                                process_alive(slots[i].pid, slots[i].start_time);
                }
                for (int i = 0; i < local_size && !any_alive; ++i) {
                    slots[i] = Slot{};
                }
                Slot &mine = slots[local_rank];
                if (mine.state != kEmpty && mine.pid != self.pid_) {
                    throw NodeReportError("node report: local rank " + std::to_string(local_rank) +
                                          " of '" + name + "' is already held by live pid " +
                                          std::to_string(mine.pid) +
                                          " (two processes with the same local rank?)");
                }
                mine            = Slot{};
                mine.rank       = rank;
                mine.pid        = self.pid_;
                mine.start_time = start_time;
                mine.state      = kJoined;
                // The last local rank in removes the name: the mappings live
                // on, and no process killed later (hydra SIGKILLs the other
                // ranks when one dies by a signal) can leave it in /dev/shm.
                int joined = 0;
                for (int i = 0; i < local_size; ++i) {
                    joined += slots[i].state != kEmpty ? 1 : 0;
                }
                if (joined == local_size && seg->unlinked == 0) {
                    seg->unlinked = 1;
                    if (::shm_unlink(name.c_str()) != 0 && errno != ENOENT) {
                        logger().warn("node report: shm_unlink '{}': {}", name,
                                      std::strerror(errno));
                    }
                }
            }
        }
        if (!closed) {
            return self;
        }
        // Unmapped only once unlocked: a robust mutex held in unmapped memory
        // is never released.
        self.unmap();
    }
    throw NodeReportError("node report: segment '" + name + "' kept being removed while joining");
}

NodeExchange::NodeExchange(NodeExchange &&other) noexcept
    : seg_(std::exchange(other.seg_, nullptr)),
      bytes_(other.bytes_),
      name_(std::move(other.name_)),
      local_rank_(other.local_rank_),
      local_size_(other.local_size_),
      pid_(other.pid_)
{
}

NodeExchange &NodeExchange::operator=(NodeExchange &&other) noexcept
{
    if (this != &other) {
        unmap();
        seg_        = std::exchange(other.seg_, nullptr);
        bytes_      = other.bytes_;
        name_       = std::move(other.name_);
        local_rank_ = other.local_rank_;
        local_size_ = other.local_size_;
        pid_        = other.pid_;
    }
    return *this;
}

NodeExchange::~NodeExchange() { unmap(); }

void NodeExchange::unmap() noexcept
{
    if (seg_ != nullptr) {
        ::munmap(seg_, bytes_);
        seg_ = nullptr;
    }
}

// Also false in a child that inherited the mapping through fork().
bool NodeExchange::owns_slot() const
{
    return seg_ != nullptr && pid_ == ::getpid() && seg_->slots()[local_rank_].pid == pid_;
}

bool NodeExchange::deposit(const RankRecord &record)
{
    if (seg_ == nullptr || pid_ != ::getpid()) {
        return false;
    }
    Lock lock(seg_, name_);
    if (seg_->closed != 0 || !owns_slot()) {
        return false;
    }
    Slot &mine  = seg_->slots()[local_rank_];
    mine.record = record;
    mine.state  = kDeposited;
    return true;
}

bool NodeExchange::leader_will_collect()
{
    if (seg_ == nullptr) {
        return false;
    }
    Lock lock(seg_, name_);
    const Slot &leader = seg_->slots()[0];
    if (seg_->closed != 0 || leader.state == kEmpty) {
        return false;
    }
    return leader.pid == pid_ || process_alive(leader.pid, leader.start_time);
}

NodeCollection NodeExchange::collect(std::chrono::nanoseconds wait, std::chrono::nanoseconds poll)
{
    NodeCollection collection;
    if (seg_ == nullptr) {
        throw NodeReportError("node report: collect on a segment that is not joined");
    }
    const auto deadline = std::chrono::steady_clock::now() + wait;
    for (;;) {
        bool pending = false;
        {
            Lock lock(seg_, name_);
            const Slot *slots = seg_->slots();
            for (int i = 0; i < local_size_ && !pending; ++i) {
                const Slot &s = slots[i];
                pending = s.state == kEmpty ||
                          (s.state == kJoined && process_alive(s.pid, s.start_time));
            }
        }
        const auto now = std::chrono::steady_clock::now();
        if (!pending || now >= deadline) {
            break;
        }
        std::this_thread::sleep_for(std::min<std::chrono::nanoseconds>(poll, deadline - now));
    }

    {
        Lock lock(seg_, name_);
        const Slot *slots = seg_->slots();
        for (int i = 0; i < local_size_; ++i) {
            const Slot &s = slots[i];
            if (s.state == kDeposited) {
                RankRecord r = s.record;
                r.local_rank = i;
                collection.reported.push_back(r);
                continue;
            }
            MissingRank m;
            m.local_rank = i;
            if (s.state == kJoined) {
                m.rank   = s.rank;
                m.pid    = s.pid;
                m.reason = process_alive(s.pid, s.start_time) ? MissingRank::Reason::timed_out
                                                              : MissingRank::Reason::died;
            }
            collection.missing.push_back(m);
        }
        // A process that opened the name just now sees `closed` and opens
        // again (a new, empty segment) instead of depositing where nobody reads.
        seg_->closed = 1;
        if (seg_->unlinked == 0) {
            seg_->unlinked = 1;
            if (::shm_unlink(name_.c_str()) != 0 && errno != ENOENT) {
                logger().warn("node report: shm_unlink '{}': {}", name_, std::strerror(errno));
            }
        }
    }
    return collection;
}

// ---- the process's node report ---------------------------------------------

namespace {

struct ProcessNodeReport {
    std::mutex                  mutex;
    std::optional<NodeExchange> exchange;
    bool                        deposited = false;
};

ProcessNodeReport &process_node_report()
{
    // Never destroyed: the exit report runs from atexit, after static destructors may have.
    static NoDestructor<ProcessNodeReport> state;
    return *state;
}

void log_failure(const char *what, const std::exception &e) noexcept
{
    try {
        logger().warn("{}: {}; each rank writes its own report instead", what, e.what());
    } catch (...) {
    }
}

} // namespace

std::size_t remove_stale_hydra_segments(uid_t uid, const std::string &dir)
{
    // Names are /slimlink-<uid>-report-hydra-<proxy pid>-<proxy start time>:
    // the proxy's pid and start time say whether that job can still be there.
    const std::string prefix = "slimlink-" + std::to_string(uid) + "-report-hydra-";
    DIR *d = ::opendir(dir.c_str());
    if (d == nullptr) {
        return 0;
    }
    std::size_t removed = 0;
    while (const dirent *entry = ::readdir(d)) {
        const std::string name = entry->d_name;
        if (name.compare(0, prefix.size(), prefix) != 0) {
            continue;
        }
        unsigned long long pid = 0, start = 0;
        char               rest = 0;
        if (std::sscanf(name.c_str() + prefix.size(), "%llu-%llu%c", &pid, &start, &rest) != 2 ||
            pid == 0 || pid > static_cast<unsigned long long>(INT32_MAX)) {
            continue;   // not a name we make: leave it alone
        }
        if (link::process_start_time(static_cast<pid_t>(pid)) == start) {
            continue;   // its job's proxy is alive
        }
        if (::shm_unlink(("/" + name).c_str()) == 0) {
            ++removed;
            logger().info("node report: removed '/{}', left by a job whose launcher is gone "
                          "(a rank never started)", name);
        }
    }
    ::closedir(d);
    return removed;
}

void node_report_join(const ProcessIdentity &who, const ReportTarget &report) noexcept
{
    if (report.kind == ReportTarget::Kind::none || !who.local.known()) {
        return;
    }
    try {
        // A job one of whose ranks never started cannot remove its segment
        // (the last rank to join does, and hydra SIGKILLs the others); the
        // next job of the same user on the node removes it.
        if (who.local.local_rank == 0) {
            remove_stale_hydra_segments(::geteuid(), "/dev/shm");
        }
        ProcessNodeReport &state = process_node_report();
        const std::lock_guard<std::mutex> lock(state.mutex);
        state.exchange = NodeExchange::join(node_segment_name(::geteuid(), who.local.key),
                                            who.local.local_rank, who.local.local_size, who.rank);
        logger().debug("node report: joined '{}' as local rank {} of {} ({})",
                       state.exchange->name(), who.local.local_rank, who.local.local_size,
                       who.local.launcher);
    } catch (const std::exception &e) {
        log_failure("node report disabled", e);
    } catch (...) {
    }
}

bool node_report_deposit(const RankRecord &record) noexcept
{
    try {
        ProcessNodeReport &state = process_node_report();
        const std::lock_guard<std::mutex> lock(state.mutex);
        if (!state.exchange || state.deposited) {
            return false;
        }
        state.deposited = state.exchange->deposit(record);
        if (!state.deposited) {
            logger().warn("node report: '{}' was already collected; this rank writes its own "
                          "report", state.exchange->name());
            return false;
        }
        if (state.exchange->local_rank() == 0) {
            return true; // the leader: collects at exit
        }
        const bool shown = state.exchange->leader_will_collect();
        state.exchange.reset(); // nothing more to do here; the leader unlinks
        return shown;
    } catch (const std::exception &e) {
        log_failure("node report: cannot deposit this rank's numbers", e);
        return false;
    } catch (...) {
        return false;
    }
}

void node_report_finish(const ReportTarget &report, const ProcessIdentity &who,
                        std::chrono::nanoseconds wait) noexcept
{
    try {
        ProcessNodeReport &state = process_node_report();
        const std::lock_guard<std::mutex> lock(state.mutex);
        if (!state.exchange || !state.deposited || state.exchange->local_rank() != 0) {
            return;
        }
        const NodeCollection collection = state.exchange->collect(wait);
        state.exchange.reset();
        const NodeInfo node{who.host, who.local};
        if (!collection.missing.empty()) {
            logger().warn("node report: {} of {} local ranks did not report (first: {})",
                          collection.missing.size(), who.local.local_size,
                          collection.missing.front().rank >= 0
                                  ? "rank " + std::to_string(collection.missing.front().rank)
                                  : "local rank " +
                                            std::to_string(collection.missing.front().local_rank));
        }
        write_report_content(report, report.kind == ReportTarget::Kind::json_file
                                             ? format_node_json(node, collection)
                                             : format_node_text(node, collection));
    } catch (const std::exception &e) {
        try {
            logger().error("node report: cannot write the node summary: {}", e.what());
        } catch (...) {
        }
    } catch (...) {
    }
}

} // namespace slim

// SPDX-License-Identifier: BSD-3-Clause
#include "link/node_arbiter.h"

#include "link/node_arbiter_segment.h"
#include "base/shared_segment.h"
#include "base/log.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <utility>

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

namespace slim::link {

// The segment helpers are the base layer's (src/base/shared_segment.h).
using base::init_robust_mutex;
using base::lock_robust_mutex;
using base::map_private_segment;
using base::SegmentMapping;
using base::SharedSegmentError;
using base::wait_published;

namespace {

using arbiter_segment::kMagic;
using arbiter_segment::kVersion;
using arbiter_segment::Slot;

// A joiner can open the segment just before the last process out unlinks it;
// it then sees `closed` and opens again: at least this many times, and on
// until init_wait has passed (processes that join and leave in a tight loop
// can close it under a joiner repeatedly). Bounded so a bug cannot spin
// forever.
constexpr int kOpenAttempts = 16;

std::string errno_text(int err)
{
    return std::strerror(err);
}

[[noreturn]] void throw_sys(const std::string& what, const std::string& name, int err)
{
    throw ArbiterError("node arbiter: " + what + " failed for shared-memory segment '" + name +
                       "': " + errno_text(err) + "; using full width");
}

}  // namespace

struct NodeArbiter::Segment : arbiter_segment::Segment {};

class NodeArbiter::Lock {
public:
    Lock(Segment* seg, const std::string& name) : seg_(seg)
    {
        if (const int rc = lock_robust_mutex(&seg_->mutex, "node arbiter", name); rc != 0) {
            throw_sys("pthread_mutex_lock", name, rc);
        }
    }
    ~Lock() { pthread_mutex_unlock(&seg_->mutex); }
    Lock(const Lock&) = delete;
    Lock& operator=(const Lock&) = delete;

private:
    Segment* seg_;
};

TimeNs monotonic_now_ns()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<TimeNs>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

std::uint64_t process_start_time(pid_t pid)
{
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    std::string text;
    if (!in || !std::getline(in, text)) {
        return 0;
    }
    // Field 2 (comm) may hold spaces and parentheses: fields resume after the last ')'.
    const auto close = text.rfind(')');
    if (close == std::string::npos) {
        return 0;
    }
    std::istringstream fields(text.substr(close + 1));
    std::string state;
    fields >> state;  // field 3
    if (state == "Z" || state == "X" || state == "x") {
        return 0;  // dead, only not reaped yet
    }
    std::string skip;
    for (int field = 4; field < 22; ++field) {
        fields >> skip;
    }
    std::uint64_t start = 0;
    fields >> start;
    return fields ? start : 0;
}

std::string NodeArbiter::segment_name(uid_t uid, const std::string& device, unsigned port)
{
    std::string clean = device.empty() ? std::string("unknown") : device;
    for (char& c : clean) {
        const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                        (c >= '0' && c <= '9') || c == '_' || c == '.';
        if (!ok) {
            c = '_';
        }
    }
    // NAME_MAX is 255 for the file under /dev/shm; leave room for the rest.
    if (clean.size() > 200) {
        clean.resize(200);
    }
    return "/slimlink-" + std::to_string(uid) + "-" + clean + "-" + std::to_string(port);
}

NodeArbiter NodeArbiter::join(const std::string& device, unsigned port, unsigned full_width,
                              const ArbiterOptions& options)
{
    NodeArbiter self;
    self.name_ = options.segment_name.empty() ? segment_name(geteuid(), device, port)
                                              : options.segment_name;
    self.stale_ns_   = options.stale_ns;
    self.full_width_ = full_width;
    self.requested_  = full_width;
    self.pid_        = getpid();
    self.start_time_ = process_start_time(self.pid_);
    const std::string& name = self.name_;
    if (full_width == 0) {
        throw ArbiterError("node arbiter: full width 0 for '" + name + "'; using full width");
    }
    if (name.size() < 2 || name[0] != '/' || name.find('/', 1) != std::string::npos) {
        throw ArbiterError("node arbiter: segment name '" + name +
                           "' must be one '/' followed by a name without '/'");
    }
    if (self.start_time_ == 0) {
        throw ArbiterError("node arbiter: cannot read /proc/self/stat (is /proc mounted?); "
                           "using full width");
    }

    const TimeNs give_up = monotonic_now_ns() + options.init_wait_ns;
    for (int attempt = 0; attempt < kOpenAttempts || monotonic_now_ns() < give_up; ++attempt) {
        std::optional<SegmentMapping> mapped;
        try {
            mapped = map_private_segment(name, sizeof(Segment),
                                         std::chrono::nanoseconds(options.init_wait_ns));
        } catch (const SharedSegmentError& e) {
            throw ArbiterError(std::string("node arbiter: ") + e.what() + "; using full width");
        }
        if (!mapped) {
            continue;  // unlinked by the last process out meanwhile
        }
        self.seg_ = static_cast<Segment*>(mapped->addr);
        Segment* seg = self.seg_;

        if (mapped->creator) {
            if (const int rc = init_robust_mutex(&seg->mutex); rc != 0) {
                self.close_segment();
                shm_unlink(name.c_str());
                throw_sys("pthread_mutex_init (robust, process-shared)", name, rc);
            }
            seg->version    = kVersion;
            seg->full_width = full_width;
            seg->slot_count = kSlots;
            seg->magic.store(kMagic, std::memory_order_release);
        } else {
            if (!wait_published(seg->magic, kMagic, mapped->deadline)) {
                throw ArbiterError("node arbiter: shared-memory segment '" + name +
                                   "' was never initialised (creator crashed? remove /dev/shm" +
                                   name + "); using full width");
            }
            if (seg->version != kVersion || seg->slot_count != kSlots) {
                throw ArbiterError("node arbiter: shared-memory segment '" + name +
                                   "' has layout version " + std::to_string(seg->version) +
                                   ", expected " + std::to_string(kVersion) +
                                   "; using full width");
            }
            if (seg->full_width != full_width) {
                throw ArbiterError("node arbiter: segment '" + name + "' was created for full width " +
                                   std::to_string(seg->full_width) + ", this process asks for " +
                                   std::to_string(full_width) + "; using full width");
            }
        }

        bool closed = false;
        {
            Lock lock(seg, name);
            // Set when the last process out unlinked this one after we opened it.
            closed = seg->closed != 0;
            if (!closed) {
                const TimeNs now = monotonic_now_ns();
                self.reclaim_dead(now);
                self.claim_slot(now);
            }
        }
        if (!closed) {
            return self;
        }
        // Unmapped only once unlocked: a robust mutex held in unmapped memory
        // is never released, not even when its owner dies.
        self.close_segment();
    }
    throw ArbiterError("node arbiter: segment '" + name + "' kept being removed while joining; "
                       "using full width");
}

NodeArbiter::NodeArbiter(NodeArbiter&& other) noexcept
    : seg_(std::exchange(other.seg_, nullptr)),
      name_(std::move(other.name_)),
      stale_ns_(other.stale_ns_),
      full_width_(other.full_width_),
      requested_(other.requested_),
      slot_(std::exchange(other.slot_, -1)),
      generation_(other.generation_),
      pid_(other.pid_),
      start_time_(other.start_time_),
      last_error_(std::move(other.last_error_))
{
}

NodeArbiter& NodeArbiter::operator=(NodeArbiter&& other) noexcept
{
    if (this != &other) {
        leave(monotonic_now_ns());
        close_segment();
        seg_        = std::exchange(other.seg_, nullptr);
        name_       = std::move(other.name_);
        stale_ns_   = other.stale_ns_;
        full_width_ = other.full_width_;
        requested_  = other.requested_;
        slot_       = std::exchange(other.slot_, -1);
        generation_ = other.generation_;
        pid_        = other.pid_;
        start_time_ = other.start_time_;
        last_error_ = std::move(other.last_error_);
    }
    return *this;
}

NodeArbiter::~NodeArbiter()
{
    leave(monotonic_now_ns());
    close_segment();
}

void NodeArbiter::close_segment() noexcept
{
    if (seg_ != nullptr) {
        munmap(seg_, sizeof(Segment));
        seg_ = nullptr;
    }
}

// Also false in a child that inherited this object through fork(): the slot
// is the parent's, and the child must neither update nor free it.
bool NodeArbiter::owns_slot() const
{
    if (seg_ == nullptr || slot_ < 0) {
        return false;
    }
    const Slot& s = seg_->slots[slot_];
    return s.pid == pid_ && pid_ == getpid() && s.generation == generation_;
}

void NodeArbiter::claim_slot(TimeNs now)
{
    for (std::size_t i = 0; i < kSlots; ++i) {
        Slot& s = seg_->slots[i];
        if (s.pid != 0) {
            continue;
        }
        generation_ = ++seg_->next_generation;
        s.width        = requested_;
        s.generation   = generation_;
        s.start_time   = start_time_;
        s.heartbeat_ns = now;
        s.pid          = pid_;
        slot_ = static_cast<int>(i);
        return;
    }
    slot_ = -1;
    throw ArbiterError("node arbiter: all " + std::to_string(kSlots) + " slots of '" + name_ +
                       "' are held by live processes; using full width");
}

bool NodeArbiter::slot_live(std::size_t index, TimeNs now) const
{
    const Slot& s = seg_->slots[index];
    if (s.pid == 0) {
        return false;
    }
    if (now - s.heartbeat_ns > stale_ns_) {
        return false;
    }
    if (kill(s.pid, 0) != 0 && errno == ESRCH) {
        return false;
    }
    // kill() succeeds on a zombie and on a reused pid; the start time does not.
    return process_start_time(s.pid) == s.start_time;
}

void NodeArbiter::reclaim_dead(TimeNs now)
{
    for (std::size_t i = 0; i < kSlots; ++i) {
        Slot& s = seg_->slots[i];
        if (s.pid == 0 || slot_live(i, now)) {
            continue;
        }
        if (static_cast<int>(i) == slot_ && owns_slot()) {
            continue;  // our own slot, only stale: the caller refreshes it
        }
        logger().info("node arbiter: reclaiming slot {} of '{}' (pid {}: {})", i, name_, s.pid,
                      now - s.heartbeat_ns > stale_ns_ ? "stale heartbeat" : "gone");
        s = Slot{};
    }
}

void NodeArbiter::request(unsigned width, TimeNs now)
{
    requested_ = std::clamp(width, 1u, full_width_);
    if (seg_ == nullptr) {
        throw ArbiterError("node arbiter: request on a segment that is not joined; using full width");
    }
    Lock lock(seg_, name_);
    if (!owns_slot()) {
        logger().warn("node arbiter: slot of '{}' was reclaimed (heartbeat older than {} ns); "
                      "taking a new one", name_, stale_ns_);
        reclaim_dead(now);
        claim_slot(now);
        return;
    }
    Slot& s = seg_->slots[slot_];
    s.width        = requested_;
    s.heartbeat_ns = now;
}

void NodeArbiter::heartbeat(TimeNs now)
{
    request(requested_, now);
}

unsigned NodeArbiter::effective_width(TimeNs now)
{
    if (seg_ == nullptr) {
        throw ArbiterError("node arbiter: not joined; using full width");
    }
    Lock lock(seg_, name_);
    // After the sweep every held slot is live (ours counts even if stale: we
    // are evidently alive).
    reclaim_dead(now);
    unsigned width = 0;
    for (const Slot& s : seg_->slots) {
        if (s.pid != 0) {
            width = std::max(width, s.width);
        }
    }
    return width == 0 ? full_width_ : std::min(width, full_width_);
}

unsigned NodeArbiter::effective_width_or_full(TimeNs now) noexcept
{
    try {
        return effective_width(now);
    } catch (const std::exception& e) {
        last_error_ = e.what();
        return full_width_;
    }
}

std::size_t NodeArbiter::live_peers(TimeNs now)
{
    if (seg_ == nullptr) {
        throw ArbiterError("node arbiter: not joined; using full width");
    }
    Lock lock(seg_, name_);
    reclaim_dead(now);
    std::size_t peers = 0;
    for (std::size_t i = 0; i < kSlots; ++i) {
        const bool ours = static_cast<int>(i) == slot_ && owns_slot();
        peers += (seg_->slots[i].pid != 0 && !ours) ? 1 : 0;
    }
    return peers;
}

bool NodeArbiter::leave(TimeNs now) noexcept
{
    if (seg_ == nullptr || slot_ < 0) {
        return false;
    }
    if (getpid() != pid_) {
        slot_ = -1;  // a fork()ed copy: the slot is the parent's
        return false;
    }
    try {
        Lock lock(seg_, name_);
        if (owns_slot()) {
            seg_->slots[slot_] = Slot{};
        }
        slot_ = -1;
        reclaim_dead(now);
        for (std::size_t i = 0; i < kSlots; ++i) {
            if (seg_->slots[i].pid != 0) {
                return false;
            }
        }
        // Last out: remove the name so no empty segment lingers in /dev/shm.
        // `closed` tells a joiner that opened it meanwhile to open again.
        seg_->closed = 1;
        if (shm_unlink(name_.c_str()) != 0 && errno != ENOENT) {
            last_error_ = "node arbiter: shm_unlink '" + name_ + "': " + errno_text(errno);
        }
        return true;
    } catch (const std::exception& e) {
        last_error_ = e.what();
        slot_ = -1;
        return false;
    }
}

}  // namespace slim::link

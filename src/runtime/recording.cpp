// SPDX-License-Identifier: BSD-3-Clause
#include "recording.h"

#include "base/error.h"
#include "base/log.h"
#include "link/backend.h"
#include "process_identity.h"
#include "service_attach.h"

#include <algorithm>
#include <mutex>
#include <new>
#include <system_error>

namespace slim {

namespace {

// An interface logs a slot per run of operations and per run's first send
// (SerialOpRing), not per operation: 8192 slots hold a backed-off drain's
// 16 ms at a run every 2 us, 590 KB per interface. The shared ring carries
// only region calls and interfaces without a ring of their own.
constexpr std::size_t kSerialRingCapacity          = 8192;
constexpr std::size_t kSharedRingCapacity          = 4096;
constexpr predict::TimeNs kEmulatedDrainIntervalNs = 16'000'000;

live::OpRecord op_record(const slim_core_op_desc_t& desc, predict::TimeNs t)
{
    live::OpRecord r;
    r.t_ns       = t;
    r.peer       = desc.peer;
    r.wire_bytes = desc.wire_bytes;
    r.orig_bytes = desc.orig_bytes;
    r.op_class   = desc.op;
    r.am_id      = desc.am_id;
    r.send       = desc.send != 0;
    return r;
}

void clear_batch(slim_core_tally_t& tally) noexcept
{
    tally.ops        = 0;
    tally.wire_bytes = 0;
    tally.orig_bytes = 0;
    tally.began      = 0;
    tally.ended      = 0;
    tally.activity   = 0;
    tally.has_send   = 0;
}

}  // namespace

std::string trace_path(const Config& config)
{
    if (config.trace_dir.empty()) {
        return {};
    }
    const ProcessIdentity& who = this_process();
    return config.trace_dir + "/" +
           (who.rank >= 0 ? "rank" + std::to_string(who.rank) : "pid" + std::to_string(who.pid)) +
           ".trace";
}

void Recording::start(const Config& config, ServiceAttachment& service) noexcept
{
    try {
        start_loop(config, service);
    } catch (const std::exception& e) {
        drain_.reset();
        log_.reset();
        live_.reset();
        note_swallowed("the live link loop cannot start, the link stays at full width", e);
    }
}

void Recording::start_loop(const Config& config, ServiceAttachment& service)
{
    live::LiveConfig lc;
    lc.policy                = config.predictor;
    lc.backend_name          = to_string(config.link);
    lc.backend.exec_template = config.link_exec;
    lc.backend.link          = config.link_profile;
    // Injected waits belong on the sending thread (push()), not on the
    // drain thread that replays the traffic.
    lc.backend.inject_delay   = false;
    lc.waits_in_recorded_time = config.inject_delay;
    lc.backend.clock          = live::LiveDrain::replay_clock(replay_now_);
    lc.trace_path             = trace_path(config);
    // Operations closer than the burst gap never start a burst: each
    // interface folds them into its totals instead of logging each.
    const predict::TimeNs coalesce_gap = lc.burst_gap_ns;
    cpu_                               = config.cpu;
    wait_yield_                        = config.wait_yield;
    replay_now_                        = link::steady_now_ns();
    service.attach(config, lc);
    lc.cpu.enabled = config.cpu;
    lc.cpu.policy  = config.cpu_policy;
    if (config.cpu && config.wait_yield) {
        lc.cpu.publish_low_after = [this](std::optional<predict::TimeNs> after) {
            __atomic_store_n(&wait_low_after_ns_,
                             after ? static_cast<std::uint64_t>(*after) : UINT64_MAX,
                             __ATOMIC_RELAXED);
        };
    }
    if (config.cpu && service.client() && service.client()->cpu_supported()) {
        lc.cpu.request = [client = service.client()](bool low, predict::TimeNs t) {
            return client->request_cpu(
                    low ? link::service::CpuLevel::low : link::service::CpuLevel::full, t);
        };
    }
    // A real port behind the service: the drain follows the loop's
    // deadlines so that the service hears of them in time.
    const bool emulated = service.port_emulated();
    live_               = std::make_unique<live::LiveLoop>(std::move(lc));
    trace_open_error_   = live_->trace_error();
    if (!trace_open_error_.empty()) {
        // Said now and on stderr: without a report nobody would know.
        logger().error("UCX_SLIM_TRACE: {}; this process writes no trace", live_->trace_error());
    }
    log_ = std::make_unique<live::OpLog>(kSharedRingCapacity, kSerialRingCapacity, coalesce_gap,
                                         live::RecordClock(live::RecordClock::Source::tsc));
    live::DrainOptions options;
    options.follow_deadlines = !emulated;
    if (emulated) {
        // The emulated link is replayed exactly however late the drain
        // runs, and each wake preempts a busy-polling rank on a full
        // machine: 4 ms cost 3-5 % of ping-pong latency on the 2-core
        // VM (a context switch there costs far more than a system
        // call's 1 us). 16 ms keeps the rings far from full: a record
        // is logged only where a run of operations starts (at most one
        // per burst gap, 50,000/s) against 8,192 slots per interface.
        // UCX_SLIM_INJECT_DELAY=y too: its waits are then paid up to a
        // round later, and a run with and one without it differ by the
        // waits alone (at 4 ms, cg with the link never lowered ran 2.3 %
        // slower with it).
        options.interval_ns  = kEmulatedDrainIntervalNs;
        options.max_sleep_ns = std::max(options.max_sleep_ns, kEmulatedDrainIntervalNs);
    }
    if (config.inject_delay) {
        options.publish_owed = &inject_owed_ns_;
    }
    drain_ = std::make_unique<live::LiveDrain>(*log_, *live_, replay_now_, link::steady_clock_ns(),
                                               options);
    try {
        drain_->start();
    } catch (const std::exception& e) {
        // No thread (std::system_error, or bad_alloc for its state): the
        // transport's progress drains instead. The loop
        // still works, at the cost of that work inside MPI calls.
        slim_core_poll_wanted = 1;
        logger().warn("the live loop's drain thread cannot start ({}); the link loop "
                      "runs from the transport's progress instead",
                      e.what());
    }
}

void Recording::push(const live::OpRecord& record) noexcept
{
    log_->shared().push(record);
    inject_if_low();
}

void Recording::inject_now() noexcept
{
    const predict::TimeNs owed = inject_owed_ns_.exchange(0, std::memory_order_relaxed);
    if (owed > 0) {
        link::wait_real_time(owed);
    }
}

Recorder *Recording::open_recorder(const slim_core_tally_t *tally) noexcept
{
    auto *recorder = new (std::nothrow) Recorder;
    if (recorder == nullptr) {
        return nullptr;
    }
    try {
        if (log_) {
            recorder->ring = log_->open_serial();
        }
        add_serial_traffic(&recorder->counts, tally);
        return recorder;
    } catch (const std::bad_alloc&) {
        // The interface records through the shared ring instead.
        if (log_) {
            log_->close_serial(recorder->ring);
        }
        delete recorder;
        return nullptr;
    }
}

void Recording::close_recorder(Recorder *recorder) noexcept
{
    if (recorder == nullptr) {
        return;
    }
    remove_serial_traffic(&recorder->counts);
    if (log_) {
        // The drain frees the ring once it took the last record.
        log_->close_serial(recorder->ring);
    }
    delete recorder;
}

void fold_counts(slim_core_tally_t& tally, TrafficMonitor& counts, bool serial) noexcept
{
    for (unsigned op = 0; op < SLIM_OP_COUNT; ++op) {
        for (unsigned dir = 0; dir < SLIM_DIR_COUNT; ++dir) {
            if (tally.count[op][dir] == 0) {
                continue;
            }
            const auto kind = static_cast<slim_op_t>(op);
            const auto way  = static_cast<slim_dir_t>(dir);
            if (serial) {
                counts.record_serial_n(kind, way, tally.count[op][dir], tally.bytes[op][dir]);
            } else {
                counts.record_n(kind, way, tally.count[op][dir], tally.bytes[op][dir]);
            }
            tally.count[op][dir] = 0;
            tally.bytes[op][dir] = 0;
        }
    }
}

void Recording::flush(Recorder *recorder, slim_core_tally_t& tally) noexcept
{
    if (recorder == nullptr) {
        // No serial ring: count in the process's totals, and log the
        // operations that name bursts in the shared ring.
        fold_counts(tally, process_traffic(), false);
        if (log_ && tally.ops != 0) {
            const auto now = link::steady_now_ns();
            push(op_record(tally.first, now));
            if (tally.has_send && tally.first.send == 0) {
                push(op_record(tally.first_send, now));
            }
        }
        clear_batch(tally);
        return;
    }
    fold_counts(tally, recorder->counts, true);
    if (recorder->ring != nullptr) {
        live::OpBatch b;
        b.first      = op_record(tally.first, static_cast<predict::TimeNs>(log_->clock().now()));
        b.first_send = op_record(tally.first.send ? tally.first : tally.first_send, b.first.t_ns);
        b.has_send   = tally.has_send != 0;
        b.ops        = tally.ops;
        b.orig       = tally.orig_bytes;
        b.wire       = tally.wire_bytes;
        b.began      = tally.began;
        b.ended      = tally.ended;
        recorder->ring->record_batch(b, log_->coalesce_ticks(), log_->split_ticks(),
                                     log_->hold_ticks());
        inject_if_low();
    }
    clear_batch(tally);
}

std::uint64_t Recording::steady_ticks() noexcept
{
    return static_cast<std::uint64_t>(link::steady_now_ns());
}

std::uint64_t Recording::wait_ticks(const Recorder *recorder, std::uint64_t ns) const noexcept
{
    if (log_ && recorder != nullptr && recorder->ring != nullptr) {
        return log_->clock().ticks_within(static_cast<predict::TimeNs>(ns));
    }
    return ns;
}

void Recording::record_wait_begin(Recorder *recorder, std::uint64_t first) noexcept
{
    if (!log_ || recorder == nullptr) {
        return;
    }
    live::OpRecord begin;
    begin.kind = live::OpKind::wait_begin;
    begin.t_ns = static_cast<predict::TimeNs>(first);
    if (recorder->ring != nullptr) {
        recorder->ring->push_marker(begin);
    } else {
        // Stamped with the steady clock (wait_clock): the shared ring's.
        log_->shared().push(begin);
    }
}

void Recording::record_wait(Recorder *recorder, const slim_core_wait_t& wait) noexcept
{
    if (!log_ || recorder == nullptr) {
        return;
    }
    // The end, with what the begin could not know yet: the time blocked,
    // and how far the wait reached before its first timed round (the
    // rounds that made it long enough to time), both in ticks.
    live::OpRecord end;
    end.kind       = live::OpKind::wait_end;
    end.t_ns       = static_cast<predict::TimeNs>(wait.end);
    end.peer       = static_cast<std::uintptr_t>(wait.blocked);
    end.wire_bytes = wait.blocks;
    end.orig_bytes = live::OpRecord::clamp_bytes(wait.first - wait.start);
    if (recorder->ring != nullptr) {
        recorder->ring->push_marker(end);
    } else {
        log_->shared().push(end);
    }
}

void Recording::on_traffic(const live::Traffic& traffic) noexcept
{
    if (!log_) {
        return;
    }
    live::OpRecord r;
    r.t_ns       = link::steady_now_ns();
    r.wire_bytes = live::OpRecord::clamp_bytes(traffic.wire_bytes);
    r.orig_bytes = live::OpRecord::clamp_bytes(traffic.orig_bytes);
    r.peer       = traffic.peer;
    r.op_class   = static_cast<std::uint8_t>(traffic.op_class);
    r.am_id      = static_cast<std::uint8_t>(traffic.am_id);
    r.send       = traffic.send;
    push(r);
}

// std::mutex::lock throws std::system_error only on a broken mutex; the
// region calls then count it and go on as if the call had not been made.
void Recording::region_begin(double ratio) noexcept
{
    try {
        const std::lock_guard<std::mutex> lock(region_mutex_);
        if (region_depth_++ > 0) {
            logger().info("slim_region_begin inside a region (depth {}): the outer region "
                          "keeps the link",
                          region_depth_);
            return;
        }
        if (log_) {
            live::OpRecord r;
            r.t_ns  = link::steady_now_ns();
            r.kind  = live::OpKind::region_begin;
            r.ratio = static_cast<float>(ratio);
            push(r);
        }
    } catch (const std::system_error& e) {
        note_swallowed("slim_region_begin", e);
    }
}

bool Recording::region_end() noexcept
{
    try {
        const std::lock_guard<std::mutex> lock(region_mutex_);
        if (region_depth_ == 0) {
            logger().warn("slim_region_end without slim_region_begin: ignored");
            return false;
        }
        if (--region_depth_ == 0 && log_) {
            live::OpRecord r;
            r.t_ns = link::steady_now_ns();
            r.kind = live::OpKind::region_end;
            push(r);
        }
        return true;
    } catch (const std::system_error& e) {
        note_swallowed("slim_region_end", e);
        return false;
    }
}

void Recording::poll_slow() noexcept
{
    try {
        drain_->drain();
    } catch (const std::exception& e) {
        note_swallowed("draining the live loop from the transport's progress", e);
    }
}

void Recording::stop() noexcept
{
    try {
        if (drain_) {
            drain_->stop();
        }
    } catch (const std::system_error& e) {
        note_swallowed("stopping the live loop's drain thread", e);
    }
}

std::optional<live::LiveSummary> Recording::finish(const ServiceAttachment& service) noexcept
{
    if (!live_) {
        return std::nullopt;
    }
    stop();
    try {
        const std::lock_guard<std::mutex> lock(finish_mutex_);
        if (!final_live_) {
            slim_core_poll_wanted = 0;
            // start() keeps the loop only together with its ring and drain.
            drain_->finish();
            final_live_ =
                    drain_->with_loop([](live::LiveLoop& loop) { return loop.summary(true); });
            final_live_->link_owner        = service.owner();
            final_live_->link_owner_detail = service.owner_detail();
            final_live_->drain             = drain_->stats();
            final_live_->ops_dropped       = log_->dropped();
            final_live_->ops_logged        = log_->logged();
            final_live_->cpu               = cpu_;
            final_live_->wait_mode         = wait_yield_ ? "yield" : "spin";
        }
        return final_live_;
    } catch (const std::exception& e) {
        note_swallowed("the live loop's final totals", e);
        return std::nullopt;
    }
}

}  // namespace slim

// SPDX-License-Identifier: BSD-3-Clause
#include "engine.h"
#include "slim_core.h"

#include "base/log.h"
#include "node_report.h"
#include "link/tee_backend.h"
#include "packing_monitor.h"
#include "base/no_destructor.h"
#include "process_identity.h"
#include "report.h"
#include "traffic_monitor.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <optional>

#include <sys/stat.h>
#include <unistd.h>

namespace slim {

namespace {

std::once_flag       g_init_once;
slim_status_t        g_init_status = SLIM_ERR_INTERNAL;
std::atomic<Engine *> g_engine{nullptr};

void report_at_exit()
{
    if (Engine *engine = Engine::get()) {
        engine->stop_timer();
        engine->report();
        // The reporter waits for the other local ranks here, at exit, and
        // not in report(), which the transport may call inside MPI_Finalize.
        engine->report_node();
    }
}

slim_status_t create_engine()
{
    Config config;
    try {
        config = Config::from_ucx();
    } catch (const ConfigError &e) {
        // At the level the user asked for, so that a bad UCX_SLIM_REPORT is
        // still reported (or silenced) as asked.
        set_log_level(Config::log_level_for_errors());
        logger().error("invalid configuration, the slim transport is disabled: {}", e.what());
        return SLIM_ERR_CONFIG;
    }
    set_log_level(config.log_level);

    // Never destroyed: UCX teardown and our own atexit hook may use it last.
    static NoDestructor<Engine> engine{std::move(config)};
    g_engine.store(engine.get(), std::memory_order_release);

    // Registered after the Engine exists so the hook always finds it.
    if (std::atexit(report_at_exit) != 0) {
        logger().warn("cannot register the exit report (atexit failed); "
                      "the report is written only when the slim transport closes");
    }
    const Config &c = engine->config();
    logger().debug("slimlink {} started: inner transport {}, report {}, log level {}, "
                   "lossy packing {} (UCX_SLIM_PACKING={}, steering UCP: {})",
                   slim_version(), c.inner,
                   c.report.kind == ReportTarget::Kind::none          ? "none"
                   : c.report.kind == ReportTarget::Kind::stdout_text ? "stdout"
                                                                      : c.report.path.c_str(),
                   to_string(c.log_level), c.policy.lossy() ? "policy packs" : "policy packs nothing",
                   to_string(c.packing), c.packing_steers() ? "yes" : "no");
    return SLIM_OK;
}

} // namespace

Engine::Engine(Config config) : config_(std::move(config))
{
    // Forward-only (UCX_SLIM_FORWARD_ONLY): nothing is recorded, so there
    // is no loop, no drain thread and no node service to attach to.
    if (!config_.forward_only) {
        start_live();
    }
}

namespace {

// An interface logs a slot per run of operations and per run's first send
// (SerialOpRing), not per operation: 8192 slots hold a backed-off drain's
// 16 ms at a run every 2 us, 590 KB per interface. The shared ring carries
// only region calls and interfaces without a ring of their own.
constexpr std::size_t kSerialRingCapacity = 8192;
constexpr std::size_t kSharedRingCapacity = 4096;
constexpr predict::TimeNs kEmulatedDrainIntervalNs = 16'000'000;

// The port a node service drives for this process: "emulated" for the
// emulated link (one per node: every local rank shares it, as ranks share
// an HCA port); for a real one, the first UCX_NET_DEVICES entry
// ("mlx5_0:1" -> "mlx5_0-1"), the name an administrator gives the system
// instance of that port (slimlinkd --port).
std::string service_port_name(const Config &config)
{
    if (config.link == LinkBackendKind::emulated) {
        return "emulated";
    }
    const std::optional<std::string> devices = process_environment()("UCX_NET_DEVICES");
    std::string first = devices ? devices->substr(0, devices->find(',')) : std::string();
    if (first.empty() || first == "all") {
        return "default";
    }
    for (char &c : first) {
        c = c == ':' ? '-' : c;
    }
    return link::service_port_name(first);
}

} // namespace

void Engine::start_live() noexcept
{
    try {
        live::LiveConfig lc;
        lc.policy              = config_.predictor;
        lc.backend_name        = to_string(config_.link);
        lc.backend.exec_template = config_.link_exec;
        // Injected waits belong on the sending thread (push()), not on the
        // drain thread that replays the traffic.
        lc.backend.inject_delay  = false;
        lc.backend.clock         = live::LiveDrain::replay_clock(replay_now_);
        if (!config_.trace_dir.empty()) {
            const ProcessIdentity &who = this_process();
            lc.trace_path = config_.trace_dir + "/" +
                            (who.rank >= 0 ? "rank" + std::to_string(who.rank)
                                           : "pid" + std::to_string(who.pid)) +
                            ".trace";
        }
        // Operations closer than the burst gap never start a burst: each
        // interface folds them into its totals instead of logging each.
        const predict::TimeNs coalesce_gap = lc.burst_gap_ns;
        replay_now_ = link::steady_now_ns();
        attach_service(lc);
        // A real port behind the service: the drain follows the loop's
        // deadlines so that the service hears of them in time.
        const bool emulated =
                !service_ || service_->port_emulated();
        live_ = std::make_unique<live::LiveLoop>(std::move(lc));
        trace_open_error_ = live_->trace_error();
        if (!trace_open_error_.empty()) {
            // Said now and on stderr: without a report nobody would know.
            logger().error("UCX_SLIM_TRACE: {}; this process writes no trace",
                           live_->trace_error());
        }
        log_ = std::make_unique<live::OpLog>(
                kSharedRingCapacity, kSerialRingCapacity, coalesce_gap,
                live::RecordClock(live::RecordClock::Source::tsc));
        live::DrainOptions options;
        options.follow_deadlines = !emulated;
        if (emulated && !config_.inject_delay) {
            // The emulated link is replayed exactly however late the drain
            // runs, and each wake preempts a busy-polling rank on a full
            // machine: 4 ms cost 3-5 % of ping-pong latency on the 2-core
            // VM (a context switch there costs far more than a system
            // call's 1 us). 16 ms keeps the rings far from full: a record
            // is logged only where a run of operations starts (at most one
            // per burst gap, 50,000/s) against 8,192 slots per interface.
            options.interval_ns  = kEmulatedDrainIntervalNs;
            options.max_sleep_ns = std::max(options.max_sleep_ns, kEmulatedDrainIntervalNs);
        }
        if (config_.inject_delay) {
            options.publish_low = &inject_pending_;
        }
        drain_ = std::make_unique<live::LiveDrain>(*log_, *live_, replay_now_,
                                                   link::steady_clock_ns(), options);
        try {
            drain_->start();
        } catch (const std::exception &e) {
            // The transport's progress drains instead: the loop still works,
            // at the cost of that work inside MPI calls.
            slim_core_poll_wanted = 1;
            logger().warn("the live loop's drain thread cannot start ({}); the link loop "
                          "runs from the transport's progress instead",
                          e.what());
        }
    } catch (const std::exception &e) {
        drain_.reset();
        log_.reset();
        live_.reset();
        try {
            logger().error("the live link loop cannot start ({}); the link stays at full width",
                           e.what());
        } catch (...) {
        }
    } catch (...) {
        drain_.reset();
        log_.reset();
        live_.reset();
    }
}

void Engine::push(const live::OpRecord &record) noexcept
{
    log_->shared().push(record);
    inject_if_low();
}

void Engine::inject_now() noexcept
{
    if (inject_pending_.exchange(false, std::memory_order_relaxed)) {
        link::wait_real_time(link::LinkConfig{}.tau_ns);
    }
}

Recorder *Engine::open_recorder(const slim_core_tally_t *tally) noexcept
{
    Recorder *recorder = nullptr;
    try {
        recorder = new Recorder;
        if (log_) {
            recorder->ring = log_->open_serial();
        }
        add_serial_traffic(&recorder->counts, tally);
        return recorder;
    } catch (...) {
        if (recorder != nullptr) {
            if (log_) {
                log_->close_serial(recorder->ring);
            }
            delete recorder;
        }
        return nullptr;
    }
}

void Engine::close_recorder(Recorder *recorder) noexcept
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

namespace {

live::OpRecord op_record(const slim_core_op_desc_t &desc, predict::TimeNs t)
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

} // namespace

void fold_counts(slim_core_tally_t &tally, TrafficMonitor &counts, bool serial) noexcept
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

namespace {

void clear_batch(slim_core_tally_t &tally) noexcept
{
    tally.ops        = 0;
    tally.wire_bytes = 0;
    tally.orig_bytes = 0;
    tally.began      = 0;
    tally.ended      = 0;
    tally.activity   = 0;
    tally.has_send   = 0;
}

} // namespace

void Engine::flush(Recorder *recorder, slim_core_tally_t &tally) noexcept
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
        b.first = op_record(tally.first, static_cast<predict::TimeNs>(log_->clock().now()));
        b.first_send = op_record(tally.first.send ? tally.first : tally.first_send,
                                 b.first.t_ns);
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

void Engine::on_traffic(const live::Traffic &traffic) noexcept
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

void Engine::region_begin(double ratio) noexcept
{
    try {
        const std::lock_guard<std::mutex> lock(region_mutex_);
        if (region_depth_++ > 0) {
            logger().info("slim_region_begin inside a region (depth {}): the outer region "
                          "keeps the link", region_depth_);
            return;
        }
        if (log_) {
            live::OpRecord r;
            r.t_ns  = link::steady_now_ns();
            r.kind  = live::OpKind::region_begin;
            r.ratio = static_cast<float>(ratio);
            push(r);
        }
    } catch (...) {
    }
}

bool Engine::region_end() noexcept
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
    } catch (...) {
        return false;
    }
}

void Engine::poll_slow() noexcept
{
    try {
        drain_->drain();
    } catch (...) {
    }
}

void Engine::stop_timer() noexcept
{
    try {
        if (drain_) {
            drain_->stop();
        }
    } catch (...) {
    }
}

std::optional<live::LiveSummary> Engine::finish_live() noexcept
{
    if (!live_) {
        return std::nullopt;
    }
    stop_timer();
    try {
        const std::lock_guard<std::mutex> lock(finish_mutex_);
        if (!final_live_) {
            slim_core_poll_wanted = 0;
            // start_live() keeps the loop only together with its ring and
            // drain.
            drain_->finish();
            final_live_ = drain_->with_loop([](live::LiveLoop &loop) {
                return loop.summary(true);
            });
            final_live_->link_owner  = service_ ? "slimlinkd" : "in-process";
            final_live_->link_owner_detail = link_owner_detail_;
            final_live_->drain       = drain_->stats();
            final_live_->ops_dropped = log_->dropped();
            final_live_->ops_logged  = log_->logged();
        }
        return final_live_;
    } catch (...) {
        return std::nullopt;
    }
}

slim_status_t Engine::init() noexcept
{
    try {
        std::call_once(g_init_once, [] {
            try {
                g_init_status = create_engine();
            } catch (const std::bad_alloc &) {
                g_init_status = SLIM_ERR_NO_MEMORY;
            } catch (...) {
                g_init_status = SLIM_ERR_INTERNAL;
            }
        });
    } catch (...) {
        // call_once itself failed (std::system_error): nothing was created.
        return SLIM_ERR_INTERNAL;
    }
    return g_init_status;
}

Engine *Engine::get() noexcept { return g_engine.load(std::memory_order_acquire); }

void Engine::report() noexcept
{
    if (reported_.exchange(true)) {
        return;
    }
    // Whatever the report setting: the loop ends, the link is restored and
    // the trace is flushed and closed (a trace-only run lost its tail).
    const std::optional<live::LiveSummary> live = finish_live();
    if (live && !live->trace_path.empty()) {
        try {
            if (!trace_open_error_.empty() && live->trace_error == trace_open_error_) {
                // Not created: said at start.
            } else if (!live->trace_error.empty()) {
                logger().error("UCX_SLIM_TRACE: the trace {} is incomplete: {}",
                               live->trace_path, live->trace_error);
            } else {
                logger().info("trace {}: {} events written", live->trace_path,
                              live->trace_events);
            }
        } catch (...) {
        }
    }
    if (config_.report.kind == ReportTarget::Kind::none) {
        return;
    }
    if (config_.forward_only) {
        logger().info("UCX_SLIM_FORWARD_ONLY=y: nothing was observed, no report");
        return;
    }
    try {
        const ProcessIdentity     &who     = this_process();
        const slim_traffic_t       traffic = process_traffic_snapshot();
        const slim_packing_stats_t packing = process_packing().snapshot();
        const ErrorBound           bound   = process_packing().error_bound();
        const live::LiveSummary   *summary = live ? &*live : nullptr;
        if (service_) {
            const RankRecord record = make_rank_record(who, traffic, packing, bound, summary);
            const auto *bytes = reinterpret_cast<const std::uint8_t *>(&record);
            pending_record_.emplace(bytes, bytes + sizeof record);
        }
        if (config_.report.kind == ReportTarget::Kind::stdout_text && service_) {
            // On stdout the node report shows every local rank's row: this
            // block is printed only by the reporter, or when no node report
            // comes (report_node()).
            pending_text_ = format_text_report(who, traffic, packing, summary, bound,
                                               process_packing().put_counts());
            return;
        }
        write_report(config_.report, who, traffic, packing, summary, bound,
                     process_packing().put_counts());
    } catch (const std::exception &e) {
        try {
            logger().error("cannot write the report ({}): {}",
                           config_.report.kind == ReportTarget::Kind::json_file
                                   ? config_.report.path
                                   : std::string("stdout"),
                           e.what());
        } catch (...) {
        }
    } catch (...) {
    }
}

void Engine::attach_service(live::LiveConfig &lc)
{
    const bool real_port = config_.link != LinkBackendKind::emulated;
    // Real backends run only in the service (the one owner of a port).
    lc.backend_name = "emulated";
    auto in_process = [&](const std::string &why) {
        link_owner_detail_ = why;
        if (real_port) {
            logger().warn("{}={} drives a port only through the node service slimlinkd, and "
                          "none was reached ({}): this process accounts an emulated link and "
                          "the port stays as it is",
                          Config::link_var, to_string(config_.link), why);
        } else {
            logger().info("no node service: {}; this process accounts its own emulated link",
                          why);
        }
    };
    if (config_.service.kind == ServiceChoice::Kind::off) {
        return in_process(std::string(Config::service_var) + "=off");
    }
    const ProcessIdentity &who = this_process();
    link::service::AttachRequest request;
    request.full_width = lc.backend.link.lanes;
    request.rank       = who.rank;
    request.pid        = who.pid;
    if (who.local.known()) {
        request.local_rank = who.local.local_rank;
        request.local_size = who.local.local_size;
    }
    // A process outside a known launcher is a job of its own.
    const std::string job = who.local.known() ? who.local.key : "pid" + std::to_string(who.pid);
    std::snprintf(request.job_key, sizeof request.job_key, "%s", job.c_str());
    const std::string port = service_port_name(config_);
    try {
        std::unique_ptr<link::ServiceClient> client;
        if (config_.service.kind == ServiceChoice::Kind::path) {
            // A socket that root owns is a system instance: trusted as one.
            struct stat st{};
            const bool system = ::stat(config_.service.path.c_str(), &st) == 0 &&
                                st.st_uid == 0 && ::geteuid() != 0;
            client = link::ServiceClient::connect(config_.service.path, system, request);
        } else {
            client = link::ServiceClient::connect_any(port, request);
        }
        service_ = std::shared_ptr<link::ServiceClient>(std::move(client));
    } catch (const link::ServiceError &e) {
        return in_process(e.what());
    }
    const link::service::AttachReply &info = service_->info();
    lc.backend.link.lanes      = info.full_width;
    lc.backend.link.low_width  = info.low_width;
    lc.backend.link.tau_ns     = info.tau_ns;
    lc.backend.link.lane_watts = info.lane_watts;
    // The port is the service's; the rank also models its own demand
    // alone (link/tee_backend.h), which its trace replays to.
    lc.backend_factory = [client = service_](const link::BackendConfig &c) {
        std::unique_ptr<link::LinkBackend> demand = link::make_emulated_backend(c).backend;
        return std::make_unique<link::TeeBackend>(link::make_service_backend(client, c.clock),
                                                  std::move(demand));
    };
    link_owner_detail_ = "port " + link::service::text_of(info.port) + ", " +
                         link::service::text_of(info.backend) +
                         ", socket " + service_->socket_path();
    logger().debug("link driven by slimlinkd: {}", link_owner_detail_);
}

void Engine::report_node() noexcept
{
    try {
        const ProcessIdentity &who = this_process();
        bool shown = false;
        if (service_ && pending_record_ && config_.report.kind != ReportTarget::Kind::none) {
            try {
                const std::optional<link::ReceivedReport> received =
                        service_->deposit(rank_record_version, pending_record_->data(),
                                          pending_record_->size(), config_.report_wait);
                if (received) {
                    if (!pending_text_.empty()) {
                        write_report_content(config_.report, pending_text_);
                        pending_text_.clear();
                    }
                    write_node_report(config_.report, who, collection_from_service(*received));
                }
                shown = true;
            } catch (const link::ServiceError &e) {
                logger().warn("node report: {}; this rank writes its own report", e.what());
            }
        }
        if (!shown && !pending_text_.empty()) {
            write_report_content(config_.report, pending_text_);
        }
        pending_text_.clear();
        if (service_) {
            service_->detach();
        }
    } catch (const std::exception &e) {
        try {
            logger().error("node report: {}", e.what());
        } catch (...) {
        }
    } catch (...) {
    }
}

} // namespace slim

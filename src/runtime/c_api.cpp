// SPDX-License-Identifier: BSD-3-Clause
// The C boundary: slimlink.h (applications) and slim_core.h (UCX module).
// No exception crosses it; failures become status codes.
#include "engine.h"
#include "base/error.h"
#include "base/log.h"
#include "release_hooks.h"
#include "slim_core.h"
#include "slimlink.h"
#include "traffic_monitor.h"

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdint>
#include <new>
#include <optional>
#include <string_view>

#include <pthread.h>

namespace slim {
bool (*release_hooks_probe)() noexcept = nullptr;
}  // namespace slim

namespace {

// Runs `body` (returning slim_status_t) with every exception turned into a
// status code; what the code cannot say is logged and counted.
template <typename Body>
slim_status_t guarded(const char *call, Body body) noexcept
{
    try {
        return body();
    } catch (const std::bad_alloc&) {
        return SLIM_ERR_NO_MEMORY;
    } catch (const std::exception& e) {
        slim::note_swallowed(call, e);
        return SLIM_ERR_INTERNAL;
    } catch (...) {
        slim::note_swallowed(call);
        return SLIM_ERR_INTERNAL;
    }
}

// Says once, at the first mark, when free() does not drop marks.
void check_release_hooks()
{
    static std::atomic<bool> checked{false};
    if (checked.exchange(true, std::memory_order_relaxed)) {
        return;
    }
    if (slim::release_hooks_probe != nullptr && !slim::release_hooks_probe()) {
        slim::logger().warn("free() is not slimlink's (libslimlink.so was loaded after the C "
                            "library bound it): memory freed while marked keeps its marks, and "
                            "data stored there later would be packed; call slim_unmark() before "
                            "free(), or link the application with -lslimlink");
    }
}

// The calling thread's stack ends (its highest address, exclusive) here, as
// pthread_getattr_np says; 0 when it could not say. Asked once per thread:
// for the main thread glibc reads /proc/self/maps, far too slow for every
// mark (a program may mark a million slices).
struct StackTop {
    std::uintptr_t top    = 0;
    std::uintptr_t lowest = 0;  // the attribute's low end (see on_own_stack)
    bool queried          = false;
};

StackTop query_stack_top() noexcept
{
    StackTop st;
    st.queried = true;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) {
        return st;
    }
    void *addr       = nullptr;
    std::size_t size = 0;
    if (pthread_attr_getstack(&attr, &addr, &size) == 0 && addr != nullptr) {
        st.lowest = reinterpret_cast<std::uintptr_t>(addr);
        st.top    = st.lowest + size;
    }
    pthread_attr_destroy(&attr);
    return st;
}

// Whether [ptr, ptr+bytes) overlaps the live part of the calling thread's
// stack: from this function's own frame up to the stack's top, which holds
// every frame of its callers (the stack grows down). Such a mark outlives
// the frame that owns the memory unless the caller unmarks it before
// returning, and the next frames put other data there: marked, it would be
// packed. Below the current frame nothing is live, so the stack's low end
// does not matter; that end is also the unreliable one for the main thread,
// whose attribute size is only RLIMIT_STACK (or the gap to the next mapping
// when that is unlimited), not what is mapped. When this frame is not
// inside the thread's stack (a signal handler on sigaltstack, a coroutine
// or user-level thread on a stack of its own) nothing is checked.
bool on_own_stack(const void *ptr, std::size_t bytes) noexcept
{
    thread_local StackTop stack;
    if (!stack.queried) {
        stack = query_stack_top();
    }
    const char here = 0;
    const auto sp   = reinterpret_cast<std::uintptr_t>(&here);
    if (stack.top == 0 || sp < stack.lowest || sp >= stack.top) {
        return false;
    }
    const auto begin = reinterpret_cast<std::uintptr_t>(ptr);
    return begin < stack.top && begin + bytes > sp;
}

// Refuses a mark on the caller's stack (see on_own_stack), with a warning
// naming the address: the first ones, then one in a thousand, since a
// program marking locals in a loop would flood the log. The status code
// says it every time.
bool refuse_stack_mark(const void *ptr, std::size_t bytes)
{
    if (!on_own_stack(ptr, bytes)) {
        return false;
    }
    static std::atomic<std::uint64_t> refused{0};
    const std::uint64_t n = refused.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n <= 10 || n % 1000 == 0) {
        slim::logger().warn("slim_mark of {} bytes at {} refused: the memory is on the calling "
                            "thread's stack, where the mark would outlive the frame that owns "
                            "it and pack whatever later frames put there; mark heap or static "
                            "memory ({} such mark(s) refused so far)",
                            bytes, ptr, n);
    }
    return true;
}

// Marks with `precision` on the process Engine, creating it if needed.
slim_status_t mark_on_engine(const void *ptr, size_t bytes, slim::pack::Precision precision,
                             std::string_view label = {})
{
    const slim_status_t status = slim::Engine::init();
    if (status != SLIM_OK) {
        return status;
    }
    if (refuse_stack_mark(ptr, bytes)) {
        return SLIM_ERR_INVALID;
    }
    check_release_hooks();
    slim::Engine *engine = slim::Engine::get();
    if (!engine->regions().mark(ptr, bytes, precision, label)) {
        return SLIM_ERR_INVALID;
    }
    return SLIM_OK;
}

// The precision the public (keep, mode) pair names, if it is a valid one.
std::optional<slim::pack::Precision> precision_of(int keep_bytes, slim_round_t mode)
{
    if (keep_bytes < slim::pack::kMinKeep || keep_bytes > slim::pack::kMaxKeep ||
        (mode != SLIM_ROUND_TRUNCATE && mode != SLIM_ROUND_NEAREST)) {
        return std::nullopt;
    }
    slim::pack::Precision precision;
    precision.keep_bytes = keep_bytes;
    precision.mode       = mode == SLIM_ROUND_NEAREST ? slim::pack::Rounding::nearest_even
                                                      : slim::pack::Rounding::truncate;
    return precision;
}

bool wraps(const void *ptr, size_t bytes)
{
    return reinterpret_cast<std::uintptr_t>(ptr) + bytes < reinterpret_cast<std::uintptr_t>(ptr);
}

}  // namespace

#define SLIM_STR_(x) #x
#define SLIM_STR(x) SLIM_STR_(x)

extern "C" {

slim_status_t slim_traffic_get(slim_traffic_t *out)
{
    if (out == nullptr) {
        return SLIM_ERR_INVALID;
    }
    *out = slim::process_traffic_snapshot();
    return SLIM_OK;
}

const char *slim_op_name(slim_op_t op)
{
    switch (op) {
    case SLIM_OP_AM_SHORT: return "am_short";
    case SLIM_OP_AM_BCOPY: return "am_bcopy";
    case SLIM_OP_AM_ZCOPY: return "am_zcopy";
    case SLIM_OP_AM_ANY: return "am_any";
    case SLIM_OP_PUT: return "put";
    case SLIM_OP_GET: return "get";
    case SLIM_OP_ATOMIC: return "atomic";
    case SLIM_OP_COUNT: break;
    }
    return nullptr;
}

const char *slim_status_string(slim_status_t status)
{
    switch (status) {
    case SLIM_OK: return "success";
    case SLIM_ERR_INVALID: return "invalid argument";
    case SLIM_ERR_CONFIG: return "invalid UCX_SLIM_* configuration";
    case SLIM_ERR_NO_MEMORY: return "out of memory";
    case SLIM_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char *slim_version(void)
{
    return SLIM_STR(SLIMLINK_VERSION_MAJOR) "." SLIM_STR(SLIMLINK_VERSION_MINOR);
}

slim_status_t slim_mark(const void *ptr, size_t bytes, const char *label)
{
    if (ptr == nullptr || bytes == 0 || label == nullptr || wraps(ptr, bytes) ||
        !slim::precision::valid_label(label)) {
        return SLIM_ERR_INVALID;
    }
    return guarded("slim_mark", [&] {
        const slim_status_t status = slim::Engine::init();
        if (status != SLIM_OK) {
            return status;
        }
        // Refused whatever the policy says, so the mistake shows even while
        // the label's rule is off.
        if (refuse_stack_mark(ptr, bytes)) {
            return SLIM_ERR_INVALID;
        }
        const std::optional<slim::pack::Precision> precision =
                slim::Engine::get()->policy().lookup(label);
        if (!precision) {
            return SLIM_OK;  // the policy does not pack this label
        }
        return mark_on_engine(ptr, bytes, *precision, label);
    });
}

slim_status_t slim_mark_precision(const void *ptr, size_t bytes, int keep_bytes, slim_round_t mode)
{
    const std::optional<slim::pack::Precision> precision = precision_of(keep_bytes, mode);
    if (ptr == nullptr || bytes == 0 || wraps(ptr, bytes) || !precision) {
        return SLIM_ERR_INVALID;
    }
    return guarded("slim_mark_precision", [&] { return mark_on_engine(ptr, bytes, *precision); });
}

slim_status_t slim_quantize(const double *in, double *out, size_t n, int keep_bytes,
                            slim_round_t mode)
{
    const std::optional<slim::pack::Precision> precision = precision_of(keep_bytes, mode);
    if ((n > 0 && (in == nullptr || out == nullptr)) || !precision) {
        return SLIM_ERR_INVALID;
    }
    for (size_t i = 0; i < n; ++i) {
        out[i] = slim::pack::round_trip(in[i], *precision);
    }
    return SLIM_OK;
}

slim_status_t slim_unmark(const void *ptr)
{
    if (ptr == nullptr) {
        return SLIM_ERR_INVALID;
    }
    return guarded("slim_unmark", [&] {
        const slim_status_t status = slim::Engine::init();
        if (status != SLIM_OK) {
            return status;
        }
        return slim::Engine::get()->regions().unmark(ptr) ? SLIM_OK : SLIM_ERR_INVALID;
    });
}

slim_status_t slim_region_begin(const char *label)
{
    if (label == nullptr || !slim::precision::valid_label(label)) {
        slim::logger().warn("slim_region_begin: the label must be [A-Za-z0-9_.-]+; "
                            "the region is ignored");
        return SLIM_ERR_INVALID;
    }
    return guarded("slim_region_begin", [&] {
        const slim_status_t status = slim::Engine::init();
        if (status != SLIM_OK) {
            return status;
        }
        slim::Engine *engine                                 = slim::Engine::get();
        const std::optional<slim::pack::Precision> precision = engine->policy().lookup(label);
        engine->recording().region_begin(precision ? precision->keep_bytes / 8.0 : 1.0);
        return SLIM_OK;
    });
}

slim_status_t slim_region_end(void)
{
    return guarded("slim_region_end", [&] {
        const slim_status_t status = slim::Engine::init();
        if (status != SLIM_OK) {
            return status;
        }
        return slim::Engine::get()->recording().region_end() ? SLIM_OK : SLIM_ERR_INVALID;
    });
}

slim_status_t slim_core_init(void) { return slim::Engine::init(); }

static_assert(static_cast<int>(slim::LogLevel::error) == SLIM_LOG_ERROR &&
                      static_cast<int>(slim::LogLevel::trace) == SLIM_LOG_TRACE,
              "slim_log_level_t names UCX_SLIM_LOG_LEVEL's levels");

int slim_core_log_enabled(slim_log_level_t level)
{
    if (slim::Engine::get() == nullptr) {
        // Before the configuration is parsed (or when it was refused), the
        // level the user asked for, as the environment gives it.
        slim::set_log_level(slim::Config::log_level_for_errors());
    }
    return slim::log_enabled(static_cast<slim::LogLevel>(level)) ? 1 : 0;
}

void slim_core_vlog(slim_log_level_t level, const char *format, va_list args)
{
    // A line is short; a longer one is cut, and says so.
    char line[1024];
    const int n         = std::vsnprintf(line, sizeof line, format, args);
    const char *cut     = n >= static_cast<int>(sizeof line) ? " [...]" : "";
    spdlog::logger& log = slim::logger();
    switch (level) {
    case SLIM_LOG_ERROR: log.error("{}{}", line, cut); return;
    case SLIM_LOG_WARN: log.warn("{}{}", line, cut); return;
    case SLIM_LOG_INFO: log.info("{}{}", line, cut); return;
    case SLIM_LOG_DEBUG: log.debug("{}{}", line, cut); return;
    case SLIM_LOG_TRACE: log.trace("{}{}", line, cut); return;
    }
}

const char *slim_core_inner_name(void)
{
    const slim::Engine *engine = slim::Engine::get();
    return engine != nullptr ? engine->config().inner.c_str() : nullptr;
}

void slim_core_traffic(slim_op_t op, slim_dir_t dir, unsigned am_id, size_t wire_bytes,
                       size_t orig_bytes, uintptr_t peer)
{
    slim::process_traffic().record(op, dir, wire_bytes);
    if (slim::Engine *engine = slim::Engine::get()) {
        slim::live::Traffic t;
        t.op_class   = static_cast<int>(op);
        t.am_id      = am_id;
        t.wire_bytes = wire_bytes;
        t.orig_bytes = orig_bytes;
        t.peer       = peer;
        t.send       = dir == SLIM_DIR_SEND;
        engine->recording().on_traffic(t);
    }
}

struct slim_core_recorder {
    slim::Recording *recording;
    slim::Recorder *recorder;
};

slim_core_recorder_t *slim_core_recorder_open(const slim_core_tally_t *tally)
{
    slim::Engine *engine = slim::Engine::get();
    if (engine == nullptr) {
        return nullptr;
    }
    slim::Recording& recording = engine->recording();
    auto *handle =
            new (std::nothrow) slim_core_recorder{&recording, recording.open_recorder(tally)};
    if (handle != nullptr && handle->recorder == nullptr) {
        delete handle;
        return nullptr;
    }
    return handle;
}

void slim_core_recorder_close(slim_core_recorder_t *recorder)
{
    if (recorder != nullptr) {
        recorder->recording->close_recorder(recorder->recorder);
        delete recorder;
    }
}

int slim_core_forward_only(void)
{
    const slim::Engine *engine = slim::Engine::get();
    return engine != nullptr && engine->config().forward_only ? 1 : 0;
}

void slim_core_tally_flush(slim_core_recorder_t *recorder, slim_core_tally_t *tally)
{
    if (recorder != nullptr) {
        recorder->recording->flush(recorder->recorder, *tally);
    } else if (slim::Engine *engine = slim::Engine::get()) {
        engine->recording().flush(nullptr, *tally);
    } else {
        // No engine: the counts still reach the process's totals.
        slim::fold_counts(*tally, slim::process_traffic(), false);
        *tally = slim_core_tally_t{};
    }
}

void slim_core_wait_config(slim_core_wait_config_t *config)
{
    *config                    = slim_core_wait_config_t{};
    const slim::Engine *engine = slim::Engine::get();
    if (engine == nullptr || engine->config().forward_only) {
        return;
    }
    const slim::Config& c = engine->config();
    config->record        = c.cpu ? 1 : 0;
    config->yield         = c.wait_yield ? 1 : 0;
    config->spin_ns       = static_cast<uint64_t>(c.wait_spin.count());
    config->max_ns        = static_cast<uint64_t>(c.wait_max.count());
}

uint64_t slim_core_wait_clock(const slim_core_recorder_t *recorder)
{
    return recorder != nullptr ? recorder->recording->wait_clock(recorder->recorder)
                               : slim::Recording::steady_ticks();
}

uint64_t slim_core_wait_ticks(const slim_core_recorder_t *recorder, uint64_t ns)
{
    return recorder != nullptr ? recorder->recording->wait_ticks(recorder->recorder, ns) : ns;
}

const uint64_t *slim_core_wait_low_after(void)
{
    static const std::uint64_t none = UINT64_MAX;
    slim::Engine *engine            = slim::Engine::get();
    return engine != nullptr ? engine->recording().wait_low_after_ns() : &none;
}

void slim_core_wait_begin(slim_core_recorder_t *recorder, uint64_t first)
{
    if (recorder != nullptr) {
        recorder->recording->record_wait_begin(recorder->recorder, first);
    }
}

void slim_core_wait_record(slim_core_recorder_t *recorder, const slim_core_wait_t *wait)
{
    if (recorder != nullptr) {
        recorder->recording->record_wait(recorder->recorder, *wait);
    }
}

volatile int slim_core_poll_wanted = 0;

void slim_core_poll(void)
{
    if (slim::Engine *engine = slim::Engine::get()) {
        engine->recording().poll();
    }
}

void slim_core_report(void)
{
    slim::Engine *engine = slim::Engine::get();
    if (engine != nullptr) {
        engine->report();
    }
}

}  // extern "C"

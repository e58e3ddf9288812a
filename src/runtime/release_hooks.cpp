// SPDX-License-Identifier: BSD-3-Clause
// free() and realloc() interposed: memory released while still
// marked loses its marks before the allocator can hand it out again, so data
// written there later, never marked, is never packed. Without this a buffer
// freed without slim_unmark() kept its mark, and the unmarked integers that
// the next malloc() put there arrived quantized (999 of 1000 wrong).
//
// Only in libslimlink.so (not in the core library the unit tests link):
// applications that mark link it, so it comes before libc in the symbol
// search order and these definitions are the ones every free() reaches
// (slim_mark checks this, see release_hooks_active). When nothing is marked a
// free() costs one load more; when something is, a lookup of the freed
// block's 64 KiB chunks (the registry's chunk filter) and, only when it holds
// marks, a walk of the region list.
#include "engine.h"
#include "base/error.h"
#include "base/log.h"
#include "release_hooks.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <new>
#include <string>

#include <dlfcn.h>
#include <malloc.h>

namespace {

using FreeFn    = void (*)(void *);
using ReallocFn = void *(*)(void *, std::size_t);

std::atomic<FreeFn> next_free{nullptr};
std::atomic<ReallocFn> next_realloc{nullptr};
// Set while dlsym runs: a free() it makes meanwhile cannot be forwarded yet
// and is leaked (a few bytes, once) rather than handed to the wrong allocator.
std::atomic<bool> resolving{false};

void resolve() noexcept
{
    if (resolving.exchange(true)) {
        return;
    }
    if (next_free.load() == nullptr) {
        next_free.store(reinterpret_cast<FreeFn>(dlsym(RTLD_NEXT, "free")));
    }
    if (next_realloc.load() == nullptr) {
        next_realloc.store(reinterpret_cast<ReallocFn>(dlsym(RTLD_NEXT, "realloc")));
    }
    resolving.store(false);
}

// The next definition (the C library's, usually), resolved on first use if
// the constructor has not run yet; null only while dlsym itself runs.
template <typename Fn>
Fn next_of(const std::atomic<Fn>& slot) noexcept
{
    const Fn next = slot.load(std::memory_order_relaxed);
    if (next != nullptr) {
        return next;
    }
    resolve();
    return slot.load();
}

// Resolved before main(), while one thread runs.
__attribute__((constructor(101))) void resolve_at_load()
{
    resolve();
    slim::release_hooks_probe = &slim::release_hooks_active;
}

// Drops the marks inside the block `ptr` (from malloc & co) before it is
// released; `what` is "free" or "realloc".
void release_marks(void *ptr, const char *what) noexcept
{
    slim::Engine *engine = slim::Engine::get();
    if (engine == nullptr || engine->regions().size() == 0) {
        return;  // the common case: nothing marked at all
    }
    const std::size_t bytes = malloc_usable_size(ptr);
    // Lock-free first: the writer's mutex only when the block holds a mark.
    if (engine->regions().find(ptr, bytes, nullptr, 0) == 0) {
        return;
    }
    std::string label;
    std::size_t dropped = 0;
    try {
        dropped = engine->regions().release(ptr, bytes, &label);
    } catch (const std::bad_alloc&) {
        // Out of memory in the registry: it is left as it was. Said below.
        dropped = static_cast<std::size_t>(-1);
    } catch (...) {
        // free() is a C boundary: nothing may leave it. Counted and said
        // here; the block is released all the same.
        slim::note_swallowed(what);
        return;
    }
    if (dropped == 0) {
        return;
    }
    // Rate-limited: a program that never unmarks would flood the log.
    static std::atomic<std::uint64_t> warnings{0};
    const std::uint64_t n = warnings.fetch_add(1, std::memory_order_relaxed) + 1;
    if (n > 10 && n % 1000 != 0) {
        return;
    }
    if (dropped == static_cast<std::size_t>(-1)) {
        slim::logger().error("{}() of {} marked bytes at {}: out of memory while dropping "
                             "their marks; memory reused there may be packed",
                             what, bytes, ptr);
    } else {
        slim::logger().warn(
                "{}() of memory still marked{}{}{} ({} region(s) in {} bytes at {}): the "
                "marks are dropped so that data stored there later is never packed; call "
                "slim_unmark() before releasing marked memory ({} such release(s) so far)",
                what, label.empty() ? "" : " as '", label, label.empty() ? "" : "'", dropped, bytes,
                ptr, n);
    }
}

}  // namespace


extern "C" {

void free(void *ptr)
{
    if (ptr == nullptr) {
        return;
    }
    release_marks(ptr, "free");
    if (const FreeFn next = next_of(next_free)) {
        next(ptr);
    }  // else leaked: see `resolving`
}

void *realloc(void *ptr, std::size_t bytes)
{
    if (ptr != nullptr) {
        // The block may move or shrink: its marks would then cover memory
        // that is not the buffer's any more. Mark again after realloc().
        release_marks(ptr, "realloc");
    }
    const ReallocFn next = next_of(next_realloc);
    return next != nullptr ? next(ptr, bytes) : nullptr;
}

}  // extern "C"

// Our free() under a name that binds inside this library: `&free` would
// itself be interposed and name whichever free() comes first.
extern "C" void slim_release_hooks_free(void *ptr)
        __attribute__((alias("free"), copy(free), visibility("hidden")));

namespace slim {

bool release_hooks_active() noexcept
{
    // What free() means for the program: ours when we come first.
    return dlsym(RTLD_DEFAULT, "free") == reinterpret_cast<void *>(&slim_release_hooks_free);
}

}  // namespace slim

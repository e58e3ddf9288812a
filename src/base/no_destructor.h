/* SPDX-License-Identifier: BSD-3-Clause */
// A process-lifetime object that is never destroyed (like absl::NoDestructor).
//
// The UCX module may call into the core from UCX's own teardown, which can run
// after static destructors (ucp/uct cleanup in library destructors, atexit
// handlers registered before ours). Objects reachable from the C API therefore
// outlive everything: they are built in static storage and never torn down.
#ifndef SLIM_BASE_NO_DESTRUCTOR_H
#define SLIM_BASE_NO_DESTRUCTOR_H

#include <new>
#include <utility>

namespace slim {

template <typename T>
class NoDestructor {
public:
    template <typename... Args>
    explicit NoDestructor(Args&&...args)
    {
        ::new (static_cast<void *>(storage_)) T(std::forward<Args>(args)...);
    }

    NoDestructor(const NoDestructor&)            = delete;
    NoDestructor& operator=(const NoDestructor&) = delete;

    T& operator*() noexcept { return *get(); }
    T *operator->() noexcept { return get(); }
    T *get() noexcept { return std::launder(reinterpret_cast<T *>(storage_)); }

private:
    alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace slim

#endif

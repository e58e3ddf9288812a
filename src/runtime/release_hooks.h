/* SPDX-License-Identifier: BSD-3-Clause */
// free()/realloc() interposition (release_hooks.cpp, libslimlink.so only).
#pragma once

namespace slim {

// True when the program's free() is slimlink's, so freed memory loses its
// marks. False when libslimlink was loaded after the C library's free() was
// bound (it is then only as safe as the application's slim_unmark calls).
bool release_hooks_active() noexcept;

// Set to release_hooks_active by libslimlink.so when it loads; null in the
// core library alone (unit tests), where nothing is interposed. The first
// mark asks it and warns when freed memory would keep its marks.
extern bool (*release_hooks_probe)() noexcept;

}  // namespace slim

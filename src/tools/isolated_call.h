// SPDX-License-Identifier: BSD-3-Clause
// Runs a piece of work in a child process and hands its answer back, so
// that a library which is not safe on hostile input cannot take the caller
// down with it. slim-replay reads OTF2 archives this way: libotf2 3.0.2
// reads memory it never filled when a damaged chunk runs past its end
// (valgrind shows it on damaged copies of the test archive), and a crash or
// a corrupted heap there must end in a message about the archive, not in
// slim-replay's own crash.
//
// The child is a fork() of the caller: call it only while the process has
// one thread (slim-replay and the unit tests do). It runs `work`, writes the
// bytes `work` returns to a pipe and leaves with _exit(0), without running
// the caller's atexit handlers or flushing its stdio buffers twice. Fatal
// signals are back at their default there: a crash is reported once, by
// the parent. A resource limit the work sets (setrlimit) stays in the child.
#pragma once

#include "base/error.h"

#include <functional>
#include <string>

namespace slim::tools {

// The child did not answer: killed by a signal, exited with a status other
// than 0, or exited before it had answered. what() says which, for example
// "killed by signal 11 (Segmentation fault)".
class IsolatedCallFailed : public Error {
public:
    using Error::Error;
};

// Runs `work` in a child process and returns what it returned. Exceptions
// thrown by `work` do not cross: catch them inside and encode them in the
// answer. Throws IsolatedCallFailed as above, and slim::Error when no child
// can be started (fork or pipe failing).
std::string run_isolated(const std::function<std::string()>& work);

}  // namespace slim::tools

/* SPDX-License-Identifier: BSD-3-Clause */
// slimlink's one exception type, and the account of errors that could not
// be thrown on.
//
// Every failure slimlink raises is a slim::Error (a bad configuration value
// a ConfigError, src/base/parse.h, for its uniform message). Where an error
// cannot propagate (destructors, the exit hook, the drain thread, the C API
// the transport calls), it is swallowed through note_swallowed(): counted,
// so that the rank report shows how many were lost, and logged, so that
// the user learns what they were.
#ifndef SLIM_BASE_ERROR_H
#define SLIM_BASE_ERROR_H

#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>

namespace slim {

class Error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Counts an error that `where` (a short phrase: "the exit report") could not
// hand on, and logs it with `what`. A flood is logged as the first few,
// then one in a thousand; every one is counted.
void note_swallowed(const char *where, const std::exception& error) noexcept;
// The same, with a detail for `where`: "where (detail): what".
void note_swallowed(const char *where, const std::string& detail,
                    const std::exception& error) noexcept;
// The same for an exception of unknown type (a catch (...) at a boundary).
void note_swallowed(const char *where) noexcept;

// Counts without logging: for failures of the logger itself.
void count_swallowed() noexcept;

// How many errors were swallowed in this process so far.
std::uint64_t swallowed_errors() noexcept;

}  // namespace slim

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
// slimlinkd's guard on its own log: a hostile client must not be able to
// fill the disk or spin the service's loop on logging.
#pragma once

#include "link/backend.h"

#include <cstdint>
#include <map>
#include <string>

namespace slim::link {

// Repeated log lines of one kind (refusals, accept errors, timeouts) are
// limited to a burst per window; what was left out is counted and said
// once the window has passed. A hostile client must not be able to fill
// the disk or spin the loop on logging.
class LogThrottle {
public:
    bool allow(const char *kind, TimeNs now)
    {
        State& s = kinds_[kind];
        roll(kind, s, now);
        if (s.lines < kBurst) {
            ++s.lines;
            return true;
        }
        ++s.suppressed;
        return false;
    }
    // Says what was left out in windows that have ended.
    void flush(TimeNs now)
    {
        for (auto& [kind, s] : kinds_) {
            roll(kind, s, now);
        }
    }

private:
    static constexpr unsigned kBurst  = 10;
    static constexpr TimeNs kWindowNs = 10'000'000'000;
    struct State {
        TimeNs start             = 0;
        unsigned lines           = 0;
        std::uint64_t suppressed = 0;
    };
    // Starts a new window for `kind` once its window has passed, saying
    // what the old one left out.
    static void roll(const std::string& kind, State& s, TimeNs now);
    std::map<std::string, State> kinds_;
};

}  // namespace slim::link

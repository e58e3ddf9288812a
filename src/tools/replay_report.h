/* SPDX-License-Identifier: BSD-3-Clause */
// slim-replay's results as text: the summary a person reads, the one line
// of JSON a script reads (README.md lists its keys), and --dump-events'
// line per event.
#pragma once

#include "predict/replay.h"
#include "tools/replay_options.h"
#include "trace/trace.h"

#include <cstdint>
#include <string>

namespace slim::tools {

std::string text_summary(const ReplayOptions& o, const link::Replay& driver,
                         const link::ReplayResult& r, const predict::TraceReader& trace);
std::string json_summary(const ReplayOptions& o, const link::Replay& driver,
                         const link::ReplayResult& r, const predict::TraceReader& trace);
// Writes "INDEX EVENT_ID PREDICTION\n" to standard output.
void dump_event(std::uint64_t index, std::uint32_t id, bool prediction);

}  // namespace slim::tools

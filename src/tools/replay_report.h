/* SPDX-License-Identifier: BSD-3-Clause */
// slim-replay's results as text: the summary a person reads, the one line
// of JSON a script reads (README.md lists its keys), and --dump-events'
// line per event.
#pragma once

#include "predict/cpu_policy.h"
#include "predict/replay.h"
#include "tools/replay_options.h"
#include "trace/trace.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace slim::tools {

// --cpu with --timeline: the trace's waits that overlap the link's window
// and the core's periods away from full under their plans (cpu_model.h),
// in replayed time: each wait, and its periods, moved by the delay the
// link replay had added up to the last event that started before it, as
// that event was moved.
struct CpuTimeline {
    std::vector<predict::Wait> waits;
    std::vector<cpu::CorePeriod> core;
};

// --cpu: the CPU side replayed, next to the oracle and the 500 us timeout
// on the same waits.
struct CpuReplay {
    std::uint64_t waits = 0;  // none: the summaries say the trace has no wait lines
    cpu::CpuResult result;
    cpu::CpuResult oracle;
    cpu::CpuResult baseline;  // timeout:500us
    // The adaptive policy's candidate in force at the end, and its changes.
    std::string in_force;
    std::uint64_t switches = 0;
    // With --timeline, when the trace has waits.
    std::optional<CpuTimeline> timeline;
};

// `cpu`: with --cpu, the CPU side (else none, and nothing about it is said).
std::string text_summary(const ReplayOptions& o, const link::Replay& driver,
                         const link::ReplayResult& r, const predict::TraceReader& trace,
                         const CpuReplay *cpu = nullptr);
std::string json_summary(const ReplayOptions& o, const link::Replay& driver,
                         const link::ReplayResult& r, const predict::TraceReader& trace,
                         const CpuReplay *cpu = nullptr);
// Writes "INDEX EVENT_ID PREDICTION\n" to standard output.
void dump_event(std::uint64_t index, std::uint32_t id, bool prediction);

}  // namespace slim::tools

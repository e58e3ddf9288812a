/* SPDX-License-Identifier: BSD-3-Clause */
// The CPU side of the live loop (UCX_SLIM_CPU=on): each wait of the rank
// is planned from its start by the CPU policy (predict/cpu_policy.h, the
// one slim-replay --cpu-policy replays), the plan is followed at its own
// times -- the drain replays them as deadlines, like the link's -- by
// asking the node service for the rank's cores low and back to full, and
// once the wait ended it is accounted on the emulated core (cpu_model.h)
// under the plan and under the oracle's, so a report shows how near the
// live plans came to what knowing each wait's end would have saved.
//
// Only the live loop's thread calls this, and only where a wait begins or
// ends or a plan's time comes: nothing here is on an operation's path.
#pragma once

#include "predict/cpu_model.h"
#include "predict/cpu_policy.h"
#include "predict/policy_registry.h"
#include "predict/types.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace slim::live {

using predict::TimeNs;

struct LiveCpuConfig {
    // Plan the waits (UCX_SLIM_CPU=on). Off: waits are only counted.
    bool enabled = false;
    // UCX_SLIM_CPU_POLICY: any policy of slim-replay --cpu-policy but the
    // oracle, which needs each wait's end.
    link::PolicySpec policy = link::replay_policy(cpu::default_cpu_policy);
    cpu::CpuConfig core;
    // Asks for this rank's cores low (true) or back to full (false), at
    // the loop's time `t`; returns whether the request went out. Empty:
    // nothing is asked (no node service, or one without the CPU
    // extension), the plans are still made and accounted.
    std::function<bool(bool low, TimeNs t)> request;
    // Told, at each wait's plan, how long after its start the plan lowers
    // the cores (none: it does not): UCX_SLIM_WAIT=yield blocks a wait
    // from then on, at the latest after its own spin (slim_wait.c). Empty:
    // nobody listens.
    std::function<void(std::optional<TimeNs> low_after)> publish_low_after;
};

// What the live CPU side did and modelled, for the rank report.
struct LiveCpuSummary {
    std::string policy;                     // the policy and its parameters (PolicySpec::name)
    std::string policy_in_force;            // adaptive: the candidate followed at the end
    bool requests_enabled         = false;  // a service takes the requests
    std::uint64_t requests_low    = 0;      // sent
    std::uint64_t requests_full   = 0;
    std::uint64_t requests_unsent = 0;  // refused: the service gone or its socket full
    std::uint64_t waits_lowered   = 0;  // waits in which the plan went low
    cpu::CpuResult model;               // the live plans on the emulated core
    cpu::CpuResult oracle;              // the oracle on the same waits
};

class LiveCpu {
public:
    // Throws slim::Error for the oracle or a predictor configuration the
    // policy refuses.
    explicit LiveCpu(LiveCpuConfig config);

    // A wait began at `start`; `busy_start`: where the busy phase before
    // it began (the previous wait's end); `before`: the last link event
    // that started before it, if any. A begin while a wait is open ends
    // that one there first.
    void begin(TimeNs start, TimeNs busy_start, const predict::Event *before);
    // The next time act() follows the plan; none while nothing is planned.
    std::optional<TimeNs> deadline() const noexcept { return deadline_; }
    // Follows the plan up to `now` (the loop calls it at deadline()).
    void act(TimeNs now);
    // The wait that began at begin()'s start ended at `end` (the arrival or
    // send the loop saw): back to full if it went low, then the wait is
    // accounted and the policy learns it, from `start` when given (where
    // the wait turned out to have begun: at or before begin()'s start).
    void end(TimeNs end, std::optional<TimeNs> start = std::nullopt);
    // The run ends at `now`: back to full if low.
    void finish(TimeNs now);
    // A wait is open (begin() without end()).
    bool in_wait() const noexcept { return start_.has_value(); }
    // The cores are asked low now.
    bool low() const noexcept { return low_; }

    // `span_ns`: the rank's span, the baseline's (always full over it).
    LiveCpuSummary summary(TimeNs span_ns) const;

private:
    enum class Step { none, low, raise, again };
    void ask(bool low, TimeNs t);

    LiveCpuConfig config_;
    cpu::CpuPolicy policy_;
    cpu::CpuPolicy oracle_policy_;  // the same waits, knowing their ends
    cpu::CpuTally tally_;
    cpu::CpuTally oracle_;
    std::optional<TimeNs> start_;  // the open wait's
    cpu::CpuPlan plan_;
    Step step_ = Step::none;
    std::optional<TimeNs> deadline_;
    bool low_                      = false;
    bool lowered_in_wait_          = false;
    std::uint64_t requests_low_    = 0;
    std::uint64_t requests_full_   = 0;
    std::uint64_t requests_unsent_ = 0;
    std::uint64_t waits_lowered_   = 0;
};

}  // namespace slim::live

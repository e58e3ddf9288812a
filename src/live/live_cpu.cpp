// SPDX-License-Identifier: BSD-3-Clause
// The live loop's CPU side (live_cpu.h).
#include "live/live_cpu.h"

#include "base/error.h"

#include <algorithm>

namespace slim::live {

namespace {

cpu::CpuPolicy live_cpu_policy(const LiveCpuConfig& config)
{
    if (!cpu::CpuPolicy::plans_from_start(config.policy)) {
        throw Error("UCX_SLIM_CPU_POLICY=" + config.policy.registry_name +
                    ": the oracle needs each wait's end, it runs only in a replay "
                    "(slim-replay --cpu-policy oracle)");
    }
    return cpu::CpuPolicy(config.policy, config.core);
}

// The oracle (cpu_policy.h): it plans an ended wait from its end.
link::PolicySpec oracle_spec()
{
    link::PolicySpec oracle;
    oracle.kind = link::PolicyKind::oracle;
    return oracle;
}

}  // namespace

LiveCpu::LiveCpu(LiveCpuConfig config)
    : config_(std::move(config)), policy_(live_cpu_policy(config_)),
      oracle_policy_(oracle_spec(), config_.core)
{}

void LiveCpu::begin(TimeNs start, TimeNs busy_start, const predict::Event *before)
{
    if (start_) {
        end(start);  // its end was lost: it ends where the next one begins
    }
    plan_            = policy_.plan(start, busy_start, before);
    start_           = start;
    lowered_in_wait_ = false;
    step_            = Step::none;
    deadline_.reset();
    // The same windows cpu::account_wait() accounts: low from low_from
    // (when its window opens), back to full at low_until, low once more
    // from again_at.
    if (plan_.low_from) {
        const TimeNs from = std::max(*plan_.low_from, start);
        if (!plan_.low_until || *plan_.low_until > from) {
            step_     = Step::low;
            deadline_ = from;
        } else if (plan_.again_at) {
            step_     = Step::again;
            deadline_ = std::max(*plan_.again_at, start);
        }
    }
    // The first deadline is where the plan first asks low.
    if (config_.publish_low_after) {
        config_.publish_low_after(deadline_ ? std::optional<TimeNs>(*deadline_ - start)
                                            : std::nullopt);
    }
}

void LiveCpu::act(TimeNs now)
{
    while (deadline_ && *deadline_ <= now) {
        const TimeNs t = *deadline_;
        deadline_.reset();
        switch (step_) {
        case Step::low:
            ask(true, t);
            if (plan_.low_until) {
                // A raise asked on the way down starts when that ends.
                step_     = Step::raise;
                deadline_ = std::max(*plan_.low_until, t + config_.core.tau_ns);
            } else {
                step_ = Step::none;
            }
            break;
        case Step::raise:
            ask(false, t);
            step_ = Step::none;
            if (plan_.again_at) {
                step_     = Step::again;
                deadline_ = std::max(*plan_.again_at, t + config_.core.tau_ns);
            }
            break;
        case Step::again:
            ask(true, t);
            step_ = Step::none;
            break;
        case Step::none: break;
        }
    }
}

void LiveCpu::end(TimeNs end, std::optional<TimeNs> start)
{
    if (!start_) {
        return;
    }
    const TimeNs from = start ? std::min(*start, *start_) : *start_;
    const predict::Wait wait{from, std::max(end, from)};
    // A time the plan reached before the end is followed first (the drain
    // replays deadlines before the record that ends the wait); one at the
    // end or later never is: that wait sends nothing.
    act(wait.end_ns - 1);
    if (low_) {
        ask(false, wait.end_ns);
    }
    if (lowered_in_wait_) {
        ++waits_lowered_;
    }
    tally_ += cpu::account_wait(config_.core, wait, plan_);
    oracle_ += cpu::account_wait(config_.core, wait, oracle_policy_.on_wait(wait, wait.start_ns));
    policy_.account(wait);
    start_.reset();
    step_ = Step::none;
    deadline_.reset();
}

void LiveCpu::finish(TimeNs now)
{
    step_ = Step::none;
    deadline_.reset();
    if (low_) {
        ask(false, now);
    }
}

void LiveCpu::ask(bool low, TimeNs t)
{
    low_ = low;
    if (low) {
        lowered_in_wait_ = true;
    }
    if (!config_.request) {
        return;  // the model only
    }
    if (config_.request(low, t)) {
        ++(low ? requests_low_ : requests_full_);
    } else {
        ++requests_unsent_;
    }
}

LiveCpuSummary LiveCpu::summary(TimeNs span_ns) const
{
    LiveCpuSummary s;
    s.policy = config_.policy.name();  // with its parameters: "timeout 500us"
    if (const cpu::CpuAdaptivePolicy *adaptive = policy_.adaptive()) {
        s.policy_in_force = adaptive->in_force().name();
    }
    s.requests_enabled = static_cast<bool>(config_.request);
    s.requests_low     = requests_low_;
    s.requests_full    = requests_full_;
    s.requests_unsent  = requests_unsent_;
    s.waits_lowered    = waits_lowered_;
    s.model            = cpu::cpu_result(config_.core, tally_, span_ns);
    s.oracle           = cpu::cpu_result(config_.core, oracle_, span_ns);
    return s;
}

}  // namespace slim::live

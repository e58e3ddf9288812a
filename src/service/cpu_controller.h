/* SPDX-License-Identifier: BSD-3-Clause */
// slimlinkd's CPU frequency controller: ranks ask for their cores low
// while they wait and full when they work again; the controller decides
// which cores may go low and a CpuBackend (cpu_backend.h) applies it.
// Pure of I/O itself: time is passed in, the backend does the writing.
//
// The sharing rule. Every attached rank has the set of cores it may run
// on (the service reads it from /proc, see service_protocol.h). A core is
// low exactly when
//   1. at least one *pinned* rank may run on it: a rank whose set is not
//      every core the backend drives. A rank allowed everywhere is not
//      pinned: the scheduler may move it, or run anything else, on any
//      core, so no core is its own and its asking lowers nothing; and
//   2. every rank that may run on it (pinned or not) asks for low.
// So a core that another rank may be using is never lowered: a rank that
// works holds every core it may run on at full, an unpinned one all of
// them. A core goes back to full at the first "full" of any rank on it,
// and when the last pinned rank on it leaves or dies (its connection
// closed: the service drops it at once, SIGKILL included). Cores the
// backend does not drive are ignored; a rank none of whose cores the
// backend drives lowers nothing.
//
// A backend that fails (a write refused, a command that failed or hung):
// every core it touched is restored at once, and the controller stops
// driving the cores (requests are still counted); `problem()` says why.
// Stopping (or destroying) the controller restores every core; a service
// killed before it can is covered by the cores' state file.
#pragma once

#include "service/cpu_backend.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace slim::link {

class CpuController {
public:
    explicit CpuController(std::unique_ptr<CpuBackend> backend);
    ~CpuController();  // stop()
    CpuController(const CpuController&)            = delete;
    CpuController& operator=(const CpuController&) = delete;

    // The cores `client` may run on (replacing what was known; a new
    // client starts at full). `job`: the port service's serial of its job
    // (0: none), whose CPU section (job_section) it then counts in.
    void set_cores(std::uint32_t client, const CoreSet& cores, TimeNs now, std::uint64_t job = 0);
    // `client` waits (low) or works (not low). Unknown clients are ignored.
    void request(std::uint32_t client, bool low, TimeNs now);
    // `client` is gone: its cores go back to full unless the rule keeps them.
    void drop(std::uint32_t client, TimeNs now);
    // Every core back to where it was; the controller drives nothing after.
    // Idempotent.
    void stop(TimeNs now) noexcept;
    // The cores' state file (CpuBackend::use_state_file), once the socket's
    // lock is held: what a killed service left low is restored first,
    // whichever backend left it (restore_left_cores; `config`: this
    // service's options, for a backend made only to restore).
    void use_state_file(const std::string& path, const CpuBackendConfig& config, TimeNs now)
    {
        restore_left_cores(path, config, backend_.get(), now);
    }

    const CpuBackend& backend() const { return *backend_; }
    bool failed() const { return failed_; }
    const std::string& problem() const { return problem_; }
    const CoreSet& cores_low() const { return lowered_; }
    bool knows(std::uint32_t client) const { return ranks_.count(client) != 0; }
    std::size_t ranks() const { return ranks_.size(); }
    std::uint64_t requests() const { return requests_; }
    std::uint64_t transitions() const { return transitions_; }

    service::CpuStatusReply status(TimeNs now) const;
    // One entry per core of the backend, at most `limit`.
    std::vector<service::CpuStatusCore> core_status(std::size_t limit) const;
    // One line for the log: cores low, ranks, energy when emulated.
    std::string summary(TimeNs now) const;

    // The node report's CPU section of `job` from its first rank's mapping
    // to `now`: per core its ranks of the job mapped to it, their low and
    // full requests, the low requests left at full because the core is
    // shared, the core's transitions and time low and, with the emulated
    // table, its energy against always at full and the modelled penalty.
    // At most `limit` core entries (the sums cover every core). None when
    // the job never mapped a rank. A job is forgotten when its last rank
    // leaves.
    struct JobSection {
        service::CpuSection totals;
        std::vector<service::CpuSectionCore> cores;
    };
    std::optional<JobSection> job_section(std::uint64_t job, TimeNs now, std::size_t limit) const;

private:
    struct Rank {
        CoreSet cores;
        bool pinned       = false;
        bool low          = false;
        std::uint64_t job = 0;
    };
    // A core's account since the start, cumulative, so that a job's share
    // is the difference between two marks.
    struct CoreAccount {
        std::uint64_t transitions = 0;
        std::uint64_t raises      = 0;
        TimeNs low_ns             = 0;  // closed low periods
        TimeNs at_low_ns          = 0;  // of them, beyond the first tau (the table's P_low)
        TimeNs since              = 0;  // start of the open low period (lowered_)
    };
    struct CoreMark {
        std::uint64_t transitions = 0;
        std::uint64_t raises      = 0;
        TimeNs low_ns             = 0;
        TimeNs at_low_ns          = 0;
    };
    struct Member {
        CoreSet cores;  // every core it was mapped to
        std::uint64_t low_requests  = 0;
        std::uint64_t full_requests = 0;
        bool live                   = true;
    };
    struct JobAccount {
        std::map<std::size_t, std::pair<TimeNs, CoreMark>> cores;  // first mapping, its mark
        std::map<std::uint32_t, Member> members;
        std::map<std::size_t, std::uint64_t> refused;
    };
    CoreMark mark(std::size_t core, TimeNs now) const;
    void opened(const CoreSet& cores, TimeNs now);  // set low at `now`
    void closed(const CoreSet& cores, TimeNs now);  // back to full at `now`
    // The cores the rule wants low now.
    CoreSet wanted() const;
    // Moves the backend to wanted(); a failure restores every core.
    void apply(TimeNs now);
    void fail(const std::string& why, TimeNs now) noexcept;

    std::unique_ptr<CpuBackend> backend_;
    CoreSet all_;  // the backend's cores
    std::map<std::uint32_t, Rank> ranks_;
    CoreSet lowered_;
    bool failed_  = false;
    bool stopped_ = false;
    std::string problem_;
    std::uint64_t requests_    = 0;
    std::uint64_t transitions_ = 0;
    TimeNs tau_ns_             = 0;  // the emulated table's, for at_low_ns
    std::vector<CoreAccount> accounts_;
    std::map<std::uint64_t, JobAccount> jobs_;
};

}  // namespace slim::link

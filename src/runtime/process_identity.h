/* SPDX-License-Identifier: BSD-3-Clause */
// Who this process is in the parallel job: MPI rank (from the launcher's
// environment; the transport sits below MPI and cannot ask MPI), host, pid,
// and where it sits on its node (local rank and size, and a key naming the
// job on this node) for the per-node report. Used by the log pattern and by
// reports.
#ifndef SLIM_RUNTIME_PROCESS_IDENTITY_H
#define SLIM_RUNTIME_PROCESS_IDENTITY_H

#include "env.h"

#include <functional>
#include <optional>
#include <string>

namespace slim {

// Launcher variables that carry the rank, in the order they are tried:
// MPICH/hydra, Open MPI, PMIx, Slurm.
inline constexpr const char *rank_variables[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                                 "SLURM_PROCID"};

// The first rank variable holding a non-negative integer, else -1.
int detect_rank(const EnvLookup& lookup);

// This process's place among the processes of its job on this node.
struct LocalJob {
    int local_rank = -1;  // 0 .. local_size-1; -1: unknown
    int local_size = 0;
    std::string launcher;  // "hydra", "openmpi" or "slurm"; empty: unknown
    // The same for every process of this job (step) on this node, different
    // for any other job running there at the same time; groups the job's
    // ranks in the node service (slimlinkd) for the node report.
    std::string key;

    bool known() const
    {
        return local_rank >= 0 && local_size > 0 && local_rank < local_size && !key.empty();
    }
};

// Hydra (MPICH 4.0) exports MPI_LOCALRANKID and MPI_LOCALNRANKS but no job
// id; every local rank of a job descends from the same hydra_pmi_proxy, so
// its pid and start time name the job. Returns "<pid>-<start time>" of the
// nearest ancestor named hydra_pmi_proxy, nullopt when there is none.
using HydraProxyLookup = std::function<std::optional<std::string>()>;
HydraProxyLookup hydra_proxy_of_this_process();

// Where this process sits on its node, from the first launcher whose local
// rank variable is set:
//   hydra:   MPI_LOCALRANKID, MPI_LOCALNRANKS, key from `hydra_proxy`;
//   Open MPI: OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_SIZE, key
//            PMIX_NAMESPACE (else OMPI_MCA_ess_base_jobid, OMPI_MCA_orte_ess_jobid);
//   Slurm:   SLURM_LOCALID, the entry for SLURM_NODEID in
//            SLURM_STEP_TASKS_PER_NODE ("2(x3),1"; else SLURM_TASKS_PER_NODE),
//            key SLURM_JOB_ID "." SLURM_STEP_ID.
// A launcher whose variables are set but incomplete or malformed yields an
// unknown LocalJob rather than the next launcher's (hydra under Slurm
// inherits the proxy's SLURM_LOCALID, which is not the rank's).
LocalJob detect_local_job(const EnvLookup& lookup, const HydraProxyLookup& hydra_proxy);

// Tasks on node `node` from a Slurm tasks-per-node list such as "2(x3),1";
// -1 when the list is malformed or has no such node.
int slurm_tasks_on_node(const std::string& tasks_per_node, int node);

struct ProcessIdentity {
    int rank = -1;  // -1: not started by a known launcher
    long pid = 0;
    std::string host;
    LocalJob local;  // unknown when not started by a known launcher

    // "r3", or "pid1234" when the rank is unknown.
    std::string label() const;
};

// This process, read once on first call.
const ProcessIdentity& this_process();

// Computes the identity from `lookup` and the real pid and host name; the
// local job from `lookup` and `hydra_proxy` (default: this process's).
ProcessIdentity make_process_identity(const EnvLookup& lookup,
                                      const HydraProxyLookup& hydra_proxy = {});

}  // namespace slim

#endif

// Who this process is in the parallel job: MPI rank (from the launcher's
// environment; the transport sits below MPI and cannot ask MPI), host, pid.
// Used by the log pattern and by reports.
#ifndef SLIM_RUNTIME_PROCESS_IDENTITY_H
#define SLIM_RUNTIME_PROCESS_IDENTITY_H

#include "env.h"

#include <string>

namespace slim {

// Launcher variables that carry the rank, in the order they are tried:
// MPICH/hydra, Open MPI, PMIx, Slurm.
inline constexpr const char *rank_variables[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK",
                                                 "SLURM_PROCID"};

// The first rank variable holding a non-negative integer, else -1.
int detect_rank(const EnvLookup &lookup);

struct ProcessIdentity {
    int         rank = -1; // -1: not started by a known launcher
    long        pid  = 0;
    std::string host;

    // "r3", or "pid1234" when the rank is unknown.
    std::string label() const;
};

// This process, read once on first call.
const ProcessIdentity &this_process();

// Computes the identity from `lookup` and the real pid and host name.
ProcessIdentity make_process_identity(const EnvLookup &lookup);

} // namespace slim

#endif

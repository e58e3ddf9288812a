/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A rank is killed and its peer survives (crash-survivor.test, 2 ranks,
 * mpiexec -disable-auto-cleanup, rank 1 under `sh -c`): the ranks exchange
 * a few messages, rank 1 SIGKILLs itself, and rank 0 waits in MPI_Recv from
 * it for good, spinning in UCX's progress as MPICH does. What that costs
 * beside the application's own spinning is crash-survivor.test's to check.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define ROUNDS 20
#define COUNT 1024

int main(int argc, char **argv)
{
    static double buf[COUNT];
    int rank = -1, size = 0, rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (size != 2) {
        fprintf(stderr, "crash-survivor: FAIL: needs exactly 2 ranks\n");
        return 1;
    }
    for (int round = 0; round < ROUNDS; ++round) {
        if (rank == 0) {
            MPI_Send(buf, COUNT, MPI_DOUBLE, 1, round, MPI_COMM_WORLD);
            MPI_Recv(buf, COUNT, MPI_DOUBLE, 1, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, COUNT, MPI_DOUBLE, 0, round, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, COUNT, MPI_DOUBLE, 0, round, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("crash-survivor: rank %d (pid %ld): %s\n", rank, (long)getpid(),
           rank == 0 ? "waits in MPI_Recv from rank 1" : "dies now (SIGKILL)");
    fflush(stdout);
    if (rank == 1) {
        raise(SIGKILL);
    }
    rc = MPI_Recv(buf, COUNT, MPI_DOUBLE, 1, ROUNDS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("crash-survivor: rank 0: MPI_Recv from the dead rank returned %d\n", rc);
    fflush(stdout);
    return 2;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The shortest complete MPI program that connects every pair of ranks:
 * Init, Barrier, Finalize. MPICH 4.0.2 over UCX 1.13.1's tcp transport hangs
 * in MPI_Finalize in most 4-rank runs (endpoint flush/close while peers are
 * disconnecting); finalize.test runs it many times under a timeout so any
 * hang through `slim` is caught, with the stuck ranks' backtraces.
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank = -1, size = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    if (rank == 0) {
        printf("finalize: %d ranks passed MPI_Finalize\n", size);
    }
    return 0;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slimlink-demo: a few collectives of doubles, checked element by element.
 *
 * Run it under slimlink-run so its traffic passes through the `slim` UCX
 * transport:
 *   UCX_SLIM_REPORT=stdout MPIR_CVAR_NOLOCAL=1 UCX_TLS=slim,self \
 *       slimlink-run mpiexec -n 4 slimlink-demo
 * Rank 0 prints OK when every result is right, and what `slim` counted.
 */
#include <mpi.h>
#include <slimlink.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { COUNT = 4096, ROUNDS = 3 };

static int check(int ok, const char *what, int rank, int index)
{
    if (!ok) {
        fprintf(stderr, "slimlink-demo: rank %d: %s: wrong value at element %d\n", rank, what,
                index);
    }
    return ok;
}

/* Exactly representable values, so sums are exact in any order. */
static double value(int rank, int i, int round) { return (double)(rank * 1000 + i % 997 + round); }

int main(int argc, char **argv)
{
    int rank, size, ok = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);

    double *send = malloc(sizeof(double) * COUNT * (size_t)size);
    double *recv = malloc(sizeof(double) * COUNT * (size_t)size);
    if (send == NULL || recv == NULL) {
        fprintf(stderr, "slimlink-demo: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    for (int round = 0; round < ROUNDS; ++round) {
        /* Allreduce: sum over ranks of value(r, i, round). */
        for (int i = 0; i < COUNT; ++i) {
            send[i] = value(rank, i, round);
        }
        MPI_Allreduce(send, recv, COUNT, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int i = 0; i < COUNT && ok; ++i) {
            double expect = 0;
            for (int r = 0; r < size; ++r) {
                expect += value(r, i, round);
            }
            ok = check(recv[i] == expect, "MPI_Allreduce", rank, i);
        }

        /* Alltoall: block j of rank r goes to rank j. */
        for (int j = 0; j < size; ++j) {
            for (int i = 0; i < COUNT; ++i) {
                send[j * COUNT + i] = value(rank, i, round) + j * 0.5;
            }
        }
        MPI_Alltoall(send, COUNT, MPI_DOUBLE, recv, COUNT, MPI_DOUBLE, MPI_COMM_WORLD);
        for (int r = 0; r < size && ok; ++r) {
            for (int i = 0; i < COUNT && ok; ++i) {
                ok = check(recv[r * COUNT + i] == value(r, i, round) + rank * 0.5, "MPI_Alltoall",
                           rank, r * COUNT + i);
            }
        }

        /* Bcast from a different root each round. */
        const int root = round % size;
        for (int i = 0; i < COUNT; ++i) {
            recv[i] = rank == root ? sqrt((double)i + round) : -1.0;
        }
        MPI_Bcast(recv, COUNT, MPI_DOUBLE, root, MPI_COMM_WORLD);
        for (int i = 0; i < COUNT && ok; ++i) {
            ok = check(recv[i] == sqrt((double)i + round), "MPI_Bcast", rank, i);
        }
    }

    int all_ok = 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);

    slim_traffic_t traffic;
    unsigned long long sent = 0, bytes = 0;
    if (slim_traffic_get(&traffic) == SLIM_OK) {
        for (int op = 0; op < SLIM_OP_COUNT; ++op) {
            sent += traffic.op[op][SLIM_DIR_SEND].count;
            bytes += traffic.op[op][SLIM_DIR_SEND].bytes;
        }
    }
    unsigned long long local[2] = {sent, bytes}, job[2] = {0, 0};
    MPI_Reduce(local, job, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);

    if (rank == 0) {
        if (all_ok) {
            printf("OK: %d ranks, %d rounds of Allreduce + Alltoall + Bcast of %d doubles\n", size,
                   ROUNDS, COUNT);
            if (job[0] > 0) {
                printf("slim carried %llu operations, %llu bytes (all ranks)\n", job[0], job[1]);
            } else {
                printf("note: nothing passed through slim; run under slimlink-run with "
                       "UCX_TLS=slim,self\n");
            }
        } else {
            printf("FAILED: wrong results (see the messages above)\n");
        }
        fflush(stdout);
    }
    free(send);
    free(recv);
    MPI_Finalize();
    return all_ok ? 0 : 1;
}

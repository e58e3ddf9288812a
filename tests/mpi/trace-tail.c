/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The end of a run that never exits (trace-files.test): 2 ranks ping-pong
 * ITERATIONS times with GAP_US of idle time after each, exchange one last
 * message of FINAL_BYTES (larger than anything before it, so that a trace
 * shows whether it holds the run's end whatever the scheduler did to the
 * times), meet in a barrier (an MPI call that polls: the operations of a
 * call that needed a single progress round are recorded at the next call,
 * and this one is it), then each prints
 *
 *   trace-tail: READY rank R pid P iterations N final_bytes B loop_end_ns T
 *
 * (T: CLOCK_MONOTONIC, the clock of the trace's times, right after its last
 * operation) and waits for a signal without calling MPI again. The test
 * kills the ranks and checks that their traces reach the run's end.
 *
 *   trace-tail ITERATIONS GAP_US
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

enum { FINAL_DOUBLES = 4096, FINAL_BYTES = FINAL_DOUBLES * 8 };

int main(int argc, char **argv)
{
    static double final[FINAL_DOUBLES];
    double buf[64] = {0};
    struct timespec ts;
    int rank, size, it, iterations, gap_us;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if ((argc != 3) || (size != 2) || (atoi(argv[1]) <= 0) || (atoi(argv[2]) < 0)) {
        if (rank == 0) {
            fprintf(stderr, "usage: trace-tail ITERATIONS GAP_US (2 ranks)\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    iterations = atoi(argv[1]);
    gap_us     = atoi(argv[2]);
    for (it = 0; it < iterations; ++it) {
        if (rank == 0) {
            MPI_Send(buf, 64, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, 64, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(buf, 64, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, 64, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD);
        }
        if (gap_us > 0) {
            usleep(gap_us);
        }
    }
    if (rank == 0) {
        MPI_Send(final, FINAL_DOUBLES, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD);
        MPI_Recv(final, FINAL_DOUBLES, MPI_DOUBLE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(final, FINAL_DOUBLES, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(final, FINAL_DOUBLES, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("trace-tail: READY rank %d pid %d iterations %d final_bytes %d loop_end_ns %lld\n", rank,
           (int)getpid(), iterations, FINAL_BYTES,
           (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    fflush(stdout);
    for (;;) {
        pause();
    }
}

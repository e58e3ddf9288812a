/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The end of a run that never exits (trace-files.test): 2 ranks ping-pong
 * ITERATIONS times with GAP_US of idle time after each, then each prints
 *
 *   trace-tail: READY rank R pid P iterations N loop_end_ns T
 *
 * (T: CLOCK_MONOTONIC, the clock of the trace's times, right after its last
 * operation) and waits for a signal without calling MPI again. The test
 * kills the ranks and checks that their traces reach the loop's end.
 *
 *   trace-tail ITERATIONS GAP_US
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
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
    clock_gettime(CLOCK_MONOTONIC, &ts);
    printf("trace-tail: READY rank %d pid %d iterations %d loop_end_ns %lld\n", rank, (int)getpid(),
           iterations, (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    fflush(stdout);
    for (;;) {
        pause();
    }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Waits a program knows (tests/mpi/waits.test): rank 0 alternates a compute
 * phase (a busy loop of COMPUTE_US) with a blocking receive whose message
 * rank 1 sends DELAY_US after rank 0 said it starts computing, so rank 0
 * waits about DELAY_US - COMPUTE_US in each receive.
 *
 *   waits ITERATIONS COMPUTE_US DELAY_US OUT
 *
 * Rank 0 writes to OUT one line per phase, in CLOCK_MONOTONIC nanoseconds
 * (the clock slimlink stamps traces with):
 *   compute T_START T_END
 *   recv T_START T_END
 * and at the end one line with what the receives cost it:
 *   total RECV_WALL_NS RECV_CPU_NS WALL_NS
 * (CPU time: getrusage of the whole process, every thread). Every message
 * carries its iteration number, checked on arrival.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int64_t cpu_ns(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000 +
           ((int64_t)ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000;
}

/* Busy for `us` microseconds of wall time: a compute phase. */
static void compute(long us)
{
    const int64_t end   = now_ns() + (int64_t)us * 1000;
    volatile uint64_t x = 1;

    while (now_ns() < end) {
        for (int i = 0; i < 64; ++i) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
        }
    }
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

    while (nanosleep(&ts, &ts) != 0) {}
}

int main(int argc, char **argv)
{
    int rank, size, bad = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if ((argc != 5) || (size != 2)) {
        if (rank == 0) {
            fprintf(stderr, "usage: waits ITERATIONS COMPUTE_US DELAY_US OUT (2 ranks)\n");
        }
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const int iterations  = atoi(argv[1]);
    const long compute_us = atol(argv[2]);
    const long delay_us   = atol(argv[3]);

    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        FILE *out         = fopen(argv[4], "w");
        int64_t recv_wall = 0, recv_cpu = 0;
        const int64_t start = now_ns();

        if (out == NULL) {
            perror(argv[4]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        for (int i = 0; i < iterations; ++i) {
            int got = -1;

            MPI_Send(&i, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
            const int64_t c0 = now_ns();
            compute(compute_us);
            const int64_t c1   = now_ns();
            const int64_t cpu0 = cpu_ns();
            MPI_Recv(&got, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            const int64_t r1 = now_ns();
            recv_cpu += cpu_ns() - cpu0;
            recv_wall += r1 - c1;
            if (got != i) {
                fprintf(stderr, "waits: iteration %d received %d\n", i, got);
                bad = 1;
            }
            fprintf(out, "compute %lld %lld\nrecv %lld %lld\n", (long long)c0, (long long)c1,
                    (long long)c1, (long long)r1);
        }
        fprintf(out, "total %lld %lld %lld\n", (long long)recv_wall, (long long)recv_cpu,
                (long long)(now_ns() - start));
        fclose(out);
        printf("waits: rank 0: %d receives, %.3f ms in them, %.3f ms CPU in them\n", iterations,
               recv_wall * 1e-6, recv_cpu * 1e-6);
    } else {
        for (int i = 0; i < iterations; ++i) {
            int go = -1;

            MPI_Recv(&go, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            if (go != i) {
                fprintf(stderr, "waits: rank 1: iteration %d received %d\n", i, go);
                bad = 1;
            }
            sleep_us(delay_us);
            MPI_Send(&i, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return bad;
}

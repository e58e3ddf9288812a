/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the MPI mini-apps (slimlink-cg, slimlink-fft): aligned
 * buffers, the rounding mode's name, medians, and the packing counters of a
 * marked run summed over ranks. Header-only (static), like bench_options.h.
 */
#ifndef SLIMLINK_BENCH_MINI_APP_H
#define SLIMLINK_BENCH_MINI_APP_H

#include <mpi.h>
#include <sched.h>
#include <slimlink.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int alloc_doubles(double **p, size_t count)
{
    /* 64-byte aligned: whole cache lines, and the codec's vector path */
    if (posix_memalign((void **)p, 64, count * sizeof(double)) != 0) {
        *p = NULL;
        return 0;
    }
    memset(*p, 0, count * sizeof(double));
    return 1;
}

static const char *mode_name(slim_round_t mode)
{
    return mode == SLIM_ROUND_NEAREST ? "round" : "truncate";
}

/* For qsort: medians of repeated timings. */
static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Waits for `count` (<= 4) requests. With more ranks than cores, ranks that
 * spin in MPI_Wait keep the peer they wait for off the CPU: 4 ranks on 2
 * cores took 24 ms per CG iteration that way, 0.2 ms when a waiting rank
 * yields between tests. */
static void wait_yield(int count, MPI_Request *req)
{
    MPI_Status stat[4]; /* not MPI_STATUSES_IGNORE: GCC 12 misreads it as a
                           zero-sized array (-Wstringop-overflow) */
    int done = 0;

    MPI_Testall(count, req, &done, stat);
    while (!done) {
        sched_yield();
        MPI_Testall(count, req, &done, stat);
    }
}

/* Sums `count` doubles over all ranks in place: MPI_Allreduce with --wait
 * block, else MPI_Iallreduce waited for by wait_yield. */
static void sum_all_ranks(int block, double *v, int count)
{
    if (block) {
        MPI_Allreduce(MPI_IN_PLACE, v, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        return;
    }
    MPI_Request req;
    MPI_Iallreduce(MPI_IN_PLACE, v, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req);
    wait_yield(1, &req);
}

/* *sum = (after - before) summed over all ranks. */
static void sum_packing_delta(const slim_packing_stats_t *before, const slim_packing_stats_t *after,
                              slim_packing_stats_t *sum)
{
    static const size_t field[] = {offsetof(slim_packing_stats_t, frames_sent),
                                   offsetof(slim_packing_stats_t, payload_bytes),
                                   offsetof(slim_packing_stats_t, wire_bytes),
                                   offsetof(slim_packing_stats_t, marked_bytes),
                                   offsetof(slim_packing_stats_t, packed_bytes),
                                   offsetof(slim_packing_stats_t, edge_bytes),
                                   offsetof(slim_packing_stats_t, missed_bytes),
                                   offsetof(slim_packing_stats_t, frames_received),
                                   offsetof(slim_packing_stats_t, frames_rejected)};
    enum { NFIELDS = sizeof(field) / sizeof(field[0]) };
    uint64_t v[NFIELDS];

    for (int i = 0; i < NFIELDS; ++i) {
        v[i] = *(const uint64_t *)((const char *)after + field[i]) -
               *(const uint64_t *)((const char *)before + field[i]);
    }
    MPI_Allreduce(MPI_IN_PLACE, v, NFIELDS, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    memset(sum, 0, sizeof(*sum));
    for (int i = 0; i < NFIELDS; ++i) {
        *(uint64_t *)((char *)sum + field[i]) = v[i];
    }
}

static double wire_ratio(const slim_packing_stats_t *s)
{
    return s->payload_bytes > 0 ? (double)s->wire_bytes / (double)s->payload_bytes : 0.0;
}

#endif

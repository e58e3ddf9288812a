/*
 * Helpers shared by the MPI mini-apps (slimlink-cg, slimlink-fft): aligned
 * buffers, the rounding mode's name, medians, and the packing counters of a
 * marked run summed over ranks. Header-only (static), like bench_options.h.
 */
#ifndef SLIMLINK_BENCH_MINI_APP_H
#define SLIMLINK_BENCH_MINI_APP_H

#include <mpi.h>
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

/* *sum = (after - before) summed over all ranks. */
static void sum_packing_delta(const slim_packing_stats_t *before,
                              const slim_packing_stats_t *after, slim_packing_stats_t *sum)
{
    static const size_t field[] = {
        offsetof(slim_packing_stats_t, frames_sent),
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

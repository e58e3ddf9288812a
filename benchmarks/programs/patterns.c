/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slimlink-patterns: MPI communication patterns for the predictor corpus.
 * Each rank alternates communication with compute phases
 * (busy loops of a set length, as a solver's kernels are), in one of these
 * shapes:
 *
 *   solver     halo exchange with both ring neighbours (8 KiB each way),
 *              400 us compute, allreduce, 150 us compute
 *   transpose  alltoall of 4 KiB per pair, 300 us compute
 *   irregular  a message of random size (8 B .. 64 KiB) to a random peer
 *              after a random compute phase (50 us .. 2 ms), same seed on
 *              every rank so sends and receives match
 *   phase      solver for half the iterations, then irregular
 *
 * usage: slimlink-patterns --pattern NAME [--iterations N] [--seed S]
 * Prints one JSON line on rank 0: pattern, iterations, seconds.
 */
#include <mpi.h>

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_options.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Compute without touching the network: a busy loop, as a kernel is. */
static void compute_us(double us)
{
    const double until = now_s() + us * 1e-6;
    while (now_s() < until) {}
}

/* xorshift64: the same sequence on every rank for the same seed. */
static uint64_t next_random(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static char buf_a[65536], buf_b[65536], *big_a, *big_b;

static void solver_step(int rank, int size)
{
    const int left = (rank + size - 1) % size, right = (rank + 1) % size;
    double local = rank, global = 0;

    MPI_Sendrecv(buf_a, 8192, MPI_CHAR, right, 1, buf_b, 8192, MPI_CHAR, left, 1, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    MPI_Sendrecv(buf_a, 8192, MPI_CHAR, left, 2, buf_b, 8192, MPI_CHAR, right, 2, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    compute_us(400);
    MPI_Allreduce(&local, &global, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    compute_us(150);
}

static void transpose_step(int size)
{
    MPI_Alltoall(big_a, 4096, MPI_CHAR, big_b, 4096, MPI_CHAR, MPI_COMM_WORLD);
    compute_us(300);
    (void)size;
}

static void irregular_step(int rank, int size, uint64_t *seed)
{
    const int from  = (int)(next_random(seed) % (uint64_t)size);
    const int shift = 1 + (int)(next_random(seed) % (uint64_t)(size - 1));
    const int to    = (from + shift) % size;
    const int bytes = 8 << (next_random(seed) % 14); /* 8 B .. 64 KiB */
    const double us = 50.0 + (double)(next_random(seed) % 1950);

    if (rank == from) {
        MPI_Send(buf_a, bytes, MPI_CHAR, to, 3, MPI_COMM_WORLD);
    } else if (rank == to) {
        MPI_Recv(buf_b, bytes, MPI_CHAR, from, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
    compute_us(us);
}

static const char usage_line[] =
        "usage: slimlink-patterns --pattern solver|transpose|irregular|phase "
        "[--iterations 1..1000000] [--seed N]\n";

static const char help_text[] =
        "MPI communication patterns for the predictor corpus, at least 2 ranks.\n"
        "  --pattern NAME      solver, transpose, irregular or phase (required)\n"
        "  --iterations N      1..1000000 (default 500)\n"
        "  --seed N            irregular: random seed, 0..2^64-1 (default 12345)\n"
        "  -h, --help          this text\n";

/* Prints "slimlink-patterns: <why>" and the usage (rank 0); returns 2. */
static int usage(int rank, const char *why, const char *val)
{
    if (rank == 0) {
        fprintf(stderr, "slimlink-patterns: %s%s\n%s", why, val, usage_line);
    }
    MPI_Finalize();
    return 2;
}

static const struct option long_options[] = {
        {"pattern", required_argument, NULL, 'p'},
        {"iterations", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

int main(int argc, char **argv)
{
    const char *pattern = NULL;
    long iterations     = 500;
    uint64_t seed       = 12345, v;
    int rank, size, i, c;
    double t0, t1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    opterr = 0; /* the messages are ours, from rank 0 only */
    /* Long options only: "p", "n", "s" are not short options. */
    while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        switch (c) {
        case 'p': pattern = optarg; break;
        case 'n':
            if (!bench_parse_u64(optarg, &v) || v < 1 || v > 1000000) {
                return usage(rank, "--iterations must be 1..1000000, got ", optarg);
            }
            iterations = (long)v;
            break;
        case 's':
            if (!bench_parse_u64(optarg, &seed)) {
                return usage(rank, "--seed must be an integer 0..18446744073709551615, got ",
                             optarg);
            }
            seed |= 1;
            break;
        case 'h':
            if (rank == 0) {
                printf("%s%s", usage_line, help_text);
            }
            MPI_Finalize();
            return 0;
        case ':': return usage(rank, "missing value for ", argv[optind - 1]);
        default: return usage(rank, "unknown option ", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        return usage(rank, "unexpected argument ", argv[optind]);
    }
    if (pattern == NULL || (strcmp(pattern, "solver") && strcmp(pattern, "transpose") &&
                            strcmp(pattern, "irregular") && strcmp(pattern, "phase"))) {
        return usage(rank, "--pattern must be solver, transpose, irregular or phase, got ",
                     pattern ? pattern : "none");
    }
    if (size < 2) {
        return usage(rank, "needs at least 2 ranks", "");
    }
    big_a = calloc((size_t)size, 4096);
    big_b = calloc((size_t)size, 4096);
    if (big_a == NULL || big_b == NULL) {
        return usage(rank, "out of memory", "");
    }

    MPI_Barrier(MPI_COMM_WORLD);
    t0 = now_s();
    for (i = 0; i < iterations; ++i) {
        if (!strcmp(pattern, "solver") || (!strcmp(pattern, "phase") && i < iterations / 2)) {
            solver_step(rank, size);
        } else if (!strcmp(pattern, "transpose")) {
            transpose_step(size);
        } else {
            irregular_step(rank, size, &seed);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    t1 = now_s();
    if (rank == 0) {
        printf("{\"pattern\":\"%s\",\"iterations\":%ld,\"ranks\":%d,\"seconds\":%.6f}\n", pattern,
               iterations, size, t1 - t0);
    }
    free(big_a);
    free(big_b);
    MPI_Finalize();
    return 0;
}

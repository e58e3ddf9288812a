/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Option values shared by the MPI benchmarks (slimlink-cg, slimlink-fft,
 * packed-bw), for their getopt_long loops: each parser takes all of an
 * option's value or refuses it, and the caller names the option and range.
 * Header-only, static inline: each benchmark is one C program.
 */
#ifndef SLIMLINK_BENCH_OPTIONS_H
#define SLIMLINK_BENCH_OPTIONS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>
#include <slimlink.h>

/* All of `s` as a decimal long in [min, max]: 1 and *out set, else 0. */
static inline int bench_parse_long(const char *s, long min, long max, long *out)
{
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        return 0;
    }
    *out = v;
    return 1;
}

/* "truncate" or "round": 1 and *out set, else 0. */
static inline int bench_parse_round(const char *s, slim_round_t *out)
{
    if (strcmp(s, "truncate") == 0) {
        *out = SLIM_ROUND_TRUNCATE;
        return 1;
    }
    if (strcmp(s, "round") == 0) {
        *out = SLIM_ROUND_NEAREST;
        return 1;
    }
    return 0;
}

/* "yield" (0) or "block" (1), --wait of the mini-apps: 1 and *block set, else 0. */
static inline int bench_parse_wait(const char *s, int *block)
{
    if (strcmp(s, "yield") == 0 || strcmp(s, "block") == 0) {
        *block = s[0] == 'b';
        return 1;
    }
    return 0;
}

/* --help: the usage on rank 0, then every rank leaves MPI and exits 0. */
static inline __attribute__((noreturn)) void
bench_help_exit(int rank, const char *usage_line, const char *help_text)
{
    if (rank == 0) {
        printf("%s%s", usage_line, help_text);
    }
    MPI_Finalize();
    exit(0);
}

#endif

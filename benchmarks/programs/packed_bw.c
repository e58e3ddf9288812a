/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * packed-bw: what lossy packing does to MPI bandwidth, 2 ranks.
 *
 * OSU-style bandwidth (rank 0 posts a window of Isends, rank 1 the matching
 * Irecvs, then rank 1 returns a zero-byte ack) of a buffer of float64
 * values, measured in the same run unmarked and marked with
 * slim_mark_precision(keep). Each repetition measures both, in alternating
 * order (unmarked first in even repetitions, marked first in odd ones), so
 * drifting load on a shared machine falls on both alike; the buffer is
 * marked just before its marked measurement and unmarked right after.
 *
 * After the repetitions of a size, one more marked message is sent into a
 * receive buffer filled with NaNs and checked element by element against
 * slim_quantize() of what was sent. When that message left as packing
 * frames with every marked byte packed, every element must match; elements
 * the counters say went raw (edge_bytes, missed_bytes) may instead equal
 * the value sent; any other value is an error. With no frame sent (not
 * over slim, or packing off) the data must arrive unchanged.
 *
 * usage: mpiexec -n 2 packed-bw [options]
 *   --min BYTES    smallest size, a power of two 8..2^30 (default 65536)
 *   --max BYTES    largest size, a power of two (default 4194304)
 *   --keep K       bytes kept per float64 when marked, 2..7 (default 4)
 *   --mode M       truncate (default) | round
 *   --reps N       repetitions per size, 1..1000 (default 7)
 *   --window N     messages in flight, 1..1024 (default 16)
 *   --budget MiB   bytes one measurement sends, 1..65536 MiB (default 64);
 *                  windows per measurement = budget / (size * window), >= 2
 *
 * Output (rank 0, stdout): '#' comment lines, then per size
 *   <bytes> <median MB/s unmarked> <median MB/s marked> <marked/unmarked>
 *   <wire/payload> <check>
 * MB = 10^6 bytes of original (unpacked) payload per second, as OSU counts.
 * wire/payload is the sender's slim_packing_get() ratio over the marked
 * measurements of that size ('-' when no frame was sent). check is 'exact'
 * (packed, every element quantized), 'raw-ok' (no frame sent, data
 * unchanged), 'ok+N-raw' (N elements went raw as the counters allow) or
 * 'FAIL'. Exit status: 0, 1 when a check failed, 2 on bad options.
 */
#define _POSIX_C_SOURCE 200809L /* posix_memalign, sched_yield */

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <slimlink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_options.h"

#define TAG_DATA 100
#define TAG_ACK 101
#define TAG_VERIFY 102
#define TAG_STATS 103

typedef struct bw_options {
    long min_size, max_size;
    int keep;
    slim_round_t mode;
    long reps, window, budget_mib;
} bw_options_t;

static int rank = -1;

static const char usage_line[] =
        "usage: mpiexec -n 2 packed-bw [--min BYTES] [--max BYTES] [--keep 2..7] "
        "[--mode truncate|round] [--reps N] [--window N] [--budget MiB]\n";

static const char help_text[] =
        "Bandwidth of marked vs unmarked float64 buffers, 2 ranks. Options take their\n"
        "value as '--opt V' or '--opt=V'.\n"
        "  --min BYTES    smallest size, a power of two 8..2^30 (default 65536)\n"
        "  --max BYTES    largest size, a power of two 8..2^30 (default 4194304)\n"
        "  --keep K       bytes kept per float64 when marked, 2..7 (default 4)\n"
        "  --mode M       truncate (default) or round\n"
        "  --reps N       repetitions per size, 1..1000 (default 7)\n"
        "  --window N     messages in flight, 1..1024 (default 16)\n"
        "  --budget MiB   bytes one measurement sends, 1..65536 MiB (default 64)\n"
        "  -h, --help     this text\n"
        "Exit status: 0, 1 when a check failed, 2 on bad options.\n";

/* Prints "packed-bw: <what><val>" and the usage (rank 0), exits 2. */
static void usage_error(const char *what, const char *val) __attribute__((noreturn));

static void usage_error(const char *what, const char *val)
{
    if (rank == 0) {
        fprintf(stderr, "packed-bw: %s%s\n%s", what, val, usage_line);
    }
    MPI_Finalize();
    exit(2);
}

static int is_pow2(long v) { return v > 0 && (v & (v - 1)) == 0; }

enum { OPT_MIN = 256, OPT_MAX, OPT_KEEP, OPT_MODE, OPT_REPS, OPT_WINDOW, OPT_BUDGET };

static const struct option long_options[] = {
        {"min", required_argument, NULL, OPT_MIN},
        {"max", required_argument, NULL, OPT_MAX},
        {"keep", required_argument, NULL, OPT_KEEP},
        {"mode", required_argument, NULL, OPT_MODE},
        {"reps", required_argument, NULL, OPT_REPS},
        {"window", required_argument, NULL, OPT_WINDOW},
        {"budget", required_argument, NULL, OPT_BUDGET},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

static void parse_options(int argc, char **argv, bw_options_t *o)
{
    long keep = 4;
    int c;

    o->min_size   = 64L << 10;
    o->max_size   = 4L << 20;
    o->mode       = SLIM_ROUND_TRUNCATE;
    o->reps       = 7;
    o->window     = 16;
    o->budget_mib = 64;
    opterr        = 0; /* the messages are ours, from rank 0 only */
    while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        const char *val = optarg;

        switch (c) {
        case OPT_MIN:
            if (!bench_parse_long(val, 8, 1L << 30, &o->min_size) || !is_pow2(o->min_size)) {
                usage_error("--min: expected a power of two 8..1073741824, got ", val);
            }
            break;
        case OPT_MAX:
            if (!bench_parse_long(val, 8, 1L << 30, &o->max_size) || !is_pow2(o->max_size)) {
                usage_error("--max: expected a power of two 8..1073741824, got ", val);
            }
            break;
        case OPT_KEEP:
            if (!bench_parse_long(val, 2, 7, &keep)) {
                usage_error("--keep: expected 2..7, got ", val);
            }
            break;
        case OPT_MODE:
            if (!bench_parse_round(val, &o->mode)) {
                usage_error("--mode: expected truncate or round, got ", val);
            }
            break;
        case OPT_REPS:
            if (!bench_parse_long(val, 1, 1000, &o->reps)) {
                usage_error("--reps: expected 1..1000, got ", val);
            }
            break;
        case OPT_WINDOW:
            if (!bench_parse_long(val, 1, 1024, &o->window)) {
                usage_error("--window: expected 1..1024, got ", val);
            }
            break;
        case OPT_BUDGET:
            if (!bench_parse_long(val, 1, 65536, &o->budget_mib)) {
                usage_error("--budget: expected 1..65536 (MiB), got ", val);
            }
            break;
        case 'h': bench_help_exit(rank, usage_line, help_text);
        case ':': usage_error("missing value for ", argv[optind - 1]);
        default: usage_error("unknown option ", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        usage_error("unexpected argument ", argv[optind]);
    }
    if (o->min_size > o->max_size) {
        usage_error("--min is larger than --max", "");
    }
    o->keep = (int)keep;
}

/* Full-mantissa values of both signs and a range of exponents, the same on
 * both ranks, so the receiver knows what was sent. */
static double value_at(size_t i)
{
    const double s = sin(0.001 * (double)i + 0.3) + 1e-3 * cos(7.7 * (double)i);
    return s * ldexp(1.0, (int)(i % 23) - 11);
}

static void fill_values(double *v, size_t n)
{
    for (size_t i = 0; i < n; ++i) {
        v[i] = value_at(i);
    }
}

/* `iters` windows of `window` messages, each window acknowledged; returns
 * the elapsed seconds on this rank. */
static double windows(double *sbuf, double *rbuf, size_t bytes, long iters, long window,
                      MPI_Request *req, MPI_Status *stat)
{
    const int peer  = 1 - rank;
    const double t0 = MPI_Wtime();

    for (long i = 0; i < iters; ++i) {
        for (long w = 0; w < window; ++w) {
            if (rank == 0) {
                MPI_Isend(sbuf, (int)bytes, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            } else {
                MPI_Irecv(rbuf, (int)bytes, MPI_BYTE, peer, TAG_DATA, MPI_COMM_WORLD, &req[w]);
            }
        }
        /* a status array: GCC 12 misreads MPI_STATUSES_IGNORE as zero-sized */
        MPI_Waitall((int)window, req, stat);
        if (rank == 0) {
            MPI_Recv(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(NULL, 0, MPI_BYTE, peer, TAG_ACK, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

/* Marks the sender's buffer (rank 0 only; receivers need no marking). A
 * failed mark is fatal: the numbers would be meaningless. */
static void mark(const double *sbuf, size_t bytes, const bw_options_t *o)
{
    if (rank != 0) {
        return;
    }
    const slim_status_t s = slim_mark_precision(sbuf, bytes, o->keep, o->mode);
    if (s != SLIM_OK) {
        fprintf(stderr, "packed-bw: slim_mark_precision(%zu bytes, keep %d): %s\n", bytes, o->keep,
                slim_status_string(s));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void unmark(const double *sbuf)
{
    if (rank == 0) {
        slim_unmark(sbuf);
    }
}

static void packing_delta(const slim_packing_stats_t *a, const slim_packing_stats_t *b,
                          slim_packing_stats_t *d)
{
    d->frames_sent     = b->frames_sent - a->frames_sent;
    d->payload_bytes   = b->payload_bytes - a->payload_bytes;
    d->wire_bytes      = b->wire_bytes - a->wire_bytes;
    d->marked_bytes    = b->marked_bytes - a->marked_bytes;
    d->packed_bytes    = b->packed_bytes - a->packed_bytes;
    d->edge_bytes      = b->edge_bytes - a->edge_bytes;
    d->missed_bytes    = b->missed_bytes - a->missed_bytes;
    d->frames_received = b->frames_received - a->frames_received;
    d->frames_rejected = b->frames_rejected - a->frames_rejected;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, long n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One marked message of `bytes`, checked by rank 1 against slim_quantize.
 * Writes the verdict text to `verdict` on rank 0; returns 0 when it failed. */
static int verify(double *sbuf, double *rbuf, double *expect, size_t bytes, const bw_options_t *o,
                  char *verdict, size_t verdict_len)
{
    const size_t n = bytes / sizeof(double);
    slim_packing_stats_t before, after, d;
    /* from the sender: frames_sent, edge_bytes, missed_bytes of this message */
    uint64_t sent[3] = {0, 0, 0};
    long result[2]   = {1, 0}; /* ok, raw elements */

    if (rank == 1) {
        for (size_t i = 0; i < n; ++i) {
            rbuf[i] = NAN;
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
        mark(sbuf, bytes, o);
        slim_packing_get(&before);
        MPI_Send(sbuf, (int)bytes, MPI_BYTE, 1, TAG_VERIFY, MPI_COMM_WORLD);
        slim_packing_get(&after);
        unmark(sbuf);
        packing_delta(&before, &after, &d);
        sent[0] = d.frames_sent;
        sent[1] = d.edge_bytes;
        sent[2] = d.missed_bytes;
        MPI_Send(sent, 3, MPI_UINT64_T, 1, TAG_STATS, MPI_COMM_WORLD);
        MPI_Recv(result, 2, MPI_LONG, 1, TAG_STATS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
        MPI_Recv(rbuf, (int)bytes, MPI_BYTE, 0, TAG_VERIFY, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Recv(sent, 3, MPI_UINT64_T, 0, TAG_STATS, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        fill_values(expect, n);
        const int packed           = sent[0] > 0;
        const uint64_t raw_allowed = packed ? (sent[1] + sent[2]) / sizeof(double) + 2 : n;
        if (packed) {
            slim_quantize(expect, expect, n, o->keep, o->mode);
        }
        long bad = -1;
        for (size_t i = 0; i < n; ++i) {
            if (memcmp(&rbuf[i], &expect[i], sizeof(double)) == 0) {
                continue;
            }
            const double sent_value = value_at(i);
            if (packed && memcmp(&rbuf[i], &sent_value, sizeof(double)) == 0) {
                ++result[1];
                continue;
            }
            if (bad < 0) {
                bad = (long)i;
            }
        }
        if (bad >= 0 || (uint64_t)result[1] > raw_allowed) {
            result[0] = 0;
            if (bad >= 0) {
                const size_t i = (size_t)bad;
                fprintf(stderr,
                        "packed-bw: FAIL: %zu-byte message, element %zu: received %.17g, "
                        "expected %.17g (%s, keep %d)\n",
                        bytes, i, rbuf[i], expect[i],
                        packed ? "slim_quantize of the value sent" : "the value sent, unpacked",
                        o->keep);
            } else {
                fprintf(stderr,
                        "packed-bw: FAIL: %zu-byte message: %ld elements arrived raw, "
                        "the sender's counters allow %llu\n",
                        bytes, result[1], (unsigned long long)raw_allowed);
            }
        }
        MPI_Send(result, 2, MPI_LONG, 0, TAG_STATS, MPI_COMM_WORLD);
    }
    if (rank == 0) {
        if (!result[0]) {
            snprintf(verdict, verdict_len, "FAIL");
        } else if (sent[0] == 0) {
            snprintf(verdict, verdict_len, "raw-ok");
        } else if (result[1] == 0) {
            snprintf(verdict, verdict_len, "exact");
        } else {
            snprintf(verdict, verdict_len, "ok+%ld-raw", result[1]);
        }
    }
    return (int)result[0];
}

int main(int argc, char **argv)
{
    bw_options_t o;
    int nranks = 0, status = 0;
    double *sbuf = NULL, *rbuf = NULL, *expect = NULL, *mb_plain = NULL, *mb_marked = NULL;
    MPI_Request *req = NULL;
    MPI_Status *stat = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    parse_options(argc, argv, &o);
    if (nranks != 2) {
        usage_error("needs exactly 2 ranks", "");
    }
    const size_t max_n = (size_t)o.max_size / sizeof(double);
    if (posix_memalign((void **)&sbuf, 4096, (size_t)o.max_size) != 0 ||
        posix_memalign((void **)&rbuf, 4096, (size_t)o.max_size) != 0 ||
        posix_memalign((void **)&expect, 4096, (size_t)o.max_size) != 0 ||
        (req = malloc(sizeof(*req) * (size_t)o.window)) == NULL ||
        (stat = malloc(sizeof(*stat) * (size_t)o.window)) == NULL ||
        (mb_plain = malloc(sizeof(double) * (size_t)o.reps)) == NULL ||
        (mb_marked = malloc(sizeof(double) * (size_t)o.reps)) == NULL) {
        fprintf(stderr, "packed-bw: rank %d: cannot allocate buffers\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    fill_values(sbuf, max_n); /* touches every page before timing */
    memset(rbuf, 0, (size_t)o.max_size);
    memset(expect, 0, (size_t)o.max_size);

    if (rank == 0) {
        printf("# packed-bw: 2 ranks, keep %d %s, window %ld, %ld repetitions "
               "(unmarked and marked interleaved), budget %ld MiB per measurement\n",
               o.keep, o.mode == SLIM_ROUND_NEAREST ? "round" : "truncate", o.window, o.reps,
               o.budget_mib);
        printf("# MB/s counts original payload, 10^6 B/s; wire/payload from slim_packing_get;\n"
               "# via: how the marked bytes left (slim_traffic_get): put (rendezvous puts,\n"
               "# packed in bounce buffers), am (active messages: frames), or mix;\n"
               "# missed: share of the marked bytes sent unpacked (a burst larger than\n"
               "# the bounce pool's limit, UCX_SLIM_BOUNCE_COUNT, sends the rest as it is)\n");
        printf("# %9s %14s %12s %16s %13s %s %s %s\n", "bytes", "unmarked MB/s", "marked MB/s",
               "marked/unmarked", "wire/payload", "check", "via", "missed");
        fflush(stdout);
    }

    /* connection wire-up and rendezvous set-up outside the timings */
    windows(sbuf, rbuf, (size_t)o.min_size, 2, o.window, req, stat);

    for (long size = o.min_size; size <= o.max_size; size *= 2) {
        const size_t bytes      = (size_t)size;
        const double per_window = (double)size * (double)o.window;
        long iters              = (long)((double)o.budget_mib * (1 << 20) / per_window);
        slim_packing_stats_t before, after, d;
        slim_traffic_t t_before, t_after;
        uint64_t put_bytes = 0, sent_bytes = 0;
        char verdict[32] = "";

        iters = iters < 2 ? 2 : iters;
        memset(&d, 0, sizeof(d));
        MPI_Barrier(MPI_COMM_WORLD);
        windows(sbuf, rbuf, bytes, 1, o.window, req, stat);
        mark(sbuf, bytes, &o);
        windows(sbuf, rbuf, bytes, 1, o.window, req, stat);
        unmark(sbuf);
        for (long r = 0; r < o.reps; ++r) {
            for (int k = 0; k < 2; ++k) {
                const int marked = (k == 0) == (r % 2 == 1);
                MPI_Barrier(MPI_COMM_WORLD);
                if (marked) {
                    mark(sbuf, bytes, &o);
                    slim_packing_get(&before);
                    slim_traffic_get(&t_before);
                }
                const double t = windows(sbuf, rbuf, bytes, iters, o.window, req, stat);
                if (marked) {
                    slim_packing_get(&after);
                    slim_traffic_get(&t_after);
                    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
                        const uint64_t b = t_after.op[op][SLIM_DIR_SEND].bytes -
                                           t_before.op[op][SLIM_DIR_SEND].bytes;
                        sent_bytes += b;
                        put_bytes += op == SLIM_OP_PUT ? b : 0;
                    }
                    unmark(sbuf);
                    slim_packing_stats_t one;
                    packing_delta(&before, &after, &one);
                    d.frames_sent += one.frames_sent;
                    d.payload_bytes += one.payload_bytes;
                    d.wire_bytes += one.wire_bytes;
                    d.marked_bytes += one.marked_bytes;
                    d.missed_bytes += one.missed_bytes;
                }
                (marked ? mb_marked : mb_plain)[r] = per_window * (double)iters / t / 1e6;
            }
        }
        if (!verify(sbuf, rbuf, expect, bytes, &o, verdict, sizeof(verdict))) {
            status = 1;
        }
        if (rank == 0) {
            const double plain = median(mb_plain, o.reps), marked = median(mb_marked, o.reps);
            char ratio[32] = "-";
            if (d.frames_sent > 0 && d.payload_bytes > 0) {
                snprintf(ratio, sizeof(ratio), "%.3f",
                         (double)d.wire_bytes / (double)d.payload_bytes);
            }
            const double put_share = sent_bytes > 0 ? (double)put_bytes / (double)sent_bytes : 0;
            const double missed =
                    d.marked_bytes > 0 ? (double)d.missed_bytes / (double)d.marked_bytes : 0;
            printf("%11zu %14.1f %12.1f %16.3f %13s %s %s %.3f\n", bytes, plain, marked,
                   marked / plain, ratio, verdict,
                   put_share >= 0.9   ? "put"
                   : put_share <= 0.1 ? "am"
                                      : "mix",
                   missed);
            fflush(stdout);
        }
    }
    if (rank == 0) {
        printf("# done%s\n", status ? ": data check FAILED" : "");
        fflush(stdout);
    }
    free(req);
    free(stat);
    free(mb_plain);
    free(mb_marked);
    free(expect);
    free(rbuf);
    free(sbuf);
    MPI_Finalize();
    return status;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slimlink-osu-like: OSU-style point-to-point latency and bandwidth, 2 ranks.
 *
 *   latency    ping-pong (Send/Recv); one-way latency in microseconds, as
 *              osu_latency: elapsed / (2 * iterations).
 *   bandwidth  rank 0 posts a window of Isends, rank 1 the matching Irecvs,
 *              then rank 1 returns a 4-byte ack; MB/s (10^6 bytes), as osu_bw.
 *
 * usage: mpiexec -n 2 slimlink-osu-like latency|bandwidth [options]
 *   -m MIN:MAX   message sizes, powers of two from MIN to MAX bytes
 *                (default 1:4194304; MIN 0 adds a 0-byte latency point)
 *   -i N         iterations per size for sizes <= 8 KiB (default 1000
 *                latency, 100 bandwidth)
 *   -I N         iterations per size above 8 KiB (default 100 latency,
 *                20 bandwidth)
 *   -x N         warm-up iterations per size, not timed (default:
 *                iterations / 10, at least 2); 2000 1-byte ping-pongs
 *                precede the first size in both modes
 *   -w N         bandwidth window, messages in flight (default 64)
 *   -b MiB       bandwidth: cap on the bytes one size sends, in MiB
 *                (default 1024); iterations shrink to fit, never below 2
 *   -k N         split the timed iterations into N batches and report the
 *                median batch (default 1: the mean over all iterations, as
 *                OSU does). On a shared machine a preempted rank inflates a
 *                mean; the median batch ignores such outliers.
 *
 * Output (rank 0, stdout): '#' comment lines, then one line per size:
 *   latency   <bytes> <microseconds> us <iterations>
 *   bandwidth <bytes> <MB/s> MB/s <iterations>
 * Results are flushed before MPI_Finalize.
 */
#include <getopt.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_options.h"

#define LARGE_MESSAGE (8u << 10)
#define ACK_BYTES 4

typedef struct options {
    int bandwidth;
    size_t min_size, max_size;
    long iters_small, iters_large, warmup, window;
    long budget_mib, batches;
} options_t;

static int rank = -1;

static const char usage_line[] = "usage: mpiexec -n 2 slimlink-osu-like latency|bandwidth "
                                 "[-m MIN:MAX] [-i N] [-I N] [-x N] [-w N] [-b MiB] [-k N]\n";

static const char help_text[] =
        "OSU-style point-to-point latency or bandwidth, 2 ranks.\n"
        "  -m MIN:MAX   message sizes, powers of two from MIN to MAX bytes,\n"
        "               0 <= MIN <= MAX, 1 <= MAX <= 2^30 (default 1:4194304)\n"
        "  -i N         iterations per size up to 8 KiB, 1..10^8\n"
        "               (default 1000 latency, 100 bandwidth)\n"
        "  -I N         iterations per size above 8 KiB, 1..10^8\n"
        "               (default 100 latency, 20 bandwidth)\n"
        "  -x N         untimed warm-up iterations, 0..10^8 (default iterations/10, >= 2)\n"
        "  -w N         bandwidth window, 1..4096 (default 64)\n"
        "  -b MiB       bandwidth: at most this many MiB sent per size, 1..2^20\n"
        "               (default 1024)\n"
        "  -k N         report the median of N batches, 1..1000 (default 1: the mean)\n"
        "  -h, --help   this text\n";

/* Prints "slimlink-osu-like: <message>" and the usage (rank 0), exits 2. */
static void die_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die_usage(const char *fmt, ...)
{
    if (rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "slimlink-osu-like: ");
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\n%s", usage_line);
    }
    MPI_Finalize();
    exit(2);
}

/* -m MIN:MAX, 0 <= MIN <= MAX, 1 <= MAX <= 2^30: 1 and the sizes set, else 0. */
static int parse_sizes(const char *s, options_t *o)
{
    char buf[64];
    char *colon;
    long a, b;

    snprintf(buf, sizeof(buf), "%s", s);
    colon = strchr(buf, ':');
    if (colon == NULL) {
        return 0;
    }
    *colon = '\0';
    if (!bench_parse_long(buf, 0, 1L << 30, &a) || !bench_parse_long(colon + 1, 1, 1L << 30, &b) ||
        a > b) {
        return 0;
    }
    o->min_size = (size_t)a;
    o->max_size = (size_t)b;
    return 1;
}

static const struct option long_options[] = {
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

static void parse(int argc, char **argv, options_t *o)
{
    int c;

    memset(o, 0, sizeof(*o));
    o->min_size    = 1;
    o->max_size    = 4u << 20;
    o->iters_small = -1; /* by mode, below */
    o->iters_large = -1;
    o->warmup      = -1;
    o->window      = 64;
    o->budget_mib  = 1024;
    o->batches     = 1;
    opterr         = 0; /* the messages are ours, from rank 0 only */
    while ((c = getopt_long(argc, argv, ":m:i:I:x:w:b:k:h", long_options, NULL)) != -1) {
        const char *val = optarg;

        switch (c) {
        case 'm':
            if (!parse_sizes(val, o)) {
                die_usage("-m %s: expected MIN:MAX, 0 <= MIN <= MAX, 1 <= MAX <= 1073741824", val);
            }
            break;
        case 'i':
            if (!bench_parse_long(val, 1, 100000000, &o->iters_small)) {
                die_usage("-i %s: expected an integer 1..100000000", val);
            }
            break;
        case 'I':
            if (!bench_parse_long(val, 1, 100000000, &o->iters_large)) {
                die_usage("-I %s: expected an integer 1..100000000", val);
            }
            break;
        case 'x':
            if (!bench_parse_long(val, 0, 100000000, &o->warmup)) {
                die_usage("-x %s: expected an integer 0..100000000", val);
            }
            break;
        case 'w':
            if (!bench_parse_long(val, 1, 4096, &o->window)) {
                die_usage("-w %s: expected an integer 1..4096", val);
            }
            break;
        case 'b':
            if (!bench_parse_long(val, 1, 1L << 20, &o->budget_mib)) {
                die_usage("-b %s: expected an integer 1..1048576 (MiB)", val);
            }
            break;
        case 'k':
            if (!bench_parse_long(val, 1, 1000, &o->batches)) {
                die_usage("-k %s: expected an integer 1..1000", val);
            }
            break;
        case 'h':
            if (rank == 0) {
                printf("%s%s", usage_line, help_text);
            }
            MPI_Finalize();
            exit(0);
        case ':': die_usage("%s needs a value", argv[optind - 1]);
        default: die_usage("unknown option %s", argv[optind - 1]);
        }
    }
    /* getopt_long moved the mode, wherever it was, to the end. */
    if (optind == argc) {
        die_usage("missing mode");
    }
    if (optind + 1 < argc) {
        die_usage("unexpected argument %s", argv[optind + 1]);
    }
    if (strcmp(argv[optind], "latency") == 0) {
        o->iters_small = o->iters_small > 0 ? o->iters_small : 1000;
        o->iters_large = o->iters_large > 0 ? o->iters_large : 100;
    } else if (strcmp(argv[optind], "bandwidth") == 0) {
        o->bandwidth   = 1;
        o->iters_small = o->iters_small > 0 ? o->iters_small : 100;
        o->iters_large = o->iters_large > 0 ? o->iters_large : 20;
    } else {
        die_usage("mode %s: expected latency or bandwidth", argv[optind]);
    }
}

/* `iters` ping-pongs; returns rank 0's elapsed seconds. */
static double pingpong(char *sbuf, char *rbuf, size_t size, long iters)
{
    const int peer = 1 - rank;
    double t0      = MPI_Wtime();

    for (long i = 0; i < iters; ++i) {
        if (rank == 0) {
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(rbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(sbuf, (int)size, MPI_CHAR, peer, 1, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

/* `iters` windows of `window` messages, each acknowledged; returns rank 0's
 * elapsed seconds. */
static double windows(char *sbuf, char *rbuf, size_t size, long iters, long window,
                      MPI_Request *req, MPI_Status *stat)
{
    const int peer      = 1 - rank;
    char ack[ACK_BYTES] = {0};
    double t0           = MPI_Wtime();

    for (long i = 0; i < iters; ++i) {
        for (long w = 0; w < window; ++w) {
            if (rank == 0) {
                MPI_Isend(sbuf, (int)size, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &req[w]);
            } else {
                MPI_Irecv(rbuf, (int)size, MPI_CHAR, peer, 100, MPI_COMM_WORLD, &req[w]);
            }
        }
        /* a status array, not MPI_STATUSES_IGNORE: GCC 12 misreads the
         * latter as a zero-sized array (-Wstringop-overflow) */
        MPI_Waitall((int)window, req, stat);
        if (rank == 0) {
            MPI_Recv(ack, ACK_BYTES, MPI_CHAR, peer, 101, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Send(ack, ACK_BYTES, MPI_CHAR, peer, 101, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One size: warm-up, then `iters` timed iterations in `batches` batches.
 * Returns the median over batches of the latency (us, one-way) or the
 * bandwidth (MB/s, 10^6 bytes per second); with one batch, the plain value. */
static double measure(const options_t *o, char *sbuf, char *rbuf, size_t size, long iters,
                      long warmup, long batches, MPI_Request *req, MPI_Status *stat,
                      double *scratch)
{
    MPI_Barrier(MPI_COMM_WORLD);
    if (o->bandwidth) {
        windows(sbuf, rbuf, size, warmup, o->window, req, stat);
    } else {
        pingpong(sbuf, rbuf, size, warmup);
    }
    for (long b = 0; b < batches; ++b) {
        /* spread the remainder over the first batches */
        long n = iters / batches + (b < iters % batches ? 1 : 0);
        if (o->bandwidth) {
            double t   = windows(sbuf, rbuf, size, n, o->window, req, stat);
            scratch[b] = (double)size * (double)o->window * (double)n / t / 1e6;
        } else {
            scratch[b] = pingpong(sbuf, rbuf, size, n) * 1e6 / (2.0 * (double)n);
        }
    }
    qsort(scratch, (size_t)batches, sizeof(double), cmp_double);
    return (batches % 2) ? scratch[batches / 2]
                         : 0.5 * (scratch[batches / 2 - 1] + scratch[batches / 2]);
}

int main(int argc, char **argv)
{
    options_t o;
    int nranks = 0;
    char *sbuf = NULL, *rbuf = NULL;
    MPI_Request *req = NULL;
    MPI_Status *stat = NULL;
    double *scratch  = NULL;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    parse(argc, argv, &o);
    if (nranks != 2) {
        die_usage("needs exactly 2 ranks");
    }
    if (posix_memalign((void **)&sbuf, 4096, o.max_size) != 0 ||
        posix_memalign((void **)&rbuf, 4096, o.max_size) != 0 ||
        (req = malloc(sizeof(*req) * (size_t)o.window)) == NULL ||
        (stat = malloc(sizeof(*stat) * (size_t)o.window)) == NULL ||
        (scratch = malloc(sizeof(*scratch) * (size_t)o.batches)) == NULL) {
        fprintf(stderr, "rank %d: cannot allocate buffers\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    memset(sbuf, 'a' + rank, o.max_size); /* touch every page before timing */
    memset(rbuf, 0, o.max_size);

    if (rank == 0) {
        printf("# slimlink-osu-like %s, 2 ranks, sizes %zu..%zu, iterations "
               "%ld (<= %u B) / %ld, window %ld, budget %ld MiB, %s\n",
               o.bandwidth ? "bandwidth" : "latency", o.min_size, o.max_size, o.iters_small,
               LARGE_MESSAGE, o.iters_large, o.window, o.budget_mib,
               o.batches > 1 ? "median of batches" : "mean");
        printf("# mode bytes value unit iterations\n");
        fflush(stdout);
    }

    /* The first size would otherwise also pay for connection wire-up and
     * for the scheduler spreading the two busy-polling ranks over cores. */
    MPI_Barrier(MPI_COMM_WORLD);
    pingpong(sbuf, rbuf, 1, 2000);

    for (size_t size = o.min_size; size <= o.max_size; size = (size == 0) ? 1 : size * 2) {
        long iters = size <= LARGE_MESSAGE ? o.iters_small : o.iters_large;
        long warmup, batches;
        double value;

        if (o.bandwidth) {
            if (size == 0) {
                continue;
            }
            long fit = (long)((double)o.budget_mib * (1 << 20) / ((double)size * (double)o.window));
            iters    = iters < fit ? iters : (fit < 2 ? 2 : fit);
        }
        warmup  = o.warmup >= 0 ? o.warmup : (iters / 10 < 2 ? 2 : iters / 10);
        batches = o.batches < iters ? o.batches : iters;
        value   = measure(&o, sbuf, rbuf, size, iters, warmup, batches, req, stat, scratch);
        if (rank == 0) {
            printf("%s %zu %.3f %s %ld\n", o.bandwidth ? "bandwidth" : "latency", size, value,
                   o.bandwidth ? "MB/s" : "us", iters);
            fflush(stdout);
        }
    }
    if (rank == 0) {
        printf("# done\n");
        fflush(stdout);
    }
    free(req);
    free(stat);
    free(scratch);
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}

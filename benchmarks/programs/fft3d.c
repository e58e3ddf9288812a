/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slimlink-fft: a distributed 3-D FFT Poisson solve inside a small
 * molecular-dynamics loop, run at full precision and again with the
 * transpose sends lossy-packed, to measure what packing does to the answer.
 *
 * The grid is N x N x N complex values on the unit box, split over the
 * ranks in slabs of N/P x-planes. A forward 3-D FFT does 1-D FFTs along z
 * and y on the slab, one all-to-all transpose to slabs of y-planes (each
 * rank sends N^3/P^2 complex values to every rank) and 1-D FFTs along x; the
 * inverse goes back the same way. That is the communication shape of the
 * reciprocal-space part of GROMACS (PME). The FFT is our own iterative
 * radix-2 one, so N is a power of two.
 *
 * Every step is a PME-like solve for 64 Gaussian charges (width 0.04,
 * alternating signs on a 4x4x4 lattice with a fixed jitter): spread the
 * charges to a density on the grid, forward FFT, multiply by the smoothed
 * Poisson kernel exp(-s^2 k^2 / 2) / k^2 (s = 0.04, zero at k = 0), inverse
 * FFT to the potential, force on each charge as the potential weighted by
 * the gradient of its Gaussian (3 x 64 doubles summed over the ranks), and a
 * symplectic Euler move (dt 0.02, unit masses, at rest at the start). An
 * error in one step's potential moves the charges and so changes every
 * later density, as in an MD run. With --keep K both transposes' send
 * buffers are marked with slim_mark_precision(K) for the second run, so over
 * the `slim` transport the ranks receive the complex values (pairs of
 * float64) with only K of 8 bytes each.
 *
 * usage: mpiexec -n P slimlink-fft [options]
 *   --n N             grid N x N x N, a power of two 8..256 (default 64),
 *                     divisible by P; the charges are resolved from N = 32
 *   --steps S         MD steps per run, 1..100000 (default 10)
 *   --keep K          0 (no packed run, the default) or 2..7: bytes kept per
 *                     float64 of the transpose sends in the packed run
 *   --mode M          truncate (default) | round
 *   --repeat R        run each variant R times, 1..1000 (default 1); the
 *                     time printed is the median, the fields are the last
 *   --wait W          yield (default): transposes by MPI_Ialltoall, force
 *                     sums by MPI_Iallreduce, waited for by MPI_Testall +
 *                     sched_yield, so more ranks than cores stay usable;
 *                     block: MPI_Alltoall and MPI_Allreduce. The messages
 *                     are the same.
 *   --json            one JSON line (schema slimlink.fft.v1) instead of
 *                     text: roundtrip_error, plane_wave_error, full/packed
 *                     {steps, seconds}, l2_rel_error, within_bound,
 *                     packing {the slim_packing_stats_t fields,
 *                     wire_payload_ratio}, ok
 *
 * It checks itself at full precision, before anything is marked: the
 * forward and inverse FFT of the initial density must give it back within
 * 1e-12 (L2, relative), and the forward FFT of the plane wave
 * exp(2 pi i (x + 2y + (N-3)z) / N) must be N^3 at k = (1, 2, N-3) and zero
 * elsewhere within 1e-12 N^3, which catches a transpose that puts an axis
 * in the wrong place. With --keep the final potential of the packed run
 * must be within 1 % (L2, relative) of the full-precision one: the
 * acceptance bound of the thesis.
 *
 * Exit status: 0 when every check holds, 1 when one fails, 2 on bad options.
 *
 * The packing counters printed (slim_packing_get, summed over ranks) cover
 * the packed run only. With --keep, UCX_TLS naming slim and no frame sent, a
 * warning says that nothing was packed; over another transport the program
 * runs the same, with identical runs.
 */
#define _POSIX_C_SOURCE 200809L /* posix_memalign, sched_yield */

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <mpi.h>
#include <stdarg.h>
#include <slimlink.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_options.h"
#include "mini_app.h"

#define ACCEPT_REL_ERROR 0.01 /* thesis: packed answer within 1 % */
#define CHECK_TOLERANCE 1e-12 /* the full-precision FFT checks */

#define PI 3.14159265358979323846
#define LATTICE 4                              /* charges per box edge */
#define NCHARGES (LATTICE * LATTICE * LATTICE) /* 64: neutral, alternating */
#define SIGMA 0.04                             /* charge width and kernel smoothing, box units */
#define CUTOFF \
    0.24            /* 6 SIGMA: a Gaussian is zero beyond, so below 1/2 the
                        nearest periodic image is the only one */
#define JITTER 0.05 /* lattice displacement, box units: breaks the symmetry */
#define DT \
    0.02 /* the fastest charge moves 2.5 cells of a 64^3 grid in
                        10 steps; total energy drifts 0.1 % per step */

typedef struct fft_options {
    long n;
    long steps;
    int keep; /* 0: no packed run */
    slim_round_t mode;
    long repeat;
    int json;
    int block; /* --wait block: blocking MPI calls */
} fft_options_t;

/* This rank's part of the grid. In real space, x-slab [x0, x0 + nl) stored
 * [x][y][z]; in k-space (between the transposes), y-slab [x0, x0 + nl) of
 * ky stored [ky][kx][kz]. Complex values are interleaved (re, im) doubles. */
typedef struct slabs {
    int n;
    int nl; /* N / P planes per rank */
    int x0; /* first plane: rank * nl */
    int rank, nranks;
    int block; /* wait in blocking MPI calls rather than test-and-yield */
} slabs_t;

/* The all-to-all buffers: one send buffer per transpose, so a mark covers
 * exactly the values that leave the rank in that transpose. */
typedef struct transpose {
    double *send_fwd; /* x-slabs to y-slabs */
    double *send_bwd; /* y-slabs back to x-slabs */
    double *recv;
} transpose_t;

/* A 1-D FFT of length n: bit reversal and twiddles, computed once. */
typedef struct fft_plan {
    int n;
    int *bitrev;
    double *twiddle; /* cos, sin of 2 pi k / n for k < n/2 */
    double *line;    /* one gathered strided line */
} fft_plan_t;

typedef struct charges {
    double q[NCHARGES];
    double r[NCHARGES][3];
    double v[NCHARGES][3];
    double f[NCHARGES][3];
} charges_t;

/* One Gaussian along the three axes, sampled at the grid points. */
typedef struct profile {
    double *g[3];  /* g[axis][i] */
    double *dg[3]; /* its derivative */
} profile_t;

typedef struct run_result {
    long steps;
    double seconds; /* median over --repeat runs, slowest rank */
} run_result_t;

static int rank = -1;

/* ------------------------------------------------------------ options */

static const char usage_line[] =
        "usage: mpiexec -n P slimlink-fft [--n N] [--steps S] [--keep K] "
        "[--mode truncate|round] [--repeat R] [--wait yield|block] [--json]\n";

static const char help_text[] =
        "A distributed 3-D FFT Poisson solve in a small MD loop, at full precision and\n"
        "with the transpose sends lossy-packed. Options take their value as '--opt V'\n"
        "or '--opt=V'.\n"
        "  --n N          grid N x N x N, a power of two 8..256 divisible by the number\n"
        "                 of ranks (default 64)\n"
        "  --steps S      MD steps per run, 1..100000 (default 10)\n"
        "  --keep K       0 (no packed run, the default) or 2..7 bytes kept per float64\n"
        "  --mode M       truncate (default) or round\n"
        "  --repeat R     run each variant R times, 1..1000 (default 1)\n"
        "  --wait W       yield (default) or block\n"
        "  --json         one JSON line (schema slimlink.fft.v1) instead of text\n"
        "  -h, --help     this text\n"
        "Exit status: 0 when every check holds, 1 when one fails, 2 on bad options.\n";

/* Prints "slimlink-fft: <message>" and the usage (rank 0), exits 2. */
static void usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void usage_error(const char *fmt, ...)
{
    if (rank == 0) {
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "slimlink-fft: ");
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\n%s", usage_line);
    }
    MPI_Finalize();
    exit(2);
}

enum { OPT_N = 256, OPT_STEPS, OPT_KEEP, OPT_MODE, OPT_WAIT, OPT_REPEAT, OPT_JSON };

static const struct option long_options[] = {
        {"n", required_argument, NULL, OPT_N},
        {"steps", required_argument, NULL, OPT_STEPS},
        {"keep", required_argument, NULL, OPT_KEEP},
        {"mode", required_argument, NULL, OPT_MODE},
        {"wait", required_argument, NULL, OPT_WAIT},
        {"repeat", required_argument, NULL, OPT_REPEAT},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
};

static void parse_options(int argc, char **argv, fft_options_t *o)
{
    long v;
    int c;

    o->n      = 64;
    o->steps  = 10;
    o->keep   = 0;
    o->mode   = SLIM_ROUND_TRUNCATE;
    o->repeat = 1;
    o->json   = 0;
    o->block  = 0;
    opterr    = 0; /* the messages are ours, from rank 0 only */
    while ((c = getopt_long(argc, argv, ":h", long_options, NULL)) != -1) {
        const char *val = optarg;

        switch (c) {
        case OPT_N:
            if (!bench_parse_long(val, 8, 256, &o->n) || (o->n & (o->n - 1)) != 0) {
                usage_error("--n %s: expected a power of two 8..256", val);
            }
            break;
        case OPT_STEPS:
            if (!bench_parse_long(val, 1, 100000, &o->steps)) {
                usage_error("--steps %s: expected an integer 1..100000", val);
            }
            break;
        case OPT_KEEP:
            if (!bench_parse_long(val, 0, 7, &v) || v == 1) {
                usage_error("--keep %s: expected 0 (full precision only) or 2..7", val);
            }
            o->keep = (int)v;
            break;
        case OPT_MODE:
            if (!bench_parse_round(val, &o->mode)) {
                usage_error("--mode %s: expected truncate or round", val);
            }
            break;
        case OPT_WAIT:
            if (!bench_parse_wait(val, &o->block)) {
                usage_error("--wait %s: expected yield or block", val);
            }
            break;
        case OPT_REPEAT:
            if (!bench_parse_long(val, 1, 1000, &o->repeat)) {
                usage_error("--repeat %s: expected an integer 1..1000", val);
            }
            break;
        case OPT_JSON: o->json = 1; break;
        case 'h': bench_help_exit(rank, usage_line, help_text);
        case ':': usage_error("%s needs a value", argv[optind - 1]);
        default: usage_error("unknown option %s", argv[optind - 1]);
        }
    }
    if (optind < argc) {
        usage_error("unexpected argument %s", argv[optind]);
    }
}

/* ------------------------------------------------------------ memory */

static slabs_t make_slabs(int n, int rank_, int nranks, int block)
{
    slabs_t s;

    s.n      = n;
    s.nl     = n / nranks;
    s.x0     = rank_ * s.nl;
    s.rank   = rank_;
    s.nranks = nranks;
    s.block  = block;
    return s;
}

/* Complex values in this rank's slab (either orientation). */
static size_t slab_len(const slabs_t *s) { return (size_t)s->nl * s->n * s->n; }

static int make_plan(int n, fft_plan_t *p)
{
    int bits = 0;

    while ((1 << bits) < n) {
        ++bits;
    }
    p->n      = n;
    p->bitrev = malloc(sizeof(int) * (size_t)n);
    if (p->bitrev == NULL || !alloc_doubles(&p->twiddle, (size_t)n) ||
        !alloc_doubles(&p->line, 2 * (size_t)n)) {
        return 0;
    }
    for (int i = 0; i < n; ++i) {
        int r = 0;
        for (int b = 0; b < bits; ++b) {
            r |= ((i >> b) & 1) << (bits - 1 - b);
        }
        p->bitrev[i] = r;
    }
    /* each twiddle straight from libm: a recurrence would lose the digits
     * the 1e-12 roundtrip check needs at N = 256 */
    for (int k = 0; k < n / 2; ++k) {
        p->twiddle[2 * k]     = cos(2 * PI * k / n);
        p->twiddle[2 * k + 1] = sin(2 * PI * k / n);
    }
    return 1;
}

static void free_plan(fft_plan_t *p)
{
    free(p->bitrev);
    free(p->twiddle);
    free(p->line);
}

/* ------------------------------------------------------------ 1-D FFT */

/* In place on n contiguous complex values: forward X_k = sum x_j e^{-2 pi i jk/n},
 * inverse with e^{+...}, unscaled. */
static void fft_line(const fft_plan_t *p, double *x, int inverse)
{
    const int n       = p->n;
    const double sign = inverse ? 1.0 : -1.0;

    for (int i = 0; i < n; ++i) {
        const int j = p->bitrev[i];
        if (i < j) {
            const double re = x[2 * i], im = x[2 * i + 1];
            x[2 * i]     = x[2 * j];
            x[2 * i + 1] = x[2 * j + 1];
            x[2 * j]     = re;
            x[2 * j + 1] = im;
        }
    }
    for (int len = 2; len <= n; len <<= 1) {
        const int half = len / 2, stride = n / len;
        for (int i = 0; i < n; i += len) {
            for (int j = 0; j < half; ++j) {
                const double wr = p->twiddle[2 * j * stride];
                const double wi = sign * p->twiddle[2 * j * stride + 1];
                double *a = x + 2 * (i + j), *b = a + 2 * half;
                const double vr = b[0] * wr - b[1] * wi, vi = b[0] * wi + b[1] * wr;
                b[0] = a[0] - vr;
                b[1] = a[1] - vi;
                a[0] += vr;
                a[1] += vi;
            }
        }
    }
}

/* The same on n complex values `stride` complex values apart. */
static void fft_strided(const fft_plan_t *p, double *x, size_t stride, int inverse)
{
    for (int i = 0; i < p->n; ++i) {
        p->line[2 * i]     = x[2 * i * stride];
        p->line[2 * i + 1] = x[2 * i * stride + 1];
    }
    fft_line(p, p->line, inverse);
    for (int i = 0; i < p->n; ++i) {
        x[2 * i * stride]     = p->line[2 * i];
        x[2 * i * stride + 1] = p->line[2 * i + 1];
    }
}

/* ------------------------------------------------------------ communication */

/* Block r of send goes to rank r, block s of recv comes from rank s; every
 * block holds nl x nl x N complex values. */
static void alltoall(const slabs_t *s, const double *send, double *recv)
{
    const int count = 2 * s->nl * s->nl * s->n;

    if (s->block) {
        MPI_Alltoall(send, count, MPI_DOUBLE, recv, count, MPI_DOUBLE, MPI_COMM_WORLD);
        return;
    }
    MPI_Request req;
    MPI_Ialltoall(send, count, MPI_DOUBLE, recv, count, MPI_DOUBLE, MPI_COMM_WORLD, &req);
    wait_yield(1, &req);
}

/* ------------------------------------------------------------ 3-D FFT */

/* Offset in doubles of the z-line at (plane, row) of a slab. */
static size_t line_at(const slabs_t *s, int plane, int row)
{
    return 2 * ((size_t)plane * s->n + (size_t)row) * (size_t)s->n;
}

/* Offset in doubles of the z-line (i, j) of block b of a transpose buffer. */
static size_t block_line_at(const slabs_t *s, int b, int i, int j)
{
    return 2 * (((size_t)b * s->nl + (size_t)i) * s->nl + (size_t)j) * (size_t)s->n;
}

/* Real-space x-slab [x][y][z] in `grid` to its transform as a y-slab
 * [ky][kx][kz], in place, unscaled. */
static void fft3d_forward(const slabs_t *s, const fft_plan_t *p, double *grid, const transpose_t *t)
{
    const int n = s->n, nl = s->nl;
    const size_t zbytes = 2 * (size_t)n * sizeof(double);

    for (size_t l = 0; l < (size_t)nl * n; ++l) {
        fft_line(p, grid + 2 * l * (size_t)n, 0);
    }
    for (int x = 0; x < nl; ++x) {
        for (int z = 0; z < n; ++z) {
            fft_strided(p, grid + line_at(s, x, 0) + 2 * (size_t)z, (size_t)n, 0);
        }
    }
    /* to rank r: the rows y in r's range of every local plane x */
    for (int r = 0; r < s->nranks; ++r) {
        for (int x = 0; x < nl; ++x) {
            for (int y = 0; y < nl; ++y) {
                memcpy(t->send_fwd + block_line_at(s, r, x, y), grid + line_at(s, x, r * nl + y),
                       zbytes);
            }
        }
    }
    alltoall(s, t->send_fwd, t->recv);
    for (int src = 0; src < s->nranks; ++src) {
        for (int x = 0; x < nl; ++x) {
            for (int y = 0; y < nl; ++y) {
                memcpy(grid + line_at(s, y, src * nl + x), t->recv + block_line_at(s, src, x, y),
                       zbytes);
            }
        }
    }
    for (int y = 0; y < nl; ++y) {
        for (int z = 0; z < n; ++z) {
            fft_strided(p, grid + line_at(s, y, 0) + 2 * (size_t)z, (size_t)n, 0);
        }
    }
}

/* The inverse of fft3d_forward, scaled by 1/N^3: y-slab [ky][kx][kz] back to
 * the x-slab [x][y][z]. */
static void fft3d_inverse(const slabs_t *s, const fft_plan_t *p, double *grid, const transpose_t *t)
{
    const int n = s->n, nl = s->nl;
    const size_t zbytes = 2 * (size_t)n * sizeof(double);
    const double scale  = 1.0 / ((double)n * n * n);

    for (int y = 0; y < nl; ++y) {
        for (int z = 0; z < n; ++z) {
            fft_strided(p, grid + line_at(s, y, 0) + 2 * (size_t)z, (size_t)n, 1);
        }
    }
    /* to rank r: the columns x in r's range of every local plane y */
    for (int r = 0; r < s->nranks; ++r) {
        for (int y = 0; y < nl; ++y) {
            for (int x = 0; x < nl; ++x) {
                memcpy(t->send_bwd + block_line_at(s, r, y, x), grid + line_at(s, y, r * nl + x),
                       zbytes);
            }
        }
    }
    alltoall(s, t->send_bwd, t->recv);
    for (int src = 0; src < s->nranks; ++src) {
        for (int y = 0; y < nl; ++y) {
            for (int x = 0; x < nl; ++x) {
                memcpy(grid + line_at(s, x, src * nl + y), t->recv + block_line_at(s, src, y, x),
                       zbytes);
            }
        }
    }
    for (int x = 0; x < nl; ++x) {
        for (int z = 0; z < n; ++z) {
            fft_strided(p, grid + line_at(s, x, 0) + 2 * (size_t)z, (size_t)n, 1);
        }
    }
    for (size_t l = 0; l < (size_t)nl * n; ++l) {
        double *line = grid + 2 * l * (size_t)n;
        fft_line(p, line, 1);
        for (int i = 0; i < 2 * n; ++i) {
            line[i] *= scale;
        }
    }
}

/* ------------------------------------------------------------ the physics */

/* Grid index to signed frequency times 2 pi (box length 1). */
static double wavenumber(int i, int n) { return 2 * PI * (i < n / 2 ? i : i - n); }

/* Multiplies the transform (y-slab [ky][kx][kz]) by the smoothed Poisson
 * kernel G(k) = exp(-SIGMA^2 k^2 / 2) / k^2, G(0) = 0: the potential of the
 * density (with -lap phi = rho) minus its mean. */
static void apply_kernel(const slabs_t *s, double *grid)
{
    const int n = s->n;

    for (int ky = 0; ky < s->nl; ++ky) {
        const double wy = wavenumber(s->x0 + ky, n);
        for (int kx = 0; kx < n; ++kx) {
            const double wx = wavenumber(kx, n);
            double *line    = grid + line_at(s, ky, kx);
            for (int kz = 0; kz < n; ++kz) {
                const double wz    = wavenumber(kz, n);
                const double k2    = wx * wx + wy * wy + wz * wz;
                const double green = k2 > 0 ? exp(-0.5 * SIGMA * SIGMA * k2) / k2 : 0.0;
                line[2 * kz] *= green;
                line[2 * kz + 1] *= green;
            }
        }
    }
}

/* [-1, 1) from an integer, the same on every rank and every machine. */
static double jitter(unsigned i)
{
    uint32_t h = (uint32_t)i * 2654435761u;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    return (double)(h & 0xffffu) / 32768.0 - 1.0;
}

/* Alternating charges on a jittered LATTICE^3 lattice, at rest. */
static void init_charges(charges_t *c)
{
    memset(c, 0, sizeof(*c));
    for (int i = 0; i < LATTICE; ++i) {
        for (int j = 0; j < LATTICE; ++j) {
            for (int k = 0; k < LATTICE; ++k) {
                const int id      = (i * LATTICE + j) * LATTICE + k;
                const int cell[3] = {i, j, k};
                c->q[id]          = (i + j + k) % 2 == 0 ? 1.0 : -1.0;
                for (int a = 0; a < 3; ++a) {
                    const double r = (cell[a] + 0.5) / LATTICE + JITTER * jitter(3u * id + a);
                    c->r[id][a]    = r - floor(r);
                }
            }
        }
    }
}

/* The normalized Gaussian of width SIGMA centred on r, and its derivative,
 * at the grid points of each axis (nearest periodic image, zero beyond
 * CUTOFF). */
static void sample_gaussian(int n, const double r[3], const profile_t *pr)
{
    const double norm = 1.0 / (sqrt(2 * PI) * SIGMA);

    for (int a = 0; a < 3; ++a) {
        for (int i = 0; i < n; ++i) {
            double d = (double)i / n - r[a];
            d -= floor(d + 0.5);
            if (fabs(d) > CUTOFF) {
                pr->g[a][i]  = 0.0;
                pr->dg[a][i] = 0.0;
                continue;
            }
            pr->g[a][i]  = norm * exp(-0.5 * d * d / (SIGMA * SIGMA));
            pr->dg[a][i] = -d / (SIGMA * SIGMA) * pr->g[a][i];
        }
    }
}

/* The charge density on this rank's x-slab, imaginary parts zero. */
static void spread(const slabs_t *s, const charges_t *c, double *grid, const profile_t *pr)
{
    const int n = s->n;

    memset(grid, 0, 2 * slab_len(s) * sizeof(double));
    for (int i = 0; i < NCHARGES; ++i) {
        sample_gaussian(n, c->r[i], pr);
        for (int x = 0; x < s->nl; ++x) {
            const double wx = c->q[i] * pr->g[0][s->x0 + x];
            if (wx == 0.0) {
                continue;
            }
            for (int y = 0; y < n; ++y) {
                const double wxy = wx * pr->g[1][y];
                if (wxy == 0.0) {
                    continue;
                }
                double *line = grid + line_at(s, x, y);
                for (int z = 0; z < n; ++z) {
                    line[2 * z] += wxy * pr->g[2][z];
                }
            }
        }
    }
}

/* F_i = q_i * integral of grad g_i(x - r_i) phi(x) dx (the gradient of the
 * energy, by parts), phi the real part of this rank's x-slab; summed over
 * the ranks. */
static void compute_forces(const slabs_t *s, charges_t *c, const double *grid, const profile_t *pr)
{
    const int n       = s->n;
    const double cell = 1.0 / ((double)n * n * n);

    for (int i = 0; i < NCHARGES; ++i) {
        double f[3] = {0.0, 0.0, 0.0};
        sample_gaussian(n, c->r[i], pr);
        for (int x = 0; x < s->nl; ++x) {
            const double gx = pr->g[0][s->x0 + x], dgx = pr->dg[0][s->x0 + x];
            if (gx == 0.0) {
                continue;
            }
            for (int y = 0; y < n; ++y) {
                const double gy = pr->g[1][y], dgy = pr->dg[1][y];
                if (gy == 0.0) {
                    continue;
                }
                const double *line = grid + line_at(s, x, y);
                double sum = 0.0, dsum = 0.0;
                for (int z = 0; z < n; ++z) {
                    sum += pr->g[2][z] * line[2 * z];
                    dsum += pr->dg[2][z] * line[2 * z];
                }
                f[0] += dgx * gy * sum;
                f[1] += gx * dgy * sum;
                f[2] += gx * gy * dsum;
            }
        }
        for (int a = 0; a < 3; ++a) {
            c->f[i][a] = c->q[i] * cell * f[a];
        }
    }
    sum_all_ranks(s->block, &c->f[0][0], 3 * NCHARGES);
}

/* Symplectic Euler, unit masses, positions wrapped into the box. */
static void move_charges(charges_t *c)
{
    for (int i = 0; i < NCHARGES; ++i) {
        for (int a = 0; a < 3; ++a) {
            c->v[i][a] += DT * c->f[i][a];
            const double r = c->r[i][a] + DT * c->v[i][a];
            c->r[i][a]     = r - floor(r);
        }
    }
}

/* Workspace of one run. */
typedef struct fft_work {
    fft_plan_t plan;
    transpose_t t;
    profile_t pr;
    double *grid;
    charges_t charges;
} fft_work_t;

/* `steps` MD steps from the initial charges; leaves the potential of the
 * last step in w->grid (x-slab, real parts). The transpose buffers are used
 * as they are: marking them is the caller's business. */
static void simulate(const slabs_t *s, fft_work_t *w, long steps)
{
    init_charges(&w->charges);
    for (long k = 0; k < steps; ++k) {
        spread(s, &w->charges, w->grid, &w->pr);
        fft3d_forward(s, &w->plan, w->grid, &w->t);
        apply_kernel(s, w->grid);
        fft3d_inverse(s, &w->plan, w->grid, &w->t);
        compute_forces(s, &w->charges, w->grid, &w->pr);
        move_charges(&w->charges);
    }
}

/* ------------------------------------------------------------ checks */

/* ||ifft(fft(rho)) - rho|| / ||rho|| for the initial density, over all ranks. */
static double roundtrip_error(const slabs_t *s, fft_work_t *w, double *scratch)
{
    const size_t len = slab_len(s);
    double sums[2]   = {0.0, 0.0};

    init_charges(&w->charges);
    spread(s, &w->charges, w->grid, &w->pr);
    for (size_t i = 0; i < len; ++i) {
        scratch[i] = w->grid[2 * i];
    }
    fft3d_forward(s, &w->plan, w->grid, &w->t);
    fft3d_inverse(s, &w->plan, w->grid, &w->t);
    for (size_t i = 0; i < len; ++i) {
        const double dr = w->grid[2 * i] - scratch[i], di = w->grid[2 * i + 1];
        sums[0] += dr * dr + di * di;
        sums[1] += scratch[i] * scratch[i];
    }
    sum_all_ranks(s->block, sums, 2);
    return sqrt(sums[0] / sums[1]);
}

/* max |F(k) - N^3 delta(k - k0)| / N^3 for the plane wave e^{2 pi i k0.x/N},
 * k0 = (1, 2, N-3): three different frequencies, one of them negative, so a
 * wrong transpose, axis or sign moves the peak. */
static double plane_wave_error(const slabs_t *s, fft_work_t *w)
{
    const int n         = s->n;
    const int k0[3]     = {1, 2, n - 3};
    const double volume = (double)n * n * n;
    double err          = 0.0;

    for (int x = 0; x < s->nl; ++x) {
        for (int y = 0; y < n; ++y) {
            double *line = w->grid + line_at(s, x, y);
            for (int z = 0; z < n; ++z) {
                /* the phase reduced mod n first: exact arguments to cos/sin */
                const long m = ((long)k0[0] * (s->x0 + x) + (long)k0[1] * y + (long)k0[2] * z) % n;
                line[2 * z]  = cos(2 * PI * (double)m / n);
                line[2 * z + 1] = sin(2 * PI * (double)m / n);
            }
        }
    }
    fft3d_forward(s, &w->plan, w->grid, &w->t);
    for (int ky = 0; ky < s->nl; ++ky) {
        for (int kx = 0; kx < n; ++kx) {
            const double *line = w->grid + line_at(s, ky, kx);
            for (int kz = 0; kz < n; ++kz) {
                const int peak  = kx == k0[0] && s->x0 + ky == k0[1] && kz == k0[2];
                const double dr = line[2 * kz] - (peak ? volume : 0.0), di = line[2 * kz + 1];
                const double e = sqrt(dr * dr + di * di) / volume;
                err            = e > err ? e : err;
            }
        }
    }
    MPI_Allreduce(MPI_IN_PLACE, &err, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return err;
}

/* ||a - b|| / ||b|| over all ranks. */
static double relative_error(const slabs_t *s, const double *a, const double *b)
{
    const size_t len = slab_len(s);
    double sums[2]   = {0.0, 0.0};

    for (size_t i = 0; i < len; ++i) {
        const double d = a[i] - b[i];
        sums[0] += d * d;
        sums[1] += b[i] * b[i];
    }
    sum_all_ranks(s->block, sums, 2);
    return sums[1] > 0 ? sqrt(sums[0] / sums[1]) : sqrt(sums[0]);
}

/* Runs `repeat` times (for timing; the runs are identical), marks both
 * transpose send buffers for the duration when keep > 0, and copies the
 * final potential to phi. *stats gets the packing counters of the marked
 * runs, summed over ranks. Returns 0, or -1 when marking failed. */
static int run_steps(const slabs_t *s, const fft_options_t *o, int keep, fft_work_t *w, double *phi,
                     run_result_t *out, slim_packing_stats_t *stats)
{
    const size_t len = slab_len(s), bytes = 2 * len * sizeof(double);
    double *times = malloc(sizeof(double) * (size_t)o->repeat);
    slim_packing_stats_t before, after;
    run_result_t res = {o->steps, 0.0};
    int ok           = 1;

    if (times == NULL) {
        return -1;
    }
    memset(&before, 0, sizeof(before));
    memset(&after, 0, sizeof(after));
    if (keep > 0) {
        slim_status_t s1 = slim_mark_precision(w->t.send_fwd, bytes, keep, o->mode);
        slim_status_t s2 = slim_mark_precision(w->t.send_bwd, bytes, keep, o->mode);
        if (s1 != SLIM_OK || s2 != SLIM_OK) {
            fprintf(stderr, "slimlink-fft: rank %d: slim_mark_precision failed: %s\n", rank,
                    slim_status_string(s1 != SLIM_OK ? s1 : s2));
            ok = 0;
        }
    }
    /* every rank must agree before anyone sends marked data */
    MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (ok) {
        slim_packing_get(&before);
        for (long k = 0; k < o->repeat; ++k) {
            MPI_Barrier(MPI_COMM_WORLD);
            const double t0 = MPI_Wtime();
            simulate(s, w, o->steps);
            double t = MPI_Wtime() - t0;
            MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            times[k] = t;
        }
        slim_packing_get(&after);
    }
    if (keep > 0) {
        slim_unmark(w->t.send_fwd);
        slim_unmark(w->t.send_bwd);
    }
    if (!ok) {
        free(times);
        return -1;
    }
    qsort(times, (size_t)o->repeat, sizeof(double), cmp_double);
    res.seconds = times[o->repeat / 2];
    free(times);
    for (size_t i = 0; i < len; ++i) {
        phi[i] = w->grid[2 * i];
    }
    sum_packing_delta(&before, &after, stats);
    *out = res;
    return 0;
}

/* ------------------------------------------------------------ output */

static void print_text(const fft_options_t *o, int nranks, double roundtrip, double plane,
                       const run_result_t *full, const run_result_t *packed, double err,
                       const slim_packing_stats_t *s)
{
    printf("# slimlink-fft: 3-D FFT %ld^3 complex, %d ranks (slabs of %ld planes), "
           "%d charges, dt %g, steps %ld, repeat %ld, wait %s\n",
           o->n, nranks, o->n / nranks, NCHARGES, DT, o->steps, o->repeat,
           o->block ? "block" : "yield");
    printf("check    roundtrip error %.3e  plane wave error %.3e  %s (bound %g)\n", roundtrip,
           plane, roundtrip < CHECK_TOLERANCE && plane < CHECK_TOLERANCE ? "ok" : "FAILED",
           CHECK_TOLERANCE);
    printf("full     steps %6ld  %.3f s\n", full->steps, full->seconds);
    if (o->keep == 0) {
        return;
    }
    printf("packed   steps %6ld  %.3f s  (transposes keep %d, %s)\n", packed->steps,
           packed->seconds, o->keep, mode_name(o->mode));
    printf("error    ||phi_packed - phi_full|| / ||phi_full|| = %.3e  %s 1%% bound\n", err,
           err <= ACCEPT_REL_ERROR ? "within" : "OUTSIDE");
    char ratio[32] = "-";
    if (s->frames_sent > 0) {
        snprintf(ratio, sizeof(ratio), "%.3f", wire_ratio(s));
    }
    printf("packing  frames_sent %llu  payload_bytes %llu  wire_bytes %llu  marked_bytes %llu  "
           "packed_bytes %llu  edge_bytes %llu  missed_bytes %llu  wire/payload %s\n",
           (unsigned long long)s->frames_sent, (unsigned long long)s->payload_bytes,
           (unsigned long long)s->wire_bytes, (unsigned long long)s->marked_bytes,
           (unsigned long long)s->packed_bytes, (unsigned long long)s->edge_bytes,
           (unsigned long long)s->missed_bytes, ratio);
}

static void print_result_json(const char *name, const run_result_t *r)
{
    printf("\"%s\":{\"steps\":%ld,\"seconds\":%.6f}", name, r->steps, r->seconds);
}

static void print_json(const fft_options_t *o, int nranks, double roundtrip, double plane,
                       const run_result_t *full, const run_result_t *packed, double err,
                       const slim_packing_stats_t *s, int ok)
{
    printf("{\"schema\":\"slimlink.fft.v1\",\"n\":%ld,\"ranks\":%d,\"charges\":%d,\"dt\":%g,"
           "\"steps\":%ld,\"repeat\":%ld,\"wait\":\"%s\",\"keep\":%d,\"mode\":\"%s\","
           "\"roundtrip_error\":%.6e,\"plane_wave_error\":%.6e,\"check_bound\":%g,",
           o->n, nranks, NCHARGES, DT, o->steps, o->repeat, o->block ? "block" : "yield", o->keep,
           mode_name(o->mode), roundtrip, plane, CHECK_TOLERANCE);
    print_result_json("full", full);
    if (o->keep > 0) {
        printf(",");
        print_result_json("packed", packed);
        printf(",\"l2_rel_error\":%.6e,\"within_bound\":%s,\"bound\":%g,"
               "\"packing\":{\"frames_sent\":%llu,\"payload_bytes\":%llu,\"wire_bytes\":%llu,"
               "\"marked_bytes\":%llu,\"packed_bytes\":%llu,\"edge_bytes\":%llu,"
               "\"missed_bytes\":%llu,\"frames_received\":%llu,\"frames_rejected\":%llu,"
               "\"wire_payload_ratio\":%.6f}",
               err, err <= ACCEPT_REL_ERROR ? "true" : "false", ACCEPT_REL_ERROR,
               (unsigned long long)s->frames_sent, (unsigned long long)s->payload_bytes,
               (unsigned long long)s->wire_bytes, (unsigned long long)s->marked_bytes,
               (unsigned long long)s->packed_bytes, (unsigned long long)s->edge_bytes,
               (unsigned long long)s->missed_bytes, (unsigned long long)s->frames_received,
               (unsigned long long)s->frames_rejected, wire_ratio(s));
    }
    printf(",\"ok\":%s}\n", ok ? "true" : "false");
}

/* ------------------------------------------------------------ main */

static int alloc_work(const slabs_t *s, fft_work_t *w)
{
    const size_t len = 2 * slab_len(s);
    int ok           = make_plan(s->n, &w->plan) && alloc_doubles(&w->grid, len) &&
             alloc_doubles(&w->t.send_fwd, len) && alloc_doubles(&w->t.send_bwd, len) &&
             alloc_doubles(&w->t.recv, len);
    for (int a = 0; a < 3 && ok; ++a) {
        ok = alloc_doubles(&w->pr.g[a], (size_t)s->n) && alloc_doubles(&w->pr.dg[a], (size_t)s->n);
    }
    return ok;
}

static void free_work(fft_work_t *w)
{
    free_plan(&w->plan);
    free(w->grid);
    free(w->t.send_fwd);
    free(w->t.send_bwd);
    free(w->t.recv);
    for (int a = 0; a < 3; ++a) {
        free(w->pr.g[a]);
        free(w->pr.dg[a]);
    }
}

int main(int argc, char **argv)
{
    fft_options_t o;
    int nranks = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    parse_options(argc, argv, &o);
    if (o.n % nranks != 0) {
        usage_error("--n %ld: must be divisible by the number of ranks (%d)", o.n, nranks);
    }

    const slabs_t s = make_slabs((int)o.n, rank, nranks, o.block);
    fft_work_t w;
    double *phi_full = NULL, *phi_packed = NULL;
    memset(&w, 0, sizeof(w));
    const int alloc_ok = alloc_work(&s, &w) && alloc_doubles(&phi_full, slab_len(&s)) &&
                         alloc_doubles(&phi_packed, slab_len(&s));
    if (!alloc_ok) {
        fprintf(stderr, "slimlink-fft: rank %d: out of memory for a %ld^3 grid\n", rank, o.n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    /* the checks, at full precision: also the connection wire-up, outside
     * the timed runs */
    const double roundtrip = roundtrip_error(&s, &w, phi_full);
    const double plane     = plane_wave_error(&s, &w);
    const int checks_ok    = roundtrip < CHECK_TOLERANCE && plane < CHECK_TOLERANCE;

    run_result_t full, packed = {0, 0.0};
    slim_packing_stats_t unused, stats;
    double err = 0.0;
    int ok     = run_steps(&s, &o, 0, &w, phi_full, &full, &unused) == 0;
    memset(&stats, 0, sizeof(stats));
    if (ok && o.keep > 0) {
        ok  = run_steps(&s, &o, o.keep, &w, phi_packed, &packed, &stats) == 0;
        err = relative_error(&s, phi_packed, phi_full);
    }
    const int full_ok   = ok && checks_ok;
    const int packed_ok = o.keep == 0 || (ok && err <= ACCEPT_REL_ERROR);

    if (rank == 0 && ok) {
        if (o.json) {
            print_json(&o, nranks, roundtrip, plane, &full, &packed, err, &stats,
                       full_ok && packed_ok);
        } else {
            print_text(&o, nranks, roundtrip, plane, &full, &packed, err, &stats);
        }
        const char *tls = getenv("UCX_TLS");
        if (o.keep > 0 && stats.frames_sent == 0 && tls != NULL && strstr(tls, "slim") != NULL) {
            fprintf(stderr,
                    "slimlink-fft: warning: UCX_TLS=%s names slim but no packing frame was sent: "
                    "the transposes travelled at full precision (is the transport built with "
                    "packing, and UCX_SLIM_PACKING not off?)\n",
                    tls);
            if (stats.missed_bytes > 0) {
                fprintf(stderr,
                        "slimlink-fft: warning: %llu marked bytes were sent unpacked: "
                        "UCX_SLIM_PACKING=on makes slim steer UCP to sends it can pack\n",
                        (unsigned long long)stats.missed_bytes);
            }
        }
        if (!checks_ok) {
            fprintf(stderr,
                    "slimlink-fft: FAIL: the full-precision FFT is wrong: roundtrip error %.3e, "
                    "plane wave error %.3e (both must be below %g)\n",
                    roundtrip, plane, CHECK_TOLERANCE);
        }
        if (o.keep > 0 && !(err <= ACCEPT_REL_ERROR)) {
            fprintf(stderr,
                    "slimlink-fft: FAIL: packed potential differs by %.3e (L2, relative), "
                    "above the 1%% bound\n",
                    err);
        }
        fflush(stdout);
    }

    free(phi_packed);
    free(phi_full);
    free_work(&w);
    MPI_Finalize();
    return full_ok && packed_ok ? 0 : 1;
}

/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Collectives over the `slim` transport (run with 4 ranks; any count >= 2
 * works). MPICH turns each of them into point-to-point messages, so they
 * exercise many concurrent endpoints and message patterns at once.
 *
 * Alltoall, Alltoallv (uneven and zero counts, gaps between blocks),
 * Allreduce (sum of doubles whose sums are exact in any order, and of ints),
 * Bcast (several sizes and roots) and Allgather; every element is checked.
 *
 * Then every rank snapshots slim_traffic_get() before any further MPI
 * traffic, and the ranks check that `slim` carried traffic on every rank and
 * at least the bytes each collective must move between ranks, whatever its
 * algorithm (see the `must_receive` comments below).
 */
#include "mpi_test_util.h"

static int nranks;
/* Each rank's share of the lower bound on the bytes moved between ranks. */
static uint64_t must_receive;

static int32_t ival(uint64_t tag, uint64_t src, uint64_t dst, uint64_t index)
{
    return (int32_t)mt_mix((tag << 56) ^ (src << 48) ^ (dst << 40) ^ index);
}

static void check_ints(const int32_t *got, size_t n, uint64_t tag, uint64_t src, uint64_t dst,
                       const char *what)
{
    size_t bad = 0;

    for (size_t k = 0; k < n; ++k) {
        int32_t want = ival(tag, src, dst, k);
        if (got[k] != want) {
            if (bad < 3) {
                mt_fail("%s: element %zu of %zu from rank %llu is %d, "
                        "expected %d",
                        what, k, n, (unsigned long long)src, got[k], want);
            }
            ++bad;
        }
    }
    if (bad > 3) {
        mt_fail("%s: %zu of %zu elements from rank %llu differ in total", what, bad, n,
                (unsigned long long)src);
    }
}

static void test_alltoall(int count)
{
    const uint64_t tag = 1;
    int32_t *sbuf      = mt_xmalloc(sizeof(int32_t) * (size_t)count * nranks);
    int32_t *rbuf      = mt_xmalloc(sizeof(int32_t) * (size_t)count * nranks);
    char what[64];

    snprintf(what, sizeof(what), "Alltoall of %d ints per block", count);
    for (int j = 0; j < nranks; ++j) {
        for (int k = 0; k < count; ++k) {
            sbuf[(size_t)j * count + k] = ival(tag, mt_rank, j, k);
        }
    }
    memset(rbuf, 0xa5, sizeof(int32_t) * (size_t)count * nranks);
    MT_CHECK_MPI(MPI_Alltoall(sbuf, count, MPI_INT32_T, rbuf, count, MPI_INT32_T, MPI_COMM_WORLD));
    for (int i = 0; i < nranks; ++i) {
        check_ints(rbuf + (size_t)i * count, count, tag, i, mt_rank, what);
    }
    /* Only this rank holds its blocks for the other ranks: they must leave. */
    must_receive += (uint64_t)(nranks - 1) * count * sizeof(int32_t);
    free(sbuf);
    free(rbuf);
}

/* Elements rank `src` sends to rank `dst` in Alltoallv: uneven, some zero. */
static int v_count(int src, int dst, int scale)
{
    return ((src + 2 * dst) % 4) * scale + ((src * nranks + dst) % 3) * 17;
}

static void test_alltoallv(int scale)
{
    const uint64_t tag = 2;
    const int gap      = 5; /* elements between blocks, must stay untouched */
    int *scount        = mt_xmalloc(sizeof(int) * nranks);
    int *sdispl        = mt_xmalloc(sizeof(int) * nranks);
    int *rcount        = mt_xmalloc(sizeof(int) * nranks);
    int *rdispl        = mt_xmalloc(sizeof(int) * nranks);
    int stotal = 0, rtotal = 0;
    int32_t *sbuf, *rbuf;
    const int32_t poison = (int32_t)0xa5a5a5a5;
    char what[64];

    snprintf(what, sizeof(what), "Alltoallv with scale %d", scale);
    for (int j = 0; j < nranks; ++j) {
        scount[j] = v_count(mt_rank, j, scale);
        sdispl[j] = stotal;
        stotal += scount[j] + gap;
        rcount[j] = v_count(j, mt_rank, scale);
        rdispl[j] = rtotal;
        rtotal += rcount[j] + gap;
    }
    sbuf = mt_xmalloc(sizeof(int32_t) * (size_t)stotal);
    rbuf = mt_xmalloc(sizeof(int32_t) * (size_t)rtotal);
    for (int k = 0; k < stotal; ++k) {
        sbuf[k] = poison;
    }
    for (int k = 0; k < rtotal; ++k) {
        rbuf[k] = poison;
    }
    for (int j = 0; j < nranks; ++j) {
        for (int k = 0; k < scount[j]; ++k) {
            sbuf[sdispl[j] + k] = ival(tag, mt_rank, j, k);
        }
    }
    MT_CHECK_MPI(MPI_Alltoallv(sbuf, scount, sdispl, MPI_INT32_T, rbuf, rcount, rdispl, MPI_INT32_T,
                               MPI_COMM_WORLD));
    for (int i = 0; i < nranks; ++i) {
        check_ints(rbuf + rdispl[i], rcount[i], tag, i, mt_rank, what);
        for (int k = 0; k < gap; ++k) {
            if (rbuf[rdispl[i] + rcount[i] + k] != poison) {
                mt_fail("%s: the gap after the block from rank %d was "
                        "overwritten at element %d",
                        what, i, k);
                break;
            }
        }
        if (i != mt_rank) {
            must_receive += (uint64_t)scount[i] * sizeof(int32_t);
        }
    }
    free(sbuf);
    free(rbuf);
    free(scount);
    free(sdispl);
    free(rcount);
    free(rdispl);
}

/* Multiples of 0.25 far below 2^53: every partial sum is exact, so the
 * result does not depend on the reduction order MPICH chooses. */
static double dval(int rank, int k)
{
    return 0.25 * (double)((k % 1024) * (rank + 1)) + 0.5 * rank;
}

static void test_allreduce_double(int count)
{
    double *in  = mt_xmalloc(sizeof(double) * (size_t)count);
    double *out = mt_xmalloc(sizeof(double) * (size_t)count);
    size_t bad  = 0;

    for (int k = 0; k < count; ++k) {
        in[k]  = dval(mt_rank, k);
        out[k] = -1.0;
    }
    MT_CHECK_MPI(MPI_Allreduce(in, out, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD));
    for (int k = 0; k < count; ++k) {
        double want = 0.0;
        for (int r = 0; r < nranks; ++r) {
            want += dval(r, k);
        }
        if (out[k] != want && bad++ < 3) {
            mt_fail("Allreduce(MPI_SUM) of %d doubles: element %d is %.17g, "
                    "expected %.17g",
                    count, k, out[k], want);
        }
    }
    if (bad > 3) {
        mt_fail("Allreduce(MPI_SUM) of %d doubles: %zu elements differ", count, bad);
    }
    /* This rank holds none of the other ranks' values: for each element it
     * must receive at least one element's worth of their contribution. */
    must_receive += (uint64_t)count * sizeof(double);
    free(in);
    free(out);
}

static int32_t aval(int rank, int k) { return (int32_t)((k % 1000) * (rank + 1) - rank); }

static void test_allreduce_int(int count)
{
    int32_t *in  = mt_xmalloc(sizeof(int32_t) * (size_t)count);
    int32_t *out = mt_xmalloc(sizeof(int32_t) * (size_t)count);
    size_t bad   = 0;

    for (int k = 0; k < count; ++k) {
        in[k]  = aval(mt_rank, k);
        out[k] = -1;
    }
    MT_CHECK_MPI(MPI_Allreduce(in, out, count, MPI_INT32_T, MPI_SUM, MPI_COMM_WORLD));
    for (int k = 0; k < count; ++k) {
        int32_t want = 0;
        for (int r = 0; r < nranks; ++r) {
            want += aval(r, k);
        }
        if (out[k] != want && bad++ < 3) {
            mt_fail("Allreduce(MPI_SUM) of %d ints: element %d is %d, "
                    "expected %d",
                    count, k, out[k], want);
        }
    }
    if (bad > 3) {
        mt_fail("Allreduce(MPI_SUM) of %d ints: %zu elements differ", count, bad);
    }
    must_receive += (uint64_t)count * sizeof(int32_t); /* as for doubles */
    free(in);
    free(out);
}

static void test_bcast(size_t bytes, int root)
{
    uint8_t *buf = mt_xmalloc(bytes);
    char what[64];

    snprintf(what, sizeof(what), "Bcast of %zu bytes from root %d", bytes, root);
    if (mt_rank == root) {
        mt_fill_bytes(buf, bytes, bytes, (uint64_t)root, 3);
    } else {
        memset(buf, 0xa5, bytes);
    }
    MT_CHECK_MPI(MPI_Bcast(buf, (int)bytes, MPI_BYTE, root, MPI_COMM_WORLD));
    mt_check_bytes(buf, bytes, bytes, (uint64_t)root, 3, what);
    if (mt_rank != root) {
        must_receive += bytes; /* only the root had the data */
    }
    free(buf);
}

static void test_allgather(int count)
{
    const uint64_t tag = 4;
    int32_t *sbuf      = mt_xmalloc(sizeof(int32_t) * (size_t)count);
    int32_t *rbuf      = mt_xmalloc(sizeof(int32_t) * (size_t)count * nranks);
    char what[64];

    snprintf(what, sizeof(what), "Allgather of %d ints per rank", count);
    for (int k = 0; k < count; ++k) {
        sbuf[k] = ival(tag, mt_rank, 0, k);
    }
    memset(rbuf, 0xa5, sizeof(int32_t) * (size_t)count * nranks);
    MT_CHECK_MPI(MPI_Allgather(sbuf, count, MPI_INT32_T, rbuf, count, MPI_INT32_T, MPI_COMM_WORLD));
    for (int i = 0; i < nranks; ++i) {
        check_ints(rbuf + (size_t)i * count, count, tag, i, 0, what);
    }
    must_receive += (uint64_t)(nranks - 1) * count * sizeof(int32_t);
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    static const int block_counts[]   = {1, 256, 16384}; /* 4 B .. 64 KiB */
    static const int v_scales[]       = {1, 300, 6000};
    static const int double_counts[]  = {1, 1000, 131072}; /* .. 1 MiB */
    static const int int_counts[]     = {1, 4096, 65536};
    static const size_t bcast_bytes[] = {1, 1000, 65536, 1u << 20};
    mt_traffic_summary_t snap;
    int rc;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (nranks < 2 || argc != 1) {
        if (mt_rank == 0) {
            fprintf(stderr, "usage: mpiexec -n 4 %s (needs >= 2 ranks)\n", argv[0]);
        }
        MPI_Finalize();
        return 2;
    }

    for (size_t i = 0; i < sizeof(block_counts) / sizeof(int); ++i) {
        test_alltoall(block_counts[i]);
    }
    for (size_t i = 0; i < sizeof(v_scales) / sizeof(int); ++i) {
        test_alltoallv(v_scales[i]);
    }
    for (size_t i = 0; i < sizeof(double_counts) / sizeof(int); ++i) {
        test_allreduce_double(double_counts[i]);
    }
    for (size_t i = 0; i < sizeof(int_counts) / sizeof(int); ++i) {
        test_allreduce_int(int_counts[i]);
    }
    for (size_t i = 0; i < sizeof(bcast_bytes) / sizeof(size_t); ++i) {
        test_bcast(bcast_bytes[i], (int)(i % (size_t)nranks));
    }
    for (size_t i = 0; i < sizeof(block_counts) / sizeof(int); ++i) {
        test_allgather(block_counts[i]);
    }
    if (mt_rank == 0) {
        printf("collectives: Alltoall, Alltoallv, Allreduce, Bcast, Allgather "
               "done on %d ranks\n",
               nranks);
        fflush(stdout);
    }

    /* No MPI traffic between the last collective and this snapshot. */
    snap = mt_traffic_snapshot();
    mt_check_traffic(&snap, must_receive, "collectives");

    rc = mt_finish("collectives");
    MPI_Finalize();
    return rc;
}

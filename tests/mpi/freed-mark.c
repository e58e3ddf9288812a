/* SPDX-License-Identifier: BSD-3-Clause */
/* Memory released while still marked must lose its marks:
 * rank 0 marks a float64 buffer and sends it (it must arrive packed, so
 * the marking is live), frees it without slim_unmark(), takes the same block
 * back from malloc() for int64 data and sends that: it must arrive bit for
 * bit. The same after realloc() of a marked block. Run with
 * UCX_SLIM_PACKING=on on 2 ranks (tests/mpi/freed-mark.test). */
#include <mpi.h>
#include <stdint.h>

#include "mpi_test_util.h"

enum { N = 1000 };

/* Rank 0 sends `n` doubles from buf; rank 1 receives and compares them with
 * `expected` (what it computes for itself). */
static void send_and_check(void *buf, const double *expected, const char *what)
{
    if (mt_rank == 0) {
        MT_CHECK_MPI(MPI_Send(buf, N, MPI_DOUBLE, 1, 0, MPI_COMM_WORLD));
    } else {
        double got[N];
        int wrong = 0, first = -1;

        MT_CHECK_MPI(MPI_Recv(got, N, MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        for (int i = 0; i < N; ++i) {
            if (memcmp(&got[i], &expected[i], sizeof(double)) != 0) {
                if (first < 0) first = i;
                ++wrong;
            }
        }
        if (wrong) {
            uint64_t g, e;
            memcpy(&g, &got[first], 8);
            memcpy(&e, &expected[first], 8);
            mt_fail("%s: %d of %d values differ from what was expected; the first, [%d], "
                    "arrived as 0x%016llx, expected 0x%016llx",
                    what, wrong, N, first, (unsigned long long)g, (unsigned long long)e);
        } else {
            printf("%s: all %d values as expected\n", what, N);
            fflush(stdout);
        }
    }
}

static void fill_doubles(double *d)
{
    for (int i = 0; i < N; ++i)
        d[i] = 1.0 / (3.0 + i);
}

/* int64 data seen as doubles (what rank 1 expects, bit for bit). */
static void fill_integers(void *buf)
{
    for (int64_t i = 0; i < N; ++i) {
        const int64_t v = 1000003 + i * 7919;
        memcpy((char *)buf + i * 8, &v, 8);
    }
}

int main(int argc, char **argv)
{
    static double expected[N];
    int size;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (mt_rank == 0) fprintf(stderr, "freed-mark: run on 2 ranks\n");
        MPI_Finalize();
        return 2;
    }
#if defined(__SANITIZE_ADDRESS__)
    /* AddressSanitizer's free() comes first (so slimlink's is not called)
     * and quarantines freed blocks (so none is reused): nothing to test. */
    if (mt_rank == 0) printf("freed-mark: SKIP under AddressSanitizer\n");
    MPI_Finalize();
    return 77;
#endif

    /* 1. Marked and sent: arrives packed (keep 2, truncated). */
    double *a = NULL;
    fill_doubles(expected);
    if (mt_rank == 0) {
        a = mt_xmalloc(N * sizeof(double));
        fill_doubles(a);
        if (slim_mark_precision(a, N * sizeof(double), 2, SLIM_ROUND_TRUNCATE) != SLIM_OK) {
            mt_fail("slim_mark_precision failed");
        }
    }
    slim_quantize(expected, expected, N, 2, SLIM_ROUND_TRUNCATE);
    send_and_check(a, expected, "marked buffer");

    /* 2. Freed without unmarking; the block reused for integers. */
    if (mt_rank == 0) {
        const uintptr_t stale = (uintptr_t)a;
        free(a);
        void *b = mt_xmalloc(N * sizeof(double));
        if ((uintptr_t)b != stale) {
            /* glibc hands the freed block straight back (tcache): without
             * that this case proves nothing. */
            mt_fail("malloc did not reuse the freed block (%p, freed 0x%llx): the test "
                    "cannot check reuse",
                    b, (unsigned long long)stale);
        }
        fill_integers(b);
        a = b;
    }
    fill_integers(expected);
    send_and_check(a, expected, "unmarked integers in a freed marked block");

    /* 3. A marked block passed through realloc(): the marks go with it. */
    if (mt_rank == 0) {
        fill_doubles(a);
        slim_mark_precision(a, N * sizeof(double), 2, SLIM_ROUND_TRUNCATE);
        a = realloc(a, N * sizeof(double));
        if (a == NULL) {
            mt_fail("realloc failed");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        fill_integers(a);
    }
    send_and_check(a, expected, "unmarked integers in a reallocated marked block");

    if (mt_rank == 0) {
        free(a);
    }
    const int rc = mt_finish("freed-mark");
    MPI_Finalize();
    return rc;
}

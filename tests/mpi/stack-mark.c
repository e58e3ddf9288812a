/* SPDX-License-Identifier: BSD-3-Clause */
/* A mark on stack memory must be refused: the frame that owns the memory
 * returns, the mark stays, and the next frames put other data there, which
 * would then be packed (an audit found 510 of 512 int64 values wrong that
 * way). Rank 0 marks a local float64 array in one function (keep 2), sends
 * it and returns without unmarking; the next function sends a local int64
 * array from the same stack addresses: it must arrive bit for bit, and the
 * mark must have been refused with SLIM_ERR_INVALID. The same in a second
 * thread (its stack comes from pthread_create, the main thread's from the
 * kernel). Heap and static memory are still marked (and arrive packed), so
 * the marking is live. Run with UCX_SLIM_PACKING=on on 2 ranks
 * (tests/mpi/stack-mark.test). */
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>

#include "mpi_test_util.h"

enum { N = 512 };

static double static_buf[N];
static volatile uintptr_t stack_addr; /* addresses only, to compare */

static double value(int i) { return 1.0 / (3.0 + i); }

/* Marks its own local array, sends it, returns without unmarking. Returns
 * what slim_mark_precision said. */
static __attribute__((noinline)) int stack_marker(int tag)
{
    double a[N];
    for (int i = 0; i < N; ++i)
        a[i] = value(i);
    const int rc = slim_mark_precision(a, sizeof a, 2, SLIM_ROUND_TRUNCATE);
    MT_CHECK_MPI(MPI_Send(a, N, MPI_DOUBLE, 1, tag, MPI_COMM_WORLD));
    stack_addr = (uintptr_t)a;
    return rc;
}

/* A later frame's int64 data at (nearly) the same place. */
static __attribute__((noinline)) void *stack_ints(int tag)
{
    int64_t v[N];
    for (int i = 0; i < N; ++i)
        v[i] = 1000003LL * i + 7;
    MT_CHECK_MPI(MPI_Send(v, N, MPI_INT64_T, 1, tag, MPI_COMM_WORLD));
    stack_addr = (uintptr_t)v;
    return (void *)stack_addr;
}

static void send_from_stack(const char *where, int tag)
{
    const int rc = stack_marker(tag);
    void *marked = (void *)stack_addr;
    void *ints   = stack_ints(tag + 1);
    if (rc != SLIM_ERR_INVALID) {
        mt_fail("%s: slim_mark_precision of a local array returned %d, not "
                "SLIM_ERR_INVALID (%d)",
                where, rc, SLIM_ERR_INVALID);
    }
    const uintptr_t a = (uintptr_t)marked, b = (uintptr_t)ints;
    const int overlap = (a > b ? a - b : b - a) < N * sizeof(double);
    printf("%s: mark of local array at %p returned %d; int64 array at %p (%s)\n", where, marked, rc,
           ints, overlap ? "overlapping it" : "elsewhere: this case proves little");
    fflush(stdout);
}

static void *thread_main(void *arg)
{
    send_from_stack("second thread", *(int *)arg);
    return NULL;
}

/* Rank 1: the doubles as they come, then the integers, which must be exact. */
static void receive_ints(const char *where, int tag)
{
    double a[N];
    int64_t v[N];
    int wrong = 0, first = -1;

    MT_CHECK_MPI(MPI_Recv(a, N, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    MT_CHECK_MPI(MPI_Recv(v, N, MPI_INT64_T, 0, tag + 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; ++i) {
        if (v[i] != 1000003LL * i + 7) {
            if (first < 0) first = i;
            ++wrong;
        }
    }
    if (wrong) {
        mt_fail("%s: %d of %d int64 values sent from stack memory a refused mark would "
                "have covered arrived wrong; v[%d] = %lld, expected %lld",
                where, wrong, N, first, (long long)v[first], 1000003LL * first + 7);
    } else {
        printf("%s: all %d int64 values exact\n", where, N);
        fflush(stdout);
    }
}

/* Heap or static memory: marked, and the doubles arrive quantized. */
static void marked_arrives_packed(double *buf, const char *what, int tag)
{
    if (mt_rank == 0) {
        for (int i = 0; i < N; ++i)
            buf[i] = value(i);
        const int rc = slim_mark_precision(buf, N * sizeof(double), 2, SLIM_ROUND_TRUNCATE);
        if (rc != SLIM_OK) mt_fail("%s: slim_mark_precision returned %d", what, rc);
        MT_CHECK_MPI(MPI_Send(buf, N, MPI_DOUBLE, 1, tag, MPI_COMM_WORLD));
        slim_unmark(buf);
        return;
    }
    double got[N], expected[N];
    int wrong = 0;
    MT_CHECK_MPI(MPI_Recv(got, N, MPI_DOUBLE, 0, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
    for (int i = 0; i < N; ++i)
        expected[i] = value(i);
    slim_quantize(expected, expected, N, 2, SLIM_ROUND_TRUNCATE);
    for (int i = 0; i < N; ++i)
        wrong += memcmp(&got[i], &expected[i], 8) != 0;
    if (wrong) {
        mt_fail("%s: %d of %d marked values did not arrive as slim_quantize() says", what, wrong,
                N);
    } else {
        printf("%s: marked and packed, all %d values as slim_quantize() says\n", what, N);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    int size, provided;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (mt_rank == 0) fprintf(stderr, "stack-mark: run on 2 ranks\n");
        MPI_Finalize();
        return 2;
    }

    double *heap = mt_xmalloc(N * sizeof(double));
    marked_arrives_packed(heap, "heap buffer", 10);
    marked_arrives_packed(static_buf, "static buffer", 11);

    if (mt_rank == 0) {
        send_from_stack("main thread", 20);
    } else {
        receive_ints("main thread", 20);
    }

    if (provided == MPI_THREAD_MULTIPLE) {
        if (mt_rank == 0) {
            pthread_t thread;
            int tag = 30;
            if (pthread_create(&thread, NULL, thread_main, &tag) != 0) {
                mt_fail("pthread_create failed");
                MPI_Abort(MPI_COMM_WORLD, 1);
            }
            pthread_join(thread, NULL);
        } else {
            receive_ints("second thread", 30);
        }
    } else if (mt_rank == 0) {
        printf("second thread: skipped (MPI_THREAD_MULTIPLE not provided)\n");
    }

    free(heap);
    const int rc = mt_finish("stack-mark");
    MPI_Finalize();
    return rc;
}

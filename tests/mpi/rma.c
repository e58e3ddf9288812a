/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One-sided MPI over `slim` (2 ranks): in a passive-target epoch each rank
 * puts a buffer into its peer's window and flushes, at 8 B, 8 KiB and
 * 256 KiB, 50 times each; then gets the peer's window back and flushes.
 * Every byte is checked: after each round the target rank reads what the
 * put left, and each get must bring back what this rank wrote. Over tcp,
 * MPICH's ch4:ucx carries the data in active messages (short and copied);
 * MPI_Win_flush makes UCP flush its endpoints with a completion (about
 * 2,000 flushes in a run): the path of slim's pooled flush completions and
 * its endpoint quiescence bookkeeping (slim_ep.c). A flush that never
 * completes hangs the run, which the harness's timeout fails.
 */
#include "mpi_test_util.h"

#define RMA_MAX (256u << 10)

static const size_t rma_sizes[] = {8, 8192, RMA_MAX};

int main(int argc, char **argv)
{
    const int rounds = 50;
    int nranks       = 0, peer;
    uint8_t *win_buf, *src, *got;
    uint64_t payload = 0;
    MPI_Win win;

    (void)argc;
    (void)argv;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (nranks != 2) {
        if (mt_rank == 0) {
            fprintf(stderr, "usage: mpiexec -n 2 %s (got %d ranks)\n", argv[0], nranks);
        }
        MPI_Finalize();
        return 2;
    }
    peer = 1 - mt_rank;

    MT_CHECK_MPI(MPI_Win_allocate(RMA_MAX, 1, MPI_INFO_NULL, MPI_COMM_WORLD, &win_buf, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);
    src = mt_xmalloc(RMA_MAX);
    got = mt_xmalloc(RMA_MAX);

    for (size_t k = 0; k < sizeof(rma_sizes) / sizeof(rma_sizes[0]); ++k) {
        const size_t size = rma_sizes[k];
        char what[96];

        for (int r = 0; r < rounds; ++r) {
            /* Put and flush, under one lock of the whole window. */
            mt_fill_bytes(src, size, size, (uint64_t)mt_rank, (uint64_t)r);
            MT_CHECK_MPI(MPI_Win_lock_all(0, win));
            MT_CHECK_MPI(MPI_Put(src, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, win));
            MT_CHECK_MPI(MPI_Win_flush(peer, win));
            MT_CHECK_MPI(MPI_Win_unlock_all(win));
            payload += size;
            MT_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

            /* What the peer's put left here, read locally. */
            MT_CHECK_MPI(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, mt_rank, 0, win));
            snprintf(what, sizeof(what), "put of %zu bytes, round %d, from rank %d", size, r, peer);
            mt_check_bytes(win_buf, size, size, (uint64_t)peer, (uint64_t)r, what);
            MT_CHECK_MPI(MPI_Win_unlock(mt_rank, win));
            MT_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));

            /* And read back from the peer: what this rank put there. */
            memset(got, 0, size);
            MT_CHECK_MPI(MPI_Win_lock_all(0, win));
            MT_CHECK_MPI(MPI_Get(got, (int)size, MPI_BYTE, peer, 0, (int)size, MPI_BYTE, win));
            MT_CHECK_MPI(MPI_Win_flush(peer, win));
            MT_CHECK_MPI(MPI_Win_unlock_all(win));
            snprintf(what, sizeof(what), "get of %zu bytes, round %d, from rank %d", size, r, peer);
            mt_check_bytes(got, size, size, (uint64_t)mt_rank, (uint64_t)r, what);
            MT_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        }
    }
    if (mt_rank == 0) {
        printf("rma: %d rounds of put+flush and get+flush at 8 B, 8 KiB and "
               "256 KiB, both ranks\n",
               rounds);
        fflush(stdout);
    }

    {
        /* The puts' bytes (at least) crossed slim; no traffic since. */
        const mt_traffic_summary_t snap = mt_traffic_snapshot();
        mt_check_traffic(&snap, payload, "rma");
    }
    MT_CHECK_MPI(MPI_Win_free(&win));
    free(src);
    free(got);
    {
        const int rc = mt_finish("rma");
        MPI_Finalize();
        return rc;
    }
}

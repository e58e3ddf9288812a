/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Point-to-point over the `slim` transport, 2 ranks.
 *
 * For every size (default: 0 B and every power of two from 1 B to 4 MiB) and
 * in both directions: blocking Send/Recv, nonblocking Isend/Irecv, and
 * Sendrecv. The payload depends on (size, byte index, sending rank, mode);
 * the receiver checks every byte, the received count, source and tag. The
 * sizes cross UCP's eager-short, eager-bcopy, eager-zcopy and rendezvous
 * thresholds.
 *
 * Then every rank snapshots slim_traffic_get() before any further MPI
 * traffic, and the ranks check that `slim` carried at least the MPI payload.
 *
 * usage: p2p [--sizes S1,S2,...]     (bytes; the default is the full sweep)
 */
#include "mpi_test_util.h"

#define P2P_MAX_SIZES 64
#define P2P_FULL_MAX (4u << 20)

/* One exchange of `size` bytes in both directions; returns the payload bytes
 * this rank sent. */
static uint64_t exchange(int mode, size_t size, uint8_t *sbuf, uint8_t *rbuf)
{
    const int peer = 1 - mt_rank;
    char what[96];

    snprintf(what, sizeof(what), "%s of %zu bytes from rank %d", mt_mode_name(mode), size, peer);
    mt_fill_bytes(sbuf, size, size, (uint64_t)mt_rank, (uint64_t)mode);
    mt_exchange(mode, sbuf, rbuf, size, peer, mode, what);
    mt_check_bytes(rbuf, size, size, (uint64_t)peer, (uint64_t)mode, what);
    return size;
}

int main(int argc, char **argv)
{
    size_t sizes[P2P_MAX_SIZES];
    int nsizes = 0, nranks = 0, rc;
    size_t max_size       = 0;
    uint64_t payload_sent = 0;
    uint8_t *sbuf, *rbuf;
    mt_traffic_summary_t snap;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    if (argc == 3 && strcmp(argv[1], "--sizes") == 0) {
        nsizes = mt_parse_sizes(argv[2], sizes, P2P_MAX_SIZES, 0, 1ULL << 30, 1);
    } else if (argc == 1) {
        sizes[nsizes++] = 0;
        for (size_t s = 1; s <= P2P_FULL_MAX; s *= 2) {
            sizes[nsizes++] = s;
        }
    } else {
        nsizes = -1;
    }
    if (nsizes <= 0 || nranks != 2) {
        if (mt_rank == 0) {
            fprintf(stderr,
                    "usage: mpiexec -n 2 %s [--sizes S1,S2,...] "
                    "(got %d ranks)\n",
                    argv[0], nranks);
        }
        MPI_Finalize();
        return 2;
    }
    for (int i = 0; i < nsizes; ++i) {
        max_size = sizes[i] > max_size ? sizes[i] : max_size;
    }
    /* never zero-sized: a 0-byte exchange still gets valid pointers */
    sbuf = malloc(max_size + 1);
    rbuf = malloc(max_size + 1);
    if (sbuf == NULL || rbuf == NULL) {
        mt_fail("cannot allocate 2 x %zu bytes", max_size + 1);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }

    for (int i = 0; i < nsizes; ++i) {
        for (int mode = MT_MODE_BLOCKING; mode <= MT_MODE_SENDRECV; ++mode) {
            payload_sent += exchange(mode, sizes[i], sbuf, rbuf);
        }
    }
    if (mt_rank == 0) {
        printf("p2p: %d sizes x 3 modes x 2 directions exchanged, up to %zu "
               "bytes\n",
               nsizes, max_size);
        fflush(stdout);
    }

    /* No MPI traffic between the last exchange and this snapshot. */
    snap = mt_traffic_snapshot();
    mt_check_traffic(&snap, payload_sent, "p2p");

    rc = mt_finish("p2p");
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return rc;
}

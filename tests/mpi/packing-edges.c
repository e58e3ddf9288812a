/* SPDX-License-Identifier: BSD-3-Clause */
/* What a marked buffer delivers must not depend on how UCX cuts it into
 * fragments: rank 0 marks buffers of 1 to 2^19 float64 values (slim_mark,
 * label "halo", UCX_SLIM_POLICY gives the precision) and sends each; rank 1
 * checks that every element is bit for bit what slim_quantize() gives,
 * including the elements a fragment boundary cuts in two (which travel at
 * full width, but already quantized). A second pass sends the same buffers
 * from an address 4 bytes off 8-byte alignment as MPI_BYTE, so fragment
 * edges fall inside elements whatever the fragment sizes.
 * usage: packing-edges KEEP truncate|round [ssend|ssend-unseen]
 *   KEEP and the mode are the policy's precision; `ssend` sends by MPI_Ssend
 *   and MPI_Issend in turn; `ssend-unseen` too, expecting every element
 *   exact: UCX 1.13's v2 protocols send synchronous messages by am_bcopy,
 *   where slim cannot see (so cannot pack) the buffer.
 * Run on 2 ranks by tests/mpi/packing-edges.test, under several fragment
 * and rendezvous thresholds. */
#include <mpi.h>
#include <stdint.h>

#include "mpi_test_util.h"

enum { MAX_N = 1 << 19 };

static double element(size_t n, size_t i)
{
    /* mixed magnitudes and signs, every mantissa bit in use */
    const uint64_t x   = mt_mix(((uint64_t)n << 32) ^ i);
    const uint64_t exp = 1023 - 16 + (x >> 59);
    uint64_t bits      = ((x >> 58) & 1) << 63 | exp << 52 | (x & 0xFFFFFFFFFFFFFull);
    double d;
    memcpy(&d, &bits, 8);
    return d;
}

int main(int argc, char **argv)
{
    int size;

    MPI_Init(&argc, &argv);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || argc < 3 || argc > 4) {
        if (mt_rank == 0) {
            fprintf(stderr, "usage: packing-edges KEEP truncate|round [ssend|ssend-unseen] "
                            "(2 ranks)\n");
        }
        MPI_Finalize();
        return 2;
    }
    const int keep = atoi(argv[1]);
    const slim_round_t mode =
            strcmp(argv[2], "round") == 0 ? SLIM_ROUND_NEAREST : SLIM_ROUND_TRUNCATE;
    const int ssend  = argc == 4;
    const int unseen = argc == 4 && strcmp(argv[3], "ssend-unseen") == 0;

    /* 8 bytes of slack: the second pass starts 4 bytes in. */
    uint8_t *raw     = mt_xmalloc(MAX_N * sizeof(double) + 8);
    double *expected = mt_xmalloc(MAX_N * sizeof(double));
    size_t sizes[64], nsizes = 0;
    for (size_t n = 1; n <= MAX_N; n *= 2) {
        sizes[nsizes++] = n;
        if (n >= 4 && n * 3 / 2 + 1 <= MAX_N) sizes[nsizes++] = n * 3 / 2 + 1;
    }

    long total = 0, wrong_total = 0;
    for (int offset = 0; offset <= 4; offset += 4) {
        uint8_t *buf = raw + offset;
        for (size_t s = 0; s < nsizes; ++s) {
            const size_t n  = sizes[s];
            const int bytes = (int)(n * sizeof(double));
            for (size_t i = 0; i < n; ++i)
                expected[i] = element(n, i);
            if (mt_rank == 0) {
                memcpy(buf, expected, n * sizeof(double));
                if (slim_mark(buf, n * sizeof(double), "halo") != SLIM_OK) {
                    mt_fail("slim_mark of %zu doubles failed", n);
                }
                if (!ssend) {
                    MT_CHECK_MPI(MPI_Send(buf, bytes, MPI_BYTE, 1, (int)s, MPI_COMM_WORLD));
                } else if (s % 2 == 0) {
                    MT_CHECK_MPI(MPI_Ssend(buf, bytes, MPI_BYTE, 1, (int)s, MPI_COMM_WORLD));
                } else {
                    MPI_Request rq;
                    MT_CHECK_MPI(MPI_Issend(buf, bytes, MPI_BYTE, 1, (int)s, MPI_COMM_WORLD, &rq));
                    MT_CHECK_MPI(MPI_Wait(&rq, MPI_STATUS_IGNORE));
                }
                slim_unmark(buf);
                continue;
            }
            MT_CHECK_MPI(
                    MPI_Recv(buf, bytes, MPI_BYTE, 0, (int)s, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            if (!unseen) slim_quantize(expected, expected, n, keep, mode);
            long wrong   = 0;
            size_t first = 0;
            for (size_t i = 0; i < n; ++i) {
                if (memcmp(buf + i * 8, &expected[i], 8) != 0) {
                    if (wrong++ == 0) first = i;
                }
            }
            total += (long)n;
            if (wrong) {
                double got;
                memcpy(&got, buf + first * 8, 8);
                mt_fail("%zu doubles at offset %d: %ld element(s) differ from slim_quantize(); "
                        "the first, [%zu], arrived as %.17g, expected %.17g",
                        n, offset, wrong, first, got, expected[first]);
                wrong_total += wrong;
            }
        }
    }
    if (mt_rank == 1) {
        printf("packing-edges: %ld of %ld elements differ from %s\n", wrong_total, total,
               unseen ? "what was sent" : "slim_quantize()");
    }
    slim_packing_stats_t st;
    if (mt_rank == 0 && slim_packing_get(&st) == SLIM_OK) {
        printf("packing-edges: marked %llu = packed %llu + edge %llu + missed %llu\n",
               (unsigned long long)st.marked_bytes, (unsigned long long)st.packed_bytes,
               (unsigned long long)st.edge_bytes, (unsigned long long)st.missed_bytes);
        if (st.missed_bytes != 0)
            mt_fail("%llu marked bytes missed", (unsigned long long)st.missed_bytes);
        if (st.marked_bytes != st.packed_bytes + st.edge_bytes + st.missed_bytes) {
            mt_fail("marked bytes are not packed + edge + missed");
        }
        /* Unseen sends are in no marked count (slimlink.h), only in the
         * report's packing.unseen (packing-edges.test checks it). */
        if (unseen && st.marked_bytes != 0) {
            mt_fail("%llu marked bytes counted, though slim never saw the buffers",
                    (unsigned long long)st.marked_bytes);
        }
    }
    free(raw);
    free(expected);
    const int rc = mt_finish("packing-edges");
    MPI_Finalize();
    return rc;
}

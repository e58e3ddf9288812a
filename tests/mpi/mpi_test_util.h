/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the MPI tests: data patterns, failure reporting, and the
 * check that the `slim` transport carried the traffic.
 *
 * Header-only (static functions) so every test stays a single automake
 * program built for MPICH and, unchanged, for Open MPI.
 */
#ifndef SLIMLINK_MPI_TEST_UTIL_H
#define SLIMLINK_MPI_TEST_UTIL_H

#include <errno.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slimlink.h"

static int mt_rank     = -1;
static int mt_failures = 0;

static void mt_fail(const char *fmt, ...)
{
    char msg[512];
    int len;
    va_list ap;

    /* one write per line, so lines of different ranks do not interleave */
    len = snprintf(msg, sizeof(msg), "FAIL [rank %d]: ", mt_rank);
    va_start(ap, fmt);
    vsnprintf(msg + len, sizeof(msg) - (size_t)len - 1, fmt, ap);
    va_end(ap);
    strcat(msg, "\n");
    fputs(msg, stderr);
    fflush(stderr);
    ++mt_failures;
}

/* An MPI call that fails is a test failure; the error handler is set to
 * MPI_ERRORS_RETURN so the message names the call instead of aborting. */
#define MT_CHECK_MPI(call) \
    do { \
        int mt_rc_ = (call); \
        if (mt_rc_ != MPI_SUCCESS) { \
            char mt_msg_[MPI_MAX_ERROR_STRING]; \
            int mt_len_ = 0; \
            MPI_Error_string(mt_rc_, mt_msg_, &mt_len_); \
            mt_fail("%s returned %d (%s) at %s:%d", #call, mt_rc_, mt_msg_, __FILE__, __LINE__); \
            MPI_Abort(MPI_COMM_WORLD, 1); \
        } \
    } while (0)

/* splitmix64 finaliser: every (size, index, rank, tag) gives a different,
 * well-mixed value, so a stale, shifted or cross-rank buffer never passes. */
static inline uint64_t mt_mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

static inline uint8_t mt_pattern_byte(uint64_t size, uint64_t index, uint64_t rank, uint64_t tag)
{
    return (uint8_t)mt_mix((size << 40) ^ (rank << 32) ^ (tag << 28) ^ index);
}

static inline void mt_fill_bytes(uint8_t *buf, size_t n, uint64_t size, uint64_t rank, uint64_t tag)
{
    for (size_t i = 0; i < n; ++i) {
        buf[i] = mt_pattern_byte(size, i, rank, tag);
    }
}

/* Checks every byte; reports the first few differences and the total. */
static inline int mt_check_bytes(const uint8_t *buf, size_t n, uint64_t size, uint64_t rank,
                                 uint64_t tag, const char *what)
{
    size_t bad = 0;

    for (size_t i = 0; i < n; ++i) {
        uint8_t want = mt_pattern_byte(size, i, rank, tag);
        if (buf[i] != want) {
            if (bad < 3) {
                mt_fail("%s: byte %zu of %zu is 0x%02x, expected 0x%02x", what, i, n, buf[i], want);
            }
            ++bad;
        }
    }
    if (bad > 3) {
        mt_fail("%s: %zu of %zu bytes differ in total", what, bad, n);
    }
    return bad == 0;
}

/* ---- slim traffic counters ------------------------------------------- */

typedef struct mt_traffic_summary {
    /* payload bytes this rank moved through `slim`: everything it sent
     * (am_*, put, atomic) plus the data its gets brought back */
    uint64_t moved_bytes;
    uint64_t am_sent_count;
    uint64_t am_recv_count;
} mt_traffic_summary_t;

/* Snapshot of this process's `slim` counters. Call it before any further
 * MPI traffic: everything after it (including the reduction that compares
 * totals) is deliberately not counted. */
static inline mt_traffic_summary_t mt_traffic_snapshot(void)
{
    mt_traffic_summary_t sum = {0, 0, 0};
    slim_traffic_t t;
    slim_status_t st;

    memset(&t, 0, sizeof(t));
    st = slim_traffic_get(&t);
    if (st != SLIM_OK) {
        mt_fail("slim_traffic_get() returned %d (%s)", (int)st, slim_status_string(st));
        return sum;
    }
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        /* The bytes of a get are counted once, where they arrive (RECV);
         * a get has no SEND payload of its own. */
        if (op != SLIM_OP_GET) {
            sum.moved_bytes += t.op[op][SLIM_DIR_SEND].bytes;
        }
    }
    sum.moved_bytes += t.op[SLIM_OP_GET][SLIM_DIR_RECV].bytes;
    sum.am_sent_count = t.op[SLIM_OP_AM_SHORT][SLIM_DIR_SEND].count +
                        t.op[SLIM_OP_AM_BCOPY][SLIM_DIR_SEND].count +
                        t.op[SLIM_OP_AM_ZCOPY][SLIM_DIR_SEND].count;
    sum.am_recv_count = t.op[SLIM_OP_AM_ANY][SLIM_DIR_RECV].count;

    printf("rank %d slim counters:", mt_rank);
    for (int op = 0; op < SLIM_OP_COUNT; ++op) {
        printf(" %s=%llu/%lluB,%llu/%lluB", slim_op_name((slim_op_t)op),
               (unsigned long long)t.op[op][SLIM_DIR_SEND].count,
               (unsigned long long)t.op[op][SLIM_DIR_SEND].bytes,
               (unsigned long long)t.op[op][SLIM_DIR_RECV].count,
               (unsigned long long)t.op[op][SLIM_DIR_RECV].bytes);
    }
    printf(" (send count/bytes, recv count/bytes)\n");
    fflush(stdout);
    return sum;
}

/* Per-rank and global checks of the snapshot:
 *   - every rank sent and received active messages through `slim`
 *     (all MPI traffic here is tag-matched, which UCP carries in AMs);
 *   - the bytes moved through `slim`, summed over ranks, are at least the
 *     sum over ranks of `min_bytes` (each rank's share of a lower bound the
 *     caller derives from its MPI calls).
 * Collective: every rank must call it. */
static inline void mt_check_traffic(const mt_traffic_summary_t *snap, uint64_t min_bytes,
                                    const char *what)
{
    uint64_t local[2] = {snap->moved_bytes, min_bytes};
    uint64_t total[2] = {0, 0};

    if (snap->moved_bytes == 0) {
        mt_fail("slim counted no bytes moved by this rank: its traffic did "
                "not go through the slim transport");
    }
    if (snap->am_sent_count == 0) {
        mt_fail("slim counted no active messages sent by this rank: "
                "its traffic did not go through the slim transport");
    }
    if (snap->am_recv_count == 0) {
        mt_fail("slim counted no active messages received by this rank: "
                "its traffic did not go through the slim transport");
    }
    MT_CHECK_MPI(MPI_Allreduce(local, total, 2, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    if (mt_rank == 0) {
        printf("%s: slim moved %llu bytes over all ranks; lower bound from "
               "the MPI calls %llu bytes\n",
               what, (unsigned long long)total[0], (unsigned long long)total[1]);
        if (total[0] < total[1]) {
            mt_fail("%s: slim moved %llu bytes over all ranks, fewer than the "
                    "%llu bytes the MPI calls must have moved: traffic "
                    "bypassed the slim transport (or it is not counted)",
                    what, (unsigned long long)total[0], (unsigned long long)total[1]);
        }
    }
}

/* Combines every rank's failure count; returns the process exit status. */
static int mt_finish(const char *name)
{
    int local = mt_failures, total = 0;

    MT_CHECK_MPI(MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    if (mt_rank == 0) {
        if (total == 0) {
            printf("%s: PASS\n", name);
        } else {
            printf("%s: FAIL (%d failed checks over all ranks)\n", name, total);
        }
        fflush(stdout);
    }
    return total == 0 ? 0 : 1;
}

/* ---- shared by the point-to-point tests (inline: not every test uses
 * every helper, and unused static functions would warn). */

enum { MT_MODE_BLOCKING = 1, MT_MODE_NONBLOCKING = 2, MT_MODE_SENDRECV = 3 };

static inline const char *mt_mode_name(int mode)
{
    switch (mode) {
    case MT_MODE_BLOCKING: return "Send/Recv";
    case MT_MODE_NONBLOCKING: return "Isend/Irecv";
    default: return "Sendrecv";
    }
}

/* malloc that aborts the job (after saying why) instead of returning NULL. */
static inline void *mt_xmalloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);

    if (p == NULL) {
        mt_fail("cannot allocate %zu bytes", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* A comma-separated list of byte counts, each in [min, max] and a multiple
 * of `multiple`; the number parsed, or -1 for a malformed list or more than
 * max_count sizes. */
static inline int mt_parse_sizes(const char *list, size_t *sizes, int max_count,
                                 unsigned long long min, unsigned long long max,
                                 unsigned long long multiple)
{
    int n         = 0;
    const char *p = list;

    while (*p != '\0') {
        char *end;
        unsigned long long v;

        errno = 0;
        v     = strtoull(p, &end, 10);
        if (errno != 0 || end == p || (*end != ',' && *end != '\0') || v < min || v > max ||
            v % multiple != 0 || n == max_count) {
            return -1;
        }
        sizes[n++] = (size_t)v;
        p          = (*end == ',') ? end + 1 : end;
    }
    return n;
}

static inline void mt_check_status(const MPI_Status *st, int source, int tag, size_t bytes,
                                   const char *what)
{
    int count = -1;

    MT_CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    if (st->MPI_SOURCE != source || st->MPI_TAG != tag || count != (int)bytes) {
        mt_fail("%s: status source %d tag %d count %d, expected %d %d %zu", what, st->MPI_SOURCE,
                st->MPI_TAG, count, source, tag, bytes);
    }
}

/* `bytes` from sbuf to `peer` and from `peer` into rbuf (first filled with
 * 0xa5), in `mode`; Send/Recv lets the lower rank send first. Checks the
 * receive status. */
static inline void mt_exchange(int mode, const void *sbuf, void *rbuf, size_t bytes, int peer,
                               int tag, const char *what)
{
    MPI_Status st[2];
    MPI_Request req[2];

    memset(rbuf, 0xa5, bytes);
    switch (mode) {
    case MT_MODE_BLOCKING:
        if (mt_rank < peer) {
            MT_CHECK_MPI(MPI_Send(sbuf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
            MT_CHECK_MPI(MPI_Recv(rbuf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st[0]));
        } else {
            MT_CHECK_MPI(MPI_Recv(rbuf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &st[0]));
            MT_CHECK_MPI(MPI_Send(sbuf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD));
        }
        break;
    case MT_MODE_NONBLOCKING:
        MT_CHECK_MPI(MPI_Irecv(rbuf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[0]));
        MT_CHECK_MPI(MPI_Isend(sbuf, (int)bytes, MPI_BYTE, peer, tag, MPI_COMM_WORLD, &req[1]));
        MT_CHECK_MPI(MPI_Waitall(2, req, st));
        break;
    default:
        MT_CHECK_MPI(MPI_Sendrecv(sbuf, (int)bytes, MPI_BYTE, peer, tag, rbuf, (int)bytes, MPI_BYTE,
                                  peer, tag, MPI_COMM_WORLD, &st[0]));
        break;
    }
    mt_check_status(&st[0], peer, tag, bytes, what);
}

#endif /* SLIMLINK_MPI_TEST_UTIL_H */

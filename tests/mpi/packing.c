/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Lossy packing end to end over the `slim` transport (MPICH).
 *
 * Senders mark float64 buffers; `slim` sends the marked values with only
 * their top `keep` bytes and the receiver's `slim` rebuilds them. Every
 * received element is checked bit for bit against slim_quantize() of what was
 * sent, which is exactly what the receiver must see. The one allowed
 * exception: an element cut by a fragment edge (UCP splits large messages,
 * multi-rail at any byte) travels raw in both fragments and arrives exact.
 * Such elements must be few (at most one per fragment edge; the bound below
 * is generous), and at least one element of every message must differ from
 * what was sent, which proves the message was packed at all.
 *
 * The values are random finite doubles with full mantissas (the lowest bit
 * set, so every keep changes them) and special values: +-0, denormals,
 * +-Inf, quiet and signalling NaNs with payloads, +-DBL_MAX, and values whose
 * rounding carries into the exponent or is a tie.
 *
 * Part `p2p` (an even number of ranks, in pairs 0-1, 2-3, ...), for every
 * size, both directions:
 *   - Send/Recv, Isend/Irecv and Sendrecv of a marked buffer; the keep (2..7)
 *     and the rounding mode vary over the cases and the two directions;
 *   - the same buffer again after slim_unmark(): it must arrive exact;
 *   - a buffer marked only in the middle, at an odd byte offset from its
 *     start: the marked elements (counted from the region's base) arrive
 *     packed, every other byte exact;
 *   - a marked buffer re-marked in its middle at another precision: one
 *     message with three packed runs of two precisions;
 *   - three marked buffers of different precisions in flight at once.
 * Part `rma` (pairs, like p2p), for every size: MPI_Put of a marked buffer
 * into the peer's window (MPI_Win_create), in a fence epoch and in a
 * passive-target lock/unlock epoch, then the same buffer unmarked; the
 * target checks its window like a receive buffer. MPICH puts by UCP's put,
 * which slim packs into a bounce buffer and widens at the target (expand
 * notices); with lock/unlock the target reads its window after a barrier
 * only, so the widening must be complete when the origin's unlock returns.
 * That needs UCP's RMA lanes: over tcp, which has no get, UCP has none, the
 * window's remote key is unreachable and MPICH puts through its own active
 * messages from a copy of the data, which slim never sees as the marked
 * buffer; those puts arrive exact (--rma-expect exact).
 * Part `coll` (any number of ranks >= 2): Alltoall of marked blocks (a rank's
 * own block is MPI's to copy: exact, or packed as a whole when MPI sends it
 * to itself through UCX) and Bcast of a buffer the root
 * marked (forwarding ranks do not mark; the values they pass on were already
 * quantized), each followed by the same call unmarked.
 *
 * Every sender's buffer must be unchanged after its send. At the end every
 * rank checks slim_packing_get(): frames sent and received, none rejected,
 * no marked byte missed, marked = packed + edge + missed; over all ranks,
 * frames sent = frames received and the raw elements seen by receivers fit
 * in the edge bytes the senders reported.
 *
 * usage: packing [--part p2p|rma|coll|all] [--sizes S1,S2,...]
 *                [--label RULE] [--linger-ms MS] [--rma-expect packed|exact]
 *                [--rma-sync fence|lock|both]
 *   --sizes  message sizes in bytes, multiples of 8 (default: every power of
 *            two from 8 B to 4 MiB); they apply to the p2p and rma parts
 *   --label  mark with slim_mark() under the label of RULE instead of
 *            slim_mark_precision(); RULE is the UCX_SLIM_POLICY rule the run
 *            uses, LABEL=keep:N[:truncate|round] (no `*` rule), and gives
 *            the precision to expect. Buffers that stay unmarked are then
 *            "marked" with a label the policy does not know, which must mark
 *            nothing.
 *   --rma-expect  packed (default): marked puts arrive as slim_quantize()
 *            predicts; exact: they arrive as sent (an inner transport
 *            without RMA, see part `rma`)
 *   --rma-sync  the epochs of part `rma`: fence, lock (MPI_Win_lock and
 *            unlock between barriers) or both (default)
 *   --linger-ms  wait this long before MPI_Finalize, with every connection
 *            still open, so that a script can read the sockets' byte counts
 *            (packing-multirail.test)
 */
#include "mpi_test_util.h"

#include <time.h>

#define PK_MAX_SIZES 64
#define PK_FULL_MAX (4u << 20)


typedef struct precision {
    int keep;
    slim_round_t mode;
} precision_t;

static int nranks;
/* --label: the label to mark with and the precision its rule gives. */
static const char *label;
static char label_buf[64];
static precision_t label_precision;
/* Every rank runs the same cases in the same order: the case number is
 * what sender and receiver derive the data and the precision from. */
static unsigned case_id;
/* Elements received exact instead of packed (p2p and Alltoall: one hop). */
static uint64_t raw_elements;
/* Scratch for the receiver's expectations. */
static double *orig_vals, *quant_vals;

static const char *round_name(slim_round_t mode)
{
    return mode == SLIM_ROUND_NEAREST ? "round" : "truncate";
}

/* LABEL=keep:N[:truncate|round] */
static int parse_label_rule(const char *rule)
{
    const char *eq = strchr(rule, '=');
    char *end;
    long keep;
    size_t len;

    if (eq == NULL || eq == rule || (size_t)(eq - rule) >= sizeof(label_buf) ||
        strncmp(eq + 1, "keep:", 5) != 0) {
        return -1;
    }
    len = (size_t)(eq - rule);
    memcpy(label_buf, rule, len);
    label_buf[len] = '\0';
    if (strcmp(label_buf, "*") == 0) {
        return -1;
    }
    keep = strtol(eq + 6, &end, 10);
    if (end == eq + 6 || keep < 2 || keep > 7) {
        return -1;
    }
    label_precision.keep = (int)keep;
    if (*end == '\0' || strcmp(end, ":truncate") == 0) {
        label_precision.mode = SLIM_ROUND_TRUNCATE;
    } else if (strcmp(end, ":round") == 0) {
        label_precision.mode = SLIM_ROUND_NEAREST;
    } else {
        return -1;
    }
    label = label_buf;
    return 0;
}

/* ---- data -------------------------------------------------------------- */

/* The precision rank `src` marks its buffer with in the current case: every
 * keep and both modes come round within a dozen cases, and the two
 * directions of an exchange differ. */
static precision_t precision_of_block(int src, int block)
{
    precision_t p;
    unsigned k = case_id + (unsigned)src * 5u + (unsigned)block * 7u;

    if (label != NULL) {
        return label_precision;
    }
    p.keep = 2 + (int)(k % 6u);
    p.mode = ((k / 6u) % 2u) ? SLIM_ROUND_NEAREST : SLIM_ROUND_TRUNCATE;
    return p;
}

static precision_t precision_of(int src) { return precision_of_block(src, 0); }

/* A precision that differs from `p` in keep and in mode. */
static precision_t other_precision(precision_t p)
{
    precision_t o;

    o.keep = 2 + (p.keep + 1) % 6;
    o.mode = p.mode == SLIM_ROUND_NEAREST ? SLIM_ROUND_TRUNCATE : SLIM_ROUND_NEAREST;
    return o;
}

/* Bit patterns worth a look; some depend on where `keep` cuts. */
static size_t special_values(uint64_t *out, int keep)
{
    const unsigned drop_bits = 8u * (unsigned)(8 - keep);
    const uint64_t half      = 1ULL << (drop_bits - 1); /* dropped part = tie */
    const uint64_t lsb       = 1ULL << drop_bits;       /* lowest kept bit */
    size_t n                 = 0;

    out[n++] = 0x0000000000000000ULL;              /* +0 */
    out[n++] = 0x8000000000000000ULL;              /* -0 */
    out[n++] = 0x0000000000000001ULL;              /* smallest denormal */
    out[n++] = 0x000FFFFFFFFFFFFFULL;              /* largest denormal: carries to normal */
    out[n++] = 0x800FFFFFFFFFFFFFULL;              /* its negative */
    out[n++] = 0x7FF0000000000000ULL;              /* +Inf */
    out[n++] = 0xFFF0000000000000ULL;              /* -Inf */
    out[n++] = 0x7FF8000000000000ULL;              /* quiet NaN */
    out[n++] = 0xFFF8000000000001ULL;              /* negative quiet NaN, low payload */
    out[n++] = 0x7FF0000000000001ULL;              /* signalling NaN, payload in the
                                         dropped bytes only */
    out[n++] = 0x7FEFFFFFFFFFFFFFULL;              /* DBL_MAX: rounding would overflow */
    out[n++] = 0xFFEFFFFFFFFFFFFFULL;              /* -DBL_MAX */
    out[n++] = 0x3FEFFFFFFFFFFFFFULL;              /* just below 1: carries into 1.0 */
    out[n++] = 0x3FF0000000000000ULL;              /* 1.0: unchanged by any keep */
    out[n++] = 0x3FF0000000000000ULL | half;       /* tie, kept part even */
    out[n++] = 0xC000000000000000ULL | lsb | half; /* tie, kept part odd */
    return n;
}

/* Random finite double with a full mantissa: its lowest bit is set, so
 * quantizing at any keep changes it. */
static uint64_t random_bits(uint64_t seed, size_t k)
{
    const uint64_t a        = mt_mix(seed ^ (0x100000001ULL * (uint64_t)k));
    const uint64_t exponent = 1 + (a >> 53) % 0x7FEu; /* 1 .. 0x7FE */
    const uint64_t mantissa = (mt_mix(a) & 0x000FFFFFFFFFFFFFULL) | 1u;

    return (a & 0x8000000000000000ULL) | (exponent << 52) | mantissa;
}

/* The n values rank `src` sends in the current case (block `block` of a
 * collective). Element 0 is always random, so a one-element message is
 * changed by packing too; the special values follow it, and again at the
 * end of longer messages, where fragment edges are more likely. */
static void fill_values(double *vals, size_t n, int src, int block, int keep)
{
    const uint64_t seed =
            mt_mix(((uint64_t)case_id << 32) ^ ((uint64_t)src << 16) ^ (uint64_t)block);
    uint64_t special[32];
    const size_t nspecial = special_values(special, keep);

    for (size_t k = 0; k < n; ++k) {
        uint64_t bits = random_bits(seed, k);
        memcpy(&vals[k], &bits, sizeof(bits));
    }
    for (size_t j = 0; j < nspecial && 1 + j < n; ++j) {
        memcpy(&vals[1 + j], &special[j], sizeof(uint64_t));
        if (n >= 64) {
            memcpy(&vals[n - 1 - j], &special[j], sizeof(uint64_t));
        }
    }
}

/* Fills orig_vals and quant_vals with what rank `src` sends in this case,
 * and what the receiver must see of it when packed. */
static void quantize_part(size_t first, size_t n, precision_t p);

static void expect_values(size_t n, int src, int block, precision_t p)
{
    fill_values(orig_vals, n, src, block, p.keep);
    quantize_part(0, n, p);
}

/* quant_vals[first, first + n) = slim_quantize(orig_vals[...]) at `p`. */
static void quantize_part(size_t first, size_t n, precision_t p)
{
    const slim_status_t st =
            slim_quantize(orig_vals + first, quant_vals + first, n, p.keep, p.mode);

    if (st != SLIM_OK) {
        mt_fail("slim_quantize(n=%zu, keep=%d, %s) returned %d (%s)", n, p.keep, round_name(p.mode),
                (int)st, slim_status_string(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* Generous bound on the elements a message of `bytes` may carry raw: one
 * per fragment edge, fragments being far larger than 4 KiB. */
static size_t max_raw(size_t bytes) { return bytes / 4096 + 2; }

/* ---- marking ----------------------------------------------------------- */

static void mark(const void *p, size_t bytes, precision_t prec, const char *what)
{
    slim_status_t st;

    if (label != NULL) {
        st = slim_mark(p, bytes, label);
    } else {
        st = slim_mark_precision(p, bytes, prec.keep, prec.mode);
    }
    if (st != SLIM_OK) {
        mt_fail("%s: marking %zu bytes (%s keep %d %s) returned %d (%s)", what, bytes,
                label != NULL ? label : "precision", prec.keep, round_name(prec.mode), (int)st,
                slim_status_string(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static void unmark(const void *p, const char *what)
{
    slim_status_t st = slim_unmark(p);

    if (st != SLIM_OK) {
        mt_fail("%s: slim_unmark returned %d (%s)", what, (int)st, slim_status_string(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* With --label, a buffer that must not be packed is marked with a label the
 * policy has no rule for: slim_mark() returns SLIM_OK and marks nothing. */
static void mark_unknown_label(const void *p, size_t bytes, const char *what)
{
    slim_status_t st;

    if (label == NULL) {
        return;
    }
    st = slim_mark(p, bytes, "no-rule-for-this-label");
    if (st != SLIM_OK) {
        mt_fail("%s: slim_mark with a label the policy does not know returned "
                "%d (%s), expected SLIM_OK",
                what, (int)st, slim_status_string(st));
    }
}

static void unmark_unknown_label(const void *p)
{
    if (label != NULL) {
        /* Nothing was marked: SLIM_ERR_INVALID is the expected answer. If
         * something was (a bug the exact-arrival check reports), this keeps
         * the buffer from staying marked. */
        (void)slim_unmark(p);
    }
}

/* ---- checks ------------------------------------------------------------ */

static uint64_t bits_at(const void *p)
{
    uint64_t u;

    memcpy(&u, p, sizeof(u));
    return u;
}

/* n float64 values at `got` (any alignment) against orig_vals/quant_vals:
 * each one must be the quantized value, or the original where a fragment
 * edge cut it; the latter at most `limit` times. At least one must differ
 * from the original. Counts the raw ones into raw_elements if `count_raw`. */
static void check_packed(const uint8_t *got, size_t n, size_t limit, int count_raw,
                         const char *what)
{
    size_t bad = 0, raw = 0, changed = 0, first_raw[3] = {0, 0, 0};

    for (size_t k = 0; k < n; ++k) {
        const uint8_t *g   = got + 8 * k;
        const int is_quant = memcmp(g, &quant_vals[k], 8) == 0;
        const int is_orig  = memcmp(g, &orig_vals[k], 8) == 0;

        if (!is_orig) {
            ++changed;
        }
        if (is_quant) {
            continue;
        }
        if (is_orig) {
            if (raw < 3) {
                first_raw[raw] = k;
            }
            ++raw;
            continue;
        }
        if (bad++ < 3) {
            mt_fail("%s: element %zu of %zu is 0x%016llx, expected 0x%016llx "
                    "(packed) or 0x%016llx (sent 0x%016llx raw at a fragment "
                    "edge)",
                    what, k, n, (unsigned long long)bits_at(g),
                    (unsigned long long)bits_at(&quant_vals[k]),
                    (unsigned long long)bits_at(&orig_vals[k]),
                    (unsigned long long)bits_at(&orig_vals[k]));
        }
    }
    if (bad > 3) {
        mt_fail("%s: %zu of %zu elements are neither packed nor exact", what, bad, n);
    }
    if (raw > limit) {
        mt_fail("%s: %zu of %zu elements arrived exact instead of packed "
                "(first at %zu, %zu, %zu), more than the %zu fragment edges "
                "allow",
                what, raw, n, first_raw[0], first_raw[1], first_raw[2], limit);
    }
    if (n > 0 && changed == 0) {
        mt_fail("%s: all %zu elements arrived exactly as sent: the message was "
                "not packed",
                what, n);
    }
    if (count_raw) {
        raw_elements += raw;
    }
}

/* Bytes that must arrive (or stay) exactly as they were. */
static void check_exact(const uint8_t *got, const uint8_t *want, size_t bytes, const char *what)
{
    size_t bad = 0, first = 0;

    if (memcmp(got, want, bytes) == 0) {
        return;
    }
    for (size_t i = 0; i < bytes; ++i) {
        if (got[i] != want[i]) {
            if (bad++ == 0) {
                first = i;
            }
        }
    }
    mt_fail("%s: %zu of %zu bytes differ from what was sent, the first at byte "
            "%zu (element %zu: 0x%016llx, expected 0x%016llx)",
            what, bad, bytes, first, first / 8, (unsigned long long)bits_at(got + first / 8 * 8),
            (unsigned long long)bits_at(want + first / 8 * 8));
}

/* ---- point to point ---------------------------------------------------- */

/* `bytes` from sbuf to the peer and from the peer into rbuf, in `mode`. */
static void exchange(int mode, const uint8_t *sbuf, uint8_t *rbuf, size_t bytes, const char *what)
{
    mt_exchange(mode, sbuf, rbuf, bytes, mt_rank ^ 1, (int)(case_id % 30000u), what);
}

/* A marked buffer of `bytes`, then the same buffer unmarked. */
static void p2p_case(int mode, size_t bytes, uint8_t *sbuf, uint8_t *rbuf, uint8_t *copy)
{
    const int peer           = mt_rank ^ 1;
    const size_t n           = bytes / 8;
    const unsigned this_case = ++case_id;
    const precision_t mine   = precision_of(mt_rank);
    const precision_t theirs = precision_of(peer);
    char what[160];

    snprintf(what, sizeof(what),
             "case %u: %s of %zu marked bytes (keep %d %s) "
             "from rank %d",
             this_case, mt_mode_name(mode), bytes, theirs.keep, round_name(theirs.mode), peer);
    fill_values((double *)sbuf, n, mt_rank, 0, mine.keep);
    memcpy(copy, sbuf, bytes);
    mark(sbuf, bytes, mine, what);
    exchange(mode, sbuf, rbuf, bytes, what);
    unmark(sbuf, what);
    check_exact(sbuf, copy, bytes, "sender's buffer after a marked send");
    expect_values(n, peer, 0, theirs);
    check_packed(rbuf, n, max_raw(bytes), 1, what);

    /* The same values once more, unmarked: bit for bit. */
    snprintf(what, sizeof(what),
             "case %u: %s of %zu bytes, unmarked after "
             "being marked, from rank %d",
             this_case, mt_mode_name(mode), bytes, peer);
    mark_unknown_label(sbuf, bytes, what);
    exchange(mode, sbuf, rbuf, bytes, what);
    unmark_unknown_label(sbuf);
    check_exact(rbuf, (const uint8_t *)orig_vals, bytes, what);
}

/* A buffer of `total` bytes (an mt_fill_bytes pattern) whose marked region
 * [off, off + len) holds float64 values and starts at an odd offset: its
 * elements count from `sbuf + off`, not from the buffer. */
static void p2p_partial_case(size_t bytes, uint8_t *sbuf, uint8_t *rbuf, uint8_t *copy)
{
    const int peer           = mt_rank ^ 1;
    const size_t total       = bytes + 13;
    const size_t off         = ((bytes / 4) & ~(size_t)7) + 3;
    const size_t len         = (bytes / 2) >= 8 ? ((bytes / 2) & ~(size_t)7) : 8;
    const unsigned this_case = ++case_id;
    const precision_t mine   = precision_of(mt_rank);
    const precision_t theirs = precision_of(peer);
    char what[200];

    snprintf(what, sizeof(what),
             "case %u: Send/Recv of %zu bytes marked at "
             "[%zu, %zu) (keep %d %s) from rank %d",
             this_case, total, off, off + len, theirs.keep, round_name(theirs.mode), peer);

    mt_fill_bytes(sbuf, total, total, (uint64_t)mt_rank, this_case);
    fill_values(orig_vals, len / 8, mt_rank, 0, mine.keep);
    memcpy(sbuf + off, orig_vals, len);
    memcpy(copy, sbuf, total);
    mark(sbuf + off, len, mine, what);
    exchange(MT_MODE_BLOCKING, sbuf, rbuf, total, what);
    unmark(sbuf + off, what);
    check_exact(sbuf, copy, total, "sender's buffer after a partly marked send");

    expect_values(len / 8, peer, 0, theirs);
    check_packed(rbuf + off, len / 8, max_raw(len), 1, what);
    /* With the region checked, put the pattern there: every other byte must
     * be the pattern as sent. */
    for (size_t i = off; i < off + len; ++i) {
        rbuf[i] = mt_pattern_byte(total, i, (uint64_t)peer, this_case);
    }
    mt_check_bytes(rbuf, total, total, (uint64_t)peer, this_case, what);
}

/* One buffer of n >= 4 elements marked whole, then marked again in the
 * middle at another precision (slim_mark_precision, also with --label): the
 * middle replaces that part of the first mark, which keeps both ends. One
 * message then carries three packed runs of two precisions. Each of the
 * three regions is unmarked by its own start. */
static void p2p_overlay_case(size_t bytes, uint8_t *sbuf, uint8_t *rbuf, uint8_t *copy)
{
    const int peer = mt_rank ^ 1;
    const size_t n = bytes / 8, x = n / 4, y = n / 4 + n / 2;
    const unsigned this_case     = ++case_id;
    const precision_t mine       = precision_of(mt_rank);
    const precision_t theirs     = precision_of(peer);
    const precision_t mine_mid   = other_precision(mine);
    const precision_t theirs_mid = other_precision(theirs);
    slim_status_t st;
    char what[200];

    snprintf(what, sizeof(what),
             "case %u: Sendrecv of %zu bytes marked keep "
             "%d %s with elements [%zu, %zu) re-marked keep %d %s, from rank "
             "%d",
             this_case, bytes, theirs.keep, round_name(theirs.mode), x, y, theirs_mid.keep,
             round_name(theirs_mid.mode), peer);
    fill_values((double *)sbuf, n, mt_rank, 2, mine.keep);
    memcpy(copy, sbuf, bytes);
    mark(sbuf, bytes, mine, what);
    st = slim_mark_precision(sbuf + 8 * x, 8 * (y - x), mine_mid.keep, mine_mid.mode);
    if (st != SLIM_OK) {
        mt_fail("%s: re-marking the middle returned %d (%s)", what, (int)st,
                slim_status_string(st));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    exchange(MT_MODE_SENDRECV, sbuf, rbuf, bytes, what);
    unmark(sbuf, what);
    unmark(sbuf + 8 * x, what);
    unmark(sbuf + 8 * y, what);
    check_exact(sbuf, copy, bytes, "sender's buffer after a re-marked send");

    fill_values(orig_vals, n, peer, 2, theirs.keep);
    quantize_part(0, x, theirs);
    quantize_part(x, y - x, theirs_mid);
    quantize_part(y, n - y, theirs);
    check_packed(rbuf, n, max_raw(bytes), 1, what);
}

#define BURST 3

/* BURST marked buffers of different precisions in flight at once each way
 * (Irecv, Isend, one Waitall), so their fragments can interleave. */
static void p2p_burst_case(size_t bytes, uint8_t **sbufs, uint8_t **rbufs)
{
    const int peer           = mt_rank ^ 1;
    const size_t n           = bytes / 8;
    const unsigned this_case = ++case_id;
    const int tag            = (int)(this_case % 30000u);
    MPI_Request req[2 * BURST];
    MPI_Status st[2 * BURST];
    char what[200];

    for (int b = 0; b < BURST; ++b) {
        const precision_t mine = precision_of_block(mt_rank, 1 + b);

        fill_values((double *)sbufs[b], n, mt_rank, 10 + b, mine.keep);
        mark(sbufs[b], bytes, mine, "burst");
        memset(rbufs[b], 0xa5, bytes);
        MT_CHECK_MPI(
                MPI_Irecv(rbufs[b], (int)bytes, MPI_BYTE, peer, tag + b, MPI_COMM_WORLD, &req[b]));
    }
    for (int b = 0; b < BURST; ++b) {
        MT_CHECK_MPI(MPI_Isend(sbufs[b], (int)bytes, MPI_BYTE, peer, tag + b, MPI_COMM_WORLD,
                               &req[BURST + b]));
    }
    MT_CHECK_MPI(MPI_Waitall(2 * BURST, req, st));
    for (int b = 0; b < BURST; ++b) {
        const precision_t mine   = precision_of_block(mt_rank, 1 + b);
        const precision_t theirs = precision_of_block(peer, 1 + b);

        snprintf(what, sizeof(what),
                 "case %u: Isend/Irecv burst of %d, "
                 "message %d of %zu marked bytes (keep %d %s) from rank %d",
                 this_case, BURST, b, bytes, theirs.keep, round_name(theirs.mode), peer);
        unmark(sbufs[b], what);
        mt_check_status(&st[b], peer, tag + b, bytes, what);
        fill_values(orig_vals, n, mt_rank, 10 + b, mine.keep);
        check_exact(sbufs[b], (const uint8_t *)orig_vals, bytes,
                    "sender's buffer after a marked burst");
        expect_values(n, peer, 10 + b, theirs);
        check_packed(rbufs[b], n, max_raw(bytes), 1, what);
    }
}

static void run_p2p(const size_t *sizes, int nsizes)
{
    size_t max_size = 0;
    uint8_t *sbuf, *rbuf, *copy, *sbufs[BURST], *rbufs[BURST];

    for (int i = 0; i < nsizes; ++i) {
        max_size = sizes[i] > max_size ? sizes[i] : max_size;
    }
    max_size += 16; /* the partly marked case sends 13 more bytes */
    sbuf = mt_xmalloc(max_size);
    rbuf = mt_xmalloc(max_size);
    copy = mt_xmalloc(max_size);
    for (int b = 0; b < BURST; ++b) {
        sbufs[b] = mt_xmalloc(max_size);
        rbufs[b] = mt_xmalloc(max_size);
    }

    for (int i = 0; i < nsizes; ++i) {
        for (int mode = MT_MODE_BLOCKING; mode <= MT_MODE_SENDRECV; ++mode) {
            p2p_case(mode, sizes[i], sbuf, rbuf, copy);
        }
        p2p_partial_case(sizes[i], sbuf, rbuf, copy);
        if (sizes[i] >= 32) {
            p2p_overlay_case(sizes[i], sbuf, rbuf, copy);
        }
        p2p_burst_case(sizes[i], sbufs, rbufs);
    }
    for (int b = 0; b < BURST; ++b) {
        free(sbufs[b]);
        free(rbufs[b]);
    }
    free(sbuf);
    free(rbuf);
    free(copy);
}

/* ---- one-sided --------------------------------------------------------- */

/* Makes what the origins put visible in this rank's window memory, which is
 * then read directly. */
static void rma_sync_own(MPI_Win win)
{
    MT_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, mt_rank, 0, win));
    MT_CHECK_MPI(MPI_Win_sync(win));
    MT_CHECK_MPI(MPI_Win_unlock(mt_rank, win));
}

/* What a put of marked data must look like at the target (--rma-expect). */
static int rma_expect_packed = 1;
/* Which epochs the RMA part opens: 1 fence, 2 lock/unlock, 3 both. */
static int rma_sync = 3;

/* One put of `bytes` from obuf into the peer's window at displacement 0,
 * and the peer's into ours: in a fence epoch, or under lock/unlock followed
 * by a barrier. */
static void rma_put(MPI_Win win, const uint8_t *obuf, size_t bytes, int passive)
{
    const int peer  = mt_rank ^ 1;
    const int count = (int)(bytes / 8);

    if (!passive) {
        MT_CHECK_MPI(MPI_Win_fence(0, win));
        MT_CHECK_MPI(MPI_Put(obuf, count, MPI_DOUBLE, peer, 0, count, MPI_DOUBLE, win));
        MT_CHECK_MPI(MPI_Win_fence(0, win));
    } else {
        MT_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
        MT_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, peer, 0, win));
        MT_CHECK_MPI(MPI_Put(obuf, count, MPI_DOUBLE, peer, 0, count, MPI_DOUBLE, win));
        MT_CHECK_MPI(MPI_Win_unlock(peer, win));
        MT_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }
    rma_sync_own(win);
}

static void rma_case(MPI_Win win, uint8_t *winbuf, size_t bytes, uint8_t *obuf, uint8_t *copy,
                     int passive)
{
    const int peer           = mt_rank ^ 1;
    const size_t n           = bytes / 8;
    const unsigned this_case = ++case_id;
    const precision_t mine   = precision_of(mt_rank);
    const precision_t theirs = precision_of(peer);
    const char *epoch        = passive ? "lock/unlock" : "fence";
    char what[160];

    snprintf(what, sizeof(what),
             "case %u: MPI_Put (%s) of %zu marked bytes "
             "(keep %d %s) from rank %d",
             this_case, epoch, bytes, theirs.keep, round_name(theirs.mode), peer);
    fill_values((double *)obuf, n, mt_rank, 0, mine.keep);
    memcpy(copy, obuf, bytes);
    /* Nobody puts into it before the epoch opens (fence or barrier). */
    memset(winbuf, 0xa5, bytes);
    mark(obuf, bytes, mine, what);
    rma_put(win, obuf, bytes, passive);
    unmark(obuf, what);
    check_exact(obuf, copy, bytes, "origin's buffer after a marked put");
    expect_values(n, peer, 0, theirs);
    if (rma_expect_packed) {
        check_packed(winbuf, n, max_raw(bytes), 1, what);
    } else {
        check_exact(winbuf, (const uint8_t *)orig_vals, bytes, what);
    }

    snprintf(what, sizeof(what),
             "case %u: MPI_Put (%s) of %zu bytes, "
             "unmarked after being marked, from rank %d",
             this_case, epoch, bytes, peer);
    MT_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    memset(winbuf, 0xa5, bytes);
    mark_unknown_label(obuf, bytes, what);
    rma_put(win, obuf, bytes, passive);
    unmark_unknown_label(obuf);
    check_exact(winbuf, (const uint8_t *)orig_vals, bytes, what);
    /* The next case refills the window only after everyone read it. */
    MT_CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
}

static void run_rma(const size_t *sizes, int nsizes)
{
    size_t max_size = 0;
    uint8_t *winbuf, *obuf, *copy;
    MPI_Win win;

    for (int i = 0; i < nsizes; ++i) {
        max_size = sizes[i] > max_size ? sizes[i] : max_size;
    }
    /* The window is the program's own memory, as a halo exchange's would
     * be; MPICH registers it with UCX (ucp_mem_map) either way. */
    winbuf = mt_xmalloc(max_size);
    MT_CHECK_MPI(
            MPI_Win_create(winbuf, (MPI_Aint)max_size, 8, MPI_INFO_NULL, MPI_COMM_WORLD, &win));
    obuf = mt_xmalloc(max_size);
    copy = mt_xmalloc(max_size);
    for (int i = 0; i < nsizes; ++i) {
        if (rma_sync & 1) {
            rma_case(win, winbuf, sizes[i], obuf, copy, 0);
        }
        if (rma_sync & 2) {
            rma_case(win, winbuf, sizes[i], obuf, copy, 1);
        }
    }
    MT_CHECK_MPI(MPI_Win_free(&win));
    free(winbuf);
    free(obuf);
    free(copy);
}

/* ---- collectives ------------------------------------------------------- */

static void coll_alltoall(int count)
{
    const size_t block       = (size_t)count * 8;
    const size_t total       = block * (size_t)nranks;
    double *sbuf             = mt_xmalloc(total);
    double *rbuf             = mt_xmalloc(total);
    double *copy             = mt_xmalloc(total);
    const unsigned this_case = ++case_id;
    const precision_t mine   = precision_of(mt_rank);
    char what[160];

    for (int j = 0; j < nranks; ++j) {
        fill_values(sbuf + (size_t)j * count, (size_t)count, mt_rank, j, mine.keep);
    }
    memcpy(copy, sbuf, total);
    memset(rbuf, 0xa5, total);
    snprintf(what, sizeof(what),
             "case %u: Alltoall of %d marked doubles per "
             "block",
             this_case, count);
    mark(sbuf, total, mine, what);
    MT_CHECK_MPI(MPI_Alltoall(sbuf, count, MPI_DOUBLE, rbuf, count, MPI_DOUBLE, MPI_COMM_WORLD));
    unmark(sbuf, what);
    check_exact((uint8_t *)sbuf, (uint8_t *)copy, total, "sender's buffer after a marked Alltoall");
    for (int i = 0; i < nranks; ++i) {
        const precision_t theirs = precision_of(i);
        const uint8_t *got       = (const uint8_t *)(rbuf + (size_t)i * count);

        snprintf(what, sizeof(what),
                 "case %u: Alltoall of %d marked doubles "
                 "per block (keep %d %s), block from rank %d",
                 this_case, count, theirs.keep, round_name(theirs.mode), i);
        expect_values((size_t)count, i, mt_rank, theirs);
        if (i == mt_rank) {
            /* A rank's own block is MPI's to move: MPICH copies small ones,
             * but may send larger ones to itself through UCX, whose
             * rendezvous then puts them through slim (packed, since the
             * send buffer is marked). Either way all of it, never a mix. */
            if (memcmp(got, orig_vals, block) != 0) {
                check_packed(got, (size_t)count, max_raw(block), 1, what);
            }
        } else {
            check_packed(got, (size_t)count, max_raw(block), 1, what);
        }
    }

    snprintf(what, sizeof(what),
             "case %u: Alltoall of %d doubles per block, "
             "unmarked after being marked",
             this_case, count);
    memset(rbuf, 0xa5, total);
    mark_unknown_label(sbuf, total, what);
    MT_CHECK_MPI(MPI_Alltoall(sbuf, count, MPI_DOUBLE, rbuf, count, MPI_DOUBLE, MPI_COMM_WORLD));
    unmark_unknown_label(sbuf);
    for (int i = 0; i < nranks; ++i) {
        char part[200];

        snprintf(part, sizeof(part), "%s, block from rank %d", what, i);
        expect_values((size_t)count, i, mt_rank, precision_of(i));
        check_exact((const uint8_t *)(rbuf + (size_t)i * count), (const uint8_t *)orig_vals, block,
                    part);
    }
    free(sbuf);
    free(rbuf);
    free(copy);
}

static void coll_bcast(int count, int root)
{
    const size_t bytes       = (size_t)count * 8;
    double *buf              = mt_xmalloc(bytes);
    double *copy             = mt_xmalloc(bytes);
    const unsigned this_case = ++case_id;
    const precision_t prec   = precision_of(root);
    char what[160];

    snprintf(what, sizeof(what),
             "case %u: Bcast of %d marked doubles (keep %d "
             "%s) from root %d",
             this_case, count, prec.keep, round_name(prec.mode), root);
    expect_values((size_t)count, root, 0, prec);
    if (mt_rank == root) {
        memcpy(buf, orig_vals, bytes);
        memcpy(copy, orig_vals, bytes);
        mark(buf, bytes, prec, what);
    } else {
        memset(buf, 0xa5, bytes);
    }
    MT_CHECK_MPI(MPI_Bcast(buf, count, MPI_DOUBLE, root, MPI_COMM_WORLD));
    if (mt_rank == root) {
        unmark(buf, what);
        check_exact((uint8_t *)buf, (uint8_t *)copy, bytes, "root's buffer after a marked Bcast");
    } else {
        /* Ranks that forward pass on raw what they received (already
         * quantized, or exact at an edge): edges of several hops add up. */
        check_packed((const uint8_t *)buf, (size_t)count, 2 * max_raw(bytes), 0, what);
    }

    snprintf(what, sizeof(what),
             "case %u: Bcast of %d doubles from root %d, "
             "unmarked after being marked",
             this_case, count, root);
    if (mt_rank == root) {
        memcpy(buf, orig_vals, bytes);
        mark_unknown_label(buf, bytes, what);
    } else {
        memset(buf, 0xa5, bytes);
    }
    MT_CHECK_MPI(MPI_Bcast(buf, count, MPI_DOUBLE, root, MPI_COMM_WORLD));
    if (mt_rank == root) {
        unmark_unknown_label(buf);
    }
    check_exact((uint8_t *)buf, (uint8_t *)orig_vals, bytes, what);
    free(buf);
    free(copy);
}

static void run_coll(void)
{
    /* 8 B .. 256 KiB blocks; 8 B .. 1 MiB broadcasts */
    static const int alltoall_counts[] = {1, 64, 2048, 32768};
    static const int bcast_counts[]    = {1, 128, 8192, 131072};

    for (size_t i = 0; i < sizeof(alltoall_counts) / sizeof(int); ++i) {
        coll_alltoall(alltoall_counts[i]);
    }
    for (size_t i = 0; i < sizeof(bcast_counts) / sizeof(int); ++i) {
        coll_bcast(bcast_counts[i], (int)(i % (size_t)nranks));
    }
}

/* ---- packing counters -------------------------------------------------- */

/* Per-rank and global checks of this rank's packing counters; `s` and
 * `traffic` were taken before any further MPI traffic. Collective. */
static void check_packing_stats(const slim_packing_stats_t *s, const mt_traffic_summary_t *traffic)
{
    uint64_t local[4], total[4] = {0, 0, 0, 0};

    printf("rank %d slim packing: frames_sent=%llu payload_bytes=%llu "
           "wire_bytes=%llu marked_bytes=%llu packed_bytes=%llu edge_bytes=%llu "
           "missed_bytes=%llu frames_received=%llu frames_rejected=%llu "
           "raw_elements_seen=%llu\n",
           mt_rank, (unsigned long long)s->frames_sent, (unsigned long long)s->payload_bytes,
           (unsigned long long)s->wire_bytes, (unsigned long long)s->marked_bytes,
           (unsigned long long)s->packed_bytes, (unsigned long long)s->edge_bytes,
           (unsigned long long)s->missed_bytes, (unsigned long long)s->frames_received,
           (unsigned long long)s->frames_rejected, (unsigned long long)raw_elements);
    fflush(stdout);

    if (s->frames_sent == 0) {
        mt_fail("slim sent no packing frames from this rank, which sent "
                "marked buffers");
    }
    if (s->frames_received == 0) {
        mt_fail("slim received no packing frames on this rank, which "
                "received marked buffers");
    }
    if (s->frames_rejected != 0) {
        mt_fail("slim rejected %llu packing frames on this rank",
                (unsigned long long)s->frames_rejected);
    }
    if (s->missed_bytes != 0) {
        mt_fail("slim sent %llu marked bytes unpacked from this rank",
                (unsigned long long)s->missed_bytes);
    }
    if (s->marked_bytes != s->packed_bytes + s->edge_bytes + s->missed_bytes) {
        mt_fail("marked_bytes %llu != packed_bytes %llu + edge_bytes %llu + "
                "missed_bytes %llu",
                (unsigned long long)s->marked_bytes, (unsigned long long)s->packed_bytes,
                (unsigned long long)s->edge_bytes, (unsigned long long)s->missed_bytes);
    }
    if (s->packed_bytes == 0 || s->wire_bytes >= s->payload_bytes) {
        mt_fail("packing saved nothing: %llu packed bytes, frames of %llu "
                "bytes replaced messages of %llu bytes",
                (unsigned long long)s->packed_bytes, (unsigned long long)s->wire_bytes,
                (unsigned long long)s->payload_bytes);
    }
    /* Every rank sent and received through slim; packing shrinks the bytes,
     * so there is no lower bound on them. */
    mt_check_traffic(traffic, 0, "packing");

    local[0] = s->frames_sent;
    local[1] = s->frames_received;
    local[2] = s->edge_bytes;
    local[3] = raw_elements * 8;
    MT_CHECK_MPI(MPI_Allreduce(local, total, 4, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    if (mt_rank != 0) {
        return;
    }
    printf("packing: over all ranks %llu frames sent, %llu received; "
           "%llu edge bytes sent, %llu bytes of elements seen raw\n",
           (unsigned long long)total[0], (unsigned long long)total[1], (unsigned long long)total[2],
           (unsigned long long)total[3]);
    if (total[0] != total[1]) {
        mt_fail("over all ranks %llu packing frames were sent but %llu "
                "received",
                (unsigned long long)total[0], (unsigned long long)total[1]);
    }
    if (total[3] > total[2]) {
        mt_fail("receivers saw %llu bytes of marked elements arrive raw, but "
                "senders sent only %llu edge bytes raw",
                (unsigned long long)total[3], (unsigned long long)total[2]);
    }
}

int main(int argc, char **argv)
{
    size_t sizes[PK_MAX_SIZES];
    int nsizes = 0, do_p2p = 1, do_rma = 1, do_coll = 1, usage = 0, rc;
    long linger_ms   = 0;
    size_t max_count = 0;
    double t0, t1, t2;
    slim_packing_stats_t stats;
    mt_traffic_summary_t traffic;
    slim_status_t st;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &mt_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);

    for (int i = 1; i < argc && !usage; i += 2) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;

        if (val == NULL) {
            usage = 1;
        } else if (strcmp(argv[i], "--sizes") == 0) {
            nsizes = mt_parse_sizes(val, sizes, PK_MAX_SIZES, 8, 64ULL << 20, 8);
            usage  = nsizes <= 0;
        } else if (strcmp(argv[i], "--part") == 0) {
            do_p2p  = strcmp(val, "p2p") == 0 || strcmp(val, "all") == 0;
            do_rma  = strcmp(val, "rma") == 0 || strcmp(val, "all") == 0;
            do_coll = strcmp(val, "coll") == 0 || strcmp(val, "all") == 0;
            usage   = !do_p2p && !do_rma && !do_coll;
        } else if (strcmp(argv[i], "--label") == 0) {
            usage = parse_label_rule(val) != 0;
        } else if (strcmp(argv[i], "--rma-expect") == 0) {
            rma_expect_packed = strcmp(val, "packed") == 0;
            usage             = !rma_expect_packed && strcmp(val, "exact") != 0;
        } else if (strcmp(argv[i], "--rma-sync") == 0) {
            rma_sync = strcmp(val, "fence") == 0  ? 1
                       : strcmp(val, "lock") == 0 ? 2
                       : strcmp(val, "both") == 0 ? 3
                                                  : 0;
            usage    = rma_sync == 0;
        } else if (strcmp(argv[i], "--linger-ms") == 0) {
            char *end;
            linger_ms = strtol(val, &end, 10);
            usage     = *end != '\0' || linger_ms < 0 || linger_ms > 60000;
        } else {
            usage = 1;
        }
    }
    if (nsizes == 0) {
        for (size_t s = 8; s <= PK_FULL_MAX; s *= 2) {
            sizes[nsizes++] = s;
        }
    }
    if (usage || nranks < 2 || ((do_p2p || do_rma) && nranks % 2 != 0)) {
        if (mt_rank == 0) {
            fprintf(stderr,
                    "usage: mpiexec -n 2|4 %s [--part p2p|rma|coll|all] "
                    "[--sizes S1,S2,...] [--label LABEL=keep:N[:truncate|round]]"
                    " [--linger-ms MS] [--rma-expect packed|exact]"
                    " [--rma-sync fence|lock|both] (p2p and rma "
                    "need an even number of ranks; "
                    "got %d)\n",
                    argv[0], nranks);
        }
        MPI_Finalize();
        return 2;
    }

    for (int i = 0; i < nsizes; ++i) {
        max_count = sizes[i] / 8 + 2 > max_count ? sizes[i] / 8 + 2 : max_count;
    }
    max_count  = max_count < 131072 * 2 ? 131072 * 2 : max_count;
    orig_vals  = mt_xmalloc(max_count * 8);
    quant_vals = mt_xmalloc(max_count * 8);

    t0 = MPI_Wtime();
    if (do_p2p) {
        run_p2p(sizes, nsizes);
    }
    if (do_rma) {
        run_rma(sizes, nsizes);
    }
    t1 = MPI_Wtime();
    if (do_coll) {
        run_coll();
    }
    t2 = MPI_Wtime();
    if (mt_rank == 0) {
        printf("packing: %u cases on %d ranks, marking with %s; p2p/rma %d "
               "sizes up to %zu bytes in %.2f s, collectives in %.2f s\n",
               case_id, nranks, label != NULL ? label : "slim_mark_precision",
               (do_p2p || do_rma) ? nsizes : 0, (do_p2p || do_rma) ? sizes[nsizes - 1] : 0, t1 - t0,
               t2 - t1);
        fflush(stdout);
    }

    /* No MPI traffic between the last case and the snapshots. */
    memset(&stats, 0, sizeof(stats));
    st      = slim_packing_get(&stats);
    traffic = mt_traffic_snapshot();
    if (st != SLIM_OK) {
        mt_fail("slim_packing_get() returned %d (%s)", (int)st, slim_status_string(st));
    }
    check_packing_stats(&stats, &traffic);

    rc = mt_finish("packing");
    if (linger_ms > 0) {
        const struct timespec ts = {linger_ms / 1000, (linger_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    free(orig_vals);
    free(quant_vals);
    MPI_Finalize();
    return rc;
}

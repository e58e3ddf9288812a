/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slimlink public C API.
 *
 * Applications do not need this header to benefit from slimlink: the `slim`
 * UCX transport observes all traffic on its own. The header lets programs and
 * tests read slimlink's own measurements, and mark buffers of float64
 * values for lossy packing.
 *
 * Every function returns a status code and never aborts the process.
 */
#ifndef SLIMLINK_H
#define SLIMLINK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLIMLINK_VERSION_MAJOR 0
#define SLIMLINK_VERSION_MINOR 1

typedef enum slim_status {
    SLIM_OK            = 0,
    SLIM_ERR_INVALID   = -1, /* a NULL pointer or an out-of-range argument */
    SLIM_ERR_CONFIG    = -2, /* the UCX_SLIM_* configuration was rejected */
    SLIM_ERR_NO_MEMORY = -3,
    SLIM_ERR_INTERNAL  = -4
} slim_status_t;

/* Kinds of UCT data operation that `slim` observes. */
typedef enum slim_op {
    SLIM_OP_AM_SHORT = 0,
    SLIM_OP_AM_BCOPY,
    SLIM_OP_AM_ZCOPY,
    SLIM_OP_AM_ANY, /* a received active message: the receiver cannot tell
                        which send kind the peer used */
    SLIM_OP_PUT,
    SLIM_OP_GET,
    SLIM_OP_ATOMIC,
    SLIM_OP_COUNT
} slim_op_t;

/* Direction of the payload relative to this process. Sends of AMs, puts and
 * atomics are SLIM_DIR_SEND; received AMs and the data a get brings back are
 * SLIM_DIR_RECV. */
typedef enum slim_dir { SLIM_DIR_SEND = 0, SLIM_DIR_RECV, SLIM_DIR_COUNT } slim_dir_t;

typedef struct slim_counter {
    uint64_t count; /* operations */
    uint64_t bytes; /* payload bytes (AM header included for am_short) */
} slim_counter_t;

typedef struct slim_traffic {
    slim_counter_t op[SLIM_OP_COUNT][SLIM_DIR_COUNT];
} slim_traffic_t;

/* Snapshot of this process's traffic counters, as seen by the `slim`
 * transport. All zero when `slim` carried nothing. */
slim_status_t slim_traffic_get(slim_traffic_t *out);

/* Short name of an operation kind ("am_short", ...), or NULL when out of range. */
const char *slim_op_name(slim_op_t op);

/* ---------------------------------------------------------------- lossy packing
 *
 * Marking is sender-side only: a marked buffer's float64 values travel with
 * only their most significant `keep` bytes (sign, exponent, top 8*keep-12
 * mantissa bits) when the `slim` transport sends them; receivers need no
 * marking. Element boundaries are counted from the pointer passed to the
 * marking call. Marking over a marked range replaces the overlap; the old
 * region keeps its other parts. Marks take effect for sends that start after
 * the call returns. Unmark a buffer before its memory is reused for other
 * data. Memory released by free() or realloc() loses its marks (with a
 * warning naming the label), so data malloc() puts there later is never
 * packed: libslimlink interposes both, which needs the application linked
 * with -lslimlink (the first mark warns when it is not in effect). Memory
 * released otherwise (munmap, a custom allocator's own pool) must be
 * unmarked first.
 *
 * Stack memory is refused: a mark overlapping the live part of the calling
 * thread's stack (from the marking call's own frame up to the stack's top,
 * as pthread_getattr_np gives it, asked once per thread) returns
 * SLIM_ERR_INVALID, marks nothing, and is logged with its address (the
 * first ten, then one in a thousand). Such a mark would outlive the frame
 * that owns the memory, and whatever later frames put there would be
 * packed. Not checked: another thread's stack, and marks made while running
 * on a stack the thread's attributes do not describe (a signal handler on
 * sigaltstack, a coroutine or user-level thread with a stack of its own);
 * such memory must be unmarked before its frame returns.
 *
 * The first marking call initializes slimlink from the UCX_SLIM_* variables
 * (like the transport does); when that configuration is invalid these calls
 * return SLIM_ERR_CONFIG and nothing is packed. */

/* How the last kept byte is obtained. */
typedef enum slim_round {
    SLIM_ROUND_TRUNCATE = 0, /* drop the low bytes: relative error < 2^-(8k-12) */
    SLIM_ROUND_NEAREST  = 1  /* round to nearest, ties to even: < 2^-(8k-11) */
} slim_round_t;

/* Marks [ptr, ptr+bytes) with the precision the UCX_SLIM_POLICY rule for
 * `label` gives (its own rule, else the `*` rule). A label the policy does
 * not pack (an `off` rule, or no rule and no `*`) returns SLIM_OK and marks
 * nothing, so applications can mark unconditionally and let the policy
 * decide. SLIM_ERR_INVALID for a NULL ptr or label, bytes == 0, a range that
 * wraps around the address space, a label that is not [A-Za-z0-9_.-]+, or
 * memory on the calling thread's stack (whatever the policy says). */
slim_status_t slim_mark(const void *ptr, size_t bytes, const char *label);

/* Marks [ptr, ptr+bytes) keeping `keep_bytes` (2..7) bytes of each float64,
 * regardless of the policy. SLIM_ERR_INVALID for a NULL ptr, bytes == 0,
 * keep_bytes outside 2..7, an unknown mode, or memory on the calling
 * thread's stack. */
slim_status_t slim_mark_precision(const void *ptr, size_t bytes, int keep_bytes, slim_round_t mode);

/* Removes the marked region that starts at `ptr` (a region marked at `ptr`,
 * or the remainder of one that a later mark cut there). SLIM_ERR_INVALID
 * when no region starts at `ptr`. */
slim_status_t slim_unmark(const void *ptr);

/* What the receiver sees for each value of in[0, n) sent marked at this
 * precision (encode then decode): lets applications and tests predict the
 * effect of packing exactly. in and out may be the same array.
 * SLIM_ERR_INVALID for NULL arrays (with n > 0), keep_bytes outside 2..7 or
 * an unknown mode. */
slim_status_t slim_quantize(const double *in, double *out, size_t n, int keep_bytes,
                            slim_round_t mode);

/* Lossy packing as the `slim` transport performed it in this process, in
 * bytes of the original messages unless noted. Every marked byte that left
 * through `slim` where `slim` saw the sender's buffer is counted once:
 *   marked_bytes = packed_bytes + edge_bytes + missed_bytes.
 * UCP shows the buffer for short and zero-copy sends and puts, not for
 * am_bcopy, where UCP copies the data itself: marked data sent that way
 * travels exact and is counted nowhere. Steering keeps UCP off am_bcopy
 * for marked data, except for synchronous sends (MPI_Ssend, MPI_Issend)
 * under UCX 1.13's v2 protocols (UCX_PROTO_ENABLE=y), which go by am_bcopy
 * at every size; `slim` warns the first time it sees one while something is
 * marked, and the rank report counts such sends and their bytes as not seen
 * by slim (whether they held marked bytes it cannot tell). */
typedef struct slim_packing_stats {
    uint64_t frames_sent;     /* messages sent as packing frames */
    uint64_t payload_bytes;   /* their original size (AM header + payload) */
    uint64_t wire_bytes;      /* the size of the frames that replaced them */
    uint64_t marked_bytes;    /* payload bytes inside marked regions */
    uint64_t packed_bytes;    /* ... sent packed (whole float64 elements) */
    uint64_t edge_bytes;      /* ... sent at full width: parts of elements
                                 cut by a fragment edge (UCP split the
                                 message inside them), their value already
                                 quantized as marked, so what arrives does
                                 not depend on the fragmenting; and parts of
                                 elements the mark itself cuts, exact */
    uint64_t missed_bytes;    /* ... sent unpacked: the message could not be
                                 framed (UCX_SLIM_PACKING=off, a put, too
                                 many marked runs, larger than the inner
                                 transport carries) */
    uint64_t frames_received; /* frames rebuilt and delivered */
    uint64_t frames_rejected; /* frames dropped because they did not validate */
} slim_packing_stats_t;

/* Snapshot of this process's packing counters (all zero when nothing was
 * marked or nothing marked was sent). */
slim_status_t slim_packing_get(slim_packing_stats_t *out);

/* ---------------------------------------------------------------- regions
 *
 * The thesis's activate/deactivate primitives (§4.5.2): a program that
 * knows a communication phase is coming says so, and the link is raised
 * before it — to the width its packing needs (the UCX_SLIM_POLICY
 * precision of `label`: keep/8 of the lanes, or all lanes for a label the
 * policy does not pack) — and may drop again after slim_region_end().
 * Regions may nest: only the outermost one acts. A slim_region_end()
 * without a begin returns SLIM_ERR_INVALID and is logged; so is a begin
 * with a NULL or malformed label. Neither ever aborts. */
slim_status_t slim_region_begin(const char *label);
slim_status_t slim_region_end(void);

/* Human-readable text of a status code. */
const char *slim_status_string(slim_status_t status);

/* Library version, "MAJOR.MINOR". */
const char *slim_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SLIMLINK_H */

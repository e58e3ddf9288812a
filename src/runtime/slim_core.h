/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The small C interface between the `slim` UCX module (ucx-module/) and the
 * core library. The module stays thin: it reports what it sees and asks the
 * core what to do; all policy lives behind this interface.
 *
 * None of these functions throws, aborts, or blocks on I/O in the data path.
 */
#ifndef SLIM_CORE_H
#define SLIM_CORE_H

#include "slimlink.h"

#include <stdarg.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Creates the per-process Engine on first call (reads and validates
 * UCX_SLIM_*, sets up the logger, registers the exit report). Later calls
 * return the first call's result. On SLIM_ERR_CONFIG the reason has already
 * been logged once, naming the variable and its accepted values. */
slim_status_t slim_core_init(void);

/* ---- logging: one logger for the module and the core ----
 *
 * The module's lines (slim.h: slim_error and co.) go through the core's logger, so that every line of
 * slimlink reads "[slim r3] warning: ..." and follows UCX_SLIM_LOG_LEVEL
 * (UCX_LOG_LEVEL governs UCX's own lines only). Before slim_core_init() the
 * level is UCX_SLIM_LOG_LEVEL as the environment gives it. The levels are
 * UCX_SLIM_LOG_LEVEL's, in its order. Never on the data path: a line costs
 * a format and a write. */
typedef enum {
    SLIM_LOG_ERROR = 1,
    SLIM_LOG_WARN,
    SLIM_LOG_INFO,
    SLIM_LOG_DEBUG,
    SLIM_LOG_TRACE
} slim_log_level_t;

/* Nonzero when a line at `level` would be written. */
int slim_core_log_enabled(slim_log_level_t level);

/* Writes one line (printf format, no trailing newline) at `level`. */
void slim_core_vlog(slim_log_level_t level, const char *format, va_list args)
        __attribute__((format(printf, 2, 0)));

/* UCX_SLIM_INNER as the core parsed it: the transport `slim` wraps. Valid
 * after a successful slim_core_init(); NULL before. */
const char *slim_core_inner_name(void);

/* Records one observed operation (lock-free; counted even before
 * slim_core_init()) and hands it to the live loop: the link wakes for it
 * and it joins the current burst.
 * am_id: the AM id (0 for RMA and atomics); wire_bytes: what crossed the
 * link; orig_bytes: its size before packing; peer: identifies the endpoint
 * (0 when unknown). Never blocks for long, never throws. */
void slim_core_traffic(slim_op_t op, slim_dir_t dir, unsigned am_id, size_t wire_bytes,
                       size_t orig_bytes, uintptr_t peer);

/* 1 with UCX_SLIM_FORWARD_ONLY=y: the transport only forwards (it opens no
 * recorder and packs nothing). 0 before a successful slim_core_init(). */
int slim_core_forward_only(void);

/* ---- the tally: what an interface did since its last progress round ----
 *
 * The data path does not read the clock and does not call this library:
 * each operation adds itself to its interface's tally with a few plain
 * stores (the inline functions below), and the interface hands the tally
 * over once per progress round, before it polls the inner transport
 * (slim_core_tally_flush): the rank is waiting then, so the clock read and
 * the call cost it nothing it would have used. Every operation of a tally
 * is stamped with that round's time. A rank that waits in MPI polls every
 * fraction of a microsecond, so its operations are stamped that closely;
 * an operation issued just before a compute phase that makes no MPI call
 * (MPI_Isend, compute, MPI_Wait) is stamped when the compute phase ends. */

/* An operation as the live loop names bursts by it (op: a slim_op_t, or
 * SLIM_OP_COUNT for an activity mark). */
typedef struct slim_core_op_desc {
    uintptr_t peer;
    uint32_t wire_bytes;
    uint32_t orig_bytes;
    uint8_t op;
    uint8_t am_id;
    uint8_t send;
} slim_core_op_desc_t;

typedef struct slim_core_tally {
    uint64_t ops; /* operations and activity marks */
    uint64_t wire_bytes;
    uint64_t orig_bytes;
    uint32_t began;                 /* zero-copy operations now in flight */
    uint32_t ended;                 /* completions of such operations */
    uint32_t activity;              /* of the ops, activity marks */
    int has_send;                   /* a send was tallied: the first one
                                       is `first` when that is a send,
                                       else `first_send` */
    slim_core_op_desc_t first;      /* the tally's first operation */
    slim_core_op_desc_t first_send; /* and its first send */
    /* The report's counters, per operation kind and direction. */
    uint64_t count[SLIM_OP_COUNT][SLIM_DIR_COUNT];
    uint64_t bytes[SLIM_OP_COUNT][SLIM_DIR_COUNT];
} slim_core_tally_t;

static inline uint32_t slim_core_clamp32(size_t bytes)
{
    return (bytes > UINT32_MAX) ? UINT32_MAX : (uint32_t)bytes;
}

static inline void slim_core_op_desc_set(slim_core_op_desc_t *desc, unsigned op, int send,
                                         unsigned am_id, size_t wire_bytes, size_t orig_bytes,
                                         uintptr_t peer)
{
    desc->peer       = peer;
    desc->wire_bytes = slim_core_clamp32(wire_bytes);
    desc->orig_bytes = slim_core_clamp32(orig_bytes);
    desc->op         = (uint8_t)op;
    desc->am_id      = (uint8_t)am_id;
    desc->send       = (uint8_t)send;
}

/* One operation the inner transport accepted or delivered. `op` and `dir`
 * are constants at every call site, so the counters are fixed addresses. */
static inline void slim_core_tally_op(slim_core_tally_t *tally, slim_op_t op, slim_dir_t dir,
                                      unsigned am_id, size_t wire_bytes, size_t orig_bytes,
                                      uintptr_t peer)
{
    const int send = (dir == SLIM_DIR_SEND);

    if (tally->ops == 0) {
        slim_core_op_desc_set(&tally->first, op, send, am_id, wire_bytes, orig_bytes, peer);
        tally->has_send = send;
    } else if (send && !tally->has_send) {
        slim_core_op_desc_set(&tally->first_send, op, send, am_id, wire_bytes, orig_bytes, peer);
        tally->has_send = 1;
    }
    ++tally->ops;
    tally->wire_bytes += wire_bytes;
    tally->orig_bytes += orig_bytes;
    ++tally->count[op][dir];
    tally->bytes[op][dir] += wire_bytes;
}

/* A zero-copy operation the inner transport accepted with UCS_INPROGRESS:
 * its data is on the wire until slim_core_tally_completed(), and its burst
 * does not end before. */
static inline void slim_core_tally_in_flight(slim_core_tally_t *tally, slim_op_t op, slim_dir_t dir,
                                             unsigned am_id, size_t bytes, uintptr_t peer)
{
    slim_core_tally_op(tally, op, dir, am_id, bytes, bytes, peer);
    ++tally->began;
}

static inline void slim_core_tally_completed(slim_core_tally_t *tally) { ++tally->ended; }

/* The inner transport's progress did work that no operation slim saw
 * stands for (tcp receiving a put's data or sending bytes it had queued, a
 * verbs completion): the link carried data. Traffic of no bytes, not
 * counted in the report, so that a burst lasts while its data moves. */
static inline void slim_core_tally_activity(slim_core_tally_t *tally)
{
    if (tally->ops == 0) {
        slim_core_op_desc_set(&tally->first, SLIM_OP_COUNT, 0, 0, 0, 0, 0);
    }
    ++tally->ops;
    ++tally->activity;
}

static inline int slim_core_tally_pending(const slim_core_tally_t *tally)
{
    return (tally->ops | tally->ended) != 0;
}

/* What one UCT interface records its operations through: its own counters
 * and ring, so that recording takes no lock and no locked instruction.
 * Calls on one recorder must not overlap (UCT's rule for one interface:
 * one thread at a time, handed over with a lock or a join). Opened after
 * slim_core_init(); NULL when that failed or memory is short (its tallies
 * then go to the process's shared log). Open and close lock: call them on
 * interface open and close only. Counts of a closed recorder stay in the
 * process's totals; records it logged still reach the live loop. */
typedef struct slim_core_recorder slim_core_recorder_t;

/* `tally`: the interface's own, whose counts not yet handed over the
 * process's totals include (slim_traffic_get(), the report). */
slim_core_recorder_t *slim_core_recorder_open(const slim_core_tally_t *tally);
void slim_core_recorder_close(slim_core_recorder_t *recorder);

/* Stamps the tally now, hands it to the live loop and the report's
 * counters through `recorder` (NULL: the process's shared log), and empties
 * it. Call it where the rank waits: at the start of a progress round. */
void slim_core_tally_flush(slim_core_recorder_t *recorder, slim_core_tally_t *tally);

/* The live loop's timer, called from the transport's progress when
 * slim_core_poll_wanted is set: closes a burst whose gap has passed, wakes
 * the link at a predicted time. */
void slim_core_poll(void);

/* Non-zero only when the live loop's drain thread could not start and the
 * transport's progress must drive the loop: the transport reads it on every
 * progress call (one load, no call) and calls slim_core_poll() only then. */
extern volatile int slim_core_poll_wanted;

/* Writes the exit report now if UCX_SLIM_REPORT asks for one and it has not
 * been written yet. Called by the module when the last interface closes and
 * again at process exit (the second call does nothing). */
void slim_core_report(void);

/* ---- waits: the CPU side ------------------------------------------------
 *
 * A wait is a run of progress rounds in which nothing of the rank arrives,
 * completes or is sent: its core only polls. The module finds them in its
 * progress rounds (never on an operation's path) and tells the core twice,
 * each time at the start of a later round: once the wait is long enough to
 * be timed (so that the live loop can act while it lasts: ask for the
 * rank's cores low) and once it ended; the live loop writes them to the
 * trace ("w" lines) and counts them for the report. */

/* UCX_SLIM_CPU, UCX_SLIM_WAIT, UCX_SLIM_WAIT_SPIN and UCX_SLIM_WAIT_MAX as
 * parsed; all zero before a successful slim_core_init() (nothing watched). */
typedef struct slim_core_wait_config {
    int record;       /* UCX_SLIM_CPU=on: waits go to the trace and report */
    int yield;        /* UCX_SLIM_WAIT=yield: block in long waits */
    uint64_t spin_ns; /* UCX_SLIM_WAIT_SPIN: spin this long before blocking */
    uint64_t max_ns;  /* UCX_SLIM_WAIT_MAX: block at most this long at once */
} slim_core_wait_config_t;

void slim_core_wait_config(slim_core_wait_config_t *config);

/* One wait, in the ticks of slim_core_wait_clock(). */
typedef struct slim_core_wait {
    uint64_t start; /* estimated: the rounds before `first` included */
    uint64_t first; /* the first timed round, handed over as the begin */
    uint64_t end;
    uint64_t blocked; /* ticks of it spent blocked (yield mode) */
    uint32_t blocks;  /* how many times it blocked */
} slim_core_wait_t;

/* Finding waits in progress rounds: the state machine the module runs
 * (inline, so that an idle round costs a compare and an increment, and so
 * that it is tested on fake rounds). Rounds are reported in order: each
 * idle (nothing handed over, nothing polled) or busy. */
typedef struct slim_core_wait_watch {
    unsigned idle;       /* idle rounds in a row, up to threshold */
    unsigned threshold;  /* idle rounds before a wait is timed */
    int timing;          /* the wait is timed: its idle rounds read the clock */
    uint64_t first_tick; /* the first timed round */
    uint64_t last_tick;  /* the latest idle round */
    unsigned timed;      /* idle rounds since the first timed one */
    uint64_t longest;    /* the longest of their rounds, blocks left out */
    uint64_t shortest;   /* and the shortest */
    uint64_t blocked;    /* ticks of the wait blocked (yield) */
    uint32_t blocks;
    int opened; /* a timed wait's begin (first_tick) is to be handed over */
    int closed; /* `ended` is to be handed over */
    slim_core_wait_t ended;
} slim_core_wait_watch_t;

/* An idle round. 1: the wait is long enough to be timed; read the clock
 * and call slim_core_wait_timed() with it. */
static inline int slim_core_wait_idle(slim_core_wait_watch_t *watch)
{
    if (watch->idle < watch->threshold) {
        ++watch->idle;
        return 0;
    }
    return 1;
}

/* A timed idle round at `now`. */
static inline void slim_core_wait_timed(slim_core_wait_watch_t *watch, uint64_t now)
{
    if (!watch->timing) {
        watch->timing     = 1;
        watch->first_tick = now;
        watch->timed      = 0;
        watch->longest    = 0;
        watch->shortest   = UINT64_MAX;
        watch->blocked    = 0;
        watch->blocks     = 0;
    } else {
        const uint64_t round = now - watch->last_tick;
        if (round > watch->longest) {
            watch->longest = round;
        }
        if (round < watch->shortest) {
            watch->shortest = round;
        }
        ++watch->timed;
    }
    watch->last_tick = now;
}

/* A timed round blocked from its reading until `after` (yield). */
static inline void slim_core_wait_blocked(slim_core_wait_watch_t *watch, uint64_t after)
{
    watch->blocked += after - watch->last_tick;
    ++watch->blocks;
    watch->last_tick = after;
}

/* The timed wait ended at its last idle round: `ended` gets it, to hand
 * over when `record`. Its start is estimated: the rounds before timing
 * began took about as long as the timed ones, blocks left out (all of them
 * polled and found nothing). Rounds in which the rank was preempted
 * would stretch the estimate back by `threshold` times their excess, into
 * the work before the wait: the longest round is left out, and a round is
 * taken as at most twice the shortest (preemption only lengthens rounds;
 * an estimate too short costs the wait a little of its start). */
static inline void slim_core_wait_end(slim_core_wait_watch_t *watch, int record)
{
    const uint64_t span = watch->last_tick - watch->first_tick;
    uint64_t round      = 0;
    uint64_t ahead;

    /* Blocked time is no round's: a yield's rounds would look long. */
    if (watch->timed > 1 && span > watch->blocked + watch->longest) {
        round = (span - watch->blocked - watch->longest) / (watch->timed - 1);
    } else if (watch->timed > 0 && span > watch->blocked) {
        round = (span - watch->blocked) / watch->timed;
    }
    if (watch->timed > 0 && round > 2 * watch->shortest) {
        round = 2 * watch->shortest;
    }
    ahead                = round * watch->threshold;
    watch->ended.start   = watch->first_tick > ahead ? watch->first_tick - ahead : 0;
    watch->ended.first   = watch->first_tick;
    watch->ended.end     = watch->last_tick;
    watch->ended.blocked = watch->blocked;
    watch->ended.blocks  = watch->blocks;
    watch->closed        = record;
    watch->timing        = 0;
}

/* A busy round: a timed wait ends (no clock read: the round that ended
 * it is not timed). */
static inline void slim_core_wait_busy(slim_core_wait_watch_t *watch, int record)
{
    if (watch->timing) {
        slim_core_wait_end(watch, record);
    }
    watch->idle = 0;
}

/* Now, in the ticks the waits of `recorder` are stamped in (NULL: the
 * process's shared log). Read only in rounds that found nothing. */
uint64_t slim_core_wait_clock(const slim_core_recorder_t *recorder);

/* `ns` nanoseconds in those ticks (at most). */
uint64_t slim_core_wait_ticks(const slim_core_recorder_t *recorder, uint64_t ns);

/* Where the live loop publishes how long after a wait's start the CPU
 * policy's latest plan lowered the rank's cores, in nanoseconds
 * (UINT64_MAX: it did not, or nothing plans: UCX_SLIM_CPU=off). Written
 * by the drain thread once per planned wait; read with
 * __atomic_load_n(..., __ATOMIC_RELAXED) in rounds that found nothing. */
const uint64_t *slim_core_wait_low_after(void);

/* Tells the live loop that a wait was timed from `first` on (its first
 * timed round): the loop plans it now, while it lasts. Same rule as
 * slim_core_tally_flush for `recorder`: calls on one recorder must not
 * overlap. */
void slim_core_wait_begin(slim_core_recorder_t *recorder, uint64_t first);

/* Hands one ended wait to the live loop (its begin went first). Same rule. */
void slim_core_wait_record(slim_core_recorder_t *recorder, const slim_core_wait_t *wait);

/* ---- lossy packing: frames on the wire ----------------------------------
 *
 * A message whose payload overlaps marked memory travels as a packing frame
 * (src/pack/frame.h) on one reserved AM id; the receiver rebuilds the
 * original message and hands it to the original AM id's handler. */

/* The AM id that carries frames: the highest one tcp accepts (tcp carries
 * ids 0..31; UCX 1.13's UCP uses 1..26). A UCT user of `slim` must not
 * register a handler on it. */
#define SLIM_FRAME_AM_ID 31

/* 1 when the transport must steer UCP so that marked data of every size
 * passes where slim sees the sender's pointer (am_short, am_zcopy): withhold
 * put/get zcopy, report zero registration cost. Decided once from the
 * configuration (UCX_SLIM_PACKING, UCX_SLIM_POLICY); 0 before a successful
 * slim_core_init(). */
int slim_core_packing_steers(void);

/* How many regions of the process are marked: the word the send path reads
 * (relaxed, `__atomic_load_n`) to skip the packing path altogether when it is
 * zero, as it is for every message of a program that marks nothing. Never
 * NULL; valid until the process ends. A mark made by another thread while a
 * send reads it may be missed by that send, as the packing path's own lookup
 * may (that data travels exact). */
const size_t *slim_core_marked_regions(void);

typedef struct slim_frame_piece {
    const void *data;
    size_t length;
} slim_frame_piece_t;

/* An active message as UCT's send calls describe it: the payload is the
 * concatenation of the pieces (am_short: one; am_zcopy/am_short_iov: the
 * iov). */
typedef struct slim_frame_request {
    uint8_t am_id;
    const void *header; /* may be NULL when length 0 */
    size_t header_length;
    const slim_frame_piece_t *pieces;
    size_t piece_count;
} slim_frame_request_t;

typedef struct slim_frame_info {
    size_t frame_length;   /* bytes of frame written (SLIM_FRAME_READY) */
    size_t payload_length; /* original bytes: header + payload */
    size_t marked_bytes;   /* payload bytes inside marked regions */
    size_t packed_bytes;   /* of those, sent packed */
} slim_frame_info_t;

typedef enum slim_frame_result {
    SLIM_FRAME_UNMARKED = 0, /* nothing marked: send the message unchanged */
    SLIM_FRAME_READY,        /* *frame_p holds info->frame_length bytes */
    SLIM_FRAME_UNFRAMED,     /* marked, but not framed: send unchanged and
                                call slim_core_frame_unsent() once accepted */
    SLIM_FRAME_EDGE_ONLY     /* marked, but only parts of elements (a put
                                cut from a larger message): send unchanged
                                and call slim_core_frame_edge_sent() once
                                accepted */
} slim_frame_result_t;

/* Returns a buffer of at least `size` bytes, or NULL when the caller cannot
 * carry a frame that large (the message then goes unframed). */
typedef void *(*slim_frame_alloc_cb_t)(void *arg, size_t size);

/* Builds the frame for `request` when its payload overlaps marked memory.
 * The frame goes into a buffer from alloc(arg, size) (size is an upper
 * bound); *frame_p is what alloc returned (NULL when it was not called),
 * whatever the result, for the caller to release; with alloc == NULL nothing is built and a marked payload yields
 * SLIM_FRAME_UNFRAMED (used for puts, which are never framed). O(1) when
 * nothing is marked in the process. Never throws, never logs per message. */
slim_frame_result_t slim_core_frame_build(const slim_frame_request_t *request,
                                          slim_frame_alloc_cb_t alloc, void *alloc_arg,
                                          void **frame_p, slim_frame_info_t *info);

/* Accounting, called once the inner transport accepted the send. */
void slim_core_frame_sent(const slim_frame_info_t *info);      /* a frame */
void slim_core_frame_unsent(const slim_frame_info_t *info);    /* UNFRAMED */
void slim_core_frame_edge_sent(const slim_frame_info_t *info); /* EDGE_ONLY */
/* A marked put that went unpacked because the bounce pool was empty: its
 * marked bytes count as missed, and the event as a bounce shortage. */
void slim_core_put_bounce_empty(const slim_frame_info_t *info);
/* A bounce pool grew by one buffer of `bytes` (for the report). */
void slim_core_bounce_added(size_t bytes);
/* A synchronous send of `message_bytes` (payload) went by am_bcopy while
 * something was marked: UCP copied it out of slim's sight, so its marked
 * bytes, if any, can be neither packed nor counted; the report says how
 * many such sends there were. */
void slim_core_sync_unseen(uint64_t message_bytes);

/* Validates a frame received on SLIM_FRAME_AM_ID and rebuilds the message it
 * replaces (AM header, then payload) into out[0, capacity), its AM id into
 * *am_id. Returns the rebuilt length; when that exceeds capacity nothing was
 * written (call again with a buffer that large). Returns -1 for a frame that
 * must be dropped: it did not validate, is a put, or names SLIM_FRAME_AM_ID
 * or an id >= 64 (logged, rate-limited, and counted). */
int64_t slim_core_frame_unpack(const void *frame, size_t length, void *out, size_t capacity,
                               uint8_t *am_id);

/* ---- lossy packing: packed puts and expand notices ----------------------
 *
 * A put whose source overlaps marked memory can travel packed by the inner
 * transport's own put: slim packs the source into a registered bounce
 * buffer, puts the packed bytes at the destination's first bytes, and sends
 * an "expand notice" (src/pack/expand_notice.h) on SLIM_FRAME_AM_ID on the
 * same endpoint, right behind the put. The receiving slim checks the notice
 * against memory it registered for remote puts and widens the values in
 * place, back to front, before anything sent later on that endpoint is
 * delivered. Frames and notices share the AM id; their first byte tells
 * them apart (slim_core_expand_is_notice). */

/* UCX_SLIM_BOUNCE_SIZE, _COUNT and _GROW as parsed: the size of one bounce
 * buffer (it bounds the put that can be packed: slim advertises it as the
 * put zero-copy limit while packing steers), how many an interface may hold
 * at most, and how many it maps and registers at a time (at open, then
 * whenever the pool runs empty). count 0: no pool, puts are never packed.
 * All 0 before a successful slim_core_init(). */
void slim_core_bounce_config(size_t *buffer_size, unsigned *count, unsigned *grow);

typedef struct slim_put_request {
    const slim_frame_piece_t *pieces; /* the put's source (its iov) */
    size_t piece_count;
    uint64_t remote_addr; /* where the put writes */
    uint64_t stream;      /* the sending endpoint's token */
    uint64_t seq;         /* 1, 2, ... per stream */
} slim_put_request_t;

typedef struct slim_put_info {
    slim_frame_info_t frame; /* frame_length: packed bytes to put
                                      (SLIM_FRAME_READY); payload_length:
                                      the put's bytes; marked/packed bytes */
    size_t wire_offset;      /* where in `wire` the packed bytes start */
    size_t notice_length;    /* bytes of notice written */
} slim_put_info_t;

/* Largest notice slim_core_put_pack() writes (bytes). */
#define SLIM_EXPAND_NOTICE_MAX 1200

/* Packs a put whose source overlaps marked memory: into wire[0,
 * wire_capacity), where the bytes to put are
 * wire[info->wire_offset, + info->frame.frame_length), and the notice that
 * widens them into notice[0, SLIM_EXPAND_NOTICE_MAX). Returns
 * SLIM_FRAME_UNMARKED (nothing marked: put the source as it is; O(1) when
 * nothing is marked in the process), SLIM_FRAME_READY (put the packed bytes
 * at remote_addr, then send the notice), or SLIM_FRAME_UNFRAMED (marked, but
 * not packable: too many runs, packing off, wire == NULL (then notice may be
 * NULL too), or wire_capacity too small: the source plus SLIM_PUT_SLACK
 * always fits; put the source as it is, and call slim_core_frame_unsent()
 * once accepted), or SLIM_FRAME_EDGE_ONLY (its marked bytes are only parts
 * of values cut by the put's edges, as UCP splits a rendezvous: put the
 * source as it is, and call slim_core_frame_edge_sent() once accepted: a
 * notice would cost a round trip for nothing). Never throws, never logs per message. Accounting as for
 * frames: slim_core_frame_sent(&info->frame) once the put was accepted. */
#define SLIM_PUT_SLACK 2048
slim_frame_result_t slim_core_put_pack(const slim_put_request_t *request, void *wire,
                                       size_t wire_capacity, void *notice, slim_put_info_t *info);

/* 1 when a message received on SLIM_FRAME_AM_ID is an expand notice (its
 * first byte), 0 when it is (or claims to be) a packing frame. */
int slim_core_expand_is_notice(const void *data, size_t length);

/* Answers whether [address, address + length) lies inside memory this
 * process registered through slim's memory domain for remote puts, and
 * still registered. Called with the range a notice names. */
typedef int (*slim_expand_registered_cb_t)(void *arg, uint64_t address, size_t length);

/* Per-interface receive state of expand notices: which notice each sending
 * endpoint (stream) may send next. Calls on one expander must not overlap.
 * NULL when memory is short (then every notice is rejected). */
typedef struct slim_core_expander slim_core_expander_t;

slim_core_expander_t *slim_core_expander_open(void);
void slim_core_expander_close(slim_core_expander_t *expander);

/* Validates an expand notice and widens the put it follows, in place.
 * Rejected, counted (frames_rejected), logged (rate-limited) and nothing
 * written when: the notice does not validate; its range is not registered
 * (`registered`); its seq is not the next of its stream (a replayed or
 * out-of-order notice); or the destination's first and last packed bytes
 * differ from those the notice carries (a length or a put that does not
 * match). Returns 0 when expanded (counted as a frame received), -1 when
 * rejected. */
int slim_core_expand(slim_core_expander_t *expander, const void *notice, size_t length,
                     slim_expand_registered_cb_t registered, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* SLIM_CORE_H */

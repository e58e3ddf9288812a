/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * slim: a UCT transport that wraps one inner UCT transport (UCX_SLIM_INNER,
 * default tcp), forwards every operation to it, and reports every data
 * operation to the slimlink core library (src/runtime/slim_core.h).
 *
 * Layout follows UCX's own transports: one object per file (component, md,
 * iface, ep) and this header declaring them. The module holds no policy: it
 * observes, and asks the core library what to do.
 *
 * Built against UCX's internal headers of exactly the installed version
 * (Debian's `ucx` source package); the version is checked again at load.
 */
#ifndef SLIM_H_
#define SLIM_H_

#ifdef HAVE_CONFIG_H
#include "config.h" /* the installed UCX build's config.h (ucx_info -b) */
#endif

#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <uct/api/uct.h>
#include <ucs/datastruct/list.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/type/spinlock.h>
#include <ucs/type/class.h>

#include "slim_core.h"

#include <pthread.h>
#include <poll.h>
#include <uct/base/uct_worker.h>

/* The module logs through the core's logger (slim_core_vlog): one format,
 * "[slim r3] warning: ...", and one level, UCX_SLIM_LOG_LEVEL, for every
 * line of slimlink. The format is printf's. slim_log_line() is out of line
 * (slim_component.c), so that a data operation's error branch calls the
 * module, never the core (tests/tools/fast-path.test). */
void slim_log_line(slim_log_level_t level, const char *format, ...)
        __attribute__((cold, format(printf, 2, 3)));
#define slim_error(_fmt, ...) slim_log_line(SLIM_LOG_ERROR, _fmt, ##__VA_ARGS__)
#define slim_warn(_fmt, ...)  slim_log_line(SLIM_LOG_WARN, _fmt, ##__VA_ARGS__)
#define slim_debug(_fmt, ...) slim_log_line(SLIM_LOG_DEBUG, _fmt, ##__VA_ARGS__)

#define SLIM_COMPONENT_NAME "slim"
#define SLIM_TL_NAME        "slim"
#define SLIM_CONFIG_PREFIX  "SLIM_"
/* Our md resources are the inner component's, renamed "slim_<inner md>" so
 * they never collide with the inner component's own md names. */
#define SLIM_MD_NAME_PREFIX "slim_"


/* Memory-domain configuration: UCX's generic md rows under the SLIM_ prefix
 * until the inner transport is known; from then on UCX reads slim's md
 * configuration with the inner component's table (slim_component.c), and
 * slim opens the inner md with it. slimlink's own UCX_SLIM_* variables are
 * one table of the core library (src/runtime/slim_config.h), which this
 * module registers with UCX for `ucx_info -c` and the core parses once per
 * process. */
typedef struct slim_md_config {
    uct_md_config_t super;
} slim_md_config_t;


/* Interface configuration: the generic UCT iface rows under the SLIM_ prefix,
 * which slim's own base interface reads. The configuration UCX hands to
 * slim_iface_open is the inner transport's (e.g. tcp's, from UCX_TCP_* and
 * whatever its caller set by name) once the inner transport is known. */
typedef struct slim_iface_config {
    uct_iface_config_t super;
} slim_iface_config_t;


/* The inner transport: which component provides it and which tl it is. */
typedef struct slim_inner {
    uct_component_t *component;
    uct_tl_t *tl;
} slim_inner_t;


typedef struct slim_md {
    uct_md_t super;
    uct_md_h inner; /* opened on the inner component */
    slim_inner_t inner_tl;
    /* Memory registered through this md (slim_memh_t), so that an expand
     * notice is only ever applied inside memory this process opened for
     * remote puts. Registration is not a data-path operation (UCP registers
     * once per buffer or per rendezvous); the lock is never taken per
     * message sent. */
    ucs_list_link_t regs;
    ucs_spinlock_t regs_lock;
} slim_md_t;


/* Our memory handle: the inner md's handle and the range it covers. Every
 * operation that takes a handle gets ours from UCP and passes the inner one
 * on (slim_memh_inner). */
typedef struct slim_memh {
    uct_mem_h inner;
    uintptr_t address;
    size_t length;
    int remote_put; /* registered for remote put access */
    ucs_list_link_t list; /* in slim_md_t::regs */
} slim_memh_t;

static UCS_F_ALWAYS_INLINE uct_mem_h slim_memh_inner(uct_mem_h memh)
{
    return (memh == UCT_MEM_HANDLE_NULL) ? UCT_MEM_HANDLE_NULL :
                                           ((slim_memh_t *)memh)->inner;
}


struct slim_iface;

/* One receive trampoline per AM id: the inner transport calls it, and it
 * dispatches through the outer table that UCP fills with
 * uct_iface_set_am_handler() (which writes that table directly). */
typedef struct slim_am_slot {
    struct slim_iface *iface;
    uint8_t id;
} slim_am_slot_t;


/* Kept as written down to slim_bounce_pool_t: clang-format 14 cannot align
 * struct members without aligning every declaration, and these members'
 * comments span lines. */
/* clang-format off */
/* Progress of the inner transport (slim_progress.c). The inner iface lives
 * on a private UCT worker, so every inner progress callback, including the
 * one-shot ones it registers for itself, runs through slim, one thread at a
 * time.
 * That lets slim keep the inner transport progressing after the last
 * endpoint is gone ("linger"), when the process is finalizing and the MPI
 * library no longer progresses UCX, without two threads ever running the
 * inner transport at once. */
typedef struct slim_progress {
    /* The worker the inner iface lives on: a private one with
     * SLIM_FEATURE_LINGER, else UCP's own (`direct`), whose progress then
     * runs the inner transport's callbacks itself, with nothing of slim's
     * between them and UCP. */
    uct_worker_h       inner_worker;
    int                direct;
    /* While a linger thread runs, who runs the inner transport: the
     * address of that thread's token (slim_progress.c), or NULL. Taken with
     * one compare-and-swap, never waited for: each thread skips a round
     * while the other has it. Without a linger thread (the application's
     * thread starts and joins it) the application's progress takes
     * nothing: no lock and no atomic on the progress path. */
    void              *owner;
    unsigned           depth;         /* the owner's nesting: handlers may
                                         re-enter progress */
    unsigned           app_depth;     /* application progress calls under way
                                         without an owner (no linger thread) */
    ucs_queue_head_t   deferred;      /* AMs and errors that arrived while
                                         lingering, for the app's thread */
    struct {
        pthread_t      thread;
        int            running;       /* set and cleared by the app's thread */
        int            pending;       /* became quiescent inside progress:
                                         start when that call returns */
        volatile int   stop;
        unsigned       app_calls;     /* the app's progress calls while it
                                         runs: the thread steps aside while
                                         they go on (slim_progress.c) */
    } linger;
} slim_progress_t;


/* Packing frames (slim_frame.c): the limits of the inner transport that
 * carries them, and scratch memory for building and rebuilding them. */
typedef struct slim_frame_iface {
    size_t   max_short;     /* inner am_short limit, its 8-byte header
                               included (0: none) */
    size_t   max_bcopy;     /* inner am_bcopy limit (0: none) */
    size_t   max_zcopy;     /* frames sent by zcopy from our own memory, up
                               to this size (0: never) */
    int      need_memh;     /* the inner md needs registered memory: zcopy
                               frames from bounce buffers only */
    /* slim advertises an am_zcopy of its own, done by the inner am_bcopy
     * (SLIM_FEATURE_ZCOPY_BY_COPY): header and payload up to this size. */
    size_t   by_copy_max;
    uint8_t  *tx_scratch;   /* frames sent by copy (short/bcopy) */
    size_t   tx_scratch_size;
    uint8_t  *rx_scratch;   /* received frames rebuilt here */
    size_t   rx_scratch_size;
    int      rx_busy;       /* rx_scratch in use (a handler re-entered) */
} slim_frame_iface_t;


/* Bounce buffers for packed puts (slim_put.c). Used by the application's
 * thread only: no lock. A UCX memory pool whose chunks are registered with
 * the inner md as they are allocated: it starts with one chunk and grows
 * on demand up to UCX_SLIM_BOUNCE_COUNT buffers, as UCX's own pools do. */
typedef struct slim_bounce slim_bounce_t;

typedef struct slim_bounce_pool {
    ucs_mpool_t     mp;
    int             ready;         /* 0: no pool, puts are not packed */
    int             grow_failed;   /* a chunk could not be had: no more tries */
    size_t          buffer_size;   /* UCX_SLIM_BOUNCE_SIZE: the largest put */
    size_t          stride;        /* one buffer: the above, the frame's
                                      header and table, page-aligned */
    unsigned        allocated;     /* buffers in the chunks so far */
    uct_md_h        md;            /* the inner md chunks are registered with */
} slim_bounce_pool_t;
/* clang-format on */


/* What an interface does besides forwarding, chosen once when it opens
 * (UCX's rule: select at setup, not on the data path). Each combination
 * has its own operation functions (slim_ep.c), so a feature that is off
 * costs its operations nothing, not even a branch. */
enum {
    /* Count every operation in the interface's tally for the live loop
     * and the report (off with UCX_SLIM_FORWARD_ONLY=y). */
    SLIM_FEATURE_RECORD = UCS_BIT(0),
    /* Look for marked memory in what is sent, and pack it (likewise). */
    SLIM_FEATURE_PACK = UCS_BIT(1),
    /* Track each endpoint's quiescence, so that a linger thread can keep
     * the inner transport progressing while the process finalizes: only
     * where the inner transport needs it (tcp, slim_progress.c). */
    SLIM_FEATURE_LINGER = UCS_BIT(2),
    /* am_zcopy done by copy through the inner am_bcopy, for an inner
     * transport without zero copy while packing steers (slim_frame.c):
     * with SLIM_FEATURE_PACK only, and it changes am_zcopy only. */
    SLIM_FEATURE_ZCOPY_BY_COPY = UCS_BIT(3),
    /* Watch progress rounds for waits (slim_progress.c), to record them
     * (UCX_SLIM_CPU=on) or to block in them (UCX_SLIM_WAIT=yield): the
     * progress callbacks with the wait overlay are installed instead of
     * the plain ones. With SLIM_FEATURE_RECORD only. */
    SLIM_FEATURE_WAITS = UCS_BIT(4)
};

/* The wait detector of one UCT worker (slim_wait.c), shared by the slim
 * interfaces on it that watch for waits (SLIM_FEATURE_WAITS): a wait is the
 * rank's, and an arrival on any of them ends it. One thread runs UCP's
 * worker progress, so no lock. Ticks: slim_core_wait_clock()'s. */
#define SLIM_WAITS_MAX_IFACES 8

typedef struct slim_waits {
    uct_worker_tl_data_t super;
    slim_core_wait_watch_t watch; /* rounds: the interfaces' rounds */
    int record; /* UCX_SLIM_CPU=on */
    int yield; /* UCX_SLIM_WAIT=yield, and allowed here */
    uint64_t spin_ticks;
    /* The CPU policy's latest "low after" (slim_core_wait_low_after), and
     * the value last read from it with its ticks, converted once per
     * change. */
    const uint64_t *low_after_ns;
    uint64_t low_after_seen_ns;
    uint64_t low_after_ticks;
    uint64_t max_ns;
    unsigned num_ifaces;
    struct slim_iface *ifaces[SLIM_WAITS_MAX_IFACES];
    struct pollfd fds[SLIM_WAITS_MAX_IFACES];
} slim_waits_t;

typedef struct slim_iface {
    uct_base_iface_t super;
    /* The application's thread writes this line on every operation: what
     * the interface did since its last progress round (slim_core.h). */
    slim_core_tally_t tally;
    unsigned features; /* SLIM_FEATURE_* */
    /* Zero-copy operations tallied in flight and not completed yet
     * (slim_iface_completed). */
    unsigned in_flight;
    /* What the tally held at the start of the previous progress round
     * (slim_iface_round_begin_fast). */
    uint64_t round_seen;
    uct_iface_h inner;
    slim_am_slot_t am_slots[UCT_AM_ID_MAX];
    slim_progress_t progress;
    slim_frame_iface_t frame;
    /* Endpoints of this interface, to map an inner endpoint back to ours when
     * the inner transport reports an error (a rare path), and to know when
     * the last one is gone. */
    ucs_list_link_t eps;
    unsigned num_eps;
    unsigned orphan_flushes; /* flushes of destroyed eps in flight */
    /* slim_flush_comp_t of flushes in flight: a flush with a completion
     * (MPI one-sided epochs flush every time) takes one from here, not
     * from malloc. The application's thread only: a linger thread runs
     * only while no flush is in flight. */
    ucs_mpool_t flush_comps;
    /* slim_zcopy_comp_t of zero-copy operations in flight, whose
     * completions tell the live loop when their data stopped moving. The
     * application's thread only, like flush_comps: such completions never
     * fire on a linger thread (it starts only on a quiescent interface). */
    ucs_mpool_t zcopy_comps;
    ucs_spinlock_t eps_lock;
    /* Where the tally goes once per progress round: counters and a ring
     * of its own, so recording takes no locked instruction. NULL when the
     * core could not give one (then the process's shared log) and without
     * SLIM_FEATURE_RECORD. */
    slim_core_recorder_t *recorder;
    /* The process's count of marked regions (slim_core_marked_regions()):
     * zero, the send path skips the packing path without a call. */
    const size_t *marked_regions;
    /* The inner transport runs AM handlers on any thread (it has no
     * UCT_IFACE_FLAG_CB_SYNC): receives are recorded with
     * slim_core_traffic(), not in the tally, which one thread writes. */
    int recv_any_thread;
    slim_bounce_pool_t bounce;
    /* Which expand notice each peer endpoint may send next. */
    slim_core_expander_t *expander;
    /* With SLIM_FEATURE_WAITS: the wait detector of the worker, shared by
     * every slim interface on it (slim_progress.c), and this interface's
     * place in it. */
    slim_waits_t *waits;
    unsigned waits_slot;
} slim_iface_t;


/* Quiescence of an endpoint: every operation issued on it (op_seq) is
 * covered by a completed flush (flushed_seq), and no flush is in flight.
 * UCP's flush drains its pending queue first, so a quiescent endpoint can
 * produce no completion or pending callback into UCP. Only the application's
 * thread touches these fields. */
typedef struct slim_ep {
    uct_base_ep_t super;
    uct_ep_h inner;
    /* A packed put whose notice or flush is still to go out (slim_put.c):
     * while there is one, every operation on the endpoint finishes it first
     * or waits. Read by every operation: next to `inner`, in its cache line. */
    slim_bounce_t *put_waiting;
    ucs_list_link_t list; /* in slim_iface_t::eps */
    uint64_t op_seq;
    uint64_t flushed_seq;
    ucs_list_link_t flushes; /* slim_flush_comp_t in flight */
    /* Packed puts (slim_put.c): this endpoint's notice stream. */
    uint64_t put_stream;
    uint64_t put_seq;
    uct_pending_req_t put_pending; /* on the inner ep, for put_waiting */
    int put_pending_queued;
} slim_ep_t;


extern uct_component_t slim_component;
extern uct_tl_t slim_tl;

/* slim_component.c */
ucs_status_t slim_inner_find(const char *tl_name, slim_inner_t *inner);
const char *slim_inner_tl_name(void);
/* Whether a configuration UCX gave slim was read with INNER_TABLE, i.e. is
 * the inner transport's (not one read before slim knew its inner). */
int slim_config_is_inner(const void *config,
                         const ucs_config_field_t *inner_table);
/* slim's own interface rows (UCX_SLIM_*), read from the environment; release
 * with uct_config_release(). */
ucs_status_t slim_own_iface_config_read(uct_iface_config_t **config_p);

/* slim_md.c */
int slim_md_range_registered(slim_md_t *md, uint64_t address, size_t length);
ucs_status_t slim_query_md_resources(uct_component_t *component,
                                     uct_md_resource_desc_t **resources_p,
                                     unsigned *num_resources_p);
ucs_status_t slim_md_open(uct_component_t *component, const char *md_name,
                          const uct_md_config_t *config, uct_md_h *md_p);

/* slim_iface.c */
ucs_status_t slim_query_devices(uct_md_h md,
                                uct_tl_device_resource_t **devices_p,
                                unsigned *num_devices_p);
ucs_status_t slim_iface_open(uct_md_h md, uct_worker_h worker,
                             const uct_iface_params_t *params,
                             const uct_iface_config_t *config,
                             uct_iface_h *iface_p);
slim_ep_t *slim_iface_find_ep(slim_iface_t *iface, uct_ep_h inner_ep);
int slim_iface_is_quiescent(slim_iface_t *iface);
void slim_iface_add_ep(slim_iface_t *iface, slim_ep_t *ep);
void slim_iface_remove_ep(slim_iface_t *iface, slim_ep_t *ep);

/* slim_progress.c */
ucs_status_t slim_progress_init(slim_iface_t *iface, uct_worker_h worker);
void slim_progress_enable(slim_iface_t *iface, unsigned flags);
void slim_progress_disable(slim_iface_t *iface, unsigned flags);
void slim_progress_cleanup(slim_iface_t *iface);
void slim_progress_destroy(slim_iface_t *iface);
unsigned slim_progress_iface(slim_iface_t *iface);
ucs_status_t slim_progress_deliver_am(slim_iface_t *iface, uint8_t id,
                                      void *data, size_t length,
                                      unsigned flags);
ucs_status_t slim_progress_deliver_error(slim_iface_t *iface, uct_ep_h inner_ep,
                                         ucs_status_t status);
void slim_progress_maybe_linger(slim_iface_t *iface);
void slim_progress_linger_stop(slim_iface_t *iface);
void slim_progress_unload(void);
/* Whether this interface watches for waits (SLIM_FEATURE_WAITS), from the
 * core's configuration; decided before slim_progress_init(). */
int slim_progress_wants_waits(void);
/* Joins the worker's wait detector once the inner interface is open;
 * leaves it at close. A failure leaves the interface without the feature. */
void slim_progress_waits_join(slim_iface_t *iface);
void slim_progress_waits_leave(slim_iface_t *iface);
/* uct_iface_progress() with the wait overlay (slim_progress.c). */
unsigned slim_progress_iface_waits(uct_iface_h tl_iface);
/* Out of line, off every operation's path (slim_wait.c). */
void slim_waits_long_round(slim_iface_t *iface);
void slim_waits_do_close(slim_waits_t *waits);
void slim_waits_do_flush(slim_iface_t *iface);

/* After a round of `iface` that handed nothing over and polled nothing: a
 * counter, and past the threshold the timed round (the clock, a block). */
static UCS_F_ALWAYS_INLINE void slim_waits_idle(slim_iface_t *iface)
{
    if (ucs_likely(!slim_core_wait_idle(&iface->waits->watch))) {
        return;
    }
    slim_waits_long_round(iface);
}

/* After a round that found or handed over something: the wait, if one was
 * timed, ended at the previous idle round. No clock read. */
static UCS_F_ALWAYS_INLINE void slim_waits_busy(slim_iface_t *iface)
{
    slim_waits_t *waits = iface->waits;

    if (ucs_unlikely(waits->watch.timing)) {
        slim_waits_do_close(waits);
    }
    waits->watch.idle = 0;
}

/* At the start of a round: a wait that was timed or ended goes to the
 * core, through this interface's recorder. */
static UCS_F_ALWAYS_INLINE void slim_waits_flush(slim_iface_t *iface)
{
    if (ucs_unlikely(iface->waits->watch.opened | iface->waits->watch.closed)) {
        slim_waits_do_flush(iface);
    }
}

/* The most iov entries slim advertises for any zero-copy operation: it
 * translates them (memory handles) on the stack. */
#define SLIM_EP_MAX_IOV ((size_t)16)

/* slim_frame.c: lossy packing on the wire */
/* Kept as written: its comment spans two lines. */
/* clang-format off */
#define SLIM_FRAME_ZCOPY_SLACK 2048  /* room for the frame's own header and
                                        table in every advertised zcopy */
/* clang-format on */
ucs_status_t slim_frame_iface_init(slim_iface_t *iface, uct_md_h inner_md);
void slim_frame_iface_cleanup(slim_iface_t *iface);
void slim_frame_steer_caps(slim_iface_t *iface, uct_iface_attr_t *iface_attr);
void slim_frame_steer_md_attr(uct_md_attr_t *md_attr);
ucs_status_t slim_frame_receive(slim_iface_t *iface, void *data, size_t length,
                                unsigned flags);

/* Bytes of our own sent by am_bcopy: the pack callback copies them. */
typedef struct slim_bytes {
    const uint8_t *data;
    size_t length;
} slim_bytes_t;

size_t slim_frame_pack_bytes(void *dest, void *arg); /* arg: slim_bytes_t */

/* am_zcopy by copy (SLIM_FEATURE_ZCOPY_BY_COPY): header and iov go by the
 * inner am_bcopy, done at once (UCS_OK, `comp` never called), or
 * UCS_ERR_NO_RESOURCE; the bytes it sent in *length_p. */
ucs_status_t
slim_frame_am_zcopy_by_copy(slim_ep_t *ep, uint8_t id, const void *header,
                            unsigned header_length, const uct_iov_t *iov,
                            size_t iovcnt, unsigned flags, size_t *length_p);

/* The outcome of offering a message to the packing path. */
typedef struct slim_frame_outcome {
    int handled; /* a frame went (or failed) in its place */
    ucs_status_t status; /* when handled: the send's status */
    slim_op_t op; /* when handled: how the frame went */
    slim_frame_info_t info;
    int unframed; /* marked but sent as is: count missed */
} slim_frame_outcome_t;

/* Offers a message to the packing path; call it only when something is
 * marked (slim_iface_any_marked): outcome->handled when a frame went in
 * its place, outcome->unframed when marked bytes went as they are. */
void slim_frame_offer_marked(slim_ep_t *ep, const slim_frame_request_t *request,
                             slim_frame_outcome_t *outcome);

/* slim_put.c: packed puts and their expand notices */
typedef struct slim_put_outcome {
    int handled; /* went packed (or failed) in its place */
    ucs_status_t status; /* when handled: the put's status */
    slim_frame_result_t result; /* slim_core_put_pack()'s answer */
    int bounce_empty; /* UNFRAMED: the pool was empty */
    slim_frame_info_t info;
} slim_put_outcome_t;

ucs_status_t slim_put_iface_init(slim_iface_t *iface, uct_md_h inner_md);
void slim_put_iface_cleanup(slim_iface_t *iface);
void slim_put_steer_caps(slim_iface_t *iface, uct_iface_attr_t *iface_attr);
void slim_put_ep_init(slim_ep_t *ep);
void slim_put_ep_cleanup(slim_ep_t *ep);
/* Offers a zero-copy put to the packing path. It takes a bounce buffer to
 * try: call it only when slim_iface_any_marked(). */
void slim_put_offer(slim_ep_t *ep, const slim_frame_piece_t *pieces,
                    size_t piece_count, uint64_t remote_addr, uct_rkey_t rkey,
                    uct_completion_t *comp, slim_put_outcome_t *outcome);
ucs_status_t slim_put_drain(slim_ep_t *ep);
/* Bounce buffers for zero-copy frames (slim_frame.c). */
size_t slim_bounce_size(const slim_iface_t *iface); /* 0: no pool */
slim_bounce_t *slim_bounce_take(slim_iface_t *iface); /* NULL: empty */
uint8_t *slim_bounce_data(slim_bounce_t *bounce);
uct_mem_h slim_bounce_memh(const slim_bounce_t *bounce);
/* The completion to send a frame from `bounce` with: returns it. */
uct_completion_t *slim_bounce_frame_comp(slim_bounce_t *bounce);
void slim_bounce_give(slim_bounce_t *bounce);
int slim_put_is_own_pending(slim_ep_t *ep, uct_pending_req_t *req);
void slim_put_receive(slim_iface_t *iface, void *data, size_t length);

/* Every operation that sends on an endpoint calls this first: a parked
 * packed put must go out before anything else (one load when none is). */
static UCS_F_ALWAYS_INLINE ucs_status_t slim_ep_put_ready(slim_ep_t *ep)
{
    if (ucs_likely(ep->put_waiting == NULL)) {
        return UCS_OK;
    }
    return slim_put_drain(ep);
}

/* slim_ep.c: the endpoint class and every endpoint operation */
UCS_CLASS_DECLARE_NEW_FUNC(slim_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DECLARE_DELETE_FUNC(slim_ep_t, uct_ep_t);
void slim_ep_fill_ops(uct_iface_ops_t *ops);
/* The data operations of an interface with `features` (SLIM_FEATURE_*). */
void slim_ep_set_data_ops(uct_iface_ops_t *ops, unsigned features);
/* The pools of flush and zero-copy completions (flush_comps, zcopy_comps). */
ucs_status_t slim_ep_comp_pools_init(slim_iface_t *iface);
void slim_ep_comp_pools_cleanup(slim_iface_t *iface);
void slim_ep_fill_internal_ops(uct_iface_internal_ops_t *ops);

static UCS_F_ALWAYS_INLINE slim_ep_t *slim_ep(uct_ep_h ep)
{
    return ucs_derived_of(ep, slim_ep_t);
}

static UCS_F_ALWAYS_INLINE slim_iface_t *slim_iface(uct_iface_h iface)
{
    return ucs_derived_of(iface, slim_iface_t);
}

/* Whether any memory of the process is marked for packing. A program that
 * marks nothing (the default) sends every message without calling into the
 * packing path: one load of a word the core keeps. */
static UCS_F_ALWAYS_INLINE int slim_iface_any_marked(const slim_iface_t *iface)
{
    return __atomic_load_n(iface->marked_regions, __ATOMIC_RELAXED) != 0;
}

/* Every entry point that makes the inner transport do something calls this
 * first: the linger thread must be gone before the app's thread touches the
 * inner transport again. A load and a predicted branch on the data path. */
static UCS_F_ALWAYS_INLINE void slim_iface_wake(slim_iface_t *iface)
{
    if (ucs_unlikely(iface->progress.linger.running)) {
        slim_progress_linger_stop(iface);
    }
}

/* A tally this large is handed over by the operation that filled it
 * (slim_iface_record_sent): a progress round can last milliseconds while
 * UCP's handlers send inside it (53 rendezvous puts of 1 MiB over tcp took
 * 20 ms in one round), and the live loop must see such a transfer as it
 * goes. One clock read per 256 KiB sent: at most 0.4 % of the time 256 KiB
 * take on a 25 GB/s link, and nothing for messages that stay below it. */
#define SLIM_TALLY_MAX_BYTES (256 * 1024)

/* Out of line, so that no clock read or call into the core library stands
 * in an operation's code (tests/tools/fast-path.test). */
void slim_iface_hand_over_sent(slim_iface_t *iface);

/* Records one operation the inner transport accepted or delivered: a few
 * plain stores to the interface's tally, no clock, no call. */
static UCS_F_ALWAYS_INLINE void
slim_iface_record(slim_iface_t *iface, slim_op_t op, slim_dir_t dir,
                  uint8_t am_id, size_t wire_bytes, size_t orig_bytes,
                  uintptr_t peer)
{
    slim_core_tally_op(&iface->tally, op, dir, am_id, wire_bytes, orig_bytes,
                       peer);
    if ((dir == SLIM_DIR_SEND) &&
        ucs_unlikely(iface->tally.wire_bytes >= SLIM_TALLY_MAX_BYTES)) {
        slim_iface_hand_over_sent(iface);
    }
}

/* The tally goes to the core, stamped now. */
static UCS_F_ALWAYS_INLINE void slim_iface_hand_over(slim_iface_t *iface)
{
    if (slim_core_tally_pending(&iface->tally)) {
        slim_core_tally_flush(iface->recorder, &iface->tally);
    }
}

/* A zero-copy operation tallied in flight completed. The last one to
 * complete ends a transfer, and the tally is handed over at once, before
 * the application computes: an operation in flight holds its run busy
 * until its completion is stamped (stamped at the next MPI call instead, a
 * solver's 400 us compute phase after each 8 KiB rendezvous over tcp was
 * modelled busy, and its savings fell from 52 to 21 %). One clock read per
 * transfer, not per operation. */
static UCS_F_ALWAYS_INLINE void slim_iface_completed(slim_iface_t *iface)
{
    slim_core_tally_completed(&iface->tally);
    if ((iface->in_flight > 0) && (--iface->in_flight == 0)) {
        slim_core_tally_flush(iface->recorder, &iface->tally);
    }
}

/* At the start of a progress round of tcp (the linger's rounds), before
 * it polls the inner transport: what the tally holds goes to the core. The
 * rank is about to wait (this is the first round after its operations) or
 * waits already, so the clock read and the call take no time it would have
 * used, and every operation is stamped within a round of when it happened,
 * or, issued or received by an MPI call that needed no second round, at
 * the first round of the next call. Not at the end of a round: that is
 * between an arrival and the application. Returns what the tally holds
 * then (nothing), to tell after the round whether it recorded anything. */
static UCS_F_ALWAYS_INLINE uint64_t slim_iface_round_begin(slim_iface_t *iface)
{
    slim_iface_hand_over(iface);
    return iface->tally.ops + iface->tally.ended;
}

/* The same at the start of a round of a transport slim does not linger
 * for (shared memory, verbs: sub-microsecond rounds), for a tally that has
 * lasted a whole round only. Handing over in the first round after a send
 * cost a posix ping-pong 30-45 ns of its 160 (slim/posix 1.24 against
 * 1.03), though the reply was hundreds of nanoseconds away, most likely
 * the hand-over's stores queued behind the send's to the peer's cache
 * line. The price: operations are stamped one to two rounds after they
 * happened, and those of an MPI call that needed no second round at the
 * first or second round of the next call, every other call's together. */
static UCS_F_ALWAYS_INLINE void slim_iface_round_begin_fast(slim_iface_t *iface)
{
    uint64_t held = iface->tally.ops + iface->tally.ended;

    if ((held != 0) && (iface->round_seen != 0)) {
        slim_core_tally_flush(iface->recorder, &iface->tally);
        held = 0;
    }
    iface->round_seen = held;
}

/* After a progress round polled the inner transport (tcp's: the linger's
 * rounds): a round that found work no handler recorded (a put's data
 * received, queued bytes sent, a send completion) marks the link busy, so
 * that a burst lasts while its data moves (a 1 MiB rendezvous stream was
 * otherwise modelled as short bursts 200 us apart, 74-94 % idle). */
static UCS_F_ALWAYS_INLINE void
slim_iface_round_end(slim_iface_t *iface, unsigned count, uint64_t held)
{
    if (ucs_unlikely(count > 0) &&
        ((iface->tally.ops + iface->tally.ended) == held)) {
        slim_core_tally_activity(&iface->tally);
    }
}

static UCS_F_ALWAYS_INLINE void slim_ep_activity(slim_ep_t *ep)
{
    ++ep->op_seq;
    slim_iface_wake(slim_iface(ep->super.super.iface));
}

static UCS_F_ALWAYS_INLINE int slim_ep_is_quiescent(slim_ep_t *ep)
{
    return (ep->flushed_seq == ep->op_seq) && ucs_list_is_empty(&ep->flushes);
}

/* An operation the inner transport accepted (done now or completing later)
 * counts as traffic; a NO_RESOURCE retry does not. */
static UCS_F_ALWAYS_INLINE int slim_status_accepted(ucs_status_t status)
{
    return (status == UCS_OK) || (status == UCS_INPROGRESS);
}

/* Out of line, so that no call into the core library stands in an
 * operation's code (tests/tools/fast-path.test): marked bytes that went
 * as they are (slim_frame.c, slim_put.c). */
void slim_frame_count_unsent(const slim_frame_outcome_t *outcome);
void slim_put_count_forwarded(const slim_put_outcome_t *outcome);

/* After forwarding a message the packing path did not handle. */
static UCS_F_ALWAYS_INLINE void
slim_frame_forwarded(const slim_frame_outcome_t *outcome, ucs_status_t status)
{
    if (ucs_unlikely(outcome->unframed) && slim_status_accepted(status)) {
        slim_frame_count_unsent(outcome);
    }
}

/* After forwarding a put the packing path did not handle: its marked bytes
 * count as edge bytes (only cut values) or as missed. */
static UCS_F_ALWAYS_INLINE void
slim_put_forwarded(const slim_put_outcome_t *outcome, ucs_status_t status)
{
    if (ucs_likely(outcome->result == SLIM_FRAME_UNMARKED) ||
        !slim_status_accepted(status)) {
        return;
    }
    slim_put_count_forwarded(outcome);
}

#endif

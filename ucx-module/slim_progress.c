/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * Progress of the inner transport, and the linger thread that keeps it
 * progressing while the process finalizes.
 *
 * Why: UCX 1.13's tcp transport flags every AM send as needing a flush
 * (UCT_TCP_EP_FLAG_NEED_FLUSH), and its flush sends a zero-length PUT and
 * waits for the peer's PUT-ACK. When MPICH closes its endpoints at
 * MPI_Finalize, a peer that finished its own closes first is blocked in the
 * PMI barrier and never progresses UCX again, so the ack never comes and the
 * last rank spins forever (UCX issue #8738; Open MPI works around it by
 * progressing during its PMIx fence). slim sees the last endpoint of an
 * interface become quiescent (every endpoint flushed, nothing issued since:
 * what UCP's ep close does), and from then on progresses the inner interface
 * from a thread of its own, until the application touches the interface
 * again or closes it.
 *
 * Safety: the inner interface runs on a private UCT worker, so all of its
 * progress, including the one-shot callbacks it registers for itself, goes
 * through slim, by one thread at a time (`progress.owner`). Quiescence means no completion or
 * pending callback into UCP can fire; active messages and endpoint errors
 * that arrive on the linger thread are queued and delivered later from the
 * application's own progress call, so UCP is never entered from two threads.
 */
#include "slim.h"

#include <ucs/debug/memtrack_int.h>
#include <ucs/datastruct/queue.h>
#include <ucs/async/async_int.h>
#include <uct/base/uct_worker.h>
#include <linux/futex.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The linger thread sleeps this long when a progress round did nothing: a
 * finalizing process answers peers within well under a millisecond, for
 * some 8 % of a core while it lingers. */
#define SLIM_LINGER_IDLE_USEC 50

/* While the application still calls progress itself, the linger thread is
 * not needed (those calls run the inner transport) and only looks this
 * often whether they have stopped. Polling every 50 us beside them cost a
 * survivor spinning in MPI_Recv on a dead peer (its endpoint gone, so the
 * interface quiescent) about 8 % of a core per lingering interface, 17 %
 * over tcp's two, for nothing; looking every millisecond still cost 3 %
 * each on a loaded host. The wait ends early when the thread is stopped
 * (slim_progress_linger_nap), so its length delays only a finalizing
 * process that stops calling progress, once, by at most this long. */
#define SLIM_LINGER_ASIDE_USEC 10000

typedef enum {
    SLIM_DEFERRED_AM,
    SLIM_DEFERRED_ERROR
} slim_deferred_type_t;

typedef struct slim_deferred {
    ucs_queue_elem_t elem;
    slim_deferred_type_t type;
    uint8_t am_id;
    unsigned am_flags;
    uct_ep_h inner_ep; /* SLIM_DEFERRED_ERROR */
    ucs_status_t status; /* SLIM_DEFERRED_ERROR */
    size_t length;
    char data[]; /* SLIM_DEFERRED_AM payload */
} slim_deferred_t;

static __thread int slim_on_linger_thread;

/* Whether this is `iface`'s linger thread. The thread-local variable costs
 * a __tls_get_addr call in a module (~1 % of a loopback ping-pong when read
 * per message), so it is read only while a linger thread runs; `running` is
 * set before that thread starts. */
static UCS_F_ALWAYS_INLINE int
slim_progress_on_linger_thread(const slim_iface_t *iface)
{
    return iface->progress.linger.running && slim_on_linger_thread;
}
static volatile int slim_unloading;
static int slim_lingering; /* running linger threads, atomic */

static ucs_status_t slim_progress_handle_error(slim_iface_t *iface,
                                               uct_ep_h inner_ep,
                                               ucs_status_t status)
{
    slim_ep_t *ep = slim_iface_find_ep(iface, inner_ep);

    if (ep == NULL) {
        slim_debug("error %s on inner ep %p that has no slim ep",
                   ucs_status_string(status), inner_ep);
        return status;
    }
    return uct_iface_handle_ep_err(&iface->super.super, &ep->super.super,
                                   status);
}

/* Runs on the application's thread, as progress.owner. */
static void slim_progress_deliver_deferred(slim_iface_t *iface)
{
    slim_deferred_t *item;

    while (!ucs_queue_is_empty(&iface->progress.deferred)) {
        item = ucs_queue_pull_elem_non_empty(&iface->progress.deferred,
                                             slim_deferred_t, elem);
        if (item->type == SLIM_DEFERRED_AM) {
            /* We own the copy, so the handler must not keep it. */
            uct_iface_invoke_am(&iface->super, item->am_id, item->data,
                                item->length,
                                item->am_flags & ~UCT_CB_PARAM_FLAG_DESC);
        } else {
            slim_progress_handle_error(iface, item->inner_ep, item->status);
        }
        ucs_free(item);
    }
}

static slim_deferred_t *slim_progress_defer(slim_iface_t *iface,
                                            slim_deferred_type_t type,
                                            size_t length)
{
    slim_deferred_t *item = ucs_malloc(sizeof(*item) + length, "slim_deferred");

    if (item == NULL) {
        slim_error("no memory to defer an event that arrived while "
                   "the application was not progressing; it is dropped");
        return NULL;
    }

    item->type   = type;
    item->length = length;
    ucs_queue_push(&iface->progress.deferred, &item->elem);
    return item;
}

ucs_status_t slim_progress_deliver_am(slim_iface_t *iface, uint8_t id,
                                      void *data, size_t length, unsigned flags)
{
    slim_deferred_t *item;

    if (ucs_likely(!slim_progress_on_linger_thread(iface))) {
        return uct_iface_invoke_am(&iface->super, id, data, length, flags);
    }

    item = slim_progress_defer(iface, SLIM_DEFERRED_AM, length);
    if (item != NULL) {
        item->am_id    = id;
        item->am_flags = flags;
        memcpy(item->data, data, length);
    }
    return UCS_OK;
}

ucs_status_t slim_progress_deliver_error(slim_iface_t *iface, uct_ep_h inner_ep,
                                         ucs_status_t status)
{
    slim_deferred_t *item;

    if (ucs_likely(!slim_progress_on_linger_thread(iface))) {
        return slim_progress_handle_error(iface, inner_ep, status);
    }

    item = slim_progress_defer(iface, SLIM_DEFERRED_ERROR, 0);
    if (item != NULL) {
        item->inner_ep = inner_ep;
        item->status   = status;
    }
    return UCS_OK;
}

/* Runs on UCP's worker for every ucp_worker_progress() call. */
/* Each thread's token: its address names the thread as progress.owner. */
static __thread char slim_progress_token;

/* Makes this thread the one running the inner transport of `iface`, or
 * re-enters it when it already is (a handler that progresses). 0 when
 * another thread has it: the caller skips this round, never waits. */
static inline int slim_progress_enter(slim_iface_t *iface)
{
    void *me       = &slim_progress_token;
    void *expected = NULL;

    if (__atomic_load_n(&iface->progress.owner, __ATOMIC_RELAXED) == me) {
        ++iface->progress.depth;
        return 1;
    }
    if (!__atomic_compare_exchange_n(&iface->progress.owner, &expected, me, 0,
                                     __ATOMIC_ACQUIRE, __ATOMIC_RELAXED)) {
        return 0;
    }
    iface->progress.depth = 1;
    return 1;
}

static inline void slim_progress_leave(slim_iface_t *iface)
{
    if (--iface->progress.depth == 0) {
        __atomic_store_n(&iface->progress.owner, NULL, __ATOMIC_RELEASE);
    }
}

/* The application's thread. Returns how it entered: SLIM_PROGRESS_ALONE when
 * no linger thread exists (only this thread starts one, and one that would
 * start inside this call waits for its end: nothing else can run the inner
 * transport, so nothing is taken), SLIM_PROGRESS_OWNER when it took the
 * owner from a running linger thread, 0 when that thread has it now. */
enum {
    SLIM_PROGRESS_ALONE = 1,
    SLIM_PROGRESS_OWNER = 2
};

static inline int slim_progress_app_enter(slim_iface_t *iface)
{
    unsigned *calls = &iface->progress.linger.app_calls;

    if (ucs_likely(!iface->progress.linger.running)) {
        ++iface->progress.app_depth;
        return SLIM_PROGRESS_ALONE;
    }
    /* Only this thread writes it: a relaxed store, no locked instruction. */
    __atomic_store_n(calls, __atomic_load_n(calls, __ATOMIC_RELAXED) + 1,
                     __ATOMIC_RELAXED);
    return slim_progress_enter(iface) ? SLIM_PROGRESS_OWNER : 0;
}

static inline void slim_progress_app_leave(slim_iface_t *iface, int how)
{
    if (how == SLIM_PROGRESS_OWNER) {
        slim_progress_leave(iface);
        return;
    }
    if ((--iface->progress.app_depth == 0) &&
        ucs_unlikely(iface->progress.linger.pending)) {
        iface->progress.linger.pending = 0;
        slim_progress_maybe_linger(iface);
    }
}

/* One progress round on the application's thread: what arrived while a
 * linger thread ran, then the inner transport (its whole worker, or only
 * the interface), with the tally's hand-over around it (slim.h). 0 when a
 * linger thread has the interface this round. */
static UCS_F_ALWAYS_INLINE unsigned
slim_progress_app_round(slim_iface_t *iface, int whole_worker)
{
    unsigned count = 0;
    int how        = slim_progress_app_enter(iface);
    int record     = iface->features & SLIM_FEATURE_RECORD;
    uint64_t held  = 0;

    if (how) {
        if (record) {
            held = slim_iface_round_begin(iface);
        }
        if (ucs_unlikely(!ucs_queue_is_empty(&iface->progress.deferred))) {
            slim_progress_deliver_deferred(iface);
        }
        count = whole_worker ?
                        uct_worker_progress(iface->progress.inner_worker) :
                        uct_iface_progress(iface->inner);
        if (record) {
            slim_iface_round_end(iface, count, held);
        }
        slim_progress_app_leave(iface, how);
    }
    return count;
}

/* The same round with the wait overlay (SLIM_FEATURE_WAITS, slim_wait.c),
 * installed instead of the above when the interface opens: a round is
 * idle when it had nothing to hand over and the inner transport did
 * nothing, and only then is anything more done (a counter; the clock past
 * the threshold). A round that found something clears the counter after
 * it returned from the inner transport. */
static unsigned
slim_progress_app_wait_round(slim_iface_t *iface, int whole_worker)
{
    unsigned count = 0;
    int how        = slim_progress_app_enter(iface);
    int active;
    uint64_t held;

    if (!how) {
        return 0;
    }
    slim_waits_flush(iface);
    active = slim_core_tally_pending(&iface->tally);
    held   = slim_iface_round_begin(iface);
    if (ucs_unlikely(!ucs_queue_is_empty(&iface->progress.deferred))) {
        slim_progress_deliver_deferred(iface);
        active = 1;
    }
    count = whole_worker ? uct_worker_progress(iface->progress.inner_worker) :
                           uct_iface_progress(iface->inner);
    slim_iface_round_end(iface, count, held);
    slim_progress_app_leave(iface, how);
    if ((count == 0) && !active && !slim_core_tally_pending(&iface->tally)) {
        slim_waits_idle(iface);
    } else {
        slim_waits_busy(iface);
    }
    return count;
}

static unsigned slim_progress_outer_wait_cb(void *arg)
{
    unsigned count = slim_progress_app_wait_round(arg, 1);

    if (ucs_unlikely(slim_core_poll_wanted)) {
        slim_core_poll();
    }
    return count;
}

/* The tally round of a `direct` interface with the wait overlay: what the
 * tally holds at a round's start is what the previous round and the
 * application between them recorded, so an empty tally makes the previous
 * round idle. */
static unsigned slim_progress_tally_wait_cb(void *arg)
{
    slim_iface_t *iface = arg;

    slim_waits_flush(iface);
    if (!slim_core_tally_pending(&iface->tally)) {
        slim_waits_idle(iface);
    } else {
        slim_waits_busy(iface);
    }
    slim_iface_round_begin_fast(iface);
    if (ucs_unlikely(slim_core_poll_wanted)) {
        slim_core_poll();
    }
    return 0;
}

/* An interface whose inner iface lives on UCP's worker (`direct`) and
 * records: this callback runs right before the inner transport's own in
 * each round of UCP's worker (slim_iface_progress_enable adds it first),
 * and hands the tally over as such a round's start does
 * (slim_iface_round_begin_fast). The inner transport's
 * count is not seen here, so there are no activity marks: the transports
 * that need no linger (shared memory, verbs) move no data without an
 * operation slim records, or its completion. */
static UCS_F_ALWAYS_INLINE void slim_progress_tally_round(slim_iface_t *iface)
{
    slim_iface_round_begin_fast(iface);
}

static unsigned slim_progress_tally_cb(void *arg)
{
    slim_progress_tally_round(arg);
    return 0;
}

/* The same, where the live loop's drain thread could not start and
 * progress must run its timer (slim_core_poll_wanted, decided before any
 * interface opens). */
static unsigned slim_progress_tally_poll_cb(void *arg)
{
    slim_progress_tally_round(arg);
    slim_core_poll();
    return 0;
}

static unsigned slim_progress_outer_cb(void *arg)
{
    unsigned count = slim_progress_app_round(arg, 1);

    /* The live loop's timer, only when its drain thread could not start:
     * one load otherwise. */
    if (ucs_unlikely(slim_core_poll_wanted)) {
        slim_core_poll();
    }
    return count;
}

/* uct_iface_progress() of an interface with the wait overlay: the
 * interface's operation from its open on (slim_progress_waits_join). */
unsigned slim_progress_iface_waits(uct_iface_h tl_iface)
{
    slim_iface_t *iface = slim_iface(tl_iface);

    if (!iface->progress.direct) {
        return slim_progress_app_wait_round(iface, 0);
    }
    slim_progress_tally_wait_cb(iface);
    return uct_iface_progress(iface->inner);
}

unsigned slim_progress_iface(slim_iface_t *iface)
{
    if (!iface->progress.direct) {
        return slim_progress_app_round(iface, 0);
    }
    if (iface->features & SLIM_FEATURE_RECORD) {
        slim_progress_tally_round(iface);
    }
    return uct_iface_progress(iface->inner);
}

/* The linger thread can only run beside a worker whose async context is a
 * lock it can try: UCP's default thread modes. */
static ucs_async_ops_t *slim_async_thread_ops(ucs_async_context_t *async)
{
    switch (async->mode) {
    case UCS_ASYNC_MODE_THREAD_SPINLOCK:
        return &ucs_async_thread_spinlock_ops;
    case UCS_ASYNC_MODE_THREAD_MUTEX:
        return &ucs_async_thread_mutex_ops;
    default:
        return NULL;
    }
}

/* One progress round of the inner interface from the linger thread. It never
 * blocks on a lock: the application's thread may hold UCX's async lock (as
 * ucp_worker_destroy() does) while it joins this thread from iface close. */
static unsigned
slim_progress_linger_round(slim_iface_t *iface, ucs_async_ops_t *async_ops)
{
    ucs_async_context_t *async = iface->super.worker->async;
    unsigned count             = 0;

    if (!async_ops->context_try_block(async)) {
        return 0;
    }

    if (slim_progress_enter(iface)) {
        if (iface->features & SLIM_FEATURE_RECORD) {
            slim_iface_hand_over(iface);
        }
        /* UCP may already have disabled progress on this interface (the
         * "disables progress too early" half of the problem), so progress
         * the interface itself, and the one-shot callbacks on its worker. */
        count = uct_iface_progress(iface->inner);
        count += uct_worker_progress(iface->progress.inner_worker);
        slim_progress_leave(iface);
    }

    async_ops->context_unblock(async);
    return count;
}

/* Sleeps `usec`, or less when slim_progress_linger_stop() wakes it: a
 * futex on the stop flag, which needs no lock or condition of its own. */
static void slim_progress_linger_nap(slim_iface_t *iface, long usec)
{
    struct timespec wait = {usec / 1000000, (usec % 1000000) * 1000};

    syscall(SYS_futex, (int *)&iface->progress.linger.stop, FUTEX_WAIT_PRIVATE,
            0, &wait, NULL, 0);
}

static void *slim_progress_linger_main(void *arg)
{
    slim_iface_t *iface        = arg;
    ucs_async_ops_t *async_ops = slim_async_thread_ops(
            iface->super.worker->async);
    unsigned seen = __atomic_load_n(&iface->progress.linger.app_calls,
                                    __ATOMIC_RELAXED);
    unsigned calls;

    /* Named, so that top -H and tests can tell it from the application. */
    prctl(PR_SET_NAME, "slim-linger", 0, 0, 0);
    slim_on_linger_thread = 1;
    while (!iface->progress.linger.stop && !slim_unloading) {
        calls = __atomic_load_n(&iface->progress.linger.app_calls,
                                __ATOMIC_RELAXED);
        if (calls != seen) {
            seen = calls;
            slim_progress_linger_nap(iface, SLIM_LINGER_ASIDE_USEC);
        } else if (slim_progress_linger_round(iface, async_ops) == 0) {
            usleep(SLIM_LINGER_IDLE_USEC);
        }
    }

    __atomic_fetch_sub(&slim_lingering, 1, __ATOMIC_RELAXED);
    return NULL;
}

static void slim_progress_linger_start(slim_iface_t *iface)
{
    int ret;

    if (slim_async_thread_ops(iface->super.worker->async) == NULL) {
        slim_debug("iface %p: worker async mode %d has no lock to try; "
                   "not lingering",
                   iface, iface->super.worker->async->mode);
        return;
    }

    iface->progress.linger.stop = 0;
    /* Before the thread exists: what it delivers must find it running. */
    iface->progress.linger.running = 1;
    __atomic_fetch_add(&slim_lingering, 1, __ATOMIC_RELAXED);
    ret = pthread_create(&iface->progress.linger.thread, NULL,
                         slim_progress_linger_main, iface);
    if (ret != 0) {
        iface->progress.linger.running = 0;
        __atomic_fetch_sub(&slim_lingering, 1, __ATOMIC_RELAXED);
        slim_warn("cannot start the finalize progress thread (%s); "
                  "peers that still flush to this process may wait",
                  strerror(ret));
        return;
    }

    slim_debug("iface %p is quiescent, lingering", iface);
}

/* Called on the application's thread whenever an endpoint may have become
 * quiescent (a flush completed, an endpoint was destroyed). */
void slim_progress_maybe_linger(slim_iface_t *iface)
{
    if (!(iface->features & SLIM_FEATURE_LINGER) ||
        iface->progress.linger.running || slim_unloading ||
        !slim_iface_is_quiescent(iface)) {
        return;
    }
    if (iface->progress.app_depth > 0) {
        /* Inside a progress call that took no owner: started at its end. */
        iface->progress.linger.pending = 1;
        return;
    }
    slim_progress_linger_start(iface);
}

void slim_progress_linger_stop(slim_iface_t *iface)
{
    if (!iface->progress.linger.running) {
        return;
    }

    iface->progress.linger.stop = 1;
    syscall(SYS_futex, (int *)&iface->progress.linger.stop, FUTEX_WAKE_PRIVATE,
            1, NULL, NULL, 0);
    pthread_join(iface->progress.linger.thread, NULL);
    iface->progress.linger.running = 0;
}

ucs_status_t slim_progress_init(slim_iface_t *iface, uct_worker_h worker)
{
    uct_priv_worker_t *outer = ucs_derived_of(worker, uct_priv_worker_t);
    ucs_status_t status;

    /* Only a linger thread needs the inner transport's progress to itself;
     * otherwise the wrapper's own round (about as long as a shared-memory
     * poll: 16 % of a posix ping-pong's samples) is not paid at all. */
    iface->progress.direct = !(iface->features & SLIM_FEATURE_LINGER);
    if (iface->progress.direct) {
        iface->progress.inner_worker = worker;
    } else {
        status = uct_worker_create(outer->async, outer->thread_mode,
                                   &iface->progress.inner_worker);
        if (status != UCS_OK) {
            return status;
        }
    }

    iface->progress.owner            = NULL;
    iface->progress.depth            = 0;
    iface->progress.app_depth        = 0;
    iface->progress.linger.pending   = 0;
    iface->progress.linger.app_calls = 0;

    ucs_queue_head_init(&iface->progress.deferred);
    iface->progress.linger.running = 0;
    return UCS_OK;
}

/* UCP's worker drives the interface while UCP enables its progress, as it
 * does for UCX's own transports: on the fast path (the slow path's proxy
 * cost 0.3 us of one-way latency, 7 % over tcp loopback), added when UCP
 * activates the interface and removed when UCP deactivates it. Registered
 * once at open instead, slim's interfaces were polled in the order they
 * were opened, not in UCP's order: on tcp loopback the active-message
 * interface came first, so each receive was followed by a poll of the
 * other interface (a system call, 1 us on a VM where those are slow)
 * before the reply could go; and interfaces UCP never uses were polled. */
void slim_progress_enable(slim_iface_t *iface, unsigned flags)
{
    /* The callback gets &iface->super, which is the iface. */
    UCS_STATIC_ASSERT(ucs_offsetof(slim_iface_t, super) == 0);
    if (iface->features & SLIM_FEATURE_WAITS) {
        /* The wait overlay (slim_wait.c), chosen at open. */
        uct_base_iface_progress_enable_cb(&iface->super,
                                          iface->progress.direct ?
                                                  slim_progress_tally_wait_cb :
                                                  slim_progress_outer_wait_cb,
                                          flags);
    } else if (!iface->progress.direct) {
        uct_base_iface_progress_enable_cb(&iface->super, slim_progress_outer_cb,
                                          flags);
    } else if (iface->features & SLIM_FEATURE_RECORD) {
        /* Before the inner transport's, which the caller enables next. */
        uct_base_iface_progress_enable_cb(&iface->super,
                                          slim_core_poll_wanted ?
                                                  slim_progress_tally_poll_cb :
                                                  slim_progress_tally_cb,
                                          flags);
    }
}

void slim_progress_disable(slim_iface_t *iface, unsigned flags)
{
    uct_base_iface_progress_disable(&iface->super.super, flags);
}

void slim_progress_cleanup(slim_iface_t *iface)
{
    slim_deferred_t *item;
    unsigned dropped = 0;

    slim_progress_linger_stop(iface);
    slim_progress_disable(iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV |
                                         UCT_PROGRESS_THREAD_SAFE);

    while (!ucs_queue_is_empty(&iface->progress.deferred)) {
        item = ucs_queue_pull_elem_non_empty(&iface->progress.deferred,
                                             slim_deferred_t, elem);
        ucs_free(item);
        ++dropped;
    }
    if (dropped > 0) {
        slim_debug("iface %p closed with %u undelivered late events", iface,
                   dropped);
    }
}

void slim_progress_destroy(slim_iface_t *iface)
{
    if (!iface->progress.direct) {
        uct_worker_destroy(iface->progress.inner_worker);
    }
}

/* At unload (process exit without closing UCX), let linger threads leave
 * before UCX's own destructors tear down what they touch. */
void slim_progress_unload(void)
{
    int waited_ms = 0;

    slim_unloading = 1;
    while ((__atomic_load_n(&slim_lingering, __ATOMIC_RELAXED) > 0) &&
           (waited_ms < 200)) {
        usleep(1000);
        ++waited_ms;
    }
}

/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * Waits, seen from below MPI: runs of progress rounds in which nothing of
 * the rank arrives, completes or is sent, while MPI polls for it. Only with
 * UCX_SLIM_CPU=on (waits go to the trace and the report) or
 * UCX_SLIM_WAIT=yield (long waits block on the inner transport's event
 * file descriptors instead of spinning); otherwise no interface has
 * SLIM_FEATURE_WAITS and the plain progress callbacks run, untouched.
 *
 * A wait belongs to the rank, not to one interface: UCP polls every slim
 * interface of its worker in each round, and an arrival on one ends the
 * rank's wait even if the others saw nothing. So the interfaces of one UCT
 * worker share one detector (worker tl data, as UCX's own transports share
 * per-worker resources), which each of them tells after its round whether
 * the round was idle (nothing handed over, nothing polled) or not.
 *
 * Cost: an idle round increments a counter; only after a few idle rounds
 * in a row (SLIM_WAIT_ROUNDS per interface, a microsecond or two of a
 * shared-memory transport's rounds, a few system calls of tcp's) is the
 * clock read, once per idle round from then on: the rank waits, and the
 * read sits between two polls that found nothing. A round that found
 * something only clears the counter, and closes a timed wait with a few
 * stores: no clock read and no call there. The wait is handed to the core
 * twice, each time at the start of the next round (slim_waits_flush): its
 * begin once it is timed, so that the live loop can act while it lasts,
 * and its end, stamped from the last idle round's reading: what happens in
 * the round that ends it is never timed, and the compute phase that may
 * follow before MPI progresses again is never counted as waiting.
 *
 * Yield: a wait that lasted UCX_SLIM_WAIT_SPIN blocks in ppoll() on the
 * event descriptors of every interface of the detector (uct_iface_event_fd
 * and uct_iface_event_arm: tcp's epoll set, the shared-memory transports'
 * signal socket) for at most UCX_SLIM_WAIT_MAX at a time, and wakes on the
 * first arrival. Only when every transport UCP may use is slim or self
 * (UCX_TLS, read with UCX's own parser: an allow list naming nothing else),
 * since traffic of another transport would not wake it; never while a
 * linger thread runs (slim_progress.c): a blocked application thread holds
 * nothing that thread needs (it takes the interface with a try-lock and
 * skips rounds), and every block ends within the bound, so finalize and
 * the linger never wait on it for longer.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* ppoll */
#endif
#include "slim.h"

#include <ucs/config/parser.h>

#include <errno.h>
#include <string.h>
#include <time.h>

/* Idle rounds per interface before a wait is timed. A shared-memory
 * transport's round is tens of nanoseconds, tcp's a system call (a
 * microsecond or more on a VM): each then reaches a few microseconds of
 * waiting, well below what DVFS or a yield can use. A shared-memory
 * ping-pong's gaps stay below it and never read the clock; tcp's, tens of
 * microseconds, are timed, one clock read per system call. */
#define SLIM_WAIT_ROUNDS_POLL    32
#define SLIM_WAIT_ROUNDS_SYSCALL 4
/* uct_worker_tl_data key: "slmw". */
#define SLIM_WAITS_KEY 0x736c6d77u

static slim_core_wait_config_t slim_wait_config;
static int slim_wait_config_read;

static const slim_core_wait_config_t *slim_wait_get_config(void)
{
    /* Interface open and close only, on UCP's thread. */
    if (!slim_wait_config_read) {
        slim_core_wait_config(&slim_wait_config);
        slim_wait_config_read = 1;
    }
    return &slim_wait_config;
}

int slim_progress_wants_waits(void)
{
    const slim_core_wait_config_t *config = slim_wait_get_config();

    return config->record || config->yield;
}

/* ---- may this process block? ------------------------------------------- */

typedef struct {
    ucs_config_allow_list_t tls;
} slim_tls_config_t;

static ucs_config_field_t slim_tls_config_table[] = {
        {"TLS", "all", "The transports UCP may use (UCP's own variable).",
         ucs_offsetof(slim_tls_config_t, tls), UCS_CONFIG_TYPE_ALLOW_LIST},
        {NULL}};

/* Whether UCX_TLS, as UCX itself parses it (environment and configuration
 * files), allows no transport but slim and self. UCP opens an interface
 * only for what it allows, so nothing else can carry traffic that a
 * blocked wait would miss. "all", a negated list or any other name (an
 * alias such as sm included) could. */
static int slim_wait_tls_only_slim(char *why, size_t max)
{
    slim_tls_config_t config;
    ucs_status_t status;
    unsigned i;
    int ok = 1;

    memset(&config, 0, sizeof(config));
    status = ucs_config_parser_fill_opts(&config, slim_tls_config_table, "UCX_",
                                         NULL, 1);
    if (status != UCS_OK) {
        snprintf(why, max, "UCX_TLS cannot be read (%s)",
                 ucs_status_string(status));
        return 0;
    }
    if (config.tls.mode != UCS_CONFIG_ALLOW_LIST_ALLOW) {
        snprintf(why, max, "UCX_TLS allows every transport or negates some");
        ok = 0;
    }
    for (i = 0; ok && (i < config.tls.array.count); ++i) {
        const char *name = config.tls.array.names[i];
        size_t len       = strcspn(name, ":"); /* "slim:aux" */

        if (!((len == 4) && !strncmp(name, "slim", 4)) &&
            !((len == 4) && !strncmp(name, "self", 4))) {
            snprintf(why, max, "UCX_TLS names %s", name);
            ok = 0;
        }
    }
    ucs_config_parser_release_opts(&config, slim_tls_config_table);
    return ok;
}

static int slim_wait_yield_allowed(void)
{
    static int checked, allowed;
    char why[160];

    if (!checked) {
        checked = 1;
        allowed = slim_wait_tls_only_slim(why, sizeof(why));
        if (!allowed) {
            slim_warn("UCX_SLIM_WAIT=yield: %s; another transport's traffic "
                      "would not end a blocked wait, so waits spin "
                      "(set UCX_TLS=slim,self to yield)",
                      why);
        }
    }
    return allowed;
}

/* ---- the detector of a worker ------------------------------------------ */

static int slim_waits_cmp(slim_waits_t *waits)
{
    return 1;
}

static ucs_status_t slim_waits_init(slim_waits_t *waits)
{
    const slim_core_wait_config_t *config = slim_wait_get_config();

    memset(&waits->watch, 0, sizeof(waits->watch));
    waits->num_ifaces        = 0;
    waits->record            = config->record;
    waits->yield             = config->yield && slim_wait_yield_allowed();
    waits->max_ns            = config->max_ns;
    waits->spin_ticks        = 0;
    waits->low_after_ns      = slim_core_wait_low_after();
    waits->low_after_seen_ns = UINT64_MAX;
    waits->low_after_ticks   = UINT64_MAX;
    return UCS_OK;
}

static void slim_waits_cleanup(slim_waits_t *waits)
{
}

/* Whether `iface`'s inner transport can wake a blocked wait; its
 * descriptor in *fd_p. */
static int slim_wait_event_fd(slim_iface_t *iface, int *fd_p)
{
    const uint64_t need = UCT_IFACE_FLAG_EVENT_FD | UCT_IFACE_FLAG_EVENT_RECV;
    uct_iface_attr_t attr;

    return (uct_iface_query(iface->inner, &attr) == UCS_OK) &&
           ((attr.cap.event_flags & need) == need) &&
           (uct_iface_event_fd_get(iface->inner, fd_p) == UCS_OK);
}

void slim_progress_waits_join(slim_iface_t *iface)
{
    uct_priv_worker_t *worker = ucs_derived_of(iface->super.worker,
                                               uct_priv_worker_t);
    slim_waits_t *waits;
    int fd = -1;

    iface->waits = NULL;
    /* Receives that the inner transport delivers on another thread are
     * not in the tally (slim_iface.c): its rounds cannot tell idle. */
    if (!(iface->features & SLIM_FEATURE_RECORD) || (iface->recorder == NULL) ||
        iface->recv_any_thread || !slim_progress_wants_waits()) {
        return;
    }
    waits = uct_worker_tl_data_get(worker, SLIM_WAITS_KEY, slim_waits_t,
                                   slim_waits_cmp, slim_waits_init);
    if (UCS_PTR_IS_ERR(waits)) {
        slim_warn("iface %p: no memory to watch for waits", iface);
        return;
    }
    if (waits->num_ifaces == SLIM_WAITS_MAX_IFACES) {
        slim_warn("iface %p: more than %d slim interfaces on one worker; "
                  "this one is not watched for waits",
                  iface, SLIM_WAITS_MAX_IFACES);
        uct_worker_tl_data_put(waits, slim_waits_cleanup);
        return;
    }
    if (waits->yield && !slim_wait_event_fd(iface, &fd)) {
        slim_warn("UCX_SLIM_WAIT=yield: %s has no event descriptor to wake "
                  "a blocked wait; waits spin",
                  slim_inner_tl_name());
        waits->yield = 0;
    }

    iface->waits_slot                     = waits->num_ifaces;
    waits->ifaces[waits->num_ifaces]      = iface;
    waits->fds[waits->num_ifaces].fd      = fd;
    waits->fds[waits->num_ifaces].events  = POLLIN;
    waits->fds[waits->num_ifaces].revents = 0;
    ++waits->num_ifaces;
    waits->watch.threshold += iface->progress.direct ? SLIM_WAIT_ROUNDS_POLL :
                                                       SLIM_WAIT_ROUNDS_SYSCALL;
    if (waits->spin_ticks == 0) {
        waits->spin_ticks = slim_core_wait_ticks(iface->recorder,
                                                 slim_wait_config.spin_ns);
    }
    iface->waits = waits;
    iface->features |= SLIM_FEATURE_WAITS;
    iface->super.super.ops.iface_progress = slim_progress_iface_waits;
}

void slim_progress_waits_leave(slim_iface_t *iface)
{
    slim_waits_t *waits = iface->waits;
    unsigned i;

    if (waits == NULL) {
        return;
    }
    /* What this interface's rounds found and not handed over yet goes
     * through its own recorder while it is still open. */
    slim_waits_flush(iface);
    if (waits->watch.timing) {
        slim_waits_do_close(waits);
        slim_waits_flush(iface);
    }
    for (i = iface->waits_slot + 1; i < waits->num_ifaces; ++i) {
        waits->ifaces[i - 1] = waits->ifaces[i];
        waits->fds[i - 1]    = waits->fds[i];
        --waits->ifaces[i - 1]->waits_slot;
    }
    --waits->num_ifaces;
    waits->watch.threshold -= iface->progress.direct ? SLIM_WAIT_ROUNDS_POLL :
                                                       SLIM_WAIT_ROUNDS_SYSCALL;
    waits->watch.idle = 0;
    iface->waits      = NULL;
    iface->features &= ~SLIM_FEATURE_WAITS;
    uct_worker_tl_data_put(waits, slim_waits_cleanup);
}

/* ---- rounds ------------------------------------------------------------- */

void slim_waits_do_close(slim_waits_t *waits)
{
    slim_core_wait_end(&waits->watch, waits->record);
}

void slim_waits_do_flush(slim_iface_t *iface)
{
    slim_waits_t *waits = iface->waits;

    /* The begin first: a wait timed and ended between two rounds has both
     * pending, and `first_tick` is still its own (a new wait is timed only
     * after rounds that each flush first). */
    if (waits->watch.opened) {
        waits->watch.opened = 0;
        slim_core_wait_begin(iface->recorder, waits->watch.first_tick);
    }
    if (waits->watch.closed) {
        waits->watch.closed = 0;
        slim_core_wait_record(iface->recorder, &waits->watch.ended);
    }
}

/* How long this round may block, in nanoseconds; 0: spin on. A wait
 * blocks once it has lasted UCX_SLIM_WAIT_SPIN, or earlier when the CPU
 * policy (UCX_SLIM_CPU=on) lowered the cores that early into the latest
 * wait it planned: the policy predicts that waits go on from there (the
 * drain plans waits after the fact, so this is the decision for the waits
 * it saw last, not for this one). It blocks for at most UCX_SLIM_WAIT_MAX
 * at a time, which is all a wrong guess can cost (an arrival ends the
 * block at once). */
static uint64_t
slim_waits_block_ns(slim_waits_t *waits, slim_iface_t *iface, uint64_t now)
{
    uint64_t low_after = __atomic_load_n(waits->low_after_ns, __ATOMIC_RELAXED);
    uint64_t spin      = waits->spin_ticks;

    if (low_after != waits->low_after_seen_ns) {
        waits->low_after_seen_ns = low_after;
        waits->low_after_ticks   = (low_after == UINT64_MAX) ?
                                           UINT64_MAX :
                                           slim_core_wait_ticks(iface->recorder,
                                                                low_after);
    }
    if (waits->low_after_ticks < spin) {
        spin = waits->low_after_ticks;
    }
    if (now - waits->watch.first_tick < spin) {
        return 0;
    }
    return waits->max_ns;
}

static void
slim_waits_block(slim_waits_t *waits, slim_iface_t *iface, uint64_t now)
{
    const unsigned events = UCT_EVENT_RECV | UCT_EVENT_RECV_SIG |
                            UCT_EVENT_SEND_COMP;
    uint64_t ns = slim_waits_block_ns(waits, iface, now);
    struct timespec timeout;
    unsigned i;

    if (ns == 0) {
        return;
    }
    for (i = 0; i < waits->num_ifaces; ++i) {
        /* A linger thread runs the inner transport now: leave it be. */
        if (waits->ifaces[i]->progress.linger.running ||
            (uct_iface_event_arm(waits->ifaces[i]->inner, events) != UCS_OK)) {
            return;
        }
    }
    timeout.tv_sec  = ns / 1000000000ull;
    timeout.tv_nsec = ns % 1000000000ull;
    if ((ppoll(waits->fds, waits->num_ifaces, &timeout, NULL) < 0) &&
        (errno != EINTR)) {
        slim_warn("UCX_SLIM_WAIT=yield: ppoll failed (%m); waits spin");
        waits->yield = 0;
    }
    slim_core_wait_blocked(&waits->watch,
                           slim_core_wait_clock(iface->recorder));
}

void slim_waits_long_round(slim_iface_t *iface)
{
    slim_waits_t *waits = iface->waits;
    uint64_t now        = slim_core_wait_clock(iface->recorder);

    /* The live loop hears of a timed wait while it lasts, at the start of
     * the next round (where the rank's recorders are handed to), so that
     * it can ask for the rank's cores low in time. */
    if (!waits->watch.timing) {
        waits->watch.opened = waits->record;
    }
    slim_core_wait_timed(&waits->watch, now);
    if (waits->yield) {
        slim_waits_block(waits, iface, now);
    }
}

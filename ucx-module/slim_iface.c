/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * The slim interface: opens the inner transport's interface on the same
 * worker and device, mirrors its capabilities (without tag offload), and
 * forwards every control operation. Received active messages reach UCP
 * through one trampoline per AM id, which records them first.
 */
#include "slim.h"

#include <ucs/sys/math.h>
#include <ucs/sys/string.h>

static uct_iface_ops_t slim_iface_ops;
static uct_iface_internal_ops_t slim_iface_internal_ops;

/* Open slim interfaces in this process. When the last one closes (UCP
 * cleanup, i.e. MPI_Finalize) the report is written, so it does not depend
 * on the process reaching a clean exit. */
static int slim_num_open_ifaces;

/* Tag matching offload would deliver messages without passing our AM
 * trampolines, so slim never advertises it. */
#define SLIM_IFACE_TAG_FLAGS \
    (UCT_IFACE_FLAG_TAG_EAGER_SHORT | UCT_IFACE_FLAG_TAG_EAGER_BCOPY | \
     UCT_IFACE_FLAG_TAG_EAGER_ZCOPY | UCT_IFACE_FLAG_TAG_RNDV_ZCOPY)

ucs_status_t slim_query_devices(uct_md_h md,
                                uct_tl_device_resource_t **devices_p,
                                unsigned *num_devices_p)
{
    slim_md_t *slim_md = ucs_derived_of(md, slim_md_t);
    static int self_reported;
    ucs_status_t status;
    unsigned i, kept;

    status = slim_md->inner_tl.tl->query_devices(slim_md->inner, devices_p,
                                                 num_devices_p);
    if (status != UCS_OK) {
        return status;
    }
    /* A loopback device (self) reaches only its own process: slim over it
     * would offer MPI a transport to nobody. */
    for (i = kept = 0; i < *num_devices_p; ++i) {
        if ((*devices_p)[i].type != UCT_DEVICE_TYPE_SELF) {
            (*devices_p)[kept++] = (*devices_p)[i];
        }
    }
    if ((kept == 0) && (*num_devices_p > 0) && !self_reported) {
        self_reported = 1;
        slim_error("UCX_SLIM_INNER=%s: that transport reaches only its own "
                   "process, so slim offers no device; name one between "
                   "processes (tcp, rc_verbs, ud_verbs, dc_mlx5, ...)",
                   slim_md->inner_tl.tl->name);
    }
    *num_devices_p = kept;
    return UCS_OK;
}

/* slim forwards active messages and frames packed data in them: an inner
 * transport without any (cma, knem, xpmem: memory copies only) cannot
 * carry MPI's traffic. Says so once, naming the variable. */
static ucs_status_t
slim_iface_check_inner(slim_iface_t *self, const char *tl_name)
{
    static int reported;
    uct_iface_attr_t attr;
    ucs_status_t status;

    status = uct_iface_query(self->inner, &attr);
    if (status != UCS_OK) {
        return status;
    }
    if (attr.cap.flags & (UCT_IFACE_FLAG_AM_SHORT | UCT_IFACE_FLAG_AM_BCOPY |
                          UCT_IFACE_FLAG_AM_ZCOPY)) {
        return UCS_OK;
    }
    if (!reported) {
        reported = 1;
        slim_error("UCX_SLIM_INNER=%s: that transport carries no active "
                   "messages (it only moves memory), so slim cannot send "
                   "over it; name one that does (tcp, rc_verbs, ud_verbs, "
                   "dc_mlx5, ...)",
                   tl_name);
    }
    return UCS_ERR_UNSUPPORTED;
}

/* The receive trampolines, one chosen per AM id when the interface opens
 * (slim_iface_install_trampolines): a receive is recorded in the tally,
 * recorded from any thread, or only forwarded. */
static ucs_status_t
slim_am_trampoline(void *arg, void *data, size_t length, unsigned flags)
{
    slim_am_slot_t *slot = arg;

    slim_iface_record(slot->iface, SLIM_OP_AM_ANY, SLIM_DIR_RECV, slot->id,
                      length, length, 0);
    return slim_progress_deliver_am(slot->iface, slot->id, data, length, flags);
}

static ucs_status_t slim_am_trampoline_any_thread(void *arg, void *data,
                                                  size_t length, unsigned flags)
{
    slim_am_slot_t *slot = arg;

    slim_core_traffic(SLIM_OP_AM_ANY, SLIM_DIR_RECV, slot->id, length, length,
                      0);
    return slim_progress_deliver_am(slot->iface, slot->id, data, length, flags);
}

static ucs_status_t
slim_am_trampoline_forward(void *arg, void *data, size_t length, unsigned flags)
{
    slim_am_slot_t *slot = arg;

    return slim_progress_deliver_am(slot->iface, slot->id, data, length, flags);
}

/* Frames are rebuilt whatever this side's configuration: the sender chose
 * to pack. */
static ucs_status_t
slim_am_trampoline_frame(void *arg, void *data, size_t length, unsigned flags)
{
    slim_am_slot_t *slot = arg;
    slim_iface_t *iface  = slot->iface;

    if (!(iface->features & SLIM_FEATURE_RECORD)) {
        /* forwarded only */
    } else if (iface->recv_any_thread) {
        slim_core_traffic(SLIM_OP_AM_ANY, SLIM_DIR_RECV, slot->id, length,
                          length, 0);
    } else {
        slim_iface_record(iface, SLIM_OP_AM_ANY, SLIM_DIR_RECV, slot->id,
                          length, length, 0);
    }
    return slim_frame_receive(iface, data, length, flags);
}

static uct_am_callback_t
slim_am_trampoline_for(const slim_iface_t *iface, uint8_t id)
{
    if (id == SLIM_FRAME_AM_ID) {
        return slim_am_trampoline_frame;
    }
    if (!(iface->features & SLIM_FEATURE_RECORD)) {
        return slim_am_trampoline_forward;
    }
    return iface->recv_any_thread ? slim_am_trampoline_any_thread :
                                    slim_am_trampoline;
}

/* Endpoints are created and destroyed by the application's thread only. */
void slim_iface_add_ep(slim_iface_t *iface, slim_ep_t *ep)
{
    ucs_spin_lock(&iface->eps_lock);
    ucs_list_add_tail(&iface->eps, &ep->list);
    ++iface->num_eps;
    ucs_spin_unlock(&iface->eps_lock);
}

void slim_iface_remove_ep(slim_iface_t *iface, slim_ep_t *ep)
{
    ucs_spin_lock(&iface->eps_lock);
    ucs_list_del(&ep->list);
    --iface->num_eps;
    ucs_spin_unlock(&iface->eps_lock);
}

/* True when every endpoint is quiescent; an interface whose endpoints were
 * all destroyed is quiescent too. */
int slim_iface_is_quiescent(slim_iface_t *iface)
{
    slim_ep_t *ep;
    int quiescent = (iface->orphan_flushes == 0);

    ucs_spin_lock(&iface->eps_lock);
    ucs_list_for_each(ep, &iface->eps, list) {
        if (!slim_ep_is_quiescent(ep)) {
            quiescent = 0;
            break;
        }
    }
    ucs_spin_unlock(&iface->eps_lock);
    return quiescent;
}

slim_ep_t *slim_iface_find_ep(slim_iface_t *iface, uct_ep_h inner_ep)
{
    slim_ep_t *ep, *found = NULL;

    ucs_spin_lock(&iface->eps_lock);
    ucs_list_for_each(ep, &iface->eps, list) {
        if (ep->inner == inner_ep) {
            found = ep;
            break;
        }
    }
    ucs_spin_unlock(&iface->eps_lock);
    return found;
}

/* The inner transport reports failures with its own endpoint; UCP only knows
 * ours (mapped in slim_progress.c, deferred if the linger thread saw it). */
static ucs_status_t
slim_iface_inner_err_handler(void *arg, uct_ep_h inner_ep, ucs_status_t status)
{
    return slim_progress_deliver_error(arg, inner_ep, status);
}

static ucs_status_t
slim_iface_query(uct_iface_h tl_iface, uct_iface_attr_t *iface_attr)
{
    ucs_status_t status;

    status = uct_iface_query(slim_iface(tl_iface)->inner, iface_attr);
    if (status != UCS_OK) {
        return status;
    }

    iface_attr->cap.flags &= ~SLIM_IFACE_TAG_FLAGS;
    /* Zero-copy iovs are translated on the stack (slim_ep.c). */
    iface_attr->cap.am.max_iov  = ucs_min(iface_attr->cap.am.max_iov,
                                          SLIM_EP_MAX_IOV);
    iface_attr->cap.put.max_iov = ucs_min(iface_attr->cap.put.max_iov,
                                          SLIM_EP_MAX_IOV);
    iface_attr->cap.get.max_iov = ucs_min(iface_attr->cap.get.max_iov,
                                          SLIM_EP_MAX_IOV);
    slim_frame_steer_caps(slim_iface(tl_iface), iface_attr);
    return UCS_OK;
}

static ucs_status_t
slim_iface_get_device_address(uct_iface_h tl_iface, uct_device_addr_t *addr)
{
    return uct_iface_get_device_address(slim_iface(tl_iface)->inner, addr);
}

static ucs_status_t
slim_iface_get_address(uct_iface_h tl_iface, uct_iface_addr_t *addr)
{
    return uct_iface_get_address(slim_iface(tl_iface)->inner, addr);
}

static int slim_iface_is_reachable(const uct_iface_h tl_iface,
                                   const uct_device_addr_t *dev_addr,
                                   const uct_iface_addr_t *iface_addr)
{
    return uct_iface_is_reachable(slim_iface(tl_iface)->inner, dev_addr,
                                  iface_addr);
}

static ucs_status_t
slim_iface_flush(uct_iface_h tl_iface, unsigned flags, uct_completion_t *comp)
{
    slim_iface_wake(slim_iface(tl_iface));
    return uct_iface_flush(slim_iface(tl_iface)->inner, flags, comp);
}

static ucs_status_t slim_iface_fence(uct_iface_h tl_iface, unsigned flags)
{
    slim_iface_wake(slim_iface(tl_iface));
    return uct_iface_fence(slim_iface(tl_iface)->inner, flags);
}

static void slim_iface_progress_enable(uct_iface_h tl_iface, unsigned flags)
{
    slim_iface_t *iface = slim_iface(tl_iface);

    /* slim's round callback, where there is one beside the inner
     * transport's, runs before it: at the start of each round. */
    slim_progress_enable(iface, flags);
    uct_iface_progress_enable(iface->inner, flags);
}

static void slim_iface_progress_disable(uct_iface_h tl_iface, unsigned flags)
{
    slim_iface_t *iface = slim_iface(tl_iface);

    slim_progress_disable(iface, flags);
    uct_iface_progress_disable(iface->inner, flags);
}

static unsigned slim_iface_progress(uct_iface_h tl_iface)
{
    return slim_progress_iface(slim_iface(tl_iface));
}

static ucs_status_t slim_iface_event_fd_get(uct_iface_h tl_iface, int *fd_p)
{
    return uct_iface_event_fd_get(slim_iface(tl_iface)->inner, fd_p);
}

static ucs_status_t slim_iface_event_arm(uct_iface_h tl_iface, unsigned events)
{
    slim_iface_wake(slim_iface(tl_iface));
    return uct_iface_event_arm(slim_iface(tl_iface)->inner, events);
}

static ucs_status_t
slim_iface_accept(uct_iface_h tl_iface, uct_conn_request_h conn_request)
{
    slim_iface_wake(slim_iface(tl_iface));
    return uct_iface_accept(slim_iface(tl_iface)->inner, conn_request);
}

static ucs_status_t
slim_iface_reject(uct_iface_h tl_iface, uct_conn_request_h conn_request)
{
    slim_iface_wake(slim_iface(tl_iface));
    return uct_iface_reject(slim_iface(tl_iface)->inner, conn_request);
}

static ucs_status_t
slim_iface_tag_recv_zcopy(uct_iface_h tl_iface, uct_tag_t tag,
                          uct_tag_t tag_mask, const uct_iov_t *iov,
                          size_t iovcnt, uct_tag_context_t *ctx)
{
    return UCS_ERR_UNSUPPORTED; /* tag offload is never advertised */
}

static ucs_status_t slim_iface_tag_recv_cancel(uct_iface_h tl_iface,
                                               uct_tag_context_t *ctx,
                                               int force)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t
slim_iface_estimate_perf(uct_iface_h tl_iface, uct_perf_attr_t *perf_attr)
{
    return uct_iface_estimate_perf(slim_iface(tl_iface)->inner, perf_attr);
}

static void slim_iface_vfs_refresh(uct_iface_h tl_iface)
{
    uct_base_iface_t *inner = ucs_derived_of(slim_iface(tl_iface)->inner,
                                             uct_base_iface_t);

    inner->internal_ops->iface_vfs_refresh(&inner->super);
}

/* Registers a trampoline for every AM id on the inner interface. Handlers
 * run where the inner transport runs them, so the flag mirrors its caps. */
static ucs_status_t slim_iface_install_trampolines(slim_iface_t *self)
{
    uct_iface_attr_t attr;
    unsigned cb_flags;
    ucs_status_t status;
    uint8_t id;

    status = uct_iface_query(self->inner, &attr);
    if (status != UCS_OK) {
        return status;
    }

    cb_flags = (attr.cap.flags & UCT_IFACE_FLAG_CB_SYNC) ? 0 :
                                                           UCT_CB_FLAG_ASYNC;
    /* Handlers the inner transport may run on its async thread, beside the
     * application's sends, must not use the interface's serial recorder. */
    self->recv_any_thread = (cb_flags == UCT_CB_FLAG_ASYNC);
    for (id = 0; id < UCT_AM_ID_MAX; ++id) {
        self->am_slots[id].iface = self;
        self->am_slots[id].id    = id;
        status                   = uct_iface_set_am_handler(self->inner, id,
                                                            slim_am_trampoline_for(self, id),
                                                            &self->am_slots[id], cb_flags);
        if (status != UCS_OK) {
            slim_error("failed to set AM trampoline %u on %s: %s", id,
                       slim_inner_tl_name(), ucs_status_string(status));
            return status;
        }
    }
    return UCS_OK;
}

/* The AM alignment parameters are passed on to the inner transport, which
 * may honour them or not (tcp does not); what no transport may accept is
 * refused here, as UCX's own transports refuse it: an alignment that is not a
 * power of two, or an offset without an alignment. */
static ucs_status_t
slim_iface_check_am_alignment(const uct_iface_params_t *params)
{
    size_t align, align_offset;
    ucs_status_t status;

    status = uct_iface_param_am_alignment(params, SIZE_MAX, 0, 0, &align,
                                          &align_offset);
    if (status != UCS_OK) {
        return status;
    }

    if ((params->field_mask & UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT) &&
        !ucs_is_pow2(params->am_alignment)) {
        slim_error("AM alignment %zu is not a power of 2",
                   params->am_alignment);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

void slim_iface_hand_over_sent(slim_iface_t *iface)
{
    slim_core_tally_flush(iface->recorder, &iface->tally);
}

/* The features this interface's operations carry (SLIM_FEATURE_*). */
static unsigned slim_iface_features(const char *inner_tl_name)
{
    unsigned features = 0;

    if (!slim_core_forward_only()) {
        features |= SLIM_FEATURE_RECORD | SLIM_FEATURE_PACK;
    }
    /* Only tcp's flush waits for a reply that a finalizing peer must
     * progress to send (UCX issue #8738, slim_progress.c). */
    if (!strcmp(inner_tl_name, "tcp")) {
        features |= SLIM_FEATURE_LINGER;
    }
    return features;
}

/* own_config: slim's own rows, for its base interface; inner_config: the
 * inner transport's, which it is opened with (slim_iface_open). */
static UCS_CLASS_INIT_FUNC(slim_iface_t, uct_md_h md, uct_worker_h worker,
                           const uct_iface_params_t *params,
                           const uct_iface_config_t *own_config,
                           const uct_iface_config_t *inner_config)
{
    slim_md_t *slim_md = ucs_derived_of(md, slim_md_t);
    uct_iface_params_t inner_params;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_iface_t, &slim_iface_ops,
                              &slim_iface_internal_ops, md, worker, params,
                              own_config UCS_STATS_ARG(
                                      (params->field_mask &
                                       UCT_IFACE_PARAM_FIELD_STATS_ROOT) ?
                                              params->stats_root :
                                              NULL)
                                      UCS_STATS_ARG(SLIM_TL_NAME));

    memset(&self->tally, 0, sizeof(self->tally));
    self->in_flight  = 0;
    self->round_seen = 0;
    self->waits      = NULL;
    self->features   = slim_iface_features(slim_md->inner_tl.tl->name);
    ucs_list_head_init(&self->eps);
    self->num_eps        = 0;
    self->orphan_flushes = 0;
    ucs_spinlock_init(&self->eps_lock, 0);

    if (!(params->open_mode & UCT_IFACE_OPEN_MODE_DEVICE)) {
        slim_error("only device open mode is supported");
        status = UCS_ERR_UNSUPPORTED;
        goto err_lock;
    }

    status = slim_iface_check_am_alignment(params);
    if (status != UCS_OK) {
        goto err_lock;
    }

    status = slim_ep_comp_pools_init(self);
    if (status != UCS_OK) {
        goto err_lock;
    }

    status = slim_progress_init(self, worker);
    if (status != UCS_OK) {
        goto err_comp_pools;
    }

    inner_params                     = *params;
    inner_params.mode.device.tl_name = slim_md->inner_tl.tl->name;
    inner_params.err_handler         = slim_iface_inner_err_handler;
    inner_params.err_handler_arg     = self;
    inner_params.field_mask |= UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                               UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG;

    status = uct_iface_open(slim_md->inner, self->progress.inner_worker,
                            &inner_params, inner_config, &self->inner);
    if (status != UCS_OK) {
        goto err_progress;
    }

    status = slim_iface_check_inner(self, slim_md->inner_tl.tl->name);
    if (status != UCS_OK) {
        goto err_close_inner;
    }

    /* The pool first: zero-copy frames use it too. */
    status = slim_put_iface_init(self, slim_md->inner);
    if (status != UCS_OK) {
        goto err_close_inner;
    }

    status = slim_frame_iface_init(self, slim_md->inner);
    if (status != UCS_OK) {
        goto err_put;
    }

    /* The data operations, once the inner transport's capabilities told
     * whether am_zcopy is done by copy. */
    if (self->frame.by_copy_max > 0) {
        self->features |= SLIM_FEATURE_ZCOPY_BY_COPY;
    }
    slim_ep_set_data_ops(&self->super.super.ops, self->features);

    /* Before the trampolines: whatever arrives is recorded on it. */
    self->recorder       = (self->features & SLIM_FEATURE_RECORD) ?
                                   slim_core_recorder_open(&self->tally) :
                                   NULL;
    self->marked_regions = slim_core_marked_regions();
    status               = slim_iface_install_trampolines(self);
    if (status != UCS_OK) {
        goto err_recorder;
    }

    /* With UCX_SLIM_CPU=on or UCX_SLIM_WAIT=yield only: the wait overlay
     * on this interface's progress (slim_wait.c). */
    slim_progress_waits_join(self);

    __atomic_fetch_add(&slim_num_open_ifaces, 1, __ATOMIC_RELAXED);

    slim_debug("iface %p wraps %s iface %p on %s", self,
               slim_md->inner_tl.tl->name, self->inner,
               params->mode.device.dev_name);
    return UCS_OK;

err_recorder:
    slim_core_recorder_close(self->recorder);
    slim_frame_iface_cleanup(self);
err_put:
    slim_put_iface_cleanup(self);
err_close_inner:
    uct_iface_close(self->inner);
err_progress:
    slim_progress_destroy(self);
err_comp_pools:
    slim_ep_comp_pools_cleanup(self);
err_lock:
    ucs_spinlock_destroy(&self->eps_lock);
    return status;
}

static UCS_CLASS_CLEANUP_FUNC(slim_iface_t)
{
    if (!ucs_list_is_empty(&self->eps)) {
        slim_warn("iface %p closed with %zu endpoints still open", self,
                  ucs_list_length(&self->eps));
    }
    slim_progress_cleanup(self);
    /* Before the inner interface and the recorder close: a wait it was
     * part of ends here and is handed over. */
    slim_progress_waits_leave(self);
    uct_iface_close(self->inner);
    slim_progress_destroy(self);
    slim_put_iface_cleanup(self); /* after the inner iface: nothing in flight */
    slim_frame_iface_cleanup(self);
    slim_ep_comp_pools_cleanup(self);
    ucs_spinlock_destroy(&self->eps_lock);
    /* After the inner iface closed: nothing records on it any more. What
     * it did since its last progress round still counts. */
    slim_iface_hand_over(self);
    slim_core_recorder_close(self->recorder);

    if (__atomic_sub_fetch(&slim_num_open_ifaces, 1, __ATOMIC_RELAXED) == 0) {
        slim_core_report();
    }
}

UCS_CLASS_DEFINE(slim_iface_t, uct_base_iface_t);
static UCS_CLASS_DEFINE_NEW_FUNC(slim_iface_t, uct_iface_t, uct_md_h,
                                 uct_worker_h, const uct_iface_params_t *,
                                 const uct_iface_config_t *,
                                 const uct_iface_config_t *);
static UCS_CLASS_DEFINE_DELETE_FUNC(slim_iface_t, uct_iface_t);

/* CONFIG is the inner transport's once slim knows it (slim_component.c),
 * with whatever UCP or another UCT caller set in it by name: the inner is
 * opened with it as it is, and slim's own base interface reads its own rows,
 * so that slim's attributes are the inner's as configured, as before. A
 * configuration read before slim knew its inner transport is slim's own;
 * the inner then reads its own from the environment. */
ucs_status_t slim_iface_open(uct_md_h md, uct_worker_h worker,
                             const uct_iface_params_t *params,
                             const uct_iface_config_t *config,
                             uct_iface_h *iface_p)
{
    slim_md_t *slim_md = ucs_derived_of(md, slim_md_t);
    const uct_iface_config_t *own_config, *inner_config;
    uct_iface_config_t *read_config;
    ucs_status_t status;

    if (slim_config_is_inner(config, slim_md->inner_tl.tl->config.table)) {
        status       = slim_own_iface_config_read(&read_config);
        own_config   = read_config;
        inner_config = config;
    } else {
        slim_debug("iface configuration %p was read before the inner "
                   "transport was known; %s reads its own",
                   config, slim_md->inner_tl.tl->name);
        status       = uct_md_iface_config_read(slim_md->inner,
                                                slim_md->inner_tl.tl->name, NULL,
                                                NULL, &read_config);
        own_config   = config;
        inner_config = read_config;
    }
    if (status != UCS_OK) {
        return status;
    }

    status = UCS_CLASS_NEW_FUNC_NAME(slim_iface_t)(md, worker, params,
                                                   own_config, inner_config,
                                                   iface_p);
    uct_config_release(read_config);
    return status;
}

UCS_F_CTOR static void slim_iface_ops_init(void)
{
    slim_ep_fill_ops(&slim_iface_ops);
    slim_iface_ops.ep_create            = UCS_CLASS_NEW_FUNC_NAME(slim_ep_t);
    slim_iface_ops.ep_destroy           = UCS_CLASS_DELETE_FUNC_NAME(slim_ep_t);
    slim_iface_ops.iface_tag_recv_zcopy = slim_iface_tag_recv_zcopy;
    slim_iface_ops.iface_tag_recv_cancel  = slim_iface_tag_recv_cancel;
    slim_iface_ops.iface_accept           = slim_iface_accept;
    slim_iface_ops.iface_reject           = slim_iface_reject;
    slim_iface_ops.iface_flush            = slim_iface_flush;
    slim_iface_ops.iface_fence            = slim_iface_fence;
    slim_iface_ops.iface_progress_enable  = slim_iface_progress_enable;
    slim_iface_ops.iface_progress_disable = slim_iface_progress_disable;
    slim_iface_ops.iface_progress         = slim_iface_progress;
    slim_iface_ops.iface_event_fd_get     = slim_iface_event_fd_get;
    slim_iface_ops.iface_event_arm        = slim_iface_event_arm;
    slim_iface_ops.iface_close = UCS_CLASS_DELETE_FUNC_NAME(slim_iface_t);
    slim_iface_ops.iface_query = slim_iface_query;
    slim_iface_ops.iface_get_device_address = slim_iface_get_device_address;
    slim_iface_ops.iface_get_address        = slim_iface_get_address;
    slim_iface_ops.iface_is_reachable       = slim_iface_is_reachable;

    slim_ep_fill_internal_ops(&slim_iface_internal_ops);
    slim_iface_internal_ops.iface_estimate_perf = slim_iface_estimate_perf;
    slim_iface_internal_ops.iface_vfs_refresh   = slim_iface_vfs_refresh;
}

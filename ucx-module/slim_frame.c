/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * Lossy packing on the wire: an active message whose payload overlaps
 * marked memory leaves as a packing frame (src/pack/frame.h) on the reserved
 * AM id SLIM_FRAME_AM_ID, and the receiving slim rebuilds the original
 * message and hands it to UCP's handler for the original id. The core
 * library decides what is marked and builds and checks frames; this file
 * only finds memory for them and picks the inner operation that carries
 * them.
 *
 * A frame goes by am_short when it fits, else by am_bcopy, else by am_zcopy
 * from memory of our own, released when the inner transport completes it:
 * a registered bounce buffer (slim_put.c) when one is free, which any inner
 * transport accepts, else malloc'ed memory where the inner md needs no
 * memory handle (tcp).
 * Either way slim has copied the user's data, so the operation is complete
 * for UCP at once. A frame nothing can carry makes the message go as it is,
 * counted as missed.
 *
 * Steering: UCP shows the user's buffer only to am_short and am_zcopy, and
 * to put/get zcopy. Puts are packed by slim_put.c; a get reads the peer's
 * memory where nobody can pack it. While packing steers
 * (slim_core_packing_steers()), slim withholds get zcopy so that rendezvous
 * writes by put, limits puts to a bounce buffer (slim_put_steer_caps), keeps
 * every advertised am_zcopy small enough for its frame, and reports zero
 * registration cost so that UCP's automatic zero-copy threshold sends medium
 * messages by zcopy too.
 *
 * An inner transport without any zero copy (UCX's shared-memory posix and
 * sysv: am_short up to ~100 B, am_bcopy up to 8 KiB, no am/put/get zcopy)
 * would leave UCP nothing but am_bcopy for every larger message, and the
 * buffer out of slim's sight. While packing steers over such a transport,
 * slim advertises an am_zcopy of its own (SLIM_FEATURE_ZCOPY_BY_COPY): the
 * header and the iov go by the inner am_bcopy, gathered by its pack
 * callback, and the operation is complete at once; a marked message goes
 * as a frame instead. UCP's zero-copy paths need nothing more from such an
 * inner md: UCP 1.13 registers memory for an am_zcopy only where the md
 * sets UCT_MD_FLAG_NEED_MEMH (ucp_request_send_buffer_reg_lane_check,
 * ucp_request.inl; ucp_ep_config_init_attrs and, for the v2 protocols,
 * ucp_proto_common_find_lanes_internal refuse zcopy only on an md that
 * needs a handle and cannot register), and posix's md needs none. Nor may
 * slim claim UCT_MD_FLAG_REG there: UCP would then pick the lane for
 * rendezvous by remote key (wireup/select.c, the rkey_ptr and rma_bw
 * lanes) and pack keys of memory the inner md never registered. Large
 * messages go by UCP's active-message rendezvous (RNDV_DATA fragments,
 * rndv.c), by this same am_zcopy.
 */
#include "slim.h"

#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>
#include <uct/base/uct_iov.inl>
#include <string.h>

/* A frame sent by zero-copy from memory of our own. */
typedef struct slim_frame_tx {
    uct_completion_t comp;
    uint8_t data[] UCS_V_ALIGNED(8);
} slim_frame_tx_t;

typedef struct slim_frame_alloc_ctx {
    slim_iface_t *iface;
    slim_frame_tx_t *tx; /* set when the frame went to malloc'ed memory */
    slim_bounce_t *bounce; /* set when it went to a bounce buffer */
} slim_frame_alloc_ctx_t;


ucs_status_t slim_frame_iface_init(slim_iface_t *iface, uct_md_h inner_md)
{
    slim_frame_iface_t *frame = &iface->frame;
    uct_iface_attr_t attr;
    uct_md_attr_t md_attr;
    ucs_status_t status;

    memset(frame, 0, sizeof(*frame));

    status = uct_iface_query(iface->inner, &attr);
    if (status != UCS_OK) {
        return status;
    }
    status = uct_md_query(inner_md, &md_attr);
    if (status != UCS_OK) {
        return status;
    }

    if (attr.cap.flags & UCT_IFACE_FLAG_AM_SHORT) {
        frame->max_short = attr.cap.am.max_short;
    }
    if (attr.cap.flags & UCT_IFACE_FLAG_AM_BCOPY) {
        frame->max_bcopy = attr.cap.am.max_bcopy;
    }
    /* Zero-copy frames from bounce buffers, which are registered, up to
     * their size; beyond that, or without a pool, from malloc'ed memory
     * where the inner transport needs no memory handle (tcp does not). */
    frame->need_memh = !!(md_attr.cap.flags & UCT_MD_FLAG_NEED_MEMH);
    if (attr.cap.flags & UCT_IFACE_FLAG_AM_ZCOPY) {
        if (!frame->need_memh) {
            frame->max_zcopy = attr.cap.am.max_zcopy;
        } else {
            frame->max_zcopy = ucs_min(attr.cap.am.max_zcopy,
                                       slim_bounce_size(iface));
        }
    }

    /* am_zcopy by copy: header and payload leave room in the inner am_bcopy
     * for a frame's header and table (SLIM_FRAME_ZCOPY_SLACK), so that a
     * marked message of any size UCP sends by it fits one frame. Over posix
     * that is 6208 of 8256 bytes: while packing steers, a large transfer
     * takes a third more messages than by UCP's own am_bcopy. */
    if ((iface->features & SLIM_FEATURE_PACK) && slim_core_packing_steers() &&
        (attr.cap.flags & UCT_IFACE_FLAG_AM_BCOPY) &&
        !(attr.cap.flags & UCT_IFACE_FLAG_AM_ZCOPY) &&
        (frame->max_bcopy > SLIM_FRAME_ZCOPY_SLACK)) {
        frame->by_copy_max = frame->max_bcopy - SLIM_FRAME_ZCOPY_SLACK;
    }

    frame->tx_scratch_size = ucs_max(frame->max_short, frame->max_bcopy);
    frame->tx_scratch      = ucs_malloc(frame->tx_scratch_size,
                                        "slim_frame_tx_scratch");
    if (frame->tx_scratch == NULL) {
        slim_error("no memory for a %zu-byte frame buffer",
                   frame->tx_scratch_size);
        return UCS_ERR_NO_MEMORY;
    }
    return UCS_OK;
}

void slim_frame_iface_cleanup(slim_iface_t *iface)
{
    ucs_free(iface->frame.tx_scratch);
    ucs_free(iface->frame.rx_scratch);
    iface->frame.tx_scratch = NULL;
    iface->frame.rx_scratch = NULL;
}

void slim_frame_steer_caps(slim_iface_t *iface, uct_iface_attr_t *iface_attr)
{
    const slim_frame_iface_t *frame = &iface->frame;
    size_t carry;

    if (!slim_core_packing_steers()) {
        return;
    }

    slim_put_steer_caps(iface, iface_attr);
    if (frame->by_copy_max > 0) {
        /* Our own am_zcopy (slim_frame_am_zcopy_by_copy). UCP counts its
         * header in max_zcopy (ucp_do_am_zcopy_multi sends max_zcopy minus
         * the header's size; rndv.c checks length plus header against it),
         * as the check in slim_frame_am_zcopy_by_copy does. It copies, so
         * no alignment helps it. */
        iface_attr->cap.flags |= UCT_IFACE_FLAG_AM_ZCOPY;
        iface_attr->cap.am.min_zcopy       = 0;
        iface_attr->cap.am.max_zcopy       = frame->by_copy_max;
        iface_attr->cap.am.max_hdr         = frame->by_copy_max;
        iface_attr->cap.am.max_iov         = SLIM_EP_MAX_IOV;
        iface_attr->cap.am.opt_zcopy_align = 1;
        iface_attr->cap.am.align_mtu       = 1;
        /* am_bcopy no larger: UCP's v2 protocols (UCX_PROTO_ENABLE=y) price
         * a multi-fragment send by its fragments' receive overhead, so with
         * 8256-byte bcopy fragments beside 6208-byte zcopy ones they sent
         * every tagged message from 2147614 bytes by am_bcopy, out of our
         * sight (posix, UCX_PROTO_INFO=y). With fragments of one size the
         * zcopy send, which copies nothing in UCP's model, is never the
         * slower one, and large messages go by it too. */
        iface_attr->cap.am.max_bcopy = ucs_min(iface_attr->cap.am.max_bcopy,
                                               frame->by_copy_max);
        return;
    }
    if (!(iface_attr->cap.flags & UCT_IFACE_FLAG_AM_ZCOPY)) {
        return;
    }

    /* The largest frame we can carry; an advertised zcopy leaves room in it
     * for the frame's header and segment table. */
    carry = ucs_max(frame->max_zcopy, frame->max_bcopy);
    if (carry > SLIM_FRAME_ZCOPY_SLACK) {
        iface_attr->cap.am.max_zcopy = ucs_min(iface_attr->cap.am.max_zcopy,
                                               carry - SLIM_FRAME_ZCOPY_SLACK);
    } else {
        iface_attr->cap.am.max_zcopy = 0;
    }
    if ((iface_attr->cap.am.max_zcopy == 0) ||
        (iface_attr->cap.am.max_zcopy < iface_attr->cap.am.min_zcopy)) {
        iface_attr->cap.flags &= ~UCT_IFACE_FLAG_AM_ZCOPY;
    }
}

void slim_frame_steer_md_attr(uct_md_attr_t *md_attr)
{
    if (slim_core_packing_steers()) {
        /* UCP's automatic zcopy threshold grows with the registration cost;
         * zero makes it send by zcopy (where we see the buffer) early. */
        md_attr->reg_cost = ucs_linear_func_make(0, 0);
    }
}

static void *slim_frame_alloc(void *arg, size_t size)
{
    slim_frame_alloc_ctx_t *ctx     = arg;
    const slim_frame_iface_t *frame = &ctx->iface->frame;

    if (size <= frame->tx_scratch_size) {
        return frame->tx_scratch;
    }
    if (size > frame->max_zcopy) {
        return NULL;
    }
    if (size <= slim_bounce_size(ctx->iface)) {
        ctx->bounce = slim_bounce_take(ctx->iface);
        if (ctx->bounce != NULL) {
            return slim_bounce_data(ctx->bounce);
        }
    }
    if (ctx->iface->frame.need_memh) {
        return NULL; /* the pool is empty: the message goes unframed */
    }
    ctx->tx = ucs_malloc(sizeof(*ctx->tx) + size, "slim_frame_tx");
    return (ctx->tx != NULL) ? ctx->tx->data : NULL;
}

static void slim_frame_tx_done(uct_completion_t *self)
{
    ucs_free(ucs_container_of(self, slim_frame_tx_t, comp));
}

size_t slim_frame_pack_bytes(void *dest, void *arg)
{
    const slim_bytes_t *bytes = arg;

    memcpy(dest, bytes->data, bytes->length);
    return bytes->length;
}

/* What an am_zcopy done by copy sends: its header, then its iov. */
typedef struct slim_frame_gather {
    const void *header;
    unsigned header_length;
    const uct_iov_t *iov;
    size_t iovcnt;
} slim_frame_gather_t;

static size_t slim_frame_pack_gather(void *dest, void *arg)
{
    const slim_frame_gather_t *gather = arg;
    uint8_t *out                      = dest;
    const uct_iov_t *iov;
    size_t i, block;

    memcpy(out, gather->header, gather->header_length);
    out += gather->header_length;
    for (i = 0; i < gather->iovcnt; ++i) {
        iov = &gather->iov[i];
        for (block = 0; block < iov->count; ++block) {
            memcpy(out, UCS_PTR_BYTE_OFFSET(iov->buffer, block * iov->stride),
                   iov->length);
            out += iov->length;
        }
    }
    return UCS_PTR_BYTE_DIFF(dest, out);
}

ucs_status_t
slim_frame_am_zcopy_by_copy(slim_ep_t *ep, uint8_t id, const void *header,
                            unsigned header_length, const uct_iov_t *iov,
                            size_t iovcnt, unsigned flags, size_t *length_p)
{
    size_t limit  = slim_iface(ep->super.super.iface)->frame.by_copy_max;
    size_t length = header_length + uct_iov_total_length(iov, iovcnt);
    slim_frame_gather_t gather = {header, header_length, iov, iovcnt};
    ssize_t packed;

    *length_p = 0;
    /* The inner transport's segment holds no more: never copy past it. */
    if (ucs_unlikely(length > limit)) {
        slim_error("am_zcopy of %zu bytes exceeds the %zu advertised", length,
                   limit);
        return UCS_ERR_EXCEEDS_LIMIT;
    }
    packed = uct_ep_am_bcopy(ep->inner, id, slim_frame_pack_gather, &gather,
                             flags);
    if (packed < 0) {
        return (ucs_status_t)packed;
    }
    *length_p = packed;
    return UCS_OK;
}

/* Sends a built frame; UCS_ERR_EXCEEDS_LIMIT when nothing can carry it. */
static ucs_status_t slim_frame_send(slim_ep_t *ep, slim_frame_alloc_ctx_t *ctx,
                                    const uint8_t *data, size_t length,
                                    slim_op_t *op_p)
{
    const slim_frame_iface_t *frame = &ctx->iface->frame;
    slim_bytes_t bcopy;
    uct_completion_t *comp;
    uct_iov_t iov;
    uint64_t header;
    ssize_t packed;
    ucs_status_t status;

    /* UCT's am.max_short counts the 8-byte header (uct.h; posix checks
     * header plus payload against it, 100 bytes). */
    if ((length >= sizeof(header)) && (length <= frame->max_short)) {
        /* The frame's first 8 bytes ride as the AM header: the receiver
         * sees the frame contiguous, as it was built. */
        memcpy(&header, data, sizeof(header));
        *op_p = SLIM_OP_AM_SHORT;
        return uct_ep_am_short(ep->inner, SLIM_FRAME_AM_ID, header,
                               data + sizeof(header), length - sizeof(header));
    }

    if (length <= frame->max_bcopy) {
        bcopy.data   = data;
        bcopy.length = length;
        *op_p        = SLIM_OP_AM_BCOPY;
        packed       = uct_ep_am_bcopy(ep->inner, SLIM_FRAME_AM_ID,
                                       slim_frame_pack_bytes, &bcopy, 0);
        return (packed < 0) ? (ucs_status_t)packed : UCS_OK;
    }

    if (((ctx->tx == NULL) && (ctx->bounce == NULL)) ||
        (length > frame->max_zcopy)) {
        return UCS_ERR_EXCEEDS_LIMIT;
    }

    iov.buffer = (void *)data;
    iov.length = length;
    iov.stride = 0;
    iov.count  = 1;
    if (ctx->bounce != NULL) {
        iov.memh = slim_bounce_memh(ctx->bounce);
        comp     = slim_bounce_frame_comp(ctx->bounce);
    } else {
        iov.memh             = UCT_MEM_HANDLE_NULL;
        ctx->tx->comp.func   = slim_frame_tx_done;
        ctx->tx->comp.count  = 1;
        ctx->tx->comp.status = UCS_OK;
        comp                 = &ctx->tx->comp;
    }
    *op_p  = SLIM_OP_AM_ZCOPY;
    status = uct_ep_am_zcopy(ep->inner, SLIM_FRAME_AM_ID, NULL, 0, &iov, 1, 0,
                             comp);
    if (status == UCS_INPROGRESS) {
        /* the completion releases the memory */
        ctx->tx     = NULL;
        ctx->bounce = NULL;
        return UCS_OK; /* the data is ours now: done, as far as UCP knows */
    }
    return status;
}

void slim_frame_offer_marked(slim_ep_t *ep, const slim_frame_request_t *request,
                             slim_frame_outcome_t *outcome)
{
    slim_frame_alloc_ctx_t ctx = {slim_iface(ep->super.super.iface), NULL,
                                  NULL};
    slim_frame_result_t result;
    void *frame;

    outcome->handled  = 0;
    outcome->unframed = 0;

    result = slim_core_frame_build(request, slim_frame_alloc, &ctx, &frame,
                                   &outcome->info);
    if (ucs_likely(result == SLIM_FRAME_UNMARKED)) {
        ucs_assert((ctx.tx == NULL) && (ctx.bounce == NULL));
        return;
    }

    if (result == SLIM_FRAME_READY) {
        outcome->status = slim_frame_send(ep, &ctx, frame,
                                          outcome->info.frame_length,
                                          &outcome->op);
        if (outcome->status != UCS_ERR_EXCEEDS_LIMIT) {
            outcome->handled = 1;
            if (slim_status_accepted(outcome->status)) {
                slim_core_frame_sent(&outcome->info);
            }
        }
    }

    /* Not framed, or a frame too large for the inner transport: the
     * message goes as it is, and its marked bytes count as missed. */
    outcome->unframed = !outcome->handled;
    ucs_free(ctx.tx);
    if (ctx.bounce != NULL) {
        slim_bounce_give(ctx.bounce);
    }
}

ucs_status_t slim_frame_receive(slim_iface_t *iface, void *data, size_t length,
                                unsigned flags)
{
    slim_frame_iface_t *frame = &iface->frame;
    uint8_t *out              = frame->rx_busy ? NULL : frame->rx_scratch;
    size_t capacity           = frame->rx_busy ? 0 : frame->rx_scratch_size;
    uint8_t *grown;
    int64_t rebuilt;
    uint8_t am_id;

    if (slim_core_expand_is_notice(data, length)) {
        slim_put_receive(iface, data, length);
        return UCS_OK;
    }

    rebuilt = slim_core_frame_unpack(data, length, out, capacity, &am_id);
    if (rebuilt < 0) {
        return UCS_OK; /* dropped; the core logged and counted it */
    }

    if ((size_t)rebuilt > capacity) {
        if (frame->rx_busy) {
            /* A handler re-entered progress: use memory of our own. */
            out = ucs_malloc(rebuilt, "slim_frame_rx");
        } else {
            grown = ucs_realloc(frame->rx_scratch, rebuilt, "slim_frame_rx");
            if (grown != NULL) {
                frame->rx_scratch      = grown;
                frame->rx_scratch_size = rebuilt;
            }
            out = grown;
        }
        if (out == NULL) {
            slim_error("no memory to rebuild a %ld-byte message from a "
                       "packing frame; it is dropped",
                       (long)rebuilt);
            return UCS_OK;
        }
        rebuilt = slim_core_frame_unpack(data, length, out, rebuilt, &am_id);
        ucs_assert(rebuilt >= 0);
    }

    /* The rebuilt message is in our memory: the handler must copy what it
     * keeps, so it never gets the descriptor flag. */
    frame->rx_busy += (out == frame->rx_scratch);
    slim_progress_deliver_am(iface, am_id, out, rebuilt,
                             flags & ~UCT_CB_PARAM_FLAG_DESC);
    if (out == frame->rx_scratch) {
        --frame->rx_busy;
    } else {
        ucs_free(out);
    }
    return UCS_OK; /* the inner transport's descriptor was never kept */
}

void slim_frame_count_unsent(const slim_frame_outcome_t *outcome)
{
    slim_core_frame_unsent(&outcome->info);
}

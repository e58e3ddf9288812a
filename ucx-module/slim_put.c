/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * Packed puts (slim_core.h, "packed puts and expand notices").
 *
 * A put_zcopy whose source overlaps marked memory is packed into a bounce
 * buffer, and three operations go out on the inner endpoint, in order:
 *   1. a put of the packed bytes to the destination's first bytes;
 *   2. the expand notice, an active message on SLIM_FRAME_AM_ID, which the
 *      receiving slim handles (slim_put_receive) before anything sent later
 *      on this endpoint: it widens the values in place;
 *   3. a flush of the inner endpoint, which completes only once everything
 *      before it completed remotely. On tcp that is a put acknowledged by
 *      the peer after it handled the notice (tcp flushes an endpoint that
 *      sent an active message with a zero-length put), so when UCP learns
 *      that its put completed, the data is widened already: its rendezvous
 *      ATP, or an MPI_Win_flush, can never overtake the widening.
 * UCP's completion is called when the put and the flush have both
 * completed; then the bounce buffer returns to the pool.
 *
 * When the inner endpoint has no resources for the notice or the flush
 * right after the put (common: a large put fills tcp's socket), the put is
 * parked on the endpoint (slim_ep_t::put_waiting): every later operation on
 * that endpoint first finishes it or returns NO_RESOURCE, and a pending
 * request on the inner endpoint finishes it when resources return, so
 * nothing UCP sends later on this endpoint can overtake a notice.
 *
 * Bounce buffers: one UCX memory pool per interface, of buffers of
 * UCX_SLIM_BOUNCE_SIZE bytes (and room for a frame's header and table). Its
 * chunks of UCX_SLIM_BOUNCE_GROW buffers are mapped and registered with the
 * inner md as they are allocated (so a transport that needs a memory handle
 * gets one): the first at open, the others when the pool runs empty, up to
 * UCX_SLIM_BOUNCE_COUNT buffers. A process that packs a little holds one
 * chunk; one with many large marked messages in flight grows the pool
 * instead of sending them unpacked. While packing steers, slim advertises
 * the buffer size as its put zero-copy limit, so UCP never asks for a larger
 * put. An empty pool at its limit never blocks: the put goes unpacked and
 * its marked bytes count as missed.
 */
#include "slim.h"

#include <ucs/debug/memtrack_int.h>
#include <ucs/datastruct/mpool.inl>
#include <ucs/sys/sys.h>
#include <uct/base/uct_iov.inl>
#include <string.h>
#include <sys/mman.h>

enum {
    SLIM_PUT_STAGE_NOTICE, /* the notice is still to be sent */
    SLIM_PUT_STAGE_FLUSH, /* the flush behind it is still to be issued */
    SLIM_PUT_STAGE_ISSUED /* everything is on the wire */
};

struct slim_bounce {
    uct_completion_t comp; /* the put, the flush, and the issuing call */
    uct_completion_t *user; /* UCP's completion of its put */
    slim_iface_t *iface;
    uint8_t *wire; /* this descriptor's buffer */
    uct_mem_h memh; /* its chunk's registration */
    slim_put_info_t info;
    int stage;
    uint8_t notice[SLIM_EXPAND_NOTICE_MAX] UCS_V_ALIGNED(8);
};

/* A pool element is its descriptor, then its buffer at this offset, which
 * the pool aligns to a page. */
#define SLIM_BOUNCE_DATA_OFFSET ucs_align_up_pow2(sizeof(slim_bounce_t), 64)

/* The front of each chunk's mapping. */
typedef struct slim_bounce_chunk_hdr {
    size_t length; /* of the whole mapping */
    uct_mem_h memh;
} UCS_V_ALIGNED(64) slim_bounce_chunk_hdr_t;


/* ---- the pool ----------------------------------------------------------- */

static slim_iface_t *slim_bounce_pool_iface(ucs_mpool_t *mp)
{
    return *(slim_iface_t **)ucs_mpool_priv(mp);
}

static ucs_status_t
slim_bounce_chunk_alloc(ucs_mpool_t *mp, size_t *size_p, void **chunk_p)
{
    slim_bounce_pool_t *pool = &slim_bounce_pool_iface(mp)->bounce;
    size_t length = ucs_align_up_pow2(sizeof(slim_bounce_chunk_hdr_t) + *size_p,
                                      ucs_get_page_size());
    slim_bounce_chunk_hdr_t *hdr;
    uct_mem_h memh;
    ucs_status_t status;
    void *memory;

    /* Untouched pages cost nothing until a put uses them. */
    memory = ucs_mmap(NULL, length, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0, "slim_bounce");
    if (memory == MAP_FAILED) {
        status = UCS_ERR_NO_MEMORY;
        goto err;
    }
    status = uct_md_mem_reg(pool->md, memory, length,
                            UCT_MD_MEM_ACCESS_LOCAL_READ |
                                    UCT_MD_MEM_ACCESS_LOCAL_WRITE,
                            &memh);
    if (status != UCS_OK) {
        ucs_munmap(memory, length);
        goto err;
    }
    hdr         = memory;
    hdr->length = length;
    hdr->memh   = memh;
    *size_p     = length - sizeof(*hdr);
    *chunk_p    = hdr + 1;
    return UCS_OK;

err:
    /* Said once; the pool does not try again (slim_bounce_get). */
    pool->grow_failed = 1;
    slim_warn("%s %zu bytes of bounce buffers failed (%s); the pool "
              "stays at %u buffers, and marked puts that find none free go "
              "unpacked (UCX_SLIM_BOUNCE_COUNT, UCX_SLIM_BOUNCE_GROW)",
              (memory == MAP_FAILED) ? "mapping" : "registering", length,
              ucs_status_string(status), pool->allocated);
    return status;
}

static void slim_bounce_chunk_release(ucs_mpool_t *mp, void *chunk)
{
    slim_bounce_pool_t *pool     = &slim_bounce_pool_iface(mp)->bounce;
    slim_bounce_chunk_hdr_t *hdr = (slim_bounce_chunk_hdr_t *)chunk - 1;

    uct_md_mem_dereg(pool->md, hdr->memh);
    ucs_munmap(hdr, hdr->length);
}

static void slim_bounce_obj_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    slim_iface_t *iface   = slim_bounce_pool_iface(mp);
    slim_bounce_t *bounce = obj;

    bounce->iface = iface;
    bounce->wire  = UCS_PTR_BYTE_OFFSET(obj, SLIM_BOUNCE_DATA_OFFSET);
    bounce->memh  = ((slim_bounce_chunk_hdr_t *)chunk - 1)->memh;
    ++iface->bounce.allocated;
    slim_core_bounce_added(iface->bounce.stride);
}

static ucs_mpool_ops_t slim_bounce_mpool_ops = {
        .chunk_alloc   = slim_bounce_chunk_alloc,
        .chunk_release = slim_bounce_chunk_release,
        .obj_init      = slim_bounce_obj_init,
        .obj_cleanup   = NULL,
        .obj_str       = NULL};

ucs_status_t slim_put_iface_init(slim_iface_t *iface, uct_md_h inner_md)
{
    slim_bounce_pool_t *pool = &iface->bounce;
    size_t buffer_size, page;
    unsigned count, grow;
    uct_iface_attr_t attr;
    ucs_status_t status;

    memset(pool, 0, sizeof(*pool));
    iface->expander = slim_core_expander_open();
    if (iface->expander == NULL) {
        slim_warn("no memory for expand-notice state; packed puts from "
                  "peers will be rejected");
    }

    slim_core_bounce_config(&buffer_size, &count, &grow);
    if (!slim_core_packing_steers() || (count == 0) || (buffer_size == 0)) {
        return UCS_OK; /* this process packs no puts */
    }
    status = uct_iface_query(iface->inner, &attr);
    if ((status != UCS_OK) || !(attr.cap.flags & UCT_IFACE_FLAG_PUT_ZCOPY)) {
        return UCS_OK; /* nothing to put with */
    }

    /* Each buffer holds a whole UCX_SLIM_BOUNCE_SIZE put plus its frame's
     * header and table, so that UCP, which splits a rendezvous into equal
     * parts per lane, gets parts of a round size (1 MiB over two lanes: two
     * 512 KiB puts, not two of 510 KiB and a 4 KiB straggler with a notice
     * and flush of its own). */
    page         = ucs_get_page_size();
    pool->md     = inner_md;
    pool->stride = ucs_align_up_pow2(buffer_size + SLIM_PUT_SLACK, page);
    status       = ucs_mpool_init(&pool->mp, sizeof(slim_iface_t *),
                                  SLIM_BOUNCE_DATA_OFFSET + pool->stride,
                                  SLIM_BOUNCE_DATA_OFFSET, page, ucs_min(grow, count),
                                  count, &slim_bounce_mpool_ops, "slim_bounce");
    if (status != UCS_OK) {
        slim_warn("no bounce pool (%s); marked puts go unpacked",
                  ucs_status_string(status));
        return UCS_OK;
    }
    *(slim_iface_t **)ucs_mpool_priv(&pool->mp) = iface;

    /* The first chunk now: a transport that cannot register says so at
     * open, and a process that packs a little never maps in the send path. */
    ucs_mpool_grow(&pool->mp, ucs_min(grow, count));
    if (pool->mp.freelist == NULL) {
        ucs_mpool_cleanup(&pool->mp, 0);
        return UCS_OK; /* the chunk's failure was said */
    }
    pool->buffer_size = buffer_size;
    pool->ready       = 1;
    return UCS_OK;
}

void slim_put_iface_cleanup(slim_iface_t *iface)
{
    slim_bounce_pool_t *pool = &iface->bounce;

    slim_core_expander_close(iface->expander);
    iface->expander = NULL;
    if (!pool->ready) {
        return;
    }
    /* Buffers of puts still in flight are unmapped with the rest, as the
     * inner transport's endpoints are gone by now. */
    ucs_mpool_cleanup(&pool->mp, 0);
    memset(pool, 0, sizeof(*pool));
}

/* An empty pool grows by a chunk, up to its limit; after a chunk failed it
 * does not try again (each try would map and register in the send path). */
static UCS_F_ALWAYS_INLINE slim_bounce_t *
slim_bounce_get(slim_bounce_pool_t *pool)
{
    if (ucs_unlikely(pool->mp.freelist == NULL) &&
        (!pool->ready || pool->grow_failed)) {
        return NULL;
    }
    return ucs_mpool_get_inline(&pool->mp);
}

static UCS_F_ALWAYS_INLINE void slim_bounce_put(slim_bounce_t *bounce)
{
    ucs_mpool_put_inline(bounce);
}

size_t slim_bounce_size(const slim_iface_t *iface)
{
    return iface->bounce.ready ? iface->bounce.stride : 0;
}

slim_bounce_t *slim_bounce_take(slim_iface_t *iface)
{
    return slim_bounce_get(&iface->bounce);
}

uint8_t *slim_bounce_data(slim_bounce_t *bounce)
{
    return bounce->wire;
}

uct_mem_h slim_bounce_memh(const slim_bounce_t *bounce)
{
    return bounce->memh;
}

void slim_bounce_give(slim_bounce_t *bounce)
{
    slim_bounce_put(bounce);
}

static void slim_bounce_frame_done(uct_completion_t *self)
{
    slim_bounce_put(ucs_container_of(self, slim_bounce_t, comp));
}

uct_completion_t *slim_bounce_frame_comp(slim_bounce_t *bounce)
{
    bounce->comp.func   = slim_bounce_frame_done;
    bounce->comp.count  = 1;
    bounce->comp.status = UCS_OK;
    return &bounce->comp;
}

void slim_put_steer_caps(slim_iface_t *iface, uct_iface_attr_t *iface_attr)
{
    /* A get reads the peer's memory where slim cannot pack it: withheld,
     * so that UCP's rendezvous writes by put instead (tcp has no get). */
    iface_attr->cap.flags &= ~UCT_IFACE_FLAG_GET_ZCOPY;
    if (iface->bounce.ready) {
        /* A packed put is built as a frame in one buffer, which has room
         * for the frame's header and segment table beside the data. */
        iface_attr->cap.put.max_zcopy = ucs_min(iface_attr->cap.put.max_zcopy,
                                                iface->bounce.buffer_size);
    }
}


/* ---- sending ------------------------------------------------------------ */

void slim_put_ep_init(slim_ep_t *ep)
{
    ep->put_stream = ucs_generate_uuid((uintptr_t)ep);
    if (ep->put_stream == 0) {
        ep->put_stream = 1; /* 0 is not a stream */
    }
    ep->put_seq            = 0;
    ep->put_waiting        = NULL;
    ep->put_pending_queued = 0;
}

/* The put and its flush completed: the buffer returns, UCP learns. */
static void slim_bounce_done(uct_completion_t *self)
{
    slim_bounce_t *bounce  = ucs_container_of(self, slim_bounce_t, comp);
    uct_completion_t *user = bounce->user;
    ucs_status_t status    = self->status;

    slim_bounce_put(bounce);
    if (user != NULL) {
        uct_invoke_completion(user, status);
    }
}

/* Sends the notice, then issues the flush: as far as resources allow. */
static ucs_status_t slim_put_advance(slim_ep_t *ep, slim_bounce_t *bounce)
{
    const slim_frame_iface_t *frame = &bounce->iface->frame;
    size_t length                   = bounce->info.notice_length;
    slim_bytes_t bcopy;
    uint64_t header;
    ssize_t packed;
    ucs_status_t status;

    if (bounce->stage == SLIM_PUT_STAGE_NOTICE) {
        if ((length >= sizeof(header)) && (length <= frame->max_short)) {
            memcpy(&header, bounce->notice, sizeof(header));
            status = uct_ep_am_short(ep->inner, SLIM_FRAME_AM_ID, header,
                                     bounce->notice + sizeof(header),
                                     length - sizeof(header));
        } else {
            bcopy.data   = bounce->notice;
            bcopy.length = length;
            packed       = uct_ep_am_bcopy(ep->inner, SLIM_FRAME_AM_ID,
                                           slim_frame_pack_bytes, &bcopy, 0);
            status       = (packed < 0) ? (ucs_status_t)packed : UCS_OK;
        }
        if (status == UCS_ERR_NO_RESOURCE) {
            return status;
        }
        if (status != UCS_OK) {
            /* The endpoint failed: the put's data stays packed at the
             * destination. UCP gets the error through the completion. */
            slim_error("sending the expand notice of a %zu-byte packed "
                       "put failed: %s",
                       bounce->info.frame.payload_length,
                       ucs_status_string(status));
            uct_completion_update_status(&bounce->comp, status);
            uct_invoke_completion(&bounce->comp, status); /* no flush */
            bounce->stage = SLIM_PUT_STAGE_ISSUED;
            return UCS_OK;
        }
        slim_iface_record(bounce->iface, SLIM_OP_AM_SHORT, SLIM_DIR_SEND,
                          SLIM_FRAME_AM_ID, length, length, (uintptr_t)ep);
        bounce->stage = SLIM_PUT_STAGE_FLUSH;
    }

    if (bounce->stage == SLIM_PUT_STAGE_FLUSH) {
        status = uct_ep_flush(ep->inner, 0, &bounce->comp);
        if (status == UCS_ERR_NO_RESOURCE) {
            return status;
        }
        if (status != UCS_INPROGRESS) {
            uct_invoke_completion(&bounce->comp, status);
        }
        bounce->stage = SLIM_PUT_STAGE_ISSUED;
    }
    return UCS_OK;
}

/* Called back by the inner endpoint when resources return. */
static ucs_status_t slim_put_pending_cb(uct_pending_req_t *self)
{
    slim_ep_t *ep = ucs_container_of(self, slim_ep_t, put_pending);
    ucs_status_t status;

    status = slim_put_drain(ep);
    if (status == UCS_ERR_NO_RESOURCE) {
        return status; /* stays queued */
    }
    ep->put_pending_queued = 0;
    return UCS_OK;
}

ucs_status_t slim_put_drain(slim_ep_t *ep)
{
    slim_bounce_t *bounce = ep->put_waiting;
    ucs_status_t status;

    if (bounce == NULL) {
        return UCS_OK;
    }
    status = slim_put_advance(ep, bounce);
    if (status == UCS_OK) {
        ep->put_waiting = NULL;
    }
    return status;
}

/* Parks a put whose notice or flush could not go yet. */
static void slim_put_park(slim_ep_t *ep, slim_bounce_t *bounce)
{
    unsigned attempts = 0;
    ucs_status_t status;

    ep->put_waiting = bounce;
    while (!ep->put_pending_queued && (++attempts <= 16)) {
        ep->put_pending.func = slim_put_pending_cb;
        status = uct_ep_pending_add(ep->inner, &ep->put_pending, 0);
        if (status == UCS_OK) {
            ep->put_pending_queued = 1;
        } else if ((status != UCS_ERR_BUSY) ||
                   (slim_put_drain(ep) != UCS_ERR_NO_RESOURCE)) {
            /* Resources came back (drained now), or the endpoint takes no
             * pending request (it failed: later operations drain or fail). */
            return;
        }
    }
}

/* The endpoint goes away with a put still parked: the put itself completes
 * (cancelled) when the inner endpoint is destroyed; the flush never will. */
void slim_put_ep_cleanup(slim_ep_t *ep)
{
    slim_bounce_t *bounce = ep->put_waiting;

    if (bounce == NULL) {
        return;
    }
    ep->put_waiting = NULL;
    bounce->stage   = SLIM_PUT_STAGE_ISSUED;
    uct_invoke_completion(&bounce->comp, UCS_ERR_CANCELED);
}

/* Purging the inner pending queue returns our own request too. */
int slim_put_is_own_pending(slim_ep_t *ep, uct_pending_req_t *req)
{
    if (req != &ep->put_pending) {
        return 0;
    }
    ep->put_pending_queued = 0;
    return 1;
}

void slim_put_offer(slim_ep_t *ep, const slim_frame_piece_t *pieces,
                    size_t piece_count, uint64_t remote_addr, uct_rkey_t rkey,
                    uct_completion_t *comp, slim_put_outcome_t *outcome)
{
    slim_iface_t *iface   = slim_iface(ep->super.super.iface);
    slim_bounce_t *bounce = slim_bounce_get(&iface->bounce);
    slim_put_request_t request;
    slim_put_info_t info;
    slim_frame_result_t result;
    uct_iov_t iov;
    ucs_status_t status;

    request.pieces      = pieces;
    request.piece_count = piece_count;
    request.remote_addr = remote_addr;
    request.stream      = ep->put_stream;
    request.seq         = ep->put_seq + 1;
    result              = slim_core_put_pack(&request,
                                (bounce != NULL) ? bounce->wire : NULL,
                                (bounce != NULL) ? iface->bounce.stride : 0,
                                (bounce != NULL) ? bounce->notice : NULL,
                                             &info);
    outcome->result     = result;
    outcome->handled    = (result == SLIM_FRAME_READY);
    if (ucs_likely(!outcome->handled)) {
        if (bounce != NULL) {
            slim_bounce_put(bounce);
        }
        outcome->bounce_empty = (bounce == NULL) && iface->bounce.ready;
        outcome->info         = info.frame;
        return;
    }

    bounce->info        = info;
    bounce->user        = comp;
    bounce->stage       = SLIM_PUT_STAGE_NOTICE;
    bounce->comp.func   = slim_bounce_done;
    bounce->comp.count  = 3; /* the put, the flush, this call */
    bounce->comp.status = UCS_OK;

    iov.buffer = bounce->wire + info.wire_offset;
    iov.length = info.frame.frame_length;
    iov.memh   = bounce->memh;
    iov.stride = 0;
    iov.count  = 1;
    status     = uct_ep_put_zcopy(ep->inner, &iov, 1, remote_addr, rkey,
                                  &bounce->comp);
    if (ucs_unlikely(!slim_status_accepted(status))) {
        slim_bounce_put(bounce); /* nothing went: UCP retries or fails */
        outcome->status = status;
        return;
    }
    if (status == UCS_OK) {
        uct_invoke_completion(&bounce->comp, UCS_OK);
    }
    ++ep->put_seq;
    slim_core_frame_sent(&info.frame);
    slim_iface_record(iface, SLIM_OP_PUT, SLIM_DIR_SEND, 0,
                      info.frame.frame_length, info.frame.payload_length,
                      (uintptr_t)ep);

    if (slim_put_advance(ep, bounce) == UCS_ERR_NO_RESOURCE) {
        slim_put_park(ep, bounce);
    }

    /* Drop this call's reference: the last one means all of it completed
     * already, and UCP is told so by the return value alone. */
    if (bounce->comp.count == 1) {
        outcome->status = bounce->comp.status;
        slim_bounce_put(bounce);
        return;
    }
    --bounce->comp.count;
    outcome->status = UCS_INPROGRESS;
}


/* ---- receiving ---------------------------------------------------------- */

static int slim_put_registered(void *arg, uint64_t address, size_t length)
{
    return slim_md_range_registered(arg, address, length);
}

void slim_put_receive(slim_iface_t *iface, void *data, size_t length)
{
    slim_md_t *md = ucs_derived_of(iface->super.md, slim_md_t);

    /* Rejections are logged and counted by the core. */
    (void)slim_core_expand(iface->expander, data, length, slim_put_registered,
                           md);
}

void slim_put_count_forwarded(const slim_put_outcome_t *outcome)
{
    if (outcome->result == SLIM_FRAME_EDGE_ONLY) {
        slim_core_frame_edge_sent(&outcome->info);
    } else if (outcome->bounce_empty) {
        slim_core_put_bounce_empty(&outcome->info);
    } else {
        slim_core_frame_unsent(&outcome->info);
    }
}

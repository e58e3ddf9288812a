/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * The slim endpoint: wraps one inner endpoint. Each data operation is
 * forwarded to the inner endpoint and, once the inner transport accepted it,
 * added to the interface's tally. Control operations are forwarded as is.
 *
 * The data operations are written once, as inline functions of the
 * interface's features (SLIM_FEATURE_*, slim.h), and compiled once per
 * combination the module uses: forwarding alone, and forwarding with
 * recording and packing, each with or without the linger's quiescence
 * tracking; with packing over an inner transport without zero copy, an
 * am_zcopy done by copy besides. The interface installs one set when it opens
 * (slim_ep_set_data_ops), so what a feature costs is paid only where it is
 * on, and a forward-only slim is a configuration, not a build.
 */
#include "slim.h"

#include <ucs/arch/cpu.h>
#include <ucs/datastruct/mpool.inl>
#include <uct/base/uct_iov.inl>

#include <string.h>

/* Kept as written: clang-format 14 takes (_feat) for a cast. */
/* clang-format off */
#define SLIM_F_RECORD(_feat)  ((_feat) & SLIM_FEATURE_RECORD)
#define SLIM_F_PACK(_feat)    ((_feat) & SLIM_FEATURE_PACK)
#define SLIM_F_LINGER(_feat)  ((_feat) & SLIM_FEATURE_LINGER)
#define SLIM_F_BY_COPY(_feat) ((_feat) & SLIM_FEATURE_ZCOPY_BY_COPY)
/* clang-format on */

/* Entry of every operation that may call back into UCP later (a completion,
 * a pending callback, a received reply): with the linger, the endpoint is
 * no longer quiescent, and a linger thread must leave the inner transport
 * to us. */
static UCS_F_ALWAYS_INLINE uct_ep_h slim_ep_start_op(uct_ep_h tl_ep,
                                                     unsigned feat)
{
    slim_ep_t *ep = slim_ep(tl_ep);

    if (SLIM_F_LINGER(feat)) {
        slim_ep_activity(ep);
    }
    return ep->inner;
}

/* Entry of control operations that touch the inner transport but start
 * nothing that completes later. */
static UCS_F_ALWAYS_INLINE uct_ep_h slim_ep_control(uct_ep_h tl_ep)
{
    slim_ep_t *ep = slim_ep(tl_ep);

    slim_iface_wake(slim_iface(ep->super.super.iface));
    return ep->inner;
}

/* Every operation that sends begins here when packing is on: a packed put
 * parked on the endpoint (slim_put.c) goes out before anything sent after
 * it, or the operation waits (UCP retries it, or queues it behind the
 * parked put). */
#define SLIM_EP_PUT_READY_OR_RETURN(_tl_ep, _ret_type, _feat) \
    do { \
        if (SLIM_F_PACK(_feat)) { \
            ucs_status_t _ready = slim_ep_put_ready(slim_ep(_tl_ep)); \
            if (ucs_unlikely(_ready != UCS_OK)) { \
                return (_ret_type)_ready; \
            } \
        } \
    } while (0)

/* UCP's iov carries our memory handles; the inner transport gets its own.
 * iovcnt is at most SLIM_EP_MAX_IOV: we advertise no more (slim_iface.c). */
static UCS_F_ALWAYS_INLINE const uct_iov_t *
slim_ep_inner_iov(const uct_iov_t *iov, size_t iovcnt, uct_iov_t *out)
{
    size_t i;

    for (i = 0; i < iovcnt; ++i) {
        out[i]      = iov[i];
        out[i].memh = slim_memh_inner(iov[i].memh);
    }
    return out;
}

/* A flush in flight. Its completion marks the endpoint flushed up to the
 * operations issued before it, then completes UCP's own completion. */
typedef struct slim_flush_comp {
    uct_completion_t super;
    uct_completion_t *user;
    slim_iface_t *iface;
    slim_ep_t *ep; /* NULL once the endpoint is destroyed */
    uint64_t op_seq; /* ep->op_seq when the flush was issued */
    ucs_list_link_t list; /* in slim_ep_t::flushes */
} slim_flush_comp_t;

/* A completion of slim's own that the inner transport completes once. */
static UCS_F_ALWAYS_INLINE void
slim_completion_init(uct_completion_t *comp, uct_completion_callback_t func)
{
    comp->func   = func;
    comp->count  = 1;
    comp->status = UCS_OK;
}

/* A zero-copy operation in flight: its completion tells the live loop that
 * the data stopped moving, then completes UCP's own. Without it a 1 MiB
 * put that a verbs transport completes ~80 us after issue, with no
 * progress activity in between, looked like a short burst and a long idle
 * period: the link would have been narrowed under the transfer. */
typedef struct slim_zcopy_comp {
    uct_completion_t super;
    uct_completion_t *user; /* UCP's; may be NULL */
    slim_iface_t *iface;
} slim_zcopy_comp_t;

/* Adds the operation to the tally when the inner transport accepted it.
 * `orig` is its size before packing. */
static UCS_F_ALWAYS_INLINE ucs_status_t slim_record_op(
        uct_ep_h tl_ep, ucs_status_t status, slim_op_t op, slim_dir_t dir,
        uint8_t am_id, size_t bytes, size_t orig, unsigned feat)
{
    if (SLIM_F_RECORD(feat) && slim_status_accepted(status)) {
        slim_iface_record(slim_iface(tl_ep->iface), op, dir, am_id, bytes, orig,
                          (uintptr_t)tl_ep);
    }
    return status;
}

static UCS_F_ALWAYS_INLINE ucs_status_t
slim_record_status(uct_ep_h tl_ep, ucs_status_t status, slim_op_t op,
                   slim_dir_t dir, size_t bytes, unsigned feat)
{
    return slim_record_op(tl_ep, status, op, dir, 0, bytes, bytes, feat);
}

/* A bcopy send returns the bytes it packed, or a negative status. */
static UCS_F_ALWAYS_INLINE ssize_t slim_record_packed(uct_ep_h tl_ep,
                                                      ssize_t packed,
                                                      slim_op_t op,
                                                      uint8_t am_id,
                                                      unsigned feat)
{
    slim_record_op(tl_ep, (packed >= 0) ? UCS_OK : (ucs_status_t)packed, op,
                   SLIM_DIR_SEND, am_id, packed, packed, feat);
    return packed;
}

static void slim_zcopy_comp_done(uct_completion_t *self)
{
    slim_zcopy_comp_t *zcomp = ucs_container_of(self, slim_zcopy_comp_t, super);
    uct_completion_t *user   = zcomp->user;
    ucs_status_t status      = self->status;

    slim_iface_completed(zcomp->iface);
    ucs_mpool_put_inline(zcomp);
    if (user != NULL) {
        uct_invoke_completion(user, status);
    }
}

/* The completion to give the inner transport for a zero-copy operation:
 * one that tracks it (*zcomp_p) when recording, else UCP's `user` as it is
 * (*zcomp_p NULL, also when the pool is empty). */
static UCS_F_ALWAYS_INLINE uct_completion_t *
slim_zcopy_comp_get(slim_iface_t *iface, uct_completion_t *user,
                    slim_zcopy_comp_t **zcomp_p, unsigned feat)
{
    slim_zcopy_comp_t *zcomp = NULL;

    if (SLIM_F_RECORD(feat)) {
        zcomp = ucs_mpool_get_inline(&iface->zcopy_comps);
    }
    *zcomp_p = zcomp;
    if (ucs_unlikely(zcomp == NULL)) {
        return user;
    }
    slim_completion_init(&zcomp->super, slim_zcopy_comp_done);
    zcomp->user  = user;
    zcomp->iface = iface;
    return &zcomp->super;
}

/* Records a zero-copy operation the inner transport answered with `status`:
 * in flight until its completion when it returned UCS_INPROGRESS with a
 * tracking completion, else like any operation (the tracker goes back). */
static UCS_F_ALWAYS_INLINE ucs_status_t
slim_record_zcopy(uct_ep_h tl_ep, slim_zcopy_comp_t *zcomp, ucs_status_t status,
                  slim_op_t op, slim_dir_t dir, uint8_t am_id, size_t bytes,
                  unsigned feat)
{
    if (SLIM_F_RECORD(feat) && (zcomp != NULL)) {
        if (status == UCS_INPROGRESS) {
            slim_core_tally_in_flight(&zcomp->iface->tally, op, dir, am_id,
                                      bytes, (uintptr_t)tl_ep);
            ++zcomp->iface->in_flight;
            if (ucs_unlikely(zcomp->iface->tally.wire_bytes >=
                             SLIM_TALLY_MAX_BYTES)) {
                slim_iface_hand_over_sent(zcomp->iface);
            }
            return status;
        }
        ucs_mpool_put_inline(zcomp);
    }
    return slim_record_op(tl_ep, status, op, dir, am_id, bytes, bytes, feat);
}

/* ---- active messages ---------------------------------------------------- */

/* A message the packing path sent as a frame: recorded as the frame's
 * operation and wire size. */
static UCS_F_ALWAYS_INLINE ucs_status_t
slim_record_frame(uct_ep_h tl_ep, uint8_t am_id,
                  const slim_frame_outcome_t *outcome, unsigned feat)
{
    return slim_record_op(tl_ep, outcome->status, outcome->op, SLIM_DIR_SEND,
                          am_id, outcome->info.frame_length,
                          outcome->info.payload_length, feat);
}

/* Offers a short message to the packing path: only when something is
 * marked, so that the request is built only then. */
static void slim_ep_offer_short_marked(uct_ep_h tl_ep, uint8_t id,
                                       uint64_t header, const void *payload,
                                       unsigned length,
                                       slim_frame_outcome_t *outcome)
{
    slim_frame_piece_t piece     = {payload, length};
    slim_frame_request_t request = {id, &header, sizeof(header), &piece, 1};

    slim_frame_offer_marked(slim_ep(tl_ep), &request, outcome);
}

static UCS_F_ALWAYS_INLINE ucs_status_t
slim_ep_am_short_impl(uct_ep_h tl_ep, uint8_t id, uint64_t header,
                      const void *payload, unsigned length, unsigned feat)
{
    uct_ep_h inner = slim_ep_start_op(tl_ep, feat);
    slim_frame_outcome_t outcome;
    ucs_status_t status;

    SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ucs_status_t, feat);
    outcome.handled  = 0;
    outcome.unframed = 0;
    if (SLIM_F_PACK(feat) &&
        ucs_unlikely(slim_iface_any_marked(slim_iface(tl_ep->iface)))) {
        slim_ep_offer_short_marked(tl_ep, id, header, payload, length,
                                   &outcome);
    }
    if (outcome.handled) {
        return slim_record_frame(tl_ep, id, &outcome, feat);
    }

    status = uct_ep_am_short(inner, id, header, payload, length);
    if (SLIM_F_PACK(feat)) {
        slim_frame_forwarded(&outcome, status);
    }
    return slim_record_op(tl_ep, status, SLIM_OP_AM_SHORT, SLIM_DIR_SEND, id,
                          sizeof(header) + length, sizeof(header) + length,
                          feat);
}

/* The iov of a zero-copy or short-iov operation as frame pieces; 0 when it
 * has more entries than a frame request takes, or strided ones. */
static size_t slim_ep_iov_pieces(const uct_iov_t *iov, size_t iovcnt,
                                 slim_frame_piece_t *pieces, size_t max)
{
    size_t i;

    if (iovcnt > max) {
        return 0;
    }
    for (i = 0; i < iovcnt; ++i) {
        if ((iov[i].count > 1) && (iov[i].stride != iov[i].length)) {
            return 0;
        }
        pieces[i].data   = iov[i].buffer;
        pieces[i].length = iov[i].length * ucs_max(iov[i].count, 1u);
    }
    return iovcnt;
}

/* Offers an iov message to the packing path (an iov it cannot describe
 * goes as it is, unframed and uncounted). */
static void slim_ep_offer_iov_marked(uct_ep_h tl_ep, uint8_t id,
                                     const void *header, unsigned header_length,
                                     const uct_iov_t *iov, size_t iovcnt,
                                     slim_frame_outcome_t *outcome)
{
    slim_frame_piece_t pieces[SLIM_EP_MAX_IOV];
    slim_frame_request_t request;

    request.am_id         = id;
    request.header        = header;
    request.header_length = header_length;
    request.pieces        = pieces;
    request.piece_count   = slim_ep_iov_pieces(iov, iovcnt, pieces,
                                               SLIM_EP_MAX_IOV);
    if (request.piece_count > 0) {
        slim_frame_offer_marked(slim_ep(tl_ep), &request, outcome);
    }
}

static UCS_F_ALWAYS_INLINE void
slim_ep_offer_iov(uct_ep_h tl_ep, uint8_t id, const void *header,
                  unsigned header_length, const uct_iov_t *iov, size_t iovcnt,
                  slim_frame_outcome_t *outcome, unsigned feat)
{
    outcome->handled  = 0;
    outcome->unframed = 0;
    if (SLIM_F_PACK(feat) &&
        ucs_unlikely(slim_iface_any_marked(slim_iface(tl_ep->iface)))) {
        slim_ep_offer_iov_marked(tl_ep, id, header, header_length, iov, iovcnt,
                                 outcome);
    }
}

static UCS_F_ALWAYS_INLINE ucs_status_t
slim_ep_am_short_iov_impl(uct_ep_h tl_ep, uint8_t id, const uct_iov_t *iov,
                          size_t iovcnt, unsigned feat)
{
    uct_ep_h inner = slim_ep_start_op(tl_ep, feat);
    slim_frame_outcome_t outcome;
    ucs_status_t status;

    SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ucs_status_t, feat);
    slim_ep_offer_iov(tl_ep, id, NULL, 0, iov, iovcnt, &outcome, feat);
    if (outcome.handled) {
        return slim_record_frame(tl_ep, id, &outcome, feat);
    }

    status = uct_ep_am_short_iov(inner, id, iov, iovcnt);
    if (SLIM_F_PACK(feat)) {
        slim_frame_forwarded(&outcome, status);
    }
    return slim_record_op(tl_ep, status, SLIM_OP_AM_SHORT, SLIM_DIR_SEND, id,
                          uct_iov_total_length(iov, iovcnt),
                          uct_iov_total_length(iov, iovcnt), feat);
}

/* UCP's eager-sync active messages (UCP_AM_ID_EAGER_SYNC_ONLY and _FIRST,
 * ucp_types.h): the first fragment of a synchronous tagged send. */
#define SLIM_UCP_AM_ID_EAGER_SYNC_ONLY  6
#define SLIM_UCP_AM_ID_EAGER_SYNC_FIRST 7

/* Their headers as UCX 1.13 puts them on the wire (ucp/tag/eager.h; the
 * module loads into no other UCX): ucp_eager_sync_hdr_t is the tag and the
 * request header, 24 bytes, then the payload; ucp_eager_sync_first_hdr_t
 * starts with ucp_eager_first_hdr_t, whose total_len, the whole message's
 * payload length, follows the 8-byte tag. */
#define SLIM_UCP_EAGER_SYNC_HDR_LEN           24
#define SLIM_UCP_EAGER_SYNC_FIRST_HDR_LEN     40
#define SLIM_UCP_EAGER_FIRST_TOTAL_LEN_OFFSET 8

/* UCX 1.13's v2 protocols (UCX_PROTO_ENABLE=y) have one way to send a
 * synchronous tagged message (MPI_Ssend, MPI_Issend): egrsnc/multi/bcopy,
 * at every size, which copies the user's buffer in UCP's pack callback,
 * where slim never learns its address. Marked data in it can be neither
 * packed nor told apart from unmarked data, so while marks exist the first
 * such send is logged, and every one is counted, with its size, as unseen
 * (slim_core_sync_unseen). */
static UCS_F_NOINLINE void slim_ep_sync_bcopy_unseen(void)
{
    /* Two threads may both say it: no locked instruction for a warning. */
    static volatile int said = 0;

    if (!said) {
        said = 1;
        slim_warn("a synchronous send (MPI_Ssend, MPI_Issend) went by "
                  "am_bcopy, which copies the buffer out of slim's sight, as "
                  "UCX's v2 protocols (UCX_PROTO_ENABLE=y) send every one: "
                  "marked data in such sends travels exact; the report counts "
                  "these sends as not seen by slim; unset UCX_PROTO_ENABLE to "
                  "pack them");
    }
}

/* UCP's pack callback and its argument, passed through as they are, and
 * the message size read back from the header the callback wrote. */
typedef struct {
    uct_pack_callback_t pack_cb;
    void *arg;
    uint8_t id;
    uint64_t message_bytes;
} slim_sync_pack_t;

static size_t slim_ep_sync_pack(void *dest, void *arg)
{
    slim_sync_pack_t *sync = arg;
    size_t length          = sync->pack_cb(dest, sync->arg);

    /* Only the header UCP itself just wrote into `dest` is read: never its
     * opaque argument. */
    if ((sync->id == SLIM_UCP_AM_ID_EAGER_SYNC_FIRST) &&
        (length >= SLIM_UCP_EAGER_SYNC_FIRST_HDR_LEN)) {
        memcpy(&sync->message_bytes,
               UCS_PTR_BYTE_OFFSET(dest, SLIM_UCP_EAGER_FIRST_TOTAL_LEN_OFFSET),
               sizeof(sync->message_bytes));
    } else if ((sync->id == SLIM_UCP_AM_ID_EAGER_SYNC_ONLY) &&
               (length >= SLIM_UCP_EAGER_SYNC_HDR_LEN)) {
        sync->message_bytes = length - SLIM_UCP_EAGER_SYNC_HDR_LEN;
    }
    return length;
}

/* The first fragment of a synchronous send by am_bcopy while something is
 * marked: sent through slim_ep_sync_pack, then counted once accepted. Off
 * the hot path: only reached for these two ids with marks present. */
static UCS_F_NOINLINE ssize_t slim_ep_sync_bcopy(uct_ep_h inner, uint8_t id,
                                                 uct_pack_callback_t pack_cb,
                                                 void *arg, unsigned flags)
{
    slim_sync_pack_t sync = {pack_cb, arg, id, 0};
    ssize_t packed;

    slim_ep_sync_bcopy_unseen();
    packed = uct_ep_am_bcopy(inner, id, slim_ep_sync_pack, &sync, flags);
    if (packed >= 0) {
        slim_core_sync_unseen(sync.message_bytes);
    }
    return packed;
}

static UCS_F_ALWAYS_INLINE ssize_t
slim_ep_am_bcopy_impl(uct_ep_h tl_ep, uint8_t id, uct_pack_callback_t pack_cb,
                      void *arg, unsigned flags, unsigned feat)
{
    uct_ep_h inner = slim_ep_start_op(tl_ep, feat);

    SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ssize_t, feat);
    if (SLIM_F_PACK(feat) &&
        ucs_unlikely(((id == SLIM_UCP_AM_ID_EAGER_SYNC_FIRST) ||
                      (id == SLIM_UCP_AM_ID_EAGER_SYNC_ONLY)) &&
                     slim_iface_any_marked(slim_iface(tl_ep->iface)))) {
        return slim_record_packed(tl_ep,
                                  slim_ep_sync_bcopy(inner, id, pack_cb, arg,
                                                     flags),
                                  SLIM_OP_AM_BCOPY, id, feat);
    }
    return slim_record_packed(tl_ep,
                              uct_ep_am_bcopy(inner, id, pack_cb, arg, flags),
                              SLIM_OP_AM_BCOPY, id, feat);
}

static UCS_F_ALWAYS_INLINE ucs_status_t slim_ep_am_zcopy_impl(
        uct_ep_h tl_ep, uint8_t id, const void *header, unsigned header_length,
        const uct_iov_t *iov, size_t iovcnt, unsigned flags,
        uct_completion_t *comp, unsigned feat)
{
    uct_ep_h inner = slim_ep_start_op(tl_ep, feat);
    uct_iov_t inner_iov[SLIM_EP_MAX_IOV];
    slim_frame_outcome_t outcome;
    slim_zcopy_comp_t *zcomp;
    uct_completion_t *inner_comp;
    ucs_status_t status;
    size_t length;

    SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ucs_status_t, feat);
    /* A frame is a copy: done at once for UCP, `comp` is not called. */
    slim_ep_offer_iov(tl_ep, id, header, header_length, iov, iovcnt, &outcome,
                      feat);
    if (outcome.handled) {
        return slim_record_frame(tl_ep, id, &outcome, feat);
    }

    if (SLIM_F_BY_COPY(feat)) {
        /* The inner transport has no am_zcopy: a copy, done at once too. */
        status = slim_frame_am_zcopy_by_copy(slim_ep(tl_ep), id, header,
                                             header_length, iov, iovcnt, flags,
                                             &length);
        slim_frame_forwarded(&outcome, status);
        return slim_record_op(tl_ep, status, SLIM_OP_AM_BCOPY, SLIM_DIR_SEND,
                              id, length, length, feat);
    }

    inner_comp = slim_zcopy_comp_get(slim_iface(tl_ep->iface), comp, &zcomp,
                                     feat);
    status     = uct_ep_am_zcopy(inner, id, header, header_length,
                                 slim_ep_inner_iov(iov, iovcnt, inner_iov), iovcnt,
                                 flags, inner_comp);
    if (SLIM_F_PACK(feat)) {
        slim_frame_forwarded(&outcome, status);
    }
    return slim_record_zcopy(tl_ep, zcomp, status, SLIM_OP_AM_ZCOPY,
                             SLIM_DIR_SEND, id,
                             header_length + uct_iov_total_length(iov, iovcnt),
                             feat);
}

/* Short and bcopy puts are never framed (a frame cannot carry the remote
 * key the inner transport checks, and only zero-copy puts are packed, in
 * slim_put.c); marked bytes that leave by them count as missed. */
static void slim_ep_put_unframed(const slim_iface_t *iface,
                                 const slim_frame_piece_t *pieces, size_t count,
                                 ucs_status_t status)
{
    slim_frame_request_t request = {0, NULL, 0, pieces, count};
    slim_frame_info_t info;
    void *unused;

    if (slim_status_accepted(status) && slim_iface_any_marked(iface) &&
        (slim_core_frame_build(&request, NULL, NULL, &unused, &info) ==
         SLIM_FRAME_UNFRAMED)) {
        slim_core_frame_unsent(&info);
    }
}

/* ---- remote memory access ----------------------------------------------- */

static UCS_F_ALWAYS_INLINE ucs_status_t
slim_ep_put_short_impl(uct_ep_h tl_ep, const void *buffer, unsigned length,
                       uint64_t remote_addr, uct_rkey_t rkey, unsigned feat)
{
    uct_ep_h inner           = slim_ep_start_op(tl_ep, feat);
    slim_frame_piece_t piece = {buffer, length};
    ucs_status_t status;

    SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ucs_status_t, feat);
    status = uct_ep_put_short(inner, buffer, length, remote_addr, rkey);
    if (SLIM_F_PACK(feat)) {
        slim_ep_put_unframed(slim_iface(tl_ep->iface), &piece, 1, status);
    }
    return slim_record_status(tl_ep, status, SLIM_OP_PUT, SLIM_DIR_SEND, length,
                              feat);
}

static UCS_F_ALWAYS_INLINE ssize_t
slim_ep_put_bcopy_impl(uct_ep_h tl_ep, uct_pack_callback_t pack_cb, void *arg,
                       uint64_t remote_addr, uct_rkey_t rkey, unsigned feat)
{
    uct_ep_h inner = slim_ep_start_op(tl_ep, feat);

    SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ssize_t, feat);
    return slim_record_packed(tl_ep,
                              uct_ep_put_bcopy(inner, pack_cb, arg, remote_addr,
                                               rkey),
                              SLIM_OP_PUT, 0, feat);
}

static UCS_F_ALWAYS_INLINE ucs_status_t
slim_ep_put_zcopy_impl(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                       uint64_t remote_addr, uct_rkey_t rkey,
                       uct_completion_t *comp, unsigned feat)
{
    uct_ep_h inner = slim_ep_start_op(tl_ep, feat);
    slim_frame_piece_t pieces[SLIM_EP_MAX_IOV];
    uct_iov_t inner_iov[SLIM_EP_MAX_IOV];
    slim_put_outcome_t outcome;
    slim_zcopy_comp_t *zcomp;
    uct_completion_t *inner_comp;
    size_t piece_count;
    ucs_status_t status;

    SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ucs_status_t, feat);
    outcome.handled = 0;
    outcome.result  = SLIM_FRAME_UNMARKED;
    piece_count     = 0;
    if (SLIM_F_PACK(feat) &&
        ucs_unlikely(slim_iface_any_marked(slim_iface(tl_ep->iface)))) {
        piece_count = slim_ep_iov_pieces(iov, iovcnt, pieces, SLIM_EP_MAX_IOV);
    }
    if (piece_count > 0) {
        /* Packed, it is recorded (at its wire size) where it is sent. */
        slim_put_offer(slim_ep(tl_ep), pieces, piece_count, remote_addr, rkey,
                       comp, &outcome);
        if (outcome.handled) {
            return outcome.status;
        }
    }

    inner_comp = slim_zcopy_comp_get(slim_iface(tl_ep->iface), comp, &zcomp,
                                     feat);
    status = uct_ep_put_zcopy(inner, slim_ep_inner_iov(iov, iovcnt, inner_iov),
                              iovcnt, remote_addr, rkey, inner_comp);
    if (SLIM_F_PACK(feat)) {
        slim_put_forwarded(&outcome, status);
    }
    return slim_record_zcopy(tl_ep, zcomp, status, SLIM_OP_PUT, SLIM_DIR_SEND,
                             0, uct_iov_total_length(iov, iovcnt), feat);
}

static UCS_F_ALWAYS_INLINE ucs_status_t
slim_ep_get_short_impl(uct_ep_h tl_ep, void *buffer, unsigned length,
                       uint64_t remote_addr, uct_rkey_t rkey, unsigned feat)
{
    uct_ep_h inner = slim_ep_start_op(tl_ep, feat);
    ucs_status_t status;

    SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ucs_status_t, feat);
    status = uct_ep_get_short(inner, buffer, length, remote_addr, rkey);
    return slim_record_status(tl_ep, status, SLIM_OP_GET, SLIM_DIR_RECV, length,
                              feat);
}

static UCS_F_ALWAYS_INLINE ucs_status_t
slim_ep_get_bcopy_impl(uct_ep_h tl_ep, uct_unpack_callback_t unpack_cb,
                       void *arg, size_t length, uint64_t remote_addr,
                       uct_rkey_t rkey, uct_completion_t *comp, unsigned feat)
{
    uct_ep_h inner = slim_ep_start_op(tl_ep, feat);
    ucs_status_t status;

    SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ucs_status_t, feat);
    status = uct_ep_get_bcopy(inner, unpack_cb, arg, length, remote_addr, rkey,
                              comp);
    return slim_record_status(tl_ep, status, SLIM_OP_GET, SLIM_DIR_RECV, length,
                              feat);
}

static UCS_F_ALWAYS_INLINE ucs_status_t
slim_ep_get_zcopy_impl(uct_ep_h tl_ep, const uct_iov_t *iov, size_t iovcnt,
                       uint64_t remote_addr, uct_rkey_t rkey,
                       uct_completion_t *comp, unsigned feat)
{
    uct_ep_h inner = slim_ep_start_op(tl_ep, feat);
    uct_iov_t inner_iov[SLIM_EP_MAX_IOV];
    slim_zcopy_comp_t *zcomp;
    uct_completion_t *inner_comp;
    ucs_status_t status;

    SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ucs_status_t, feat);
    slim_ep_inner_iov(iov, iovcnt, inner_iov);
    inner_comp = slim_zcopy_comp_get(slim_iface(tl_ep->iface), comp, &zcomp,
                                     feat);
    status     = uct_ep_get_zcopy(inner, inner_iov, iovcnt, remote_addr, rkey,
                                  inner_comp);
    return slim_record_zcopy(tl_ep, zcomp, status, SLIM_OP_GET, SLIM_DIR_RECV,
                             0, uct_iov_total_length(iov, iovcnt), feat);
}

/* ---- atomics ------------------------------------------------------------ */

/* Every atomic: forwarded, then recorded as a send of its operand. */
#define SLIM_EP_ATOMIC(_call, _size) \
    uct_ep_h _inner = slim_ep_start_op(tl_ep, feat); \
    ucs_status_t _status; \
    SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ucs_status_t, feat); \
    _status = _call; \
    return slim_record_status(tl_ep, _status, SLIM_OP_ATOMIC, SLIM_DIR_SEND, \
                              _size, feat)

static UCS_F_ALWAYS_INLINE ucs_status_t slim_ep_atomic_cswap64_impl(
        uct_ep_h tl_ep, uint64_t compare, uint64_t swap, uint64_t remote_addr,
        uct_rkey_t rkey, uint64_t *result, uct_completion_t *comp,
        unsigned feat)
{
    SLIM_EP_ATOMIC(uct_ep_atomic_cswap64(_inner, compare, swap, remote_addr,
                                         rkey, result, comp),
                   sizeof(uint64_t));
}

static UCS_F_ALWAYS_INLINE ucs_status_t slim_ep_atomic_cswap32_impl(
        uct_ep_h tl_ep, uint32_t compare, uint32_t swap, uint64_t remote_addr,
        uct_rkey_t rkey, uint32_t *result, uct_completion_t *comp,
        unsigned feat)
{
    SLIM_EP_ATOMIC(uct_ep_atomic_cswap32(_inner, compare, swap, remote_addr,
                                         rkey, result, comp),
                   sizeof(uint32_t));
}

static UCS_F_ALWAYS_INLINE ucs_status_t
slim_ep_atomic32_post_impl(uct_ep_h tl_ep, unsigned opcode, uint32_t value,
                           uint64_t remote_addr, uct_rkey_t rkey, unsigned feat)
{
    SLIM_EP_ATOMIC(uct_ep_atomic32_post(_inner, opcode, value, remote_addr,
                                        rkey),
                   sizeof(value));
}

static UCS_F_ALWAYS_INLINE ucs_status_t
slim_ep_atomic64_post_impl(uct_ep_h tl_ep, unsigned opcode, uint64_t value,
                           uint64_t remote_addr, uct_rkey_t rkey, unsigned feat)
{
    SLIM_EP_ATOMIC(uct_ep_atomic64_post(_inner, opcode, value, remote_addr,
                                        rkey),
                   sizeof(value));
}

static UCS_F_ALWAYS_INLINE ucs_status_t slim_ep_atomic32_fetch_impl(
        uct_ep_h tl_ep, unsigned opcode, uint32_t value, uint32_t *result,
        uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp,
        unsigned feat)
{
    SLIM_EP_ATOMIC(uct_ep_atomic32_fetch(_inner, opcode, value, result,
                                         remote_addr, rkey, comp),
                   sizeof(value));
}

static UCS_F_ALWAYS_INLINE ucs_status_t slim_ep_atomic64_fetch_impl(
        uct_ep_h tl_ep, unsigned opcode, uint64_t value, uint64_t *result,
        uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp,
        unsigned feat)
{
    SLIM_EP_ATOMIC(uct_ep_atomic64_fetch(_inner, opcode, value, result,
                                         remote_addr, rkey, comp),
                   sizeof(value));
}

/* ---- one set of data operations per combination of features ------------ */

#define SLIM_EP_AM_ZCOPY_OP(_name, _feat) \
    static ucs_status_t slim_ep_am_zcopy_##_name( \
            uct_ep_h ep, uint8_t id, const void *header, \
            unsigned header_length, const uct_iov_t *iov, size_t iovcnt, \
            unsigned flags, uct_completion_t *comp) \
    { \
        return slim_ep_am_zcopy_impl(ep, id, header, header_length, iov, \
                                     iovcnt, flags, comp, _feat); \
    }

/* Defines the data operations of one feature combination, `_feat` a
 * constant, as slim_ep_<op>_<_name>, and slim_ep_fill_data_ops_<_name>(). */
#define SLIM_EP_DATA_OPS(_name, _feat) \
    static ucs_status_t slim_ep_am_short_##_name(uct_ep_h ep, uint8_t id, \
                                                 uint64_t header, \
                                                 const void *payload, \
                                                 unsigned length) \
    { \
        return slim_ep_am_short_impl(ep, id, header, payload, length, _feat); \
    } \
    static ucs_status_t slim_ep_am_short_iov_##_name(uct_ep_h ep, uint8_t id, \
                                                     const uct_iov_t *iov, \
                                                     size_t iovcnt) \
    { \
        return slim_ep_am_short_iov_impl(ep, id, iov, iovcnt, _feat); \
    } \
    static ssize_t slim_ep_am_bcopy_##_name(uct_ep_h ep, uint8_t id, \
                                            uct_pack_callback_t pack_cb, \
                                            void *arg, unsigned flags) \
    { \
        return slim_ep_am_bcopy_impl(ep, id, pack_cb, arg, flags, _feat); \
    } \
    SLIM_EP_AM_ZCOPY_OP(_name, _feat) \
    static ucs_status_t slim_ep_put_short_##_name(uct_ep_h ep, \
                                                  const void *buffer, \
                                                  unsigned length, \
                                                  uint64_t remote_addr, \
                                                  uct_rkey_t rkey) \
    { \
        return slim_ep_put_short_impl(ep, buffer, length, remote_addr, rkey, \
                                      _feat); \
    } \
    static ssize_t slim_ep_put_bcopy_##_name(uct_ep_h ep, \
                                             uct_pack_callback_t pack_cb, \
                                             void *arg, uint64_t remote_addr, \
                                             uct_rkey_t rkey) \
    { \
        return slim_ep_put_bcopy_impl(ep, pack_cb, arg, remote_addr, rkey, \
                                      _feat); \
    } \
    static ucs_status_t slim_ep_put_zcopy_##_name( \
            uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt, \
            uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp) \
    { \
        return slim_ep_put_zcopy_impl(ep, iov, iovcnt, remote_addr, rkey, \
                                      comp, _feat); \
    } \
    static ucs_status_t slim_ep_get_short_##_name(uct_ep_h ep, void *buffer, \
                                                  unsigned length, \
                                                  uint64_t remote_addr, \
                                                  uct_rkey_t rkey) \
    { \
        return slim_ep_get_short_impl(ep, buffer, length, remote_addr, rkey, \
                                      _feat); \
    } \
    static ucs_status_t slim_ep_get_bcopy_##_name( \
            uct_ep_h ep, uct_unpack_callback_t unpack_cb, void *arg, \
            size_t length, uint64_t remote_addr, uct_rkey_t rkey, \
            uct_completion_t *comp) \
    { \
        return slim_ep_get_bcopy_impl(ep, unpack_cb, arg, length, remote_addr, \
                                      rkey, comp, _feat); \
    } \
    static ucs_status_t slim_ep_get_zcopy_##_name( \
            uct_ep_h ep, const uct_iov_t *iov, size_t iovcnt, \
            uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp) \
    { \
        return slim_ep_get_zcopy_impl(ep, iov, iovcnt, remote_addr, rkey, \
                                      comp, _feat); \
    } \
    static ucs_status_t slim_ep_atomic_cswap64_##_name( \
            uct_ep_h ep, uint64_t compare, uint64_t swap, \
            uint64_t remote_addr, uct_rkey_t rkey, uint64_t *result, \
            uct_completion_t *comp) \
    { \
        return slim_ep_atomic_cswap64_impl(ep, compare, swap, remote_addr, \
                                           rkey, result, comp, _feat); \
    } \
    static ucs_status_t slim_ep_atomic_cswap32_##_name( \
            uct_ep_h ep, uint32_t compare, uint32_t swap, \
            uint64_t remote_addr, uct_rkey_t rkey, uint32_t *result, \
            uct_completion_t *comp) \
    { \
        return slim_ep_atomic_cswap32_impl(ep, compare, swap, remote_addr, \
                                           rkey, result, comp, _feat); \
    } \
    static ucs_status_t slim_ep_atomic32_post_##_name(uct_ep_h ep, \
                                                      unsigned opcode, \
                                                      uint32_t value, \
                                                      uint64_t remote_addr, \
                                                      uct_rkey_t rkey) \
    { \
        return slim_ep_atomic32_post_impl(ep, opcode, value, remote_addr, \
                                          rkey, _feat); \
    } \
    static ucs_status_t slim_ep_atomic64_post_##_name(uct_ep_h ep, \
                                                      unsigned opcode, \
                                                      uint64_t value, \
                                                      uint64_t remote_addr, \
                                                      uct_rkey_t rkey) \
    { \
        return slim_ep_atomic64_post_impl(ep, opcode, value, remote_addr, \
                                          rkey, _feat); \
    } \
    static ucs_status_t slim_ep_atomic32_fetch_##_name( \
            uct_ep_h ep, unsigned opcode, uint32_t value, uint32_t *result, \
            uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp) \
    { \
        return slim_ep_atomic32_fetch_impl(ep, opcode, value, result, \
                                           remote_addr, rkey, comp, _feat); \
    } \
    static ucs_status_t slim_ep_atomic64_fetch_##_name( \
            uct_ep_h ep, unsigned opcode, uint64_t value, uint64_t *result, \
            uint64_t remote_addr, uct_rkey_t rkey, uct_completion_t *comp) \
    { \
        return slim_ep_atomic64_fetch_impl(ep, opcode, value, result, \
                                           remote_addr, rkey, comp, _feat); \
    } \
    static void slim_ep_fill_data_ops_##_name(uct_iface_ops_t *ops) \
    { \
        ops->ep_am_short       = slim_ep_am_short_##_name; \
        ops->ep_am_short_iov   = slim_ep_am_short_iov_##_name; \
        ops->ep_am_bcopy       = slim_ep_am_bcopy_##_name; \
        ops->ep_am_zcopy       = slim_ep_am_zcopy_##_name; \
        ops->ep_put_short      = slim_ep_put_short_##_name; \
        ops->ep_put_bcopy      = slim_ep_put_bcopy_##_name; \
        ops->ep_put_zcopy      = slim_ep_put_zcopy_##_name; \
        ops->ep_get_short      = slim_ep_get_short_##_name; \
        ops->ep_get_bcopy      = slim_ep_get_bcopy_##_name; \
        ops->ep_get_zcopy      = slim_ep_get_zcopy_##_name; \
        ops->ep_atomic_cswap64 = slim_ep_atomic_cswap64_##_name; \
        ops->ep_atomic_cswap32 = slim_ep_atomic_cswap32_##_name; \
        ops->ep_atomic32_post  = slim_ep_atomic32_post_##_name; \
        ops->ep_atomic64_post  = slim_ep_atomic64_post_##_name; \
        ops->ep_atomic32_fetch = slim_ep_atomic32_fetch_##_name; \
        ops->ep_atomic64_fetch = slim_ep_atomic64_fetch_##_name; \
    }

#define SLIM_FEATURES_FULL (SLIM_FEATURE_RECORD | SLIM_FEATURE_PACK)

SLIM_EP_DATA_OPS(forward, 0)
SLIM_EP_DATA_OPS(forward_linger, SLIM_FEATURE_LINGER)
SLIM_EP_DATA_OPS(full, SLIM_FEATURES_FULL)
SLIM_EP_DATA_OPS(full_linger, SLIM_FEATURES_FULL | SLIM_FEATURE_LINGER)

/* am_zcopy by copy changes that operation alone: the other operations of
 * these sets are the full sets'. */
#define SLIM_FEATURES_BY_COPY (SLIM_FEATURES_FULL | SLIM_FEATURE_ZCOPY_BY_COPY)

SLIM_EP_AM_ZCOPY_OP(full_bycopy, SLIM_FEATURES_BY_COPY)
SLIM_EP_AM_ZCOPY_OP(full_bycopy_linger,
                    SLIM_FEATURES_BY_COPY | SLIM_FEATURE_LINGER)

void slim_ep_set_data_ops(uct_iface_ops_t *ops, unsigned features)
{
    switch (features) {
    case 0:
        slim_ep_fill_data_ops_forward(ops);
        break;
    case SLIM_FEATURE_LINGER:
        slim_ep_fill_data_ops_forward_linger(ops);
        break;
    case SLIM_FEATURES_FULL:
        slim_ep_fill_data_ops_full(ops);
        break;
    case SLIM_FEATURES_FULL | SLIM_FEATURE_LINGER:
        slim_ep_fill_data_ops_full_linger(ops);
        break;
    case SLIM_FEATURES_BY_COPY:
        slim_ep_fill_data_ops_full(ops);
        ops->ep_am_zcopy = slim_ep_am_zcopy_full_bycopy;
        break;
    case SLIM_FEATURES_BY_COPY | SLIM_FEATURE_LINGER:
        slim_ep_fill_data_ops_full_linger(ops);
        ops->ep_am_zcopy = slim_ep_am_zcopy_full_bycopy_linger;
        break;
    default:
        ucs_fatal("slim: no operations for features 0x%x", features);
    }
}

/* ---- tag offload: never advertised (see slim_iface_query) -------------- */

static ucs_status_t slim_ep_tag_eager_short(uct_ep_h tl_ep, uct_tag_t tag,
                                            const void *data, size_t length)
{
    return UCS_ERR_UNSUPPORTED;
}

static ssize_t
slim_ep_tag_eager_bcopy(uct_ep_h tl_ep, uct_tag_t tag, uint64_t imm,
                        uct_pack_callback_t pack_cb, void *arg, unsigned flags)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t slim_ep_tag_eager_zcopy(uct_ep_h tl_ep, uct_tag_t tag,
                                            uint64_t imm, const uct_iov_t *iov,
                                            size_t iovcnt, unsigned flags,
                                            uct_completion_t *comp)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_ptr_t
slim_ep_tag_rndv_zcopy(uct_ep_h tl_ep, uct_tag_t tag, const void *header,
                       unsigned header_length, const uct_iov_t *iov,
                       size_t iovcnt, unsigned flags, uct_completion_t *comp)
{
    return UCS_STATUS_PTR(UCS_ERR_UNSUPPORTED);
}

static ucs_status_t slim_ep_tag_rndv_cancel(uct_ep_h tl_ep, void *op)
{
    return UCS_ERR_UNSUPPORTED;
}

static ucs_status_t
slim_ep_tag_rndv_request(uct_ep_h tl_ep, uct_tag_t tag, const void *header,
                         unsigned header_length, unsigned flags)
{
    return UCS_ERR_UNSUPPORTED;
}

/* ---- control ------------------------------------------------------------ */

/* slim_ep_start_op() for control operations, which every feature set
 * shares: the interface's features read at run time. */
static uct_ep_h slim_ep_start_control_op(uct_ep_h tl_ep)
{
    return slim_ep_start_op(tl_ep, slim_iface(tl_ep->iface)->features);
}

static ucs_status_t
slim_ep_pending_add(uct_ep_h tl_ep, uct_pending_req_t *req, unsigned flags)
{
    uct_ep_h inner = slim_ep_start_control_op(tl_ep);

    /* A parked packed put is queued on the inner endpoint already (or goes
     * now): UCP's request waits behind it. */
    (void)slim_ep_put_ready(slim_ep(tl_ep));
    return uct_ep_pending_add(inner, req, flags);
}

typedef struct slim_ep_purge_arg {
    slim_ep_t *ep;
    uct_pending_purge_callback_t cb;
    void *arg;
} slim_ep_purge_arg_t;

/* UCP's callback sees its own requests only. */
static void slim_ep_purge_cb(uct_pending_req_t *req, void *arg)
{
    slim_ep_purge_arg_t *purge = arg;

    if (!slim_put_is_own_pending(purge->ep, req) && (purge->cb != NULL)) {
        purge->cb(req, purge->arg);
    }
}

static void slim_ep_pending_purge(uct_ep_h tl_ep,
                                  uct_pending_purge_callback_t cb, void *arg)
{
    slim_ep_purge_arg_t purge = {slim_ep(tl_ep), cb, arg};

    uct_ep_pending_purge(slim_ep_control(tl_ep), slim_ep_purge_cb, &purge);
}

static void slim_flush_comp_done(uct_completion_t *self)
{
    slim_flush_comp_t *flush = ucs_container_of(self, slim_flush_comp_t, super);
    slim_ep_t *ep            = flush->ep;
    slim_iface_t *iface      = flush->iface;
    uct_completion_t *user   = flush->user;
    ucs_status_t status      = self->status;

    if (ep != NULL) {
        ucs_list_del(&flush->list);
        if (status == UCS_OK) {
            ep->flushed_seq = ucs_max(ep->flushed_seq, flush->op_seq);
        }
    } else {
        --iface->orphan_flushes;
    }
    ucs_mpool_put_inline(flush);

    if (user != NULL) {
        uct_invoke_completion(user, status);
    }
    slim_progress_maybe_linger(iface);
}

static ucs_status_t
slim_ep_flush(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    slim_ep_t *ep       = slim_ep(tl_ep);
    uint64_t op_seq     = ep->op_seq;
    slim_iface_t *iface = slim_iface(tl_ep->iface);
    slim_flush_comp_t *flush;
    ucs_status_t status;

    slim_iface_wake(iface);
    if (!(flags & UCT_FLUSH_FLAG_CANCEL)) {
        SLIM_EP_PUT_READY_OR_RETURN(tl_ep, ucs_status_t, iface->features);
    }
    if ((flags & UCT_FLUSH_FLAG_CANCEL) || (comp == NULL) ||
        !(iface->features & SLIM_FEATURE_LINGER)) {
        /* Nothing to learn about quiescence from these, or nobody asks. */
        return uct_ep_flush(ep->inner, flags, comp);
    }

    flush = ucs_mpool_get_inline(&iface->flush_comps);
    if (flush == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    slim_completion_init(&flush->super, slim_flush_comp_done);
    flush->user   = comp;
    flush->iface  = iface;
    flush->ep     = ep;
    flush->op_seq = op_seq;

    status = uct_ep_flush(ep->inner, flags, &flush->super);
    if (status == UCS_INPROGRESS) {
        ucs_list_add_tail(&ep->flushes, &flush->list);
        return UCS_INPROGRESS;
    }

    ucs_mpool_put_inline(flush);
    if (status == UCS_OK) {
        ep->flushed_seq = op_seq;
        slim_progress_maybe_linger(iface);
    }
    return status;
}

static ucs_status_t slim_ep_fence(uct_ep_h tl_ep, unsigned flags)
{
    return uct_ep_fence(slim_ep_control(tl_ep), flags);
}

static ucs_status_t
slim_ep_check(uct_ep_h tl_ep, unsigned flags, uct_completion_t *comp)
{
    return uct_ep_check(slim_ep_start_control_op(tl_ep), flags, comp);
}

static ucs_status_t
slim_ep_connect(uct_ep_h tl_ep, const uct_ep_connect_params_t *params)
{
    return uct_ep_connect(slim_ep_control(tl_ep), params);
}

static ucs_status_t slim_ep_disconnect(uct_ep_h tl_ep, unsigned flags)
{
    return uct_ep_disconnect(slim_ep_control(tl_ep), flags);
}

static ucs_status_t slim_ep_conn_notify(uct_ep_h tl_ep)
{
    return uct_cm_client_ep_conn_notify(slim_ep_control(tl_ep));
}

static ucs_status_t slim_ep_get_address(uct_ep_h tl_ep, uct_ep_addr_t *addr)
{
    return uct_ep_get_address(slim_ep_control(tl_ep), addr);
}

static ucs_status_t slim_ep_connect_to_ep(uct_ep_h tl_ep,
                                          const uct_device_addr_t *dev_addr,
                                          const uct_ep_addr_t *ep_addr)
{
    return uct_ep_connect_to_ep(slim_ep_control(tl_ep), dev_addr, ep_addr);
}

static ucs_status_t slim_ep_query(uct_ep_h tl_ep, uct_ep_attr_t *ep_attr)
{
    uct_ep_h inner          = slim_ep(tl_ep)->inner;
    uct_base_iface_t *iface = ucs_derived_of(inner->iface, uct_base_iface_t);

    return iface->internal_ops->ep_query(inner, ep_attr);
}

static ucs_status_t slim_ep_invalidate(uct_ep_h tl_ep, unsigned flags)
{
    return uct_ep_invalidate(slim_ep_start_control_op(tl_ep), flags);
}

/* ---- construction ------------------------------------------------------- */

static UCS_CLASS_INIT_FUNC(slim_ep_t, const uct_ep_params_t *params)
{
    slim_iface_t *iface = slim_iface(params->iface);
    uct_ep_params_t inner_params;
    ucs_status_t status;

    UCS_CLASS_CALL_SUPER_INIT(uct_base_ep_t, &iface->super);

    slim_iface_wake(iface);
    self->op_seq      = 0;
    self->flushed_seq = 0;
    ucs_list_head_init(&self->flushes);
    slim_put_ep_init(self);

    inner_params       = *params;
    inner_params.iface = iface->inner;
    status             = uct_ep_create(&inner_params, &self->inner);
    if (status != UCS_OK) {
        return status;
    }

    slim_iface_add_ep(iface, self);
    return UCS_OK;
}

static UCS_CLASS_CLEANUP_FUNC(slim_ep_t)
{
    slim_iface_t *iface = slim_iface(self->super.super.iface);
    slim_flush_comp_t *flush, *tmp;

    slim_iface_wake(iface);
    slim_iface_remove_ep(iface, self);
    slim_put_ep_cleanup(self);
    /* Destroying the inner ep may complete its flushes (cancelled). */
    uct_ep_destroy(self->inner);
    ucs_list_for_each_safe(flush, tmp, &self->flushes, list) {
        /* Completes later without us; until then the iface is not
         * quiescent, so it cannot complete on the linger thread. */
        ucs_list_del(&flush->list);
        flush->ep = NULL;
        ++iface->orphan_flushes;
    }
    slim_progress_maybe_linger(iface);
}

UCS_CLASS_DEFINE(slim_ep_t, uct_base_ep_t);
UCS_CLASS_DEFINE_NEW_FUNC(slim_ep_t, uct_ep_t, const uct_ep_params_t *);
UCS_CLASS_DEFINE_DELETE_FUNC(slim_ep_t, uct_ep_t);

/* Plain malloc'd chunks; the objects need no setup. */
static ucs_mpool_ops_t slim_comp_mpool_ops = {
        .chunk_alloc   = ucs_mpool_chunk_malloc,
        .chunk_release = ucs_mpool_chunk_free};

ucs_status_t slim_ep_comp_pools_init(slim_iface_t *iface)
{
    ucs_status_t status;

    /* 16 per chunk: one flush in flight per endpoint is the common case
     * (UCP's endpoint close, an RMA epoch); the pool grows past it. */
    status = ucs_mpool_init(&iface->flush_comps, 0, sizeof(slim_flush_comp_t),
                            0, UCS_ARCH_CACHE_LINE_SIZE, 16, UINT_MAX,
                            &slim_comp_mpool_ops, "slim_flush_comp");
    if (status != UCS_OK) {
        return status;
    }
    /* 64 per chunk: a rendezvous window keeps tens of puts in flight. */
    status = ucs_mpool_init(&iface->zcopy_comps, 0, sizeof(slim_zcopy_comp_t),
                            0, UCS_ARCH_CACHE_LINE_SIZE, 64, UINT_MAX,
                            &slim_comp_mpool_ops, "slim_zcopy_comp");
    if (status != UCS_OK) {
        ucs_mpool_cleanup(&iface->flush_comps, 0);
    }
    return status;
}

void slim_ep_comp_pools_cleanup(slim_iface_t *iface)
{
    /* Completions the closed inner interface never invoked are freed with
     * their chunks, not reported: their endpoints are gone. */
    ucs_mpool_cleanup(&iface->zcopy_comps, 0);
    ucs_mpool_cleanup(&iface->flush_comps, 0);
}

/* The control operations; the data operations come with the interface's
 * features (slim_ep_set_data_ops). */
void slim_ep_fill_ops(uct_iface_ops_t *ops)
{
    ops->ep_tag_eager_short  = slim_ep_tag_eager_short;
    ops->ep_tag_eager_bcopy  = slim_ep_tag_eager_bcopy;
    ops->ep_tag_eager_zcopy  = slim_ep_tag_eager_zcopy;
    ops->ep_tag_rndv_zcopy   = slim_ep_tag_rndv_zcopy;
    ops->ep_tag_rndv_cancel  = slim_ep_tag_rndv_cancel;
    ops->ep_tag_rndv_request = slim_ep_tag_rndv_request;
    ops->ep_pending_add      = slim_ep_pending_add;
    ops->ep_pending_purge    = slim_ep_pending_purge;
    ops->ep_flush            = slim_ep_flush;
    ops->ep_fence            = slim_ep_fence;
    ops->ep_check            = slim_ep_check;
    ops->ep_connect          = slim_ep_connect;
    ops->ep_disconnect       = slim_ep_disconnect;
    ops->cm_ep_conn_notify   = slim_ep_conn_notify;
    ops->ep_get_address      = slim_ep_get_address;
    ops->ep_connect_to_ep    = slim_ep_connect_to_ep;
    /* Until an interface installs its own (slim_iface.c). */
    slim_ep_set_data_ops(ops, SLIM_FEATURES_FULL | SLIM_FEATURE_LINGER);
}

void slim_ep_fill_internal_ops(uct_iface_internal_ops_t *ops)
{
    ops->ep_query      = slim_ep_query;
    ops->ep_invalidate = slim_ep_invalidate;
}

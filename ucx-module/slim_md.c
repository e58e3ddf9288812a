/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * The slim memory domain: opens the inner component's md of the same name
 * and forwards every memory operation to it. Remote keys are the inner
 * transport's own and need no translation. Memory handles are wrapped
 * (slim_memh_t): slim must know which ranges it registered for remote puts,
 * to check the expand notices that follow packed puts (slim_put.c), and the
 * inner handle alone may not say (tcp returns one dummy handle for all).
 */
#include "slim.h"

#include <ucs/debug/memtrack_int.h>

static slim_md_t *slim_md(uct_md_h md)
{
    return ucs_derived_of(md, slim_md_t);
}

static void slim_md_close(uct_md_h md)
{
    slim_md_t *self = slim_md(md);
    slim_memh_t *memh, *tmp;
    size_t left = 0;

    ucs_list_for_each_safe(memh, tmp, &self->regs, list) {
        ucs_list_del(&memh->list);
        ucs_free(memh);
        ++left;
    }
    if (left > 0) {
        slim_debug("md %p closed with %zu registrations left", self, left);
    }
    ucs_spinlock_destroy(&self->regs_lock);
    uct_md_close(self->inner);
    ucs_free(self);
}

/* A handle for memory the inner md registered or allocated. */
static slim_memh_t *slim_md_track(slim_md_t *md, uct_mem_h inner, void *address,
                                  size_t length, unsigned flags)
{
    slim_memh_t *memh = ucs_malloc(sizeof(*memh), "slim_memh");

    if (memh == NULL) {
        return NULL;
    }
    memh->inner   = inner;
    memh->address = (uintptr_t)address;
    memh->length  = length;
    /* No access flag at all means every access (uct.h). */
    memh->remote_put = !(flags & UCT_MD_MEM_ACCESS_ALL) ||
                       (flags & UCT_MD_MEM_ACCESS_REMOTE_PUT);
    ucs_spin_lock(&md->regs_lock);
    ucs_list_add_tail(&md->regs, &memh->list);
    ucs_spin_unlock(&md->regs_lock);
    return memh;
}

static void slim_md_untrack(slim_md_t *md, slim_memh_t *memh)
{
    ucs_spin_lock(&md->regs_lock);
    ucs_list_del(&memh->list);
    ucs_spin_unlock(&md->regs_lock);
}

int slim_md_range_registered(slim_md_t *md, uint64_t address, size_t length)
{
    slim_memh_t *memh;
    int found = 0;

    if ((length == 0) || (address + length < address)) {
        return 0;
    }
    ucs_spin_lock(&md->regs_lock);
    ucs_list_for_each(memh, &md->regs, list) {
        if (memh->remote_put && (address >= memh->address) &&
            (address + length <= memh->address + memh->length)) {
            found = 1;
            break;
        }
    }
    ucs_spin_unlock(&md->regs_lock);
    return found;
}

static ucs_status_t slim_md_query(uct_md_h md, uct_md_attr_t *md_attr)
{
    uct_md_h inner = slim_md(md)->inner;
    ucs_status_t status;

    /* uct_md_query() of the caller stamps our component name afterwards. */
    status = inner->ops->query(inner, md_attr);
    if (status == UCS_OK) {
        slim_frame_steer_md_attr(md_attr);
    }
    return status;
}

static ucs_status_t
slim_md_mem_alloc(uct_md_h md, size_t *length_p, void **address_p,
                  ucs_memory_type_t mem_type, unsigned flags,
                  const char *alloc_name, uct_mem_h *memh_p)
{
    slim_md_t *self = slim_md(md);
    uct_md_h inner  = self->inner;
    uct_mem_h inner_memh;
    slim_memh_t *memh;
    ucs_status_t status;

    status = inner->ops->mem_alloc(inner, length_p, address_p, mem_type, flags,
                                   alloc_name, &inner_memh);
    if (status != UCS_OK) {
        return status;
    }
    memh = slim_md_track(self, inner_memh, *address_p, *length_p, flags);
    if (memh == NULL) {
        inner->ops->mem_free(inner, inner_memh);
        return UCS_ERR_NO_MEMORY;
    }
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t slim_md_mem_free(uct_md_h md, uct_mem_h memh)
{
    slim_md_t *self = slim_md(md);
    uct_md_h inner  = self->inner;
    ucs_status_t status;

    if (memh == UCT_MEM_HANDLE_NULL) {
        return inner->ops->mem_free(inner, memh);
    }
    slim_md_untrack(self, memh);
    status = inner->ops->mem_free(inner, slim_memh_inner(memh));
    ucs_free(memh);
    return status;
}

static ucs_status_t slim_md_mem_advise(uct_md_h md, uct_mem_h memh, void *addr,
                                       size_t length, unsigned advice)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->mem_advise(inner, slim_memh_inner(memh), addr, length,
                                  advice);
}

static ucs_status_t slim_md_mem_reg(uct_md_h md, void *address, size_t length,
                                    unsigned flags, uct_mem_h *memh_p)
{
    slim_md_t *self = slim_md(md);
    uct_md_h inner  = self->inner;
    uct_md_mem_dereg_params_t undo;
    uct_mem_h inner_memh;
    slim_memh_t *memh;
    ucs_status_t status;

    status = inner->ops->mem_reg(inner, address, length, flags, &inner_memh);
    if (status != UCS_OK) {
        return status;
    }
    memh = slim_md_track(self, inner_memh, address, length, flags);
    if (memh == NULL) {
        undo.field_mask = UCT_MD_MEM_DEREG_FIELD_MEMH;
        undo.memh       = inner_memh;
        inner->ops->mem_dereg(inner, &undo);
        return UCS_ERR_NO_MEMORY;
    }
    *memh_p = memh;
    return UCS_OK;
}

static ucs_status_t
slim_md_mem_dereg(uct_md_h md, const uct_md_mem_dereg_params_t *params)
{
    slim_md_t *self = slim_md(md);
    uct_md_h inner  = self->inner;
    uct_md_mem_dereg_params_t inner_params;
    slim_memh_t *memh;

    if (!(params->field_mask & UCT_MD_MEM_DEREG_FIELD_MEMH) ||
        (params->memh == UCT_MEM_HANDLE_NULL)) {
        return inner->ops->mem_dereg(inner, params);
    }
    /* Forget the range first: a notice checked from now on no longer finds
     * it, whatever the inner md does with the memory. The handle is gone
     * for UCP whatever the inner md answers. */
    memh              = params->memh;
    inner_params      = *params;
    inner_params.memh = memh->inner;
    slim_md_untrack(self, memh);
    ucs_free(memh);
    return inner->ops->mem_dereg(inner, &inner_params);
}

static ucs_status_t slim_md_mem_query(uct_md_h md, const void *address,
                                      size_t length,
                                      uct_md_mem_attr_t *mem_attr)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->mem_query(inner, address, length, mem_attr);
}

static ucs_status_t slim_md_mkey_pack(uct_md_h md, uct_mem_h memh,
                                      const uct_md_mkey_pack_params_t *params,
                                      void *rkey_buffer)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->mkey_pack(inner, slim_memh_inner(memh), params,
                                 rkey_buffer);
}

static int slim_md_is_sockaddr_accessible(uct_md_h md,
                                          const ucs_sock_addr_t *sockaddr,
                                          uct_sockaddr_accessibility_t mode)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->is_sockaddr_accessible(inner, sockaddr, mode);
}

static ucs_status_t slim_md_detect_memory_type(uct_md_h md, const void *addr,
                                               size_t length,
                                               ucs_memory_type_t *mem_type_p)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->detect_memory_type(inner, addr, length, mem_type_p);
}

static uct_md_ops_t slim_md_ops = {
        .close                  = slim_md_close,
        .query                  = slim_md_query,
        .mem_alloc              = slim_md_mem_alloc,
        .mem_free               = slim_md_mem_free,
        .mem_advise             = slim_md_mem_advise,
        .mem_reg                = slim_md_mem_reg,
        .mem_dereg              = slim_md_mem_dereg,
        .mem_query              = slim_md_mem_query,
        .mkey_pack              = slim_md_mkey_pack,
        .is_sockaddr_accessible = slim_md_is_sockaddr_accessible,
        .detect_memory_type     = slim_md_detect_memory_type};

ucs_status_t slim_md_open(uct_component_t *component, const char *md_name,
                          const uct_md_config_t *config, uct_md_h *md_p)
{
    size_t prefix_len = strlen(SLIM_MD_NAME_PREFIX);
    uct_md_config_t *read_config;
    slim_md_t *self;
    ucs_status_t status;

    if (strncmp(md_name, SLIM_MD_NAME_PREFIX, prefix_len) != 0) {
        slim_error("md name '%s' does not start with '%s'", md_name,
                   SLIM_MD_NAME_PREFIX);
        return UCS_ERR_NO_DEVICE;
    }

    self = ucs_calloc(1, sizeof(*self), "slim_md");
    if (self == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = slim_inner_find(slim_inner_tl_name(), &self->inner_tl);
    if (status != UCS_OK) {
        slim_error("UCX_SLIM_INNER=%s: no such transport is loaded",
                   slim_inner_tl_name());
        goto err_free;
    }

    /* Once slim knows its inner transport, UCX reads slim's md
     * configuration with the inner component's table (slim_component.c):
     * the inner md is opened with it as it is, with whatever its caller set
     * in it by name. One read before that is slim's own, and the inner md
     * reads its own from the environment. */
    if (slim_config_is_inner(config,
                             self->inner_tl.component->md_config.table)) {
        read_config = NULL;
    } else {
        slim_debug("md configuration %p was read before the inner transport "
                   "was known; %s reads its own",
                   config, self->inner_tl.component->name);
        status = uct_md_config_read(self->inner_tl.component, NULL, NULL,
                                    &read_config);
        if (status != UCS_OK) {
            goto err_free;
        }
    }

    status = uct_md_open(self->inner_tl.component, md_name + prefix_len,
                         (read_config != NULL) ? read_config : config,
                         &self->inner);
    if (read_config != NULL) {
        uct_config_release(read_config);
    }
    if (status != UCS_OK) {
        slim_error("failed to open inner md '%s': %s", md_name + prefix_len,
                   ucs_status_string(status));
        goto err_free;
    }

    ucs_list_head_init(&self->regs);
    ucs_spinlock_init(&self->regs_lock, 0);
    self->super.ops       = &slim_md_ops;
    self->super.component = &slim_component;
    *md_p                 = &self->super;
    return UCS_OK;

err_free:
    ucs_free(self);
    return status;
}

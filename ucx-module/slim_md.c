/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * The slim memory domain: opens the inner component's md of the same name
 * and forwards every memory operation to it, so memory handles and remote
 * keys are the inner transport's own and need no translation.
 */
#include "slim.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>

static slim_md_t *slim_md(uct_md_h md)
{
    return ucs_derived_of(md, slim_md_t);
}

static void slim_md_close(uct_md_h md)
{
    slim_md_t *self = slim_md(md);

    uct_md_close(self->inner);
    ucs_free(self);
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

static ucs_status_t slim_md_mem_alloc(uct_md_h md, size_t *length_p,
                                      void **address_p,
                                      ucs_memory_type_t mem_type,
                                      unsigned flags, const char *alloc_name,
                                      uct_mem_h *memh_p)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->mem_alloc(inner, length_p, address_p, mem_type, flags,
                                 alloc_name, memh_p);
}

static ucs_status_t slim_md_mem_free(uct_md_h md, uct_mem_h memh)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->mem_free(inner, memh);
}

static ucs_status_t slim_md_mem_advise(uct_md_h md, uct_mem_h memh,
                                       void *addr, size_t length,
                                       unsigned advice)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->mem_advise(inner, memh, addr, length, advice);
}

static ucs_status_t slim_md_mem_reg(uct_md_h md, void *address, size_t length,
                                    unsigned flags, uct_mem_h *memh_p)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->mem_reg(inner, address, length, flags, memh_p);
}

static ucs_status_t slim_md_mem_dereg(uct_md_h md,
                                      const uct_md_mem_dereg_params_t *params)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->mem_dereg(inner, params);
}

static ucs_status_t slim_md_mem_query(uct_md_h md, const void *address,
                                      size_t length,
                                      uct_md_mem_attr_t *mem_attr)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->mem_query(inner, address, length, mem_attr);
}

static ucs_status_t
slim_md_mkey_pack(uct_md_h md, uct_mem_h memh,
                  const uct_md_mkey_pack_params_t *params, void *rkey_buffer)
{
    uct_md_h inner = slim_md(md)->inner;

    return inner->ops->mkey_pack(inner, memh, params, rkey_buffer);
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
    .detect_memory_type     = slim_md_detect_memory_type
};

ucs_status_t slim_md_open(uct_component_t *component, const char *md_name,
                          const uct_md_config_t *config, uct_md_h *md_p)
{
    size_t prefix_len                   = strlen(SLIM_MD_NAME_PREFIX);
    uct_md_config_t *inner_config;
    slim_md_t *self;
    ucs_status_t status;

    if (strncmp(md_name, SLIM_MD_NAME_PREFIX, prefix_len) != 0) {
        ucs_error("slim: md name '%s' does not start with '%s'", md_name,
                  SLIM_MD_NAME_PREFIX);
        return UCS_ERR_NO_DEVICE;
    }

    self = ucs_calloc(1, sizeof(*self), "slim_md");
    if (self == NULL) {
        return UCS_ERR_NO_MEMORY;
    }

    status = slim_inner_find(slim_inner_tl_name(), &self->inner_tl);
    if (status != UCS_OK) {
        ucs_error("UCX_SLIM_INNER=%s: no such transport is loaded",
                  slim_inner_tl_name());
        goto err_free;
    }

    status = uct_md_config_read(self->inner_tl.component, NULL, NULL,
                                &inner_config);
    if (status != UCS_OK) {
        goto err_free;
    }

    status = uct_md_open(self->inner_tl.component, md_name + prefix_len,
                         inner_config, &self->inner);
    uct_config_release(inner_config);
    if (status != UCS_OK) {
        ucs_error("slim: failed to open inner md '%s': %s",
                  md_name + prefix_len, ucs_status_string(status));
        goto err_free;
    }

    self->super.ops       = &slim_md_ops;
    self->super.component = &slim_component;
    *md_p                 = &self->super;
    return UCS_OK;

err_free:
    ucs_free(self);
    return status;
}

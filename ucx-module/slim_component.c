/* SPDX-License-Identifier: BSD-3-Clause */
/**
 * The `slim` UCT component: registration at load (from an ELF constructor,
 * which runs both when the library is preloaded into a stock UCX and when a
 * UCX built with slim as a native module dlopens it), the UCX version check,
 * discovery of the inner transport, and remote-key operations forwarded to
 * the inner component.
 */
#include "slim.h"
#include "slim_config.h"

#include <ucp/api/ucp.h>
#include <uct/api/version.h>
#include <ucs/sys/string.h>
#include <ucs/datastruct/string_buffer.h>

#include <stdarg.h>

/* Kept as written: UCX lays out its configuration tables by hand, one row
 * per variable. */
/* clang-format off */
static ucs_config_field_t slim_md_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(slim_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {NULL}
};

/* slimlink's own variables (UCX_SLIM_INNER, _REPORT, _POLICY, ...): the core
 * library's table, listed by `ucx_info -c` with their types, defaults and
 * doc strings. The core parses it (once per process, slim_core_init); UCX
 * parses it here only to print it. */
UCS_CONFIG_DECLARE_TABLE(slim_config_table, "slimlink", SLIM_CONFIG_TABLE_PREFIX,
                         slim_config_t)

static ucs_config_field_t slim_iface_config_table[] = {
    {"", "", NULL,
     ucs_offsetof(slim_iface_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_iface_config_table)},

    {NULL}
};
/* clang-format on */

/* Resolved once per process from UCX_SLIM_INNER; remote keys are unpacked
 * by this component, so it must be known before any md is opened. */
static slim_inner_t slim_global_inner;
/* Sized for any value the core accepts (up to 31 characters), not only for
 * real transport names (UCT_TL_NAME_MAX), so an error shows what was given. */
static char slim_global_inner_name[64];

/* Visits every transport of every component but ours, until visit()
 * returns nonzero; returns that value (0 when all were visited). */
static int slim_foreach_inner_candidate(int (*visit)(uct_component_t *,
                                                     uct_tl_t *, void *),
                                        void *arg)
{
    uct_component_t *component;
    uct_tl_t *tl;
    int stop;

    ucs_list_for_each(component, &uct_components_list, list) {
        if (component == &slim_component) {
            continue;
        }
        ucs_list_for_each(tl, &component->tl_list, list) {
            stop = visit(component, tl, arg);
            if (stop) {
                return stop;
            }
        }
    }
    return 0;
}

typedef struct {
    const char *tl_name;
    slim_inner_t *inner;
} slim_inner_query_t;

static int slim_inner_match(uct_component_t *component, uct_tl_t *tl, void *arg)
{
    slim_inner_query_t *query = arg;

    if (strcmp(tl->name, query->tl_name) != 0) {
        return 0;
    }
    query->inner->component = component;
    query->inner->tl        = tl;
    return 1;
}

ucs_status_t slim_inner_find(const char *tl_name, slim_inner_t *inner)
{
    slim_inner_query_t query = {tl_name, inner};

    return slim_foreach_inner_candidate(slim_inner_match, &query) ?
                   UCS_OK :
                   UCS_ERR_NO_DEVICE;
}

static int
slim_inner_append_name(uct_component_t *component, uct_tl_t *tl, void *arg)
{
    ucs_string_buffer_appendf(arg, "%s ", tl->name);
    return 0;
}

void slim_log_line(slim_log_level_t level, const char *format, ...)
{
    va_list args;

    if (!slim_core_log_enabled(level)) {
        return;
    }
    va_start(args, format);
    slim_core_vlog(level, format, args);
    va_end(args);
}

/* The user named a transport this process does not have (a typo, or e.g.
 * rc_mlx5 on a node without a Mellanox device): say which ones exist. */
static void slim_inner_report_missing(const char *tl_name)
{
    ucs_string_buffer_t names = UCS_STRING_BUFFER_INITIALIZER;

    slim_foreach_inner_candidate(slim_inner_append_name, &names);
    ucs_string_buffer_rtrim(&names, " ");
    slim_error("UCX_SLIM_INNER=%s: no such UCT transport is loaded in this "
               "process, so slim offers no devices; loaded transports: %s",
               tl_name, ucs_string_buffer_cstr(&names));
    ucs_string_buffer_cleanup(&names);
}

/* Finds the component of UCX_SLIM_INNER (as the core parsed it). Called
 * from query_md_resources, which UCX calls before anything else on us,
 * after slim_core_init(). */
static ucs_status_t slim_global_inner_lookup(void)
{
    ucs_status_t status;

    ucs_strncpy_zero(slim_global_inner_name, slim_core_inner_name(),
                     sizeof(slim_global_inner_name));

    if (!strcmp(slim_global_inner_name, SLIM_TL_NAME)) {
        slim_error("UCX_SLIM_INNER=%s: slim cannot wrap itself; name a real "
                   "transport such as tcp or rc_verbs",
                   slim_global_inner_name);
        return UCS_ERR_INVALID_PARAM;
    }

    status = slim_inner_find(slim_global_inner_name, &slim_global_inner);
    if (status != UCS_OK) {
        slim_inner_report_missing(slim_global_inner_name);
    }
    return status;
}

/* slim's own interface and md rows (UCX_SLIM_ALLOC, _FAILURE, _MAX_NUM_EPS,
 * ...), as UCX lists them (`ucx_info -c`) and as slim's own base interface
 * reads them, whatever slim_tl and slim_component say once the inner
 * transport is known. */
static ucs_config_global_list_entry_t slim_own_iface_config = {
        .name   = "slim transport (slimlink)",
        .prefix = SLIM_CONFIG_PREFIX,
        .table  = slim_iface_config_table,
        .size   = sizeof(slim_iface_config_t)};
static ucs_config_global_list_entry_t slim_own_md_config = {
        .name   = "slim memory domain (slimlink)",
        .prefix = SLIM_CONFIG_PREFIX,
        .table  = slim_md_config_table,
        .size   = sizeof(slim_md_config_t)};
static int slim_config_adopted;

/* LISTED leaves UCX's list of configurations and OWN takes its place, so
 * that `ucx_info -c` shows slim's own rows once and the inner transport's
 * under the inner transport only. LISTED stays a list of its own, for UCX to
 * unlink at unload. */
static void slim_config_entry_swap(ucs_config_global_list_entry_t *listed,
                                   ucs_config_global_list_entry_t *own)
{
    ucs_list_insert_after(&listed->list, &own->list);
    ucs_list_del(&listed->list);
    ucs_list_head_init(&listed->list);
}

/* Once the inner transport is known, UCX reads slim's interface and md
 * configurations with the inner's tables, sizes and prefixes, and slim opens
 * the inner with them as they are: the inner's variables (UCX_TCP_*) apply
 * as before, and so does a setting made by name in the configuration slim
 * is opened with (uct_config_modify(), or a UCT setting UCP was given with
 * ucp_config_modify()), which a copy slim read itself would lose. slim's own
 * base interface keeps reading its own rows (slim_own_iface_config_read), so
 * nothing about slim changes unless the inner's settings do. */
static void slim_config_adopt_inner(void)
{
    const uct_component_t *component = slim_global_inner.component;
    const uct_tl_t *tl               = slim_global_inner.tl;

    slim_config_entry_swap(&slim_tl.config, &slim_own_iface_config);
    slim_config_entry_swap(&slim_component.md_config, &slim_own_md_config);
    slim_tl.config.prefix           = tl->config.prefix;
    slim_tl.config.table            = tl->config.table;
    slim_tl.config.size             = tl->config.size;
    slim_component.md_config.prefix = component->md_config.prefix;
    slim_component.md_config.table  = component->md_config.table;
    slim_component.md_config.size   = component->md_config.size;
    slim_config_adopted             = 1;
}

int slim_config_is_inner(const void *config,
                         const ucs_config_field_t *inner_table)
{
    /* UCX hands out configurations as the data of a bundle that names the
     * table it was read with (uct_config_read). */
    const uct_config_bundle_t *bundle = (const uct_config_bundle_t *)config - 1;

    return bundle->table == inner_table;
}

ucs_status_t slim_own_iface_config_read(uct_iface_config_t **config_p)
{
    uct_config_bundle_t *bundle;
    ucs_status_t status;

    status = uct_config_read(&bundle, slim_own_iface_config.table,
                             slim_own_iface_config.size, NULL,
                             slim_own_iface_config.prefix);
    if (status != UCS_OK) {
        return status;
    }
    *config_p = (uct_iface_config_t *)bundle->data;
    return UCS_OK;
}

/* Resolved once per process, so a bad UCX_SLIM_INNER is reported once. */
static ucs_status_t slim_global_inner_resolve(void)
{
    static ucs_status_t status;
    static int resolved;

    if (!resolved) {
        status   = slim_global_inner_lookup();
        resolved = 1;
        if (status == UCS_OK) {
            slim_config_adopt_inner();
        }
    }
    return status;
}

const char *slim_inner_tl_name(void)
{
    return slim_global_inner_name;
}

ucs_status_t slim_query_md_resources(uct_component_t *component,
                                     uct_md_resource_desc_t **resources_p,
                                     unsigned *num_resources_p)
{
    uct_md_resource_desc_t *resources;
    unsigned i, num_resources;
    ucs_status_t status;

    if ((slim_core_init() != SLIM_OK) ||
        (slim_global_inner_resolve() != UCS_OK)) {
        /* The reason was logged once; offering no md disables slim. */
        return uct_md_query_empty_md_resource(resources_p, num_resources_p);
    }

    status = slim_global_inner.component->query_md_resources(
            slim_global_inner.component, &resources, &num_resources);
    if (status != UCS_OK) {
        return status;
    }
    if (num_resources == 0) {
        static int reported;

        if (!reported) {
            reported = 1;
            slim_error("UCX_SLIM_INNER=%s: that transport is loaded but its "
                       "component '%s' finds no device on this machine, so "
                       "slim offers none ('ucx_info -d' lists the transports "
                       "that have devices here)",
                       slim_global_inner_name,
                       slim_global_inner.component->name);
        }
    }

    for (i = 0; i < num_resources; ++i) {
        char inner_name[UCT_MD_NAME_MAX];

        ucs_strncpy_zero(inner_name, resources[i].md_name, sizeof(inner_name));
        ucs_snprintf_zero(resources[i].md_name, sizeof(resources[i].md_name),
                          "%s%s", SLIM_MD_NAME_PREFIX, inner_name);
    }

    *resources_p     = resources;
    *num_resources_p = num_resources;
    return UCS_OK;
}

/* Remote keys were packed by the peer's inner md, so the inner component
 * unpacks and releases them; the endpoint hands them to the inner ep as is. */
static ucs_status_t slim_rkey_unpack(uct_component_t *component,
                                     const void *rkey_buffer,
                                     uct_rkey_t *rkey_p, void **handle_p)
{
    uct_component_t *inner = slim_global_inner.component;

    return inner->rkey_unpack(inner, rkey_buffer, rkey_p, handle_p);
}

static ucs_status_t slim_rkey_ptr(uct_component_t *component, uct_rkey_t rkey,
                                  void *handle, uint64_t remote_addr,
                                  void **local_addr_p)
{
    uct_component_t *inner = slim_global_inner.component;

    return inner->rkey_ptr(inner, rkey, handle, remote_addr, local_addr_p);
}

static ucs_status_t
slim_rkey_release(uct_component_t *component, uct_rkey_t rkey, void *handle)
{
    uct_component_t *inner = slim_global_inner.component;

    return inner->rkey_release(inner, rkey, handle);
}

/* Kept as written: nested initializers aligned as UCX aligns its own. */
/* clang-format off */
uct_component_t slim_component = {
    .query_md_resources = slim_query_md_resources,
    .md_open            = slim_md_open,
    .cm_open            = (uct_component_cm_open_func_t)
                          ucs_empty_function_return_unsupported,
    .rkey_unpack        = slim_rkey_unpack,
    .rkey_ptr           = slim_rkey_ptr,
    .rkey_release       = slim_rkey_release,
    .name               = SLIM_COMPONENT_NAME,
    .md_config          = {
        .name           = "slim memory domain (slimlink)",
        .prefix         = SLIM_CONFIG_PREFIX,
        .table          = slim_md_config_table,
        .size           = sizeof(slim_md_config_t)
    },
    .cm_config          = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list            = UCT_COMPONENT_TL_LIST_INITIALIZER(&slim_component),
    .flags              = 0,
    .md_vfs_init        = (uct_component_md_vfs_init_func_t)ucs_empty_function
};

uct_tl_t slim_tl = {
    .name               = SLIM_TL_NAME,
    .query_devices      = slim_query_devices,
    .iface_open         = slim_iface_open,
    .config             = {
        .name           = "slim transport (slimlink)",
        .prefix         = SLIM_CONFIG_PREFIX,
        .table          = slim_iface_config_table,
        .size           = sizeof(slim_iface_config_t)
    }
};
/* clang-format on */

static int slim_registered;

#ifdef SLIM_BUILT_INTO_UCX
#define SLIM_LOAD_MODE "built into UCX"

/* Built in UCX's own tree: the headers are those of the libraries we load. */
static int slim_ucx_version_matches(void)
{
    return 1;
}
#else
#define SLIM_LOAD_MODE "preloaded"

/* Struct layouts of UCX's internal headers change between releases, so a
 * module built for another UCX would corrupt memory: refuse to register. */
static int slim_ucx_version_matches(void)
{
    unsigned major, minor, release;

    ucp_get_version(&major, &minor, &release);
    if ((major == UCT_VERNO_MAJOR) && (minor == UCT_VERNO_MINOR) &&
        (release == UCT_VERNO_PATCH)) {
        return 1;
    }

    slim_error("slim transport disabled: slimlink was built against UCX "
               "%d.%d.%d but this process runs UCX %u.%u.%u; rebuild slimlink "
               "against the installed UCX",
               UCT_VERNO_MAJOR, UCT_VERNO_MINOR, UCT_VERNO_PATCH, major, minor,
               release);
    return 0;
}
#endif

/* A process can hold two copies of the module: the preloaded one and the one
 * a UCX with slim built in loads itself. Only the first may register, or UCX
 * would list two components of one name. */
static int slim_already_registered(void)
{
    uct_component_t *component;

    ucs_list_for_each(component, &uct_components_list, list) {
        if (!strcmp(component->name, slim_component.name)) {
            return 1;
        }
    }
    return 0;
}

UCS_F_CTOR static void slim_module_load(void)
{
    if (!slim_ucx_version_matches()) {
        return;
    }

    if (slim_already_registered()) {
        slim_debug("another copy of the module is registered; this one "
                   "(%s) stays out",
                   SLIM_LOAD_MODE);
        return;
    }

    uct_component_register(&slim_component);
    uct_tl_register(&slim_component, &slim_tl);
    /* Listed once, by the copy that registers, like the component. */
    ucs_list_add_tail(&ucs_config_global_list,
                      &slim_config_table_config_entry.list);
    slim_registered = 1;
    ucs_info("slim: slimlink %d.%d transport registered (%s, UCX %d.%d.%d)",
             SLIMLINK_VERSION_MAJOR, SLIMLINK_VERSION_MINOR, SLIM_LOAD_MODE,
             UCT_VERNO_MAJOR, UCT_VERNO_MINOR, UCT_VERNO_PATCH);
}

UCS_F_DTOR static void slim_module_unload(void)
{
    if (!slim_registered) {
        return;
    }

    slim_progress_unload();
    ucs_list_del(&slim_config_table_config_entry.list);
    if (slim_config_adopted) {
        ucs_list_del(&slim_own_iface_config.list);
        ucs_list_del(&slim_own_md_config.list);
    }
    uct_tl_unregister(&slim_tl);
    uct_component_unregister(&slim_component);
    ucs_list_del(&slim_component.list);
}

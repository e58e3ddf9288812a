/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCX_SLIM_*: one table in UCX's configuration format (ucs_config_field_t),
 * the only place these variables are declared, typed, defaulted and
 * documented. The module registers it with UCX, so `ucx_info -c -f` lists
 * it; the core parses it once per process with UCX's parser
 * (ucs_config_parser_fill_opts) into slim_config_t and turns that into its
 * Config (configuration.h).
 *
 * UCX's own value types where they fit (enums, booleans, times, strings);
 * our parsers only where UCX has none: the transport name, the report
 * target, the exec command template and the packing policy. Their read()
 * uses the checks and messages of src/base/parse.h.
 */
#ifndef SLIM_RUNTIME_SLIM_CONFIG_H
#define SLIM_RUNTIME_SLIM_CONFIG_H

#include <ucs/config/parser.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLIM_CONFIG_ENV_PREFIX "UCX_"
#define SLIM_CONFIG_TABLE_PREFIX "SLIM_"

typedef struct slim_config {
    char *inner;           /* UCX_SLIM_INNER: checked transport name */
    char *report;          /* UCX_SLIM_REPORT: none, stdout or PATH.json */
    double report_wait;    /* UCX_SLIM_REPORT_WAIT: seconds (UCX time) */
    unsigned log_level;    /* UCX_SLIM_LOG_LEVEL: slim_config_log_levels */
    unsigned link;         /* UCX_SLIM_LINK: slim_config_links */
    char *link_exec;       /* UCX_SLIM_LINK_EXEC: checked command template */
    int inject_delay;      /* UCX_SLIM_INJECT_DELAY: UCX bool */
    int forward_only;      /* UCX_SLIM_FORWARD_ONLY: UCX bool */
    void *policy;          /* UCX_SLIM_POLICY: a parsed policy (configuration.cpp) */
    unsigned packing;      /* UCX_SLIM_PACKING: slim_config_packing_modes */
    unsigned predictor;    /* UCX_SLIM_PREDICTOR: slim_config_predictors */
    char *trace;           /* UCX_SLIM_TRACE: directory, "" for none */
    char *service;         /* UCX_SLIM_SERVICE: auto, off or a socket path */
    size_t bounce_size;    /* UCX_SLIM_BOUNCE_SIZE: UCX memunits */
    unsigned bounce_count; /* UCX_SLIM_BOUNCE_COUNT */
    unsigned bounce_grow;  /* UCX_SLIM_BOUNCE_GROW */
    unsigned cpu;          /* UCX_SLIM_CPU: slim_config_cpu_modes */
    unsigned wait;         /* UCX_SLIM_WAIT: slim_config_wait_modes */
    double wait_spin;      /* UCX_SLIM_WAIT_SPIN: seconds (UCX time) */
    double wait_max;       /* UCX_SLIM_WAIT_MAX: seconds (UCX time) */
    char *cpu_policy;      /* UCX_SLIM_CPU_POLICY: checked policy name */
    char *max_slowdown;    /* UCX_SLIM_MAX_SLOWDOWN: checked percentage */
    char *link_profile;    /* UCX_SLIM_LINK_PROFILE: checked link spec */
} slim_config_t;

/* Enum names, in the order of the C++ enums they stand for (checked by the
 * unit tests against to_string()). */
extern const char *slim_config_log_levels[];
extern const char *slim_config_links[];
extern const char *slim_config_packing_modes[];
extern const char *slim_config_predictors[];
extern const char *slim_config_cpu_modes[];
extern const char *slim_config_wait_modes[];

extern ucs_config_field_t slim_config_table[];

/* UCX's parser, from whichever libucs.so.0 this process has loaded
 * (slim_config_table.c). libslimlink does not link libucs: a library that
 * did would pull the system's libucs into a program built against another
 * UCX before that UCX's own libraries are loaded, and UCX would then look
 * for its modules (ours among them) beside the wrong libucs. */

/* 1 when UCX's libucs.so.0 is usable: the one this process has loaded, or
 * else the one the dynamic linker finds (loaded then). */
int slim_config_ucs_loaded(void);

/* ucs_config_parser_fill_opts(config, slim_config_table, "UCX_", "SLIM_", 0)
 * and ucs_config_parser_release_opts(); UCS_ERR_UNSUPPORTED without libucs. */
ucs_status_t slim_config_fill(slim_config_t *config);
void slim_config_release(slim_config_t *config);

/* ucs_config_sscanf_string(), for a checked string that passed its check. */
int slim_config_store_string(const char *buf, void *dest);

/* Custom value types (configuration.cpp). A read() that refuses a value
 * keeps the full message ("VAR='value': accepted values are ...") for the
 * core's report of every bad variable. */
int slim_config_read_checked(const char *buf, void *dest, const void *arg);
int slim_config_read_policy(const char *buf, void *dest, const void *arg);
int slim_config_write_policy(char *buf, size_t max, const void *src, const void *arg);
ucs_status_t slim_config_clone_policy(const void *src, void *dest, const void *arg);
void slim_config_release_policy(void *ptr, const void *arg);
void slim_config_help_checked(char *buf, size_t max, const void *arg);

/* What a checked string accepts. */
typedef enum {
    SLIM_CHECK_INNER,
    SLIM_CHECK_REPORT,
    SLIM_CHECK_LINK_EXEC,
    SLIM_CHECK_POLICY,
    SLIM_CHECK_SERVICE,
    SLIM_CHECK_CPU_POLICY,
    SLIM_CHECK_MAX_SLOWDOWN,
    SLIM_CHECK_LINK_PROFILE
} slim_config_check_t;

#ifdef __cplusplus
}
#endif

#endif

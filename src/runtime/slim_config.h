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
 * uses the same checks and messages as before (src/base/parse.h).
 */
#ifndef SLIM_RUNTIME_SLIM_CONFIG_H
#define SLIM_RUNTIME_SLIM_CONFIG_H

#include <ucs/config/parser.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLIM_CONFIG_ENV_PREFIX   "UCX_"
#define SLIM_CONFIG_TABLE_PREFIX "SLIM_"

typedef struct slim_config {
    char     *inner;        /* UCX_SLIM_INNER: checked transport name */
    char     *report;       /* UCX_SLIM_REPORT: none, stdout or PATH.json */
    double    report_wait;  /* UCX_SLIM_REPORT_WAIT: seconds (UCX time) */
    unsigned  log_level;    /* UCX_SLIM_LOG_LEVEL: slim_config_log_levels */
    unsigned  link;         /* UCX_SLIM_LINK: slim_config_links */
    char     *link_exec;    /* UCX_SLIM_LINK_EXEC: checked command template */
    int       inject_delay; /* UCX_SLIM_INJECT_DELAY: UCX bool */
    void     *policy;       /* UCX_SLIM_POLICY: a parsed policy (slim_config_parsers.cpp) */
    unsigned  packing;      /* UCX_SLIM_PACKING: slim_config_packing_modes */
    unsigned  predictor;    /* UCX_SLIM_PREDICTOR: slim_config_predictors */
    char     *trace;        /* UCX_SLIM_TRACE: directory, "" for none */
} slim_config_t;

/* Enum names, in the order of the C++ enums they stand for (checked by the
 * unit tests against to_string()). */
extern const char *slim_config_log_levels[];
extern const char *slim_config_links[];
extern const char *slim_config_packing_modes[];
extern const char *slim_config_predictors[];

extern ucs_config_field_t slim_config_table[];

/* Custom value types (slim_config_parsers.cpp). A read() that refuses a
 * value keeps the full message ("VAR='value': accepted values are ...") for
 * slim_config_last_error(). */
int  slim_config_read_checked(const char *buf, void *dest, const void *arg);
int  slim_config_read_policy(const char *buf, void *dest, const void *arg);
int  slim_config_write_policy(char *buf, size_t max, const void *src, const void *arg);
ucs_status_t slim_config_clone_policy(const void *src, void *dest, const void *arg);
void slim_config_release_policy(void *ptr, const void *arg);
void slim_config_help_checked(char *buf, size_t max, const void *arg);

/* What a checked string accepts: its variable and its check. */
typedef enum {
    SLIM_CHECK_INNER,
    SLIM_CHECK_REPORT,
    SLIM_CHECK_LINK_EXEC,
    SLIM_CHECK_POLICY
} slim_config_check_t;

extern const slim_config_check_t slim_config_check_inner;
extern const slim_config_check_t slim_config_check_report;
extern const slim_config_check_t slim_config_check_link_exec;
extern const slim_config_check_t slim_config_check_policy;

#define SLIM_CONFIG_TYPE_CHECKED(_check) \
    {slim_config_read_checked, ucs_config_sprintf_string, \
     ucs_config_clone_string,  ucs_config_release_string, \
     slim_config_help_checked, &(_check)}

#define SLIM_CONFIG_TYPE_POLICY \
    {slim_config_read_policy,  slim_config_write_policy, \
     slim_config_clone_policy, slim_config_release_policy, \
     slim_config_help_checked, &slim_config_check_policy}

#ifdef __cplusplus
}
#endif

#endif

/* SPDX-License-Identifier: BSD-3-Clause */
/* The UCX_SLIM_* table (slim_config.h): defaults and doc strings as
 * `ucx_info -c -f` shows them. README.md's configuration table and
 * slimlink(7) say the same; tests/man/man-pages.test checks the defaults. */
#include "slim_config.h"

#include <stddef.h>

const char *slim_config_log_levels[]    = {"off", "error", "warn", "info", "debug", "trace", NULL};
const char *slim_config_links[]         = {"emulated", "ibmad", "exec", NULL};
const char *slim_config_packing_modes[] = {"auto", "on", "off", NULL};
const char *slim_config_predictors[]    = {"adaptive", "spps", "pps", "timeout", "off", NULL};

const slim_config_check_t slim_config_check_inner     = SLIM_CHECK_INNER;
const slim_config_check_t slim_config_check_report    = SLIM_CHECK_REPORT;
const slim_config_check_t slim_config_check_link_exec = SLIM_CHECK_LINK_EXEC;
const slim_config_check_t slim_config_check_policy    = SLIM_CHECK_POLICY;

ucs_config_field_t slim_config_table[] = {
    {"INNER", "tcp",
     "Inner UCT transport that slim wraps and forwards every operation to\n"
     "(tcp, rc_verbs, rc_mlx5, ud_verbs, ud_mlx5, dc_mlx5, ...).",
     offsetof(slim_config_t, inner), SLIM_CONFIG_TYPE_CHECKED(slim_config_check_inner)},

    {"REPORT", "none",
     "slimlink report written at exit: none, stdout (each node's local rank\n"
     "0 prints its own block and a table of the node's ranks), or a path\n"
     "ending in .json (JSON Lines: one object per rank and one per node).",
     offsetof(slim_config_t, report), SLIM_CONFIG_TYPE_CHECKED(slim_config_check_report)},

    {"REPORT_WAIT", "10s",
     "How long the node leader (local rank 0) waits at exit for the other\n"
     "local ranks' numbers before writing the node report without them\n"
     "(0s..600s); ranks still missing are listed as such.",
     offsetof(slim_config_t, report_wait), UCS_CONFIG_TYPE_TIME},

    {"LOG_LEVEL", "warn",
     "slimlink's own log level: off, error, warn, info, debug, trace.",
     offsetof(slim_config_t, log_level), UCS_CONFIG_TYPE_ENUM(slim_config_log_levels)},

    {"LINK", "emulated",
     "Link-width backend: emulated (a modelled InfiniBand port with energy\n"
     "accounting), ibmad (PortInfo LinkWidthEnabled through libibmad; needs\n"
     "umad permission), or exec (runs UCX_SLIM_LINK_EXEC per width change).",
     offsetof(slim_config_t, link), UCS_CONFIG_TYPE_ENUM(slim_config_links)},

    {"LINK_EXEC", "",
     "Site command for UCX_SLIM_LINK=exec, e.g. \"/path/cmd {device} {port}\n"
     "{width}\"; must contain {width}. Failure or a 2 s timeout restores\n"
     "full width.",
     offsetof(slim_config_t, link_exec), SLIM_CONFIG_TYPE_CHECKED(slim_config_check_link_exec)},

    {"INJECT_DELAY", "n",
     "With the emulated link, really wait out late wake-ups (y|n), so a live\n"
     "run's time shows the cost of a wrong prediction.",
     offsetof(slim_config_t, inject_delay), UCS_CONFIG_TYPE_BOOL},

    {"POLICY", "",
     "Lossy packing of buffers marked with slim_mark(): rules LABEL=off,\n"
     "LABEL=keep:N[:truncate|round] (N 2..7), LABEL=rel:EPS[:truncate|round],\n"
     "separated by ';' (\"*\" matches other labels), or @FILE with one rule per\n"
     "line. Empty: nothing is packed.",
     offsetof(slim_config_t, policy), SLIM_CONFIG_TYPE_POLICY},

    {"PACKING", "auto",
     "Lossy packing of marked buffers (auto|on|off). on: pack, and steer UCP\n"
     "(no put/get zcopy) so that marked data of every size is seen; auto: the\n"
     "same when UCX_SLIM_POLICY packs some label, else pack only what UCP\n"
     "shows; off: never pack.",
     offsetof(slim_config_t, packing), UCS_CONFIG_TYPE_ENUM(slim_config_packing_modes)},

    {"PREDICTOR", "adaptive",
     "What drives the link width from live traffic: adaptive (timeouts, PPS\n"
     "and context predictors replayed in shadow, the best at <= 1 %\n"
     "modelled penalty followed), spps (self-tuned pattern predictor), pps\n"
     "(fixed grouping threshold), timeout (low after 100 us idle) or off\n"
     "(always full width; energy accounting only).",
     offsetof(slim_config_t, predictor), UCS_CONFIG_TYPE_ENUM(slim_config_predictors)},

    {"TRACE", "",
     "Directory where each rank writes its event trace (rank<N>.trace, the\n"
     "format slim-replay reads). Empty: no trace.",
     offsetof(slim_config_t, trace), UCS_CONFIG_TYPE_STRING},

    {NULL}
};

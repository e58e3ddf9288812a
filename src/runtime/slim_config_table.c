/* SPDX-License-Identifier: BSD-3-Clause */
/* The UCX_SLIM_* table (slim_config.h): defaults and doc strings as
 * `ucx_info -c -f` shows them. slimlink(7) says the same;
 * tests/man/man-pages.test checks the defaults. */
#include "slim_config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

/* ---- UCX's value parsers, from the libucs.so.0 the process loaded ------ */

typedef int (*slim_read_fn)(const char *buf, void *dest, const void *arg);
typedef int (*slim_write_fn)(char *buf, size_t max, const void *src, const void *arg);
typedef ucs_status_t (*slim_clone_fn)(const void *src, void *dest, const void *arg);
typedef void (*slim_release_fn)(void *ptr, const void *arg);
typedef void (*slim_help_fn)(char *buf, size_t max, const void *arg);

static struct {
    slim_read_fn sscanf_string, sscanf_time, sscanf_enum, sscanf_bool, sscanf_uint, sscanf_memunits;
    slim_write_fn sprintf_string, sprintf_time, sprintf_enum, sprintf_bool, sprintf_uint,
            sprintf_memunits;
    slim_clone_fn clone_string, clone_double, clone_uint, clone_int, clone_ulong;
    slim_release_fn release_string, release_nop;
    slim_help_fn help_generic, help_enum;
    ucs_status_t (*fill_opts)(void *opts, ucs_config_field_t *fields, const char *env_prefix,
                              const char *table_prefix, int ignore_errors);
    void (*release_opts)(void *opts, ucs_config_field_t *fields);
    int loaded;
} slim_ucs;

static pthread_once_t slim_ucs_once = PTHREAD_ONCE_INIT;

/* RTLD_NOLOAD first: the libucs already resident, however it was loaded
 * (at start-up, or by a dlopen with RTLD_LOCAL as Open MPI loads its
 * components), never a second one. Only a process that calls slimlink
 * before loading UCX at all (slim_mark() before MPI_Init() under an MPI that
 * loads UCX late) gets the one the dynamic linker's search finds. */
static void slim_ucs_resolve(void)
{
    void *ucs = dlopen("libucs.so.0", RTLD_LAZY | RTLD_NOLOAD);
    int all   = 1;

    if (ucs == NULL) {
        ucs = dlopen("libucs.so.0", RTLD_LAZY | RTLD_LOCAL);
    }
    if (ucs == NULL) {
        return;
    }
#define SLIM_UCS_SYM(_field, _name) \
    do { \
        *(void **)&slim_ucs._field = dlsym(ucs, _name); \
        all                        = all && (slim_ucs._field != NULL); \
    } while (0)
    SLIM_UCS_SYM(sscanf_string, "ucs_config_sscanf_string");
    SLIM_UCS_SYM(sscanf_time, "ucs_config_sscanf_time");
    SLIM_UCS_SYM(sscanf_enum, "ucs_config_sscanf_enum");
    SLIM_UCS_SYM(sscanf_bool, "ucs_config_sscanf_bool");
    SLIM_UCS_SYM(sscanf_uint, "ucs_config_sscanf_uint");
    SLIM_UCS_SYM(sscanf_memunits, "ucs_config_sscanf_memunits");
    SLIM_UCS_SYM(sprintf_string, "ucs_config_sprintf_string");
    SLIM_UCS_SYM(sprintf_time, "ucs_config_sprintf_time");
    SLIM_UCS_SYM(sprintf_enum, "ucs_config_sprintf_enum");
    SLIM_UCS_SYM(sprintf_bool, "ucs_config_sprintf_bool");
    SLIM_UCS_SYM(sprintf_uint, "ucs_config_sprintf_uint");
    SLIM_UCS_SYM(sprintf_memunits, "ucs_config_sprintf_memunits");
    SLIM_UCS_SYM(clone_string, "ucs_config_clone_string");
    SLIM_UCS_SYM(clone_double, "ucs_config_clone_double");
    SLIM_UCS_SYM(clone_uint, "ucs_config_clone_uint");
    SLIM_UCS_SYM(clone_int, "ucs_config_clone_int");
    SLIM_UCS_SYM(clone_ulong, "ucs_config_clone_ulong");
    SLIM_UCS_SYM(release_string, "ucs_config_release_string");
    SLIM_UCS_SYM(release_nop, "ucs_config_release_nop");
    SLIM_UCS_SYM(help_generic, "ucs_config_help_generic");
    SLIM_UCS_SYM(help_enum, "ucs_config_help_enum");
    SLIM_UCS_SYM(fill_opts, "ucs_config_parser_fill_opts");
    SLIM_UCS_SYM(release_opts, "ucs_config_parser_release_opts");
#undef SLIM_UCS_SYM
    /* The handle stays open: libucs outlives every use of these. */
    slim_ucs.loaded = all;
}

int slim_config_ucs_loaded(void)
{
    pthread_once(&slim_ucs_once, slim_ucs_resolve);
    return slim_ucs.loaded;
}

/* The table's parsers call these; UCX itself calls them only while its
 * libucs is loaded, so slim_ucs is complete then. */
#define SLIM_UCS_FORWARD(_ret, _name, _field, _params, _args) \
    static _ret _name _params \
    { \
        slim_config_ucs_loaded(); \
        return slim_ucs._field _args; \
    }

SLIM_UCS_FORWARD(int, slim_sscanf_string, sscanf_string, (const char *b, void *d, const void *a),
                 (b, d, a))
SLIM_UCS_FORWARD(int, slim_sscanf_time, sscanf_time, (const char *b, void *d, const void *a),
                 (b, d, a))
SLIM_UCS_FORWARD(int, slim_sscanf_enum, sscanf_enum, (const char *b, void *d, const void *a),
                 (b, d, a))
SLIM_UCS_FORWARD(int, slim_sscanf_bool, sscanf_bool, (const char *b, void *d, const void *a),
                 (b, d, a))
SLIM_UCS_FORWARD(int, slim_sscanf_uint, sscanf_uint, (const char *b, void *d, const void *a),
                 (b, d, a))
SLIM_UCS_FORWARD(int, slim_sscanf_memunits, sscanf_memunits,
                 (const char *b, void *d, const void *a), (b, d, a))
SLIM_UCS_FORWARD(int, slim_sprintf_uint, sprintf_uint,
                 (char *b, size_t m, const void *s, const void *a), (b, m, s, a))
SLIM_UCS_FORWARD(int, slim_sprintf_memunits, sprintf_memunits,
                 (char *b, size_t m, const void *s, const void *a), (b, m, s, a))
SLIM_UCS_FORWARD(int, slim_sprintf_string, sprintf_string,
                 (char *b, size_t m, const void *s, const void *a), (b, m, s, a))
SLIM_UCS_FORWARD(int, slim_sprintf_time, sprintf_time,
                 (char *b, size_t m, const void *s, const void *a), (b, m, s, a))
SLIM_UCS_FORWARD(int, slim_sprintf_enum, sprintf_enum,
                 (char *b, size_t m, const void *s, const void *a), (b, m, s, a))
SLIM_UCS_FORWARD(int, slim_sprintf_bool, sprintf_bool,
                 (char *b, size_t m, const void *s, const void *a), (b, m, s, a))
SLIM_UCS_FORWARD(ucs_status_t, slim_clone_string, clone_string,
                 (const void *s, void *d, const void *a), (s, d, a))
SLIM_UCS_FORWARD(ucs_status_t, slim_clone_double, clone_double,
                 (const void *s, void *d, const void *a), (s, d, a))
SLIM_UCS_FORWARD(ucs_status_t, slim_clone_uint, clone_uint, (const void *s, void *d, const void *a),
                 (s, d, a))
SLIM_UCS_FORWARD(ucs_status_t, slim_clone_int, clone_int, (const void *s, void *d, const void *a),
                 (s, d, a))
SLIM_UCS_FORWARD(ucs_status_t, slim_clone_ulong, clone_ulong,
                 (const void *s, void *d, const void *a), (s, d, a))

static void slim_release_string(void *p, const void *a)
{
    slim_config_ucs_loaded();
    slim_ucs.release_string(p, a);
}

static void slim_release_nop(void *p, const void *a)
{
    (void)p;
    (void)a;
}

static void slim_help_generic(char *b, size_t m, const void *a)
{
    slim_config_ucs_loaded();
    slim_ucs.help_generic(b, m, a);
}

static void slim_help_enum(char *b, size_t m, const void *a)
{
    slim_config_ucs_loaded();
    slim_ucs.help_enum(b, m, a);
}

int slim_config_store_string(const char *buf, void *dest)
{
    return slim_sscanf_string(buf, dest, NULL);
}

ucs_status_t slim_config_fill(slim_config_t *config)
{
    if (!slim_config_ucs_loaded()) {
        return UCS_ERR_UNSUPPORTED;
    }
    return slim_ucs.fill_opts(config, slim_config_table, SLIM_CONFIG_ENV_PREFIX,
                              SLIM_CONFIG_TABLE_PREFIX, 0);
}

void slim_config_release(slim_config_t *config)
{
    if (slim_config_ucs_loaded()) {
        slim_ucs.release_opts(config, slim_config_table);
    }
}

/* Kept as written: UCX's configuration types and the table, laid out by
 * hand (one row per variable) as UCX lays out its own. */
/* clang-format off */
/* UCX's types (UCS_CONFIG_TYPE_STRING, _TIME, _ENUM, _BOOL, _UINT,
 * _MEMUNITS in ucs/config/parser.h), through the forwarders above. */
#define SLIM_TYPE_STRING  {slim_sscanf_string, slim_sprintf_string, slim_clone_string, \
                           slim_release_string, slim_help_generic, "string"}
#define SLIM_TYPE_TIME    {slim_sscanf_time, slim_sprintf_time, slim_clone_double, \
                           slim_release_nop, slim_help_generic, \
                           "time value: <number>[s|us|ms|ns]"}
#define SLIM_TYPE_ENUM(t) {slim_sscanf_enum, slim_sprintf_enum, slim_clone_uint, \
                           slim_release_nop, slim_help_enum, t}
#define SLIM_TYPE_BOOL    {slim_sscanf_bool, slim_sprintf_bool, slim_clone_int, \
                           slim_release_nop, slim_help_generic, "<y|n>"}
#define SLIM_TYPE_UINT    {slim_sscanf_uint, slim_sprintf_uint, slim_clone_uint, \
                           slim_release_nop, slim_help_generic, "unsigned integer"}
#define SLIM_TYPE_MEMUNITS {slim_sscanf_memunits, slim_sprintf_memunits, \
                            slim_clone_ulong, slim_release_nop, slim_help_generic, \
                            "memory units: <number>[b|kb|mb|gb]"}
/* Ours: a string UCX's parser cannot check, and the parsed policy. */
#define SLIM_TYPE_CHECKED(_check) \
    {slim_config_read_checked, slim_sprintf_string, slim_clone_string, \
     slim_release_string, slim_config_help_checked, &(_check)}
#define SLIM_TYPE_POLICY \
    {slim_config_read_policy, slim_config_write_policy, slim_config_clone_policy, \
     slim_config_release_policy, slim_config_help_checked, &slim_config_check_policy}

const char *slim_config_log_levels[]    = {"off", "error", "warn", "info", "debug", "trace", NULL};
const char *slim_config_links[]         = {"emulated", "ibmad", "exec", NULL};
const char *slim_config_packing_modes[] = {"auto", "on", "off", NULL};
const char *slim_config_predictors[]    = {"adaptive", "spps", "pps", "timeout", "off", NULL};
const char *slim_config_cpu_modes[]     = {"off", "on", NULL};
const char *slim_config_wait_modes[]    = {"spin", "yield", NULL};

static const slim_config_check_t slim_config_check_inner     = SLIM_CHECK_INNER;
static const slim_config_check_t slim_config_check_report    = SLIM_CHECK_REPORT;
static const slim_config_check_t slim_config_check_link_exec = SLIM_CHECK_LINK_EXEC;
static const slim_config_check_t slim_config_check_policy    = SLIM_CHECK_POLICY;
static const slim_config_check_t slim_config_check_service   = SLIM_CHECK_SERVICE;
static const slim_config_check_t slim_config_check_cpu_policy = SLIM_CHECK_CPU_POLICY;
static const slim_config_check_t slim_config_check_max_slowdown = SLIM_CHECK_MAX_SLOWDOWN;
static const slim_config_check_t slim_config_check_link_profile = SLIM_CHECK_LINK_PROFILE;

ucs_config_field_t slim_config_table[] = {
    {"INNER", "tcp",
     "Inner UCT transport that slim wraps and forwards every operation to\n"
     "(tcp, rc_verbs, rc_mlx5, ud_verbs, ud_mlx5, dc_mlx5, ...).",
     offsetof(slim_config_t, inner), SLIM_TYPE_CHECKED(slim_config_check_inner)},

    {"REPORT", "none",
     "slimlink report written at exit: none, stdout (with a node service,\n"
     "one rank per node prints its own block and a table of the node's ranks\n"
     "and port), or a path ending in .json (JSON Lines: one object per rank,\n"
     "and one per node with a node service).",
     offsetof(slim_config_t, report), SLIM_TYPE_CHECKED(slim_config_check_report)},

    {"REPORT_WAIT", "10s",
     "How long the node service waits, after the first rank of a job handed\n"
     "its numbers over at exit, for the job's other local ranks before the\n"
     "node report is written without them (0s..600s); ranks still missing\n"
     "are listed as such.",
     offsetof(slim_config_t, report_wait), SLIM_TYPE_TIME},

    {"LOG_LEVEL", "warn",
     "slimlink's own log level: off, error, warn, info, debug, trace.",
     offsetof(slim_config_t, log_level), SLIM_TYPE_ENUM(slim_config_log_levels)},

    {"LINK", "emulated",
     "Link-width backend: emulated (a modelled InfiniBand port with energy\n"
     "accounting), ibmad (PortInfo LinkWidthEnabled through libibmad; needs\n"
     "umad permission), or exec (runs UCX_SLIM_LINK_EXEC per width change).",
     offsetof(slim_config_t, link), SLIM_TYPE_ENUM(slim_config_links)},

    {"LINK_EXEC", "",
     "Site command for UCX_SLIM_LINK=exec, e.g. \"/path/cmd {device} {port}\n"
     "{width}\"; must contain {width}. Failure or a 2 s timeout restores\n"
     "full width.",
     offsetof(slim_config_t, link_exec), SLIM_TYPE_CHECKED(slim_config_check_link_exec)},

    {"INJECT_DELAY", "n",
     "With the emulated link, really wait out late wake-ups (y|n), so a live\n"
     "run's time shows the cost of a wrong prediction.",
     offsetof(slim_config_t, inject_delay), SLIM_TYPE_BOOL},

    {"FORWARD_ONLY", "n",
     "Forward every operation to the inner transport and do nothing else\n"
     "(y|n): no recording, packing, link control or report. For measuring\n"
     "what slim's own forwarding costs (benchmarks/drivers/compare-slim's fwd arm).",
     offsetof(slim_config_t, forward_only), SLIM_TYPE_BOOL},

    {"POLICY", "",
     "Lossy packing of buffers marked with slim_mark(): rules LABEL=off,\n"
     "LABEL=keep:N[:truncate|round] (N 2..7), LABEL=rel:EPS[:truncate|round],\n"
     "separated by ';' (\"*\" matches other labels), or @FILE with one rule per\n"
     "line. Empty: nothing is packed.",
     offsetof(slim_config_t, policy), SLIM_TYPE_POLICY},

    {"PACKING", "auto",
     "Lossy packing of marked buffers (auto|on|off). on: pack, and steer UCP\n"
     "(no get zcopy, puts of at most UCX_SLIM_BOUNCE_SIZE) so that marked data\n"
     "of every size is seen; auto: the same when UCX_SLIM_POLICY packs some\n"
     "label, else pack only what UCP shows; off: never pack.",
     offsetof(slim_config_t, packing), SLIM_TYPE_ENUM(slim_config_packing_modes)},

    {"BOUNCE_SIZE", "512k",
     "Size of one bounce buffer for packed puts (64k..64m). Marked puts are\n"
     "packed into one, so while packing steers slim limits a put to it:\n"
     "larger transfers go as several puts.",
     offsetof(slim_config_t, bounce_size), SLIM_TYPE_MEMUNITS},

    {"BOUNCE_COUNT", "128",
     "Most bounce buffers per interface (0..4096). When packing steers, the\n"
     "pool maps and registers UCX_SLIM_BOUNCE_GROW of them with the inner\n"
     "memory domain at open, and as many more each time it runs empty, up\n"
     "to this. A marked put that finds none free then goes unpacked\n"
     "(counted as missed), never waits. 0: puts are never packed.",
     offsetof(slim_config_t, bounce_count), SLIM_TYPE_UINT},

    {"BOUNCE_GROW", "8",
     "Bounce buffers mapped and registered at a time (1..4096): at interface\n"
     "open, then whenever the pool runs empty, until UCX_SLIM_BOUNCE_COUNT.\n"
     "Set it to UCX_SLIM_BOUNCE_COUNT to register the whole pool at open.",
     offsetof(slim_config_t, bounce_grow), SLIM_TYPE_UINT},

    {"PREDICTOR", "adaptive",
     "What drives the link width from live traffic: adaptive (timeouts, PPS\n"
     "and context predictors replayed in shadow, the best within\n"
     "UCX_SLIM_MAX_SLOWDOWN of modelled penalty followed), spps (self-tuned pattern predictor), pps\n"
     "(fixed grouping threshold), timeout (low after 100 us idle) or off\n"
     "(always full width; energy accounting only).",
     offsetof(slim_config_t, predictor), SLIM_TYPE_ENUM(slim_config_predictors)},

    {"TRACE", "",
     "Directory where each rank writes its event trace (rank<N>.trace, the\n"
     "format slim-replay reads). Empty: no trace.",
     offsetof(slim_config_t, trace), SLIM_TYPE_STRING},

    {"SERVICE", "auto",
     "Who drives the node's port: auto (the node service slimlinkd: the\n"
     "system instance if one listens, else the user's, which slimlink-run\n"
     "starts; without either, this process accounts an emulated link of its\n"
     "own), off (always that in-process emulated link), or the absolute path\n"
     "of a slimlinkd socket.",
     offsetof(slim_config_t, service), SLIM_TYPE_CHECKED(slim_config_check_service)},

    {"CPU", "off",
     "The CPU side (off|on): on, slim watches its progress rounds for waits\n"
     "(runs of rounds in which nothing of the rank arrives, completes or is\n"
     "sent), writes them to the trace as 'w' lines and counts them in the\n"
     "report. off: the progress rounds are the plain ones, at no cost.",
     offsetof(slim_config_t, cpu), SLIM_TYPE_ENUM(slim_config_cpu_modes)},

    {"WAIT", "spin",
     "What a rank does in a long wait (spin|yield). yield: after\n"
     "UCX_SLIM_WAIT_SPIN of waiting, progress blocks on the inner transport's\n"
     "event descriptor for at most UCX_SLIM_WAIT_MAX at a time and wakes on\n"
     "the first arrival, leaving the core free. Only when UCX_TLS allows no\n"
     "transport but slim and self; otherwise says so once and spins.",
     offsetof(slim_config_t, wait), SLIM_TYPE_ENUM(slim_config_wait_modes)},

    {"WAIT_SPIN", "50us",
     "With UCX_SLIM_WAIT=yield, how long a wait spins before it blocks\n"
     "(0s..1s).",
     offsetof(slim_config_t, wait_spin), SLIM_TYPE_TIME},

    {"WAIT_MAX", "1ms",
     "With UCX_SLIM_WAIT=yield, the longest one block lasts (1us..1s): all a\n"
     "wait that blocks wrongly can cost, should its wake-up not come.",
     offsetof(slim_config_t, wait_max), SLIM_TYPE_TIME},

    {"CPU_POLICY", "adaptive",
     "With UCX_SLIM_CPU=on, what plans each wait from its start and asks the\n"
     "node service for the rank's cores low, and back to full at the wait's\n"
     "end: any policy of slim-replay --cpu-policy but the oracle (adaptive,\n"
     "always-on, timeout:DURATION -- timeout:500us is the field's baseline --,\n"
     "pps, spps, context:DEPTH, runs:DEPTH).",
     offsetof(slim_config_t, cpu_policy), SLIM_TYPE_CHECKED(slim_config_check_cpu_policy)},

    {"MAX_SLOWDOWN", "1%",
     "The slowdown the adaptive policies may cost, as a modelled time penalty\n"
     "in % of the run (0% to 100%, e.g. 0.5% or 5%): the link's\n"
     "(UCX_SLIM_PREDICTOR=adaptive) and, with UCX_SLIM_CPU=on, the core's\n"
     "(UCX_SLIM_CPU_POLICY=adaptive) each follow the candidate that saves most\n"
     "within it.",
     offsetof(slim_config_t, max_slowdown), SLIM_TYPE_CHECKED(slim_config_check_max_slowdown)},

    {"LINK_PROFILE", "",
     "The emulated port this process models when no node service drives the\n"
     "port, and the one slimlink-run starts the user's service with: a preset\n"
     "(ib-qdr, ib-edr, ib-hdr, ib-ndr, eee-1000base-t, eee-10gbase-t,\n"
     "eee-10gbase-kr, eee-25gbase-t, eee-100g-deep, eee-100g-fast), KEY=VALUE\n"
     "items (L=4,P=0.5,low=1,tau=10us,lowP=0.43), or a preset and items that\n"
     "change it (eee-10gbase-t,lowP=0.2). Empty: the thesis's 4X port. A\n"
     "service's own profile wins; see slim-replay(1), LINK PROFILES.",
     offsetof(slim_config_t, link_profile), SLIM_TYPE_CHECKED(slim_config_check_link_profile)},

    {NULL}
};
/* clang-format on */

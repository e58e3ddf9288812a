/*
 * slimlink public C API.
 *
 * Applications do not need this header to benefit from slimlink: the `slim`
 * UCX transport observes all traffic on its own. The header lets programs and
 * tests read slimlink's own measurements, and (in later releases) mark
 * buffers for lossy packing.
 *
 * Every function returns a status code and never aborts the process.
 */
#ifndef SLIMLINK_H
#define SLIMLINK_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLIMLINK_VERSION_MAJOR 0
#define SLIMLINK_VERSION_MINOR 1

typedef enum slim_status {
    SLIM_OK            =  0,
    SLIM_ERR_INVALID   = -1, /* a NULL pointer or an out-of-range argument */
    SLIM_ERR_CONFIG    = -2, /* the UCX_SLIM_* configuration was rejected */
    SLIM_ERR_NO_MEMORY = -3,
    SLIM_ERR_INTERNAL  = -4
} slim_status_t;

/* Kinds of UCT data operation that `slim` observes. */
typedef enum slim_op {
    SLIM_OP_AM_SHORT = 0,
    SLIM_OP_AM_BCOPY,
    SLIM_OP_AM_ZCOPY,
    SLIM_OP_AM_ANY,  /* a received active message: the receiver cannot tell
                        which send kind the peer used */
    SLIM_OP_PUT,
    SLIM_OP_GET,
    SLIM_OP_ATOMIC,
    SLIM_OP_COUNT
} slim_op_t;

/* Direction of the payload relative to this process. Sends of AMs, puts and
 * atomics are SLIM_DIR_SEND; received AMs and the data a get brings back are
 * SLIM_DIR_RECV. */
typedef enum slim_dir {
    SLIM_DIR_SEND = 0,
    SLIM_DIR_RECV,
    SLIM_DIR_COUNT
} slim_dir_t;

typedef struct slim_counter {
    uint64_t count; /* operations */
    uint64_t bytes; /* payload bytes (AM header included for am_short) */
} slim_counter_t;

typedef struct slim_traffic {
    slim_counter_t op[SLIM_OP_COUNT][SLIM_DIR_COUNT];
} slim_traffic_t;

/* Snapshot of this process's traffic counters, as seen by the `slim`
 * transport. All zero when `slim` carried nothing. */
slim_status_t slim_traffic_get(slim_traffic_t *out);

/* Short name of an operation kind ("am_short", ...), or NULL when out of range. */
const char *slim_op_name(slim_op_t op);

/* Human-readable text of a status code. */
const char *slim_status_string(slim_status_t status);

/* Library version, "MAJOR.MINOR". */
const char *slim_version(void);

#ifdef __cplusplus
}
#endif

#endif /* SLIMLINK_H */

/*
 * The small C interface between the `slim` UCX module (ucx-module/) and the
 * core library. The module stays thin: it reports what it sees and asks the
 * core what to do; all policy lives behind this interface.
 *
 * None of these functions throws, aborts, or blocks on I/O in the data path.
 */
#ifndef SLIM_CORE_H
#define SLIM_CORE_H

#include "slimlink.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Creates the per-process Engine on first call (reads and validates
 * UCX_SLIM_*, sets up the logger, registers the exit report). Later calls
 * return the first call's result. On SLIM_ERR_CONFIG the reason has already
 * been logged once, naming the variable and its accepted values. */
slim_status_t slim_core_init(void);

/* Records one observed data operation. Lock-free (relaxed atomics); safe to
 * call before slim_core_init() (counts are kept from the start). */
void slim_core_record(slim_op_t op, slim_dir_t dir, size_t bytes);

/* Writes the exit report now if UCX_SLIM_REPORT asks for one and it has not
 * been written yet. Called by the module when the last interface closes and
 * again at process exit (the second call does nothing). */
void slim_core_report(void);

#ifdef __cplusplus
}
#endif

#endif /* SLIM_CORE_H */

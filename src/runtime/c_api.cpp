// The C boundary: slimlink.h (applications) and slim_core.h (UCX module).
// No exception crosses it; failures become status codes.
#include "engine.h"
#include "slim_core.h"
#include "slimlink.h"
#include "traffic_monitor.h"

#include <new>

#define SLIM_STR_(x) #x
#define SLIM_STR(x)  SLIM_STR_(x)

extern "C" {

slim_status_t slim_traffic_get(slim_traffic_t *out)
{
    if (out == nullptr) {
        return SLIM_ERR_INVALID;
    }
    *out = slim::process_traffic().snapshot();
    return SLIM_OK;
}

const char *slim_op_name(slim_op_t op)
{
    switch (op) {
    case SLIM_OP_AM_SHORT: return "am_short";
    case SLIM_OP_AM_BCOPY: return "am_bcopy";
    case SLIM_OP_AM_ZCOPY: return "am_zcopy";
    case SLIM_OP_AM_ANY:   return "am_any";
    case SLIM_OP_PUT:      return "put";
    case SLIM_OP_GET:      return "get";
    case SLIM_OP_ATOMIC:   return "atomic";
    case SLIM_OP_COUNT:    break;
    }
    return nullptr;
}

const char *slim_status_string(slim_status_t status)
{
    switch (status) {
    case SLIM_OK:            return "success";
    case SLIM_ERR_INVALID:   return "invalid argument";
    case SLIM_ERR_CONFIG:    return "invalid UCX_SLIM_* configuration";
    case SLIM_ERR_NO_MEMORY: return "out of memory";
    case SLIM_ERR_INTERNAL:  return "internal error";
    }
    return "unknown status";
}

const char *slim_version(void)
{
    return SLIM_STR(SLIMLINK_VERSION_MAJOR) "." SLIM_STR(SLIMLINK_VERSION_MINOR);
}

slim_status_t slim_core_init(void) { return slim::Engine::init(); }

void slim_core_record(slim_op_t op, slim_dir_t dir, size_t bytes)
{
    slim::process_traffic().record(op, dir, bytes);
}

void slim_core_report(void)
{
    slim::Engine *engine = slim::Engine::get();
    if (engine != nullptr) {
        engine->report();
    }
}

} // extern "C"

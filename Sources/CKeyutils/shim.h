#include <keyutils.h>
#include <sys/prctl.h>
#include <sys/resource.h>

/* prctl is variadic and so not callable from Swift. */
static inline int tv_set_not_dumpable(void) {
    return prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

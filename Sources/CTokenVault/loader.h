/* One dlopen loader for the libraries tokenvault opens on first use
 * (libsecret, libcurl): a `get` of a valid token from the file vault never
 * maps them. Internal to this target. */
#ifndef TV_LOADER_H
#define TV_LOADER_H
#include <pthread.h>
#include <stddef.h>

typedef struct {
    pthread_mutex_t lock;
    int state;              /* 0: not tried, 1: loaded, -1: cannot be loaded */
    char error[256];        /* why not, for the message */
} tv_dl_library;

#define TV_DL_LIBRARY_INIT { PTHREAD_MUTEX_INITIALIZER, 0, "" }

/* Opens `soname` once and resolves every name into its slot; 1 when all were
   found (then and on every later call), 0 otherwise (lib->error says why). */
int tv_dl_load(tv_dl_library *lib, const char *soname, const char *const *names, void **const *slots, size_t count);

#endif

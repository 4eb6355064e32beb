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

/* Declares, for a list macro FUNCS(X) of the functions a glue file calls:
   the struct TYPE of pointers to them (each typed as the header declares it),
   its one instance `api`, the `library` it comes from, and
   `static const TYPE *LOAD(void)`, which opens SONAME once and returns the
   API, or NULL when it cannot be loaded (library.error says why). */
#define TV_DL_FIELD(name) __typeof__(&name) name;
#define TV_DL_NAME(name) #name,
#define TV_DL_SLOT(name) (void **)&api.name,
#define TV_DL_TYPE(TYPE, FUNCS) typedef struct { FUNCS(TV_DL_FIELD) } TYPE;
/* The same without the typedef, for a TYPE a shared header declares. */
#define TV_DL_LOADER(TYPE, FUNCS, SONAME, LOAD)                                                \
    static TYPE api;                                                                          \
    static tv_dl_library library = TV_DL_LIBRARY_INIT;                                        \
    static const TYPE *LOAD(void) {                                                           \
        static const char *const names[] = { FUNCS(TV_DL_NAME) };                             \
        static void **const slots[] = { FUNCS(TV_DL_SLOT) };                                  \
        return tv_dl_load(&library, SONAME, names, slots, sizeof names / sizeof *names) ? &api : NULL; \
    }
#define TV_DL_API(TYPE, FUNCS, SONAME, LOAD) TV_DL_TYPE(TYPE, FUNCS) TV_DL_LOADER(TYPE, FUNCS, SONAME, LOAD)

#endif

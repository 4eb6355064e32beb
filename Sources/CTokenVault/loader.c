#include "loader.h"
#include <dlfcn.h>
#include <stdio.h>

int tv_dl_load(tv_dl_library *lib, const char *soname, const char *const *names, void **const *slots, size_t count) {
    pthread_mutex_lock(&lib->lock);
    if (lib->state == 0) {
        void *h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        int ok = h != NULL;
        if (!ok) snprintf(lib->error, sizeof lib->error, "%s", dlerror());
        for (size_t i = 0; ok && i < count; i++) {
            *slots[i] = dlsym(h, names[i]);
            if (*slots[i] == NULL) {
                snprintf(lib->error, sizeof lib->error, "%s has no %s", soname, names[i]);
                ok = 0;
            }
        }
        lib->state = ok ? 1 : -1;
    }
    int loaded = lib->state == 1;
    pthread_mutex_unlock(&lib->lock);
    return loaded;
}

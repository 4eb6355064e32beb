/* A thread that should run beside its creator starts on another CPU
   (docs/benchmarks.md, "Threads that start beside the main one"): left to
   itself, the kernel here often queues a new thread behind the one that
   created it, on the same CPU, until that one blocks. */
#define _GNU_SOURCE
#include "tv_thread.h"

#include <pthread.h>
#include <sched.h>

static cpu_set_t allowed;

int tv_thread_attr_elsewhere(void *attr) {
    cpu_set_t others;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) < 2) return 0;
    int here = sched_getcpu();
    if (here < 0) return 0;
    others = allowed;
    CPU_CLR(here, &others);
    return pthread_attr_setaffinity_np((pthread_attr_t *)attr, sizeof others, &others) == 0;
}

void tv_thread_anywhere(void) {
    if (CPU_COUNT(&allowed) > 0) sched_setaffinity(0, sizeof allowed, &allowed);
}

/* The running program's build (its ELF GNU build ID), for the agent's
   handshake: an agent of another build is not used. */
#ifndef TV_BUILD_H
#define TV_BUILD_H

#include <stddef.h>

/* Copies the main program's build ID into out (at most max bytes); returns its
   length, 0 when the program has none. */
size_t tv_build_id(unsigned char *out, size_t max);

#endif

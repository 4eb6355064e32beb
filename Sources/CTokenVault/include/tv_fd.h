/* Descriptors made close-on-exec in the same call (glibc's GNU extensions,
   which Swift's Glibc module does not declare). */
#ifndef TV_FD_H
#define TV_FD_H

/* accept4(listener, NULL, NULL, SOCK_CLOEXEC). */
int tv_accept_cloexec(int listener);
/* accept4(listener, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK): the
   connection non-blocking, the listener's own flags untouched (a listener
   systemd passed shares its flags with systemd). */
int tv_accept_nonblocking(int listener);
/* Clears O_NONBLOCK on fd; -1 on failure. */
int tv_set_blocking(int fd);
/* pipe2(ends, O_CLOEXEC); 0 on success. */
int tv_pipe_cloexec(int ends[2]);
/* mkostemp(template, O_CLOEXEC). */
int tv_mkstemp_cloexec(char *template_);
/* posix_spawn_file_actions_addclosefrom_np(actions, lowest) (glibc 2.34): the
   child closes every descriptor from `lowest` up, inherited ones included.
   `actions` is a posix_spawn_file_actions_t * (void here: spawn.h stays out of
   the header Swift reads, so its types keep coming from Glibc). */
int tv_spawn_close_from(void *actions, int lowest);
/* posix_spawn_file_actions_addchdir_np(actions, path) (glibc 2.29): the
   child starts in `path`. */
int tv_spawn_chdir(void *actions, const char *path);

#endif

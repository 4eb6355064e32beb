/* Where a new thread starts (glibc's CPU affinity calls, which Swift's Glibc
   module does not declare). */
#ifndef TV_THREAD_H
#define TV_THREAD_H

/* Sets `attr` (a pthread_attr_t *) so that the thread starts on another CPU
   than the calling thread's, when this process may use more than one; 1 when
   it did. The thread then calls tv_thread_anywhere() first. */
int tv_thread_attr_elsewhere(void *attr);
/* Lets the calling thread run on every CPU the process may use again. */
void tv_thread_anywhere(void);

#endif

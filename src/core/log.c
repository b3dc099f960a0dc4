/* The library's messages (warnings, notes, reports) go through one callback, so a program that
 * embeds Kiln decides where they land; by default each is one line on stderr. */
#include <stdarg.h>
#include <stdio.h>
#include <pthread.h>
#include "core/core.h"

static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static kiln_log_fn log_fn;
static void *log_user;

void kiln_set_log_callback(kiln_log_fn fn, void *user) {
    pthread_mutex_lock(&log_lock);
    log_fn = fn;
    log_user = user;
    pthread_mutex_unlock(&log_lock);
}

void kiln_log_msg(kiln_log_level level, const char *fmt, ...) {
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&log_lock);   /* one message at a time, whole lines from any thread */
    if (log_fn) log_fn(level, msg, log_user);
    else fprintf(stderr, "%s\n", msg);
    pthread_mutex_unlock(&log_lock);
}

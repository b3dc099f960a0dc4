/* Session hooks for tests and for the device backends. */
#ifndef KILN_SESSION_INTERNAL_H
#define KILN_SESSION_INTERNAL_H
#include "kiln/graph.h"
#include "backend/backend.h"

/* Leave `bytes` guard bytes after every planned host output and fail a run whose kernel writes
 * into them. Takes effect for plans built afterwards. */
void kiln_session_set_guard(kiln_session *s, size_t bytes);

/* A session with an explicit device backend (tests use a fake device to exercise placement and
 * copies without a GPU); its optional services (capture, copies ahead, ...) come with it. */
kiln_session *kiln_session_new_with_device(kiln_graph *g, const kiln_session_opts *opts, const kiln_backend *dev);
/* The same with n device backends: devs[k] is /gpu:k (memory space k + 1). Borrows devs' objects. */
kiln_session *kiln_session_new_with_devices(kiln_graph *g, const kiln_session_opts *opts, const kiln_backend *const *devs, int n);
/* Where the session places n: 0 host, k + 1 GPU k, -1 on error. */
int kiln_session_node_space(kiln_session *s, const kiln_node *n);
#endif

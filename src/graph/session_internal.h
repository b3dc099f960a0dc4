/* Session hooks for tests. */
#ifndef KILN_SESSION_INTERNAL_H
#define KILN_SESSION_INTERNAL_H
#include "kiln/graph.h"
/* Leave `bytes` guard bytes after every planned output and fail a run whose kernel writes into
 * them. Takes effect for plans built afterwards. */
void kiln_session_set_guard(kiln_session *s, size_t bytes);
#endif

/* Guards for the files a run writes: an output must not be one of the run's inputs (the same
 * file under another name, a symlink or a hard link included), and two runs must not write the
 * same checkpoint or history at once. */
#ifndef KILN_IO_PATH_GUARD_H
#define KILN_IO_PATH_GUARD_H
#include <stdbool.h>
#include "kiln/status.h"

/* Whether a and b name the same file: equal (st_dev, st_ino) when both exist; when neither
 * exists, the same name in the same directory (compared by its (st_dev, st_ino)), so "./x" and
 * "x" match before either is written. A path that exists never matches one that does not. */
bool kiln_same_file(const char *a, const char *b);

/* An exclusive advisory lock (flock, non-blocking) on "<path>.lock", held until released, for
 * the writer of path: the lock file, not path itself, because an atomic save renames a new
 * inode over path. A second writer gets KILN_IO_ERROR naming path and the holder's pid. what
 * names path in messages ("checkpoint", "history"). *out is NULL (and KILN_OK) when there is
 * nothing to lock: path exists and is not a regular file (/dev/null, a FIFO), or the file
 * system has no locks. */
typedef struct kiln_path_lock kiln_path_lock;
kiln_status kiln_path_lock_take(const char *path, const char *what, kiln_path_lock **out);
/* Removes the lock file and drops the lock; NULL is a no-op. */
void kiln_path_lock_release(kiln_path_lock *l);
#endif

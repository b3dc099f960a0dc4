/* Atomic file replacement for checkpoints: the bytes go to a temp file in path's directory,
 * created exclusively (O_CREAT|O_EXCL|O_NOFOLLOW: a link planted at the temp name is never
 * followed), then fsync + rename over path + fsync of the directory. */
#ifndef KILN_IO_ATOMIC_FILE_H
#define KILN_IO_ATOMIC_FILE_H
#include <stdio.h>
#include "kiln/status.h"

typedef struct kiln_atomic_file {
    FILE *f;            /* write the content here */
    int dir_fd;         /* path's directory */
    char *dir, *base;   /* path split: directory (for messages) and file name */
    char tmp[320];      /* the temp file's name inside dir */
    const char *path;   /* borrowed, for messages */
} kiln_atomic_file;

/* Removes temp files of path left by runs that died (named <base>.tmp.<pid>[.<suffix>], pid no
 * longer alive, regular files only), then creates a new temp file. On error nothing is left. */
kiln_status kiln_atomic_open(const char *path, kiln_atomic_file *af);
/* fflush + fsync + close + rename over path + fsync of the directory. Always releases af; on
 * error the temp file is removed and path is untouched. */
kiln_status kiln_atomic_commit(kiln_atomic_file *af);
/* Closes and removes the temp file (after a write error). */
void kiln_atomic_abort(kiln_atomic_file *af);
/* Checks that path could be written now, before a long job: its directory exists and takes a new
 * file (probed by creating and removing a temp file) and path is not a directory. */
kiln_status kiln_atomic_check(const char *path);
#endif

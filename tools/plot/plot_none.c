/* kiln plot in a build without cairo: says how to get it. */
#include <stdio.h>
#include "tools/plot/history.h"

const char *plot_backend(void) { return NULL; }

int plot_render(const history *h, const plot_spec *s, const char *path, char *err, size_t err_n) {
    (void)h; (void)s;
    snprintf(err, err_n, "cannot draw %s: this kiln was built without cairo; install it (Debian: apt-get install "
             "libcairo2-dev) and run cmake again", path);
    return 1;
}

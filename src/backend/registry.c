/* Backend registry: the host backends, and the CUDA backend module opened at run time with
 * dlopen, so a CUDA build still runs where the CUDA libraries, driver or device are missing. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/sysinfo.h>
#include "kiln/dist.h"
#include "backend/registry.h"
#include "backend/cuda/cuda_module.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const kiln_cuda_module *cuda;
static char reason[2200];
static bool reason_printed;
static pthread_mutex_t print_lock = PTHREAD_MUTEX_INITIALIZER;

static const kiln_cuda_host host_api = { KILN_CUDA_MODULE_ABI, kiln_set_error, kiln_op_get, kiln_log_msg };

#ifndef KILN_CUDA_MODULE_BUILT
#define KILN_CUDA_MODULE_BUILT 0      /* set by CMake when this build made libkiln_cuda.so */
#endif

bool kiln_built_with_cuda(void) { return KILN_CUDA_MODULE_BUILT; }
#ifndef KILN_INSTALL_LIBDIR_REL
#define KILN_INSTALL_LIBDIR_REL "lib"  /* CMAKE_INSTALL_LIBDIR: the libdir below an install prefix */
#endif

/* Adds dir/libkiln_cuda.so to the candidates unless it is there already. */
static void add_cand(char cand[][1024], int *nc, int max, const char *dir) {
    if (*nc >= max) return;
    char p[1024];
    snprintf(p, sizeof p, "%s/libkiln_cuda.so", dir);
    for (int i = 0; i < *nc; i++)
        if (!strcmp(cand[i], p)) return;
    snprintf(cand[(*nc)++], sizeof cand[0], "%s", p);
}

/* Candidate module paths: $KILN_CUDA_MODULE; next to the executable (a build tree); the install
 * prefix's libdir relative to the executable (PREFIX/bin/prog -> PREFIX/<libdir>, lib, lib64), so
 * an installed kiln, or a program statically linked against an installed libkiln.a and installed
 * beside it, finds the module wherever the prefix was moved; next to libkiln.so; the libdir of the
 * prefix recorded at configure time; then the loader's search path (LD_LIBRARY_PATH, the program's
 * RUNPATH, ldconfig's cache), which is how a program built elsewhere against a custom prefix finds
 * it when linked with -Wl,-rpath,PREFIX/lib. */
static void *open_module(char *err, size_t n) {
    enum { MAXC = 10 };
    char cand[MAXC][1024];
    int nc = 0;
    const char *env = getenv("KILN_CUDA_MODULE");
    if (env && *env) snprintf(cand[nc++], sizeof cand[0], "%s", env);
    char exe[900];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = 0;
        char *dir = dirname(exe), up[960];
        add_cand(cand, &nc, MAXC, dir);
        const char *rel[] = { KILN_INSTALL_LIBDIR_REL, "lib", "lib64" };
        for (int i = 0; i < 3; i++) {
            snprintf(up, sizeof up, "%s/../%s", dir, rel[i]);
            add_cand(cand, &nc, MAXC, up);
        }
    }
    Dl_info info;
    if (dladdr((void *)open_module, &info) && info.dli_fname && info.dli_fname[0] == '/') {   /* libkiln.so's folder */
        char lib[900];
        snprintf(lib, sizeof lib, "%s", info.dli_fname);
        add_cand(cand, &nc, MAXC, dirname(lib));
    }
#ifdef KILN_INSTALL_LIBDIR
    add_cand(cand, &nc, MAXC, KILN_INSTALL_LIBDIR);
#endif
    int n_dirs = nc;                                /* the absolute candidates, for the message */
    snprintf(cand[nc++], sizeof cand[0], "libkiln_cuda.so");
    err[0] = 0;
    for (int i = 0; i < nc; i++) {
        if (cand[i][0] == '/' && access(cand[i], F_OK) != 0) continue;
        void *h = dlopen(cand[i], RTLD_NOW | RTLD_LOCAL);
        if (h) return h;
        if (cand[i][0] != '/') { snprintf(err, n, "%s", dlerror()); continue; }
        /* the module exists but its libraries do not load, e.g. "libcudnn.so.9: cannot open ..." */
        snprintf(err, n, "%s: %s", cand[i], dlerror());
        return NULL;
    }
    if (err[0] && !strstr(err, "libkiln_cuda.so: cannot open shared object file")) return NULL;
    if (!KILN_CUDA_MODULE_BUILT) {
        snprintf(err, n, "this Kiln was built without the CUDA backend (no libkiln_cuda.so)");
        return NULL;
    }
    /* the build made the module, but it is not where this program looks: say where that was */
    size_t used = (size_t)snprintf(err, n, "libkiln_cuda.so not found (looked in");
    for (int i = 0; i < n_dirs && used < n; i++) {
        char d[1024];
        snprintf(d, sizeof d, "%s", cand[i]);
        used += (size_t)snprintf(err + used, n - used, "%s %s", i ? "," : "", dirname(d));
    }
    if (used < n)
        snprintf(err + used, n - used, " and the loader's path; set KILN_CUDA_MODULE=/path/libkiln_cuda.so or link with -Wl,-rpath,PREFIX/lib)");
    return NULL;
}

static void load_cuda(void) {
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    if (vis && !*vis) { snprintf(reason, sizeof reason, "CUDA_VISIBLE_DEVICES is empty, which hides every GPU"); return; }
    char err[2048];
    void *h = open_module(err, sizeof err);
    if (!h) { snprintf(reason, sizeof reason, "CUDA backend not loaded: %s", err); return; }
    kiln_cuda_module_init_fn init = (kiln_cuda_module_init_fn)dlsym(h, KILN_CUDA_MODULE_SYMBOL);
    if (!init) { snprintf(reason, sizeof reason, "libkiln_cuda.so lacks %s", KILN_CUDA_MODULE_SYMBOL); return; }
    const kiln_cuda_module *m = init(&host_api, err, sizeof err);
    if (!m) { snprintf(reason, sizeof reason, "%s", err[0] ? err : "CUDA initialisation failed"); return; }
    if (m->abi != KILN_CUDA_MODULE_ABI) { snprintf(reason, sizeof reason, "libkiln_cuda.so ABI %d, expected %d (rebuild Kiln)", m->abi, KILN_CUDA_MODULE_ABI); return; }
    if (m->device_count() <= 0) { snprintf(reason, sizeof reason, "no CUDA device found"); return; }
    cuda = m;
    if (m->host_alloc && m->host_free) kiln_set_staging_allocator(m->host_alloc, m->host_free);
}

const kiln_cuda_module *kiln_cuda(void) {
    pthread_once(&once, load_cuda);
    return cuda;
}

bool kiln_gpu_available(void) { return kiln_cuda() != NULL; }

const char *kiln_gpu_unavailable_reason(void) {
    kiln_cuda();
    return cuda ? "" : reason;
}

void kiln_note_cpu_fallback(void) {
    if (kiln_cuda()) return;
    pthread_mutex_lock(&print_lock);
    if (!reason_printed) {
        reason_printed = true;
        /* under mpirun every rank would say it: rank 0 alone does */
        if (kiln_dist_launched_rank() > 0) { pthread_mutex_unlock(&print_lock); return; }
        /* Plainly by default: on a machine without a GPU "no GPU found" is the whole story, and the
         * CUDA detail ("driver version is insufficient", a module not found) reads like a fault.
         * The reason goes with it under KILN_VERBOSE=1, or when an NVIDIA driver is loaded (then a
         * GPU is probably there and the reason is what to fix); `kiln devices` always says it. */
        const char *v = getenv("KILN_VERBOSE");
        bool verbose = v && *v && strcmp(v, "0") != 0;
        if (verbose || access("/proc/driver/nvidia/version", F_OK) == 0)
            kiln_log_msg(KILN_LOG_WARNING, "kiln: no GPU used (%s); using the CPU", reason);
        else
            kiln_log_msg(KILN_LOG_WARNING, "kiln: no GPU found; using the CPU");
    }
    pthread_mutex_unlock(&print_lock);
}

static void cpu_info(kiln_device_info *d) {
    memset(d, 0, sizeof *d);
    d->kind = KILN_DEVICE_KIND_CPU;
    snprintf(d->name, sizeof d->name, "CPU");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10)) {
                char *c = strchr(line, ':');
                if (c) { c += 2; c[strcspn(c, "\n")] = 0; snprintf(d->name, sizeof d->name, "%s", c); }
                break;
            }
        fclose(f);
    }
    d->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    struct sysinfo si;
    if (sysinfo(&si) == 0) {
        d->total_memory = (size_t)si.totalram * si.mem_unit;
        d->free_memory = (size_t)(si.freeram + si.bufferram) * si.mem_unit;
    }
}

kiln_status kiln_device_list(kiln_device_info *out, int max, int *n) {
    if (!n) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_device_list: n is NULL");
    int count = 1 + (kiln_cuda() ? cuda->device_count() : 0);
    *n = count;
    if (!out) return KILN_OK;
    if (max > 0) cpu_info(&out[0]);
    for (int i = 1; i < count && i < max; i++) {
        memset(&out[i], 0, sizeof out[i]);
        kiln_status st = cuda->device_info(i - 1, &out[i]);
        if (st != KILN_OK) return st;
    }
    return KILN_OK;
}

static kiln_status need_gpu(int index, const char *what) {
    if (!kiln_cuda()) return kiln_set_error(KILN_NOT_FOUND, "%s: no GPU (%s)", what, reason);
    if (index < 0 || index >= cuda->device_count())
        return kiln_set_error(KILN_INVALID_ARGUMENT, "%s: GPU %d does not exist (%d visible)", what, index, cuda->device_count());
    return KILN_OK;
}

int kiln_cuda_device_count(void) { return kiln_cuda() ? cuda->device_count() : 0; }

const kiln_backend *kiln_cuda_backend(int index) {
    if (need_gpu(index, "kiln_cuda_backend") != KILN_OK) return NULL;
    const kiln_backend *b = cuda->backend(index);
    if (!b) kiln_set_error(KILN_INTERNAL, "kiln_cuda_backend: the CUDA module has no backend object for GPU %d", index);
    return b;
}

kiln_status kiln_device_memory_stats(int gpu, kiln_memory_stats *out) {
    if (!out) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_device_memory_stats: out is NULL");
    kiln_status st = need_gpu(gpu, "kiln_device_memory_stats");
    return st ? st : cuda->memory_stats(gpu, out);
}

kiln_status kiln_device_reset_peak(int gpu) {
    kiln_status st = need_gpu(gpu, "kiln_device_reset_peak");
    return st ? st : cuda->reset_peak(gpu);
}

kiln_status kiln_device_set_memory_options(int gpu, const kiln_memory_options *o) {
    if (!o) return kiln_set_error(KILN_INVALID_ARGUMENT, "kiln_device_set_memory_options: options are NULL");
    kiln_status st = need_gpu(gpu, "kiln_device_set_memory_options");
    return st ? st : cuda->set_memory_options(gpu, o);
}


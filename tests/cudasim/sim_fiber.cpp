/* Kernel execution: grid -> blocks (in order) -> threads on fibers. A thread runs on a fiber
 * until it returns or reaches __syncthreads(); the block's barrier opens when every thread of the
 * block has reached it. A thread that returned while others wait at a barrier is a deadlock on a
 * GPU (undefined behaviour): reported as cudaErrorLaunchFailure instead of hanging.
 * x86-64 switches context with a few instructions (no signal mask syscall); other targets use
 * ucontext. CUSIM_ORDER=reverse runs blocks and threads in reverse order, to expose code that
 * depends on the order (races). CUSIM_STATS=1 prints the grids run per kernel at exit. */
#include <sys/mman.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>
#include "sim_internal.h"
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

namespace cusim {
thread_local const thread_coords *cur;

namespace {
const size_t kStack = 256 << 10;   /* per fiber; a guard page below catches overflow */
const size_t kGuard = 4096;

struct fiber {
    char *mem;                      /* guard page + stack */
    thread_coords at;
    bool done, waiting;
#if defined(__x86_64__)
    void *sp;
#else
    ucontext_t uc;
#endif
};

/* Fibers whose stacks are free; released at thread exit (so leak checkers stay quiet). */
struct fiber_pool : std::vector<fiber *> {
    ~fiber_pool();
};
thread_local fiber_pool pool;
thread_local fiber *running;
thread_local const std::function<void()> *body;
#if defined(__x86_64__)
thread_local void *sched_sp;
#else
thread_local ucontext_t sched_uc;
#endif
}  // namespace
}  // namespace cusim

#if defined(__x86_64__)
/* cusim_switch(save, to): push the callee-saved registers, store rsp in *save, load to, pop. */
extern "C" void cusim_switch(void **save, void *to);
asm(R"(
.text
.p2align 4
.type cusim_switch,@function
cusim_switch:
    pushq %rbp
    pushq %rbx
    pushq %r12
    pushq %r13
    pushq %r14
    pushq %r15
    movq %rsp, (%rdi)
    movq %rsi, %rsp
    popq %r15
    popq %r14
    popq %r13
    popq %r12
    popq %rbx
    popq %rbp
    ret
.size cusim_switch,.-cusim_switch
)");
#endif

namespace cusim {
namespace {
[[noreturn]] void fiber_main() {
    for (;;) {                       /* a fiber's stack is reused: each lap runs one CUDA thread */
        (*body)();
        running->done = true;
#if defined(__x86_64__)
        cusim_switch(&running->sp, sched_sp);
#else
        swapcontext(&running->uc, &sched_uc);
#endif
    }
}

#if !defined(__x86_64__)
void fiber_entry_uc() { fiber_main(); }
#endif

/* A fresh context at the top of f's stack that enters fiber_main. */
void reset(fiber *f) {
    char *top = f->mem + kGuard + kStack;
#if defined(__x86_64__)
    void **sp = (void **)((uintptr_t)top & ~(uintptr_t)15);
    *--sp = nullptr;                           /* fake return address: keeps the ABI alignment */
    *--sp = (void *)&fiber_main;               /* where cusim_switch's ret goes */
    for (int i = 0; i < 6; i++) *--sp = nullptr;   /* rbp rbx r12-r15 */
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->mem + kGuard;
    f->uc.uc_stack.ss_size = kStack;
    f->uc.uc_link = nullptr;
    makecontext(&f->uc, fiber_entry_uc, 0);
#endif
}

fiber_pool::~fiber_pool() {
    for (fiber *f : *this) { munmap(f->mem, kGuard + kStack); delete f; }
}

fiber *acquire() {
    if (!pool.empty()) { fiber *f = pool.back(); pool.pop_back(); return f; }
    fiber *f = new fiber();
    void *m = mmap(nullptr, kGuard + kStack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) { perror("cusim: fiber stack"); abort(); }
    mprotect(m, kGuard, PROT_NONE);
    f->mem = (char *)m;
    reset(f);
    return f;
}

/* Runs f until it finishes or reaches a barrier. */
void resume(fiber *f) {
    running = f;
    cur = &f->at;
#if defined(__x86_64__)
    cusim_switch(&sched_sp, f->sp);
#else
    swapcontext(&sched_uc, &f->uc);
#endif
    running = nullptr;
    cur = nullptr;
}

bool reverse_order() {
    static int r = -1;
    if (r < 0) { const char *v = getenv("CUSIM_ORDER"); r = v && !strcmp(v, "reverse"); }
    return r == 1;
}

/* One block; false on a barrier deadlock. */
bool run_block(const char *name, uint3 bid, dim3 grid, dim3 block) {
    unsigned n = block.x * block.y * block.z;
    std::vector<fiber *> waiting;
    bool rev = reverse_order();
    for (unsigned k = 0; k < n; k++) {
        unsigned t = rev ? n - 1 - k : k;
        fiber *f = acquire();
        f->done = f->waiting = false;
        f->at.tid = uint3{ t % block.x, t / block.x % block.y, t / (block.x * block.y) };
        f->at.bid = bid;
        f->at.bdim = block;
        f->at.gdim = grid;
        resume(f);
        if (f->done) pool.push_back(f);        /* its stack is free again: fiber_main loops */
        else waiting.push_back(f);
    }
    while (!waiting.empty()) {
        if (waiting.size() != n) {
            fail("kernel %s, block (%u,%u,%u): %zu of %u threads wait at __syncthreads() while the others have returned",
                 name, bid.x, bid.y, bid.z, waiting.size(), n);
            for (fiber *f : waiting) { reset(f); pool.push_back(f); }   /* abandon them */
            return false;
        }
        std::vector<fiber *> next;
        for (fiber *f : waiting) {
            f->waiting = false;
            resume(f);
            if (f->done) pool.push_back(f);
            else next.push_back(f);
        }
        waiting.swap(next);
    }
    return true;
}
}  // namespace

void sync_threads() {
    fiber *f = running;
    if (!f) { fail("__syncthreads() outside a kernel"); abort(); }
    f->waiting = true;
#if defined(__x86_64__)
    cusim_switch(&f->sp, sched_sp);
#else
    swapcontext(&f->uc, &sched_uc);
#endif
}

/* Grids and threads run per kernel (CUSIM_STATS=1), printed at exit. */
struct stats {
    bool on = getenv("CUSIM_STATS") != nullptr;
    std::map<std::string, std::pair<unsigned long long, unsigned long long>> runs;
    ~stats() {
        for (auto &r : runs) fprintf(stderr, "cudasim: %8llu grids %12llu threads  %s\n", r.second.first, r.second.second, r.first.c_str());
    }
};
stats st;

void run_grid(const char *name, dim3 grid, dim3 block, const std::function<void()> &fn) {
    if (st.on) {
        auto &r = st.runs[name];
        r.first++;
        r.second += (unsigned long long)grid.x * grid.y * grid.z * block.x * block.y * block.z;
    }
    if (running) { fail("kernel %s launched from inside a kernel (dynamic parallelism is not simulated)", name); abort(); }
    const std::function<void()> *outer = body;
    body = &fn;
    unsigned long long nb = (unsigned long long)grid.x * grid.y * grid.z;
    bool rev = reverse_order();
    for (unsigned long long k = 0; k < nb; k++) {
        unsigned long long b = rev ? nb - 1 - k : k;
        uint3 bid{ (unsigned)(b % grid.x), (unsigned)(b / grid.x % grid.y), (unsigned)(b / ((unsigned long long)grid.x * grid.y)) };
        if (!run_block(name, bid, grid, block)) { set_error(cudaErrorLaunchFailure); break; }
    }
    body = outer;
}

void launch(const char *name, dim3 g, dim3 b, size_t shmem, cudaStream_t s, std::function<void()> fn) {
    /* the limits of compute capability 9.0 */
    unsigned long long threads = (unsigned long long)b.x * b.y * b.z;
    if (g.x == 0 || g.y == 0 || g.z == 0 || threads == 0 || threads > 1024 || b.x > 1024 || b.y > 1024 || b.z > 64 ||
        g.x > 2147483647u || g.y > 65535 || g.z > 65535) {
        fail("kernel %s: invalid launch configuration grid (%u,%u,%u) block (%u,%u,%u)", name, g.x, g.y, g.z, b.x, b.y, b.z);
        set_error(cudaErrorInvalidConfiguration);
        return;
    }
    if (shmem > 48 * 1024) { fail("kernel %s: %zu bytes of dynamic shared memory", name, shmem); set_error(cudaErrorInvalidValue); return; }
    if (!stream_of(s)) { fail("kernel %s: launched on an invalid stream", name); set_error(cudaErrorInvalidResourceHandle); return; }
    if (!launchable(name, s)) return;
    cudaError_t e = enqueue(s, [name, g, b, fn] { run_grid(name, g, b, fn); });   /* name: a literal */
    if (e != cudaSuccess) set_error(e);
}
}  // namespace cusim

/* The simulator's execution model. A launch runs the grid on the calling thread, block after
 * block; each CUDA thread of a block runs on its own fiber (a small stack and a context switch),
 * so __syncthreads() can suspend it until every thread of the block has arrived. Threads that
 * never hit a barrier run to completion one after another on a reused stack. Launches on a stream
 * under capture are recorded (with their arguments, by value) and replayed by cudaGraphLaunch. */
#ifndef CUSIM_SIM_H
#define CUSIM_SIM_H
#include "cuda_runtime.h"
#include <functional>
#include <memory>
#include <tuple>
#include <type_traits>
#include <utility>

namespace cusim {

/* What threadIdx & co. read: the running fiber's coordinates. */
struct thread_coords { uint3 tid, bid; dim3 bdim, gdim; };
extern thread_local const thread_coords *cur;

/* Runs (or records, while s is being captured) body once per thread of the grid. Bad
 * configurations and barrier deadlocks are reported through cudaGetLastError. */
void launch(const char *name, dim3 grid, dim3 block, size_t shmem, cudaStream_t s, std::function<void()> body);
void sync_threads();
/* Host/device separation: true when p is NULL or lies in (or just past) device memory or mapped
 * pinned memory; a kernel argument that does not fails the launch. */
bool device_accessible(const void *p);
void bad_argument(const char *kernel, int index, const void *p);
/* False when p is device memory of another GPU than the one stream s belongs to. */
bool on_stream_device(const void *p, cudaStream_t s);
void wrong_device(const char *kernel, int index, const void *p, cudaStream_t s);

/* Argument passing is copy-initialisation; a NULL macro (an integer 0 in g++) may pass for a
 * pointer, as the null pointer constant it is in the kernel's source. */
template <typename T> inline T implicit_conv(T v) { return v; }
template <typename T, typename A> inline T conv_arg(A &&a) {
    if constexpr (std::is_pointer_v<T> && std::is_integral_v<std::decay_t<A>>) return a == 0 ? nullptr : T();
    else return implicit_conv<T>(std::forward<A>(a));
}

template <typename... P> struct launcher {
    void (*k)(P...);
    const char *name;
    dim3 grid, block;
    size_t shmem;
    cudaStream_t s;
    template <typename V> bool check_arg(const V &v, int i) const {
        if constexpr (std::is_pointer_v<V>) {
            if (!device_accessible((const void *)v)) { bad_argument(name, i, (const void *)v); return false; }
            if (!on_stream_device((const void *)v, s)) { wrong_device(name, i, (const void *)v, s); return false; }
        }
        return true;
    }
    template <typename... A> void operator()(A &&...a) const {
        static_assert(sizeof...(A) == sizeof...(P), "kernel launched with the wrong number of arguments");
        /* converted once to the parameter types (as a <<<>>> launch does); each thread then gets
         * its own copy, as each CUDA thread sees its own parameters */
        auto args = std::make_shared<std::tuple<std::decay_t<P>...>>(conv_arg<std::decay_t<P>>(std::forward<A>(a))...);
        int i = 0;
        bool ok = true;
        std::apply([&](const auto &...v) { ((ok = ok && check_arg(v, i++)), ...); }, *args);
        if (!ok) return;
        auto fn = k;
        launch(name, grid, block, shmem, s, [fn, args] { std::apply(fn, *args); });
    }
};

template <typename... P>
launcher<P...> make_launcher(void (*k)(P...), const char *name, dim3 g, dim3 b, size_t sh, cudaStream_t s) {
    return launcher<P...>{ k, name, g, b, sh, s };
}

}  // namespace cusim

#define threadIdx (::cusim::cur->tid)
#define blockIdx (::cusim::cur->bid)
#define blockDim (::cusim::cur->bdim)
#define gridDim (::cusim::cur->gdim)
#define __syncthreads() ::cusim::sync_threads()
#define CU_LAUNCH(kernel, grid, block, shmem, stream) \
    ::cusim::make_launcher(&kernel, #kernel, dim3(grid), dim3(block), (size_t)(shmem), (stream))
#endif

/* Force-included (-include) into every library source of a -DKILN_FUZZ=ON build (fuzz/fuzz.cmake;
 * fuzz/run.sh's build-fuzz-lib): clang 14 rejects __builtin_cpu_supports("amx-bf16")
 * (src/backend/cpu), and the fuzzers want the portable kernels anyway, so every CPU-feature
 * probe answers "no". */
#define __builtin_cpu_supports(feature) 0

# libFuzzer targets for the data loaders, the safetensors checkpoint loader, the ONNX importer, the
# Keras JSON builder and the history CSV readers. Included by the top-level CMakeLists.txt when
# -DKILN_FUZZ=ON; needs clang and the libFuzzer runtime (Debian: clang libclang-rt-14-dev):
#   cmake -S . -B build-fuzz-cmake -DCMAKE_C_COMPILER=clang -DKILN_FUZZ=ON && cmake --build build-fuzz-cmake --target fuzz_all
# The loader targets link their own instrumented copy of core/data/io; fuzz_onnx, fuzz_keras_json
# and fuzz_history_csv link kiln_static, which this build compiles without coverage instrumentation
# unless CMAKE_C_FLAGS adds -fsanitize=fuzzer-no-link (and KILN_SANITIZE=ON the sanitizers), as
# fuzz/run.sh's build-fuzz-lib does; fuzz/run.sh builds them all and runs them.
# In this build the library's CPU-feature probes answer "no" (fuzz/lib_compat.h): clang 14 rejects
# __builtin_cpu_supports("amx-bf16"), and ignores cpu_winograd.c's `#pragma GCC target("avx512f")`,
# which then needs -mavx512f to compile (its AVX-512 code never runs, the probe saying no).
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "KILN_FUZZ needs clang: cmake -DCMAKE_C_COMPILER=clang -DKILN_FUZZ=ON")
endif()
get_filename_component(KILN_FUZZ_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
target_compile_options(kiln_obj PRIVATE -include ${KILN_FUZZ_ROOT}/fuzz/lib_compat.h)
set_source_files_properties(${KILN_FUZZ_ROOT}/src/backend/cpu/cpu_winograd.c PROPERTIES COMPILE_OPTIONS -mavx512f)
find_package(PNG REQUIRED)
find_package(JPEG REQUIRED)
find_package(ZLIB REQUIRED)
find_package(Threads REQUIRED)
file(GLOB KILN_FUZZ_LIB_SOURCES CONFIGURE_DEPENDS ${KILN_FUZZ_ROOT}/src/core/*.c ${KILN_FUZZ_ROOT}/src/data/*.c
  ${KILN_FUZZ_ROOT}/src/io/*.c)
set(KILN_FUZZ_SAN -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
add_library(kiln_fuzz_lib STATIC ${KILN_FUZZ_LIB_SOURCES})
target_include_directories(kiln_fuzz_lib PUBLIC ${KILN_FUZZ_ROOT}/include ${KILN_FUZZ_ROOT}/src)
target_compile_options(kiln_fuzz_lib PUBLIC -g -O1 ${KILN_FUZZ_SAN} PRIVATE -fsanitize=fuzzer-no-link)
target_link_libraries(kiln_fuzz_lib PUBLIC PNG::PNG JPEG::JPEG ZLIB::ZLIB m Threads::Threads)
add_custom_target(fuzz_all)
foreach(t fuzz_idx fuzz_cifar fuzz_images fuzz_safetensors fuzz_npz fuzz_csv)
  add_executable(${t} ${KILN_FUZZ_ROOT}/fuzz/${t}.c)
  target_compile_options(${t} PRIVATE -fsanitize=fuzzer)
  target_link_options(${t} PRIVATE -fsanitize=fuzzer ${KILN_FUZZ_SAN})
  target_link_libraries(${t} PRIVATE kiln_fuzz_lib)
  add_dependencies(fuzz_all ${t})
endforeach()
# the whole library's targets (fuzz_onnx needs the ONNX build: onnx.pb-c.h in the build tree)
set(_fuzz_lib_targets fuzz_keras_json fuzz_history_csv fuzz_tokenizer)
if(KILN_ONNX_BUILT)
  list(APPEND _fuzz_lib_targets fuzz_onnx)
endif()
foreach(t ${_fuzz_lib_targets})
  add_executable(${t} ${KILN_FUZZ_ROOT}/fuzz/${t}.c)
  target_include_directories(${t} PRIVATE ${KILN_FUZZ_ROOT}/src ${KILN_FUZZ_ROOT})
  target_compile_options(${t} PRIVATE -g -O1 -fsanitize=fuzzer ${KILN_FUZZ_SAN})
  target_link_options(${t} PRIVATE -fsanitize=fuzzer ${KILN_FUZZ_SAN})
  target_link_libraries(${t} PRIVATE kiln_static)
  add_dependencies(fuzz_all ${t})
endforeach()
if(TARGET fuzz_onnx)
  target_sources(fuzz_onnx PRIVATE ${KILN_FUZZ_ROOT}/fuzz/fuzz_onnx_mutator.c)
  target_include_directories(fuzz_onnx PRIVATE ${CMAKE_BINARY_DIR}/onnx_gen ${KILN_PROTOBUF_C_INCLUDE_DIR})
endif()
target_sources(fuzz_history_csv PRIVATE ${KILN_FUZZ_ROOT}/tools/plot/history_csv.c)

# libFuzzer targets for the data loaders and the safetensors checkpoint loader. Included by the top-level CMakeLists.txt when
# -DKILN_FUZZ=ON; needs clang and the libFuzzer runtime (Debian: clang libclang-rt-14-dev):
#   cmake -S . -B build-fuzz-cmake -DCMAKE_C_COMPILER=clang -DKILN_FUZZ=ON && cmake --build build-fuzz-cmake --target fuzz_all
# fuzz/run.sh builds the same targets without CMake and runs them.
if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "KILN_FUZZ needs clang: cmake -DCMAKE_C_COMPILER=clang -DKILN_FUZZ=ON")
endif()
get_filename_component(KILN_FUZZ_ROOT "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
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

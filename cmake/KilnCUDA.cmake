# The CUDA backend module, libkiln_cuda.so, opened by libkiln with dlopen at run time.
# Included from the top-level CMakeLists.txt (after find_package(CUDAToolkit)):
#     include(cmake/KilnCUDA.cmake)
# Builds only when the CUDA toolkit, a CUDA compiler and cuDNN are found; otherwise says why and
# returns. Options / hints:
#   -DKILN_CUDA_ARCHS=...   CUDA architectures (default "90-real;90-virtual": sm_90 SASS plus PTX
#                           that newer GPUs JIT-compile)
#   -DKILN_CUDA=OFF         do not build the module
#   CUDNN_ROOT / CUDNN_HOME (env or cache): where cuDNN lives; the toolkit's dirs and Python
#   wheels (site-packages/nvidia/cudnn) are searched too. (NCCL is not used yet: not searched.)
# Sets KILN_CUDA_BUILT (ON/OFF), KILN_CUDNN_LIBRARY.

option(KILN_CUDA "Build the CUDA backend module when the toolkit is found" ON)
set(KILN_CUDA_BUILT OFF)

if(NOT KILN_CUDA)
  message(STATUS "CUDA backend: disabled (KILN_CUDA=OFF)")
  return()
endif()
if(NOT DEFINED CUDAToolkit_FOUND)
  find_package(CUDAToolkit QUIET)
endif()
if(NOT CUDAToolkit_FOUND)
  message(STATUS "CUDA backend: not built (CUDA toolkit not found)")
  return()
endif()

# A CUDA compiler: prefer the toolkit's nvcc when CMAKE_CUDA_COMPILER is not set.
include(CheckLanguage)
if(NOT CMAKE_CUDA_COMPILER AND CUDAToolkit_NVCC_EXECUTABLE AND EXISTS "${CUDAToolkit_NVCC_EXECUTABLE}")
  set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}" CACHE FILEPATH "CUDA compiler")
endif()
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  message(STATUS "CUDA backend: not built (no working CUDA compiler)")
  return()
endif()

set(KILN_CUDA_ARCHS "90-real;90-virtual" CACHE STRING "CUDA architectures for libkiln_cuda.so")
if(NOT CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "52")
  set(CMAKE_CUDA_ARCHITECTURES "${KILN_CUDA_ARCHS}")
endif()
if(KILN_CUDA_ARCHS)
  set(CMAKE_CUDA_ARCHITECTURES "${KILN_CUDA_ARCHS}")
endif()
enable_language(CUDA)

# ---- where cuDNN may live: toolkit, env/cache roots, Python wheels ----
set(_kiln_cuda_hints "")
foreach(_v CUDNN_ROOT CUDNN_HOME CUDA_HOME CUDA_PATH)
  if(DEFINED ${_v})
    list(APPEND _kiln_cuda_hints "${${_v}}")
  endif()
  if(DEFINED ENV{${_v}})
    list(APPEND _kiln_cuda_hints "$ENV{${_v}}")
  endif()
endforeach()
foreach(_d ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_TARGET_DIR})
  get_filename_component(_p "${_d}" DIRECTORY)
  list(APPEND _kiln_cuda_hints "${_d}" "${_p}")
endforeach()
# Python wheels (nvidia-cudnn-cu13): ask each python found for its site dirs.
set(_kiln_wheel_roots "")
find_program(_kiln_python NAMES python3 python)
foreach(_py ${KILN_PYTHON} $ENV{KILN_PYTHON} ${_kiln_python})
  if(_py AND EXISTS "${_py}")
    execute_process(
      COMMAND "${_py}" -c "import site,sys; print(';'.join(site.getsitepackages() + [site.getusersitepackages()] + sys.path))"
      OUTPUT_VARIABLE _sp OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE _rc)
    if(_rc EQUAL 0)
      foreach(_s ${_sp})
        if(IS_DIRECTORY "${_s}/nvidia")
          list(APPEND _kiln_wheel_roots "${_s}/nvidia")
        endif()
      endforeach()
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES _kiln_wheel_roots)
set(_kiln_cudnn_hints ${_kiln_cuda_hints})
foreach(_w ${_kiln_wheel_roots})
  list(APPEND _kiln_cudnn_hints "${_w}/cudnn" "${_w}/cu13" "${_w}")
endforeach()

# Finds lib<name>.so, or lib<name>.so.<major> when the wheel ships no unversioned link.
function(_kiln_find_versioned_lib out name majors)
  set(_names ${name})
  foreach(_m ${majors})
    list(APPEND _names "lib${name}.so.${_m}")
  endforeach()
  find_library(${out} NAMES ${_names} HINTS ${ARGN} PATH_SUFFIXES lib lib64 lib/x64 targets/x86_64-linux/lib)
  set(${out} "${${out}}" PARENT_SCOPE)
endfunction()

find_path(KILN_CUDNN_INCLUDE_DIR cudnn.h HINTS ${_kiln_cudnn_hints} PATH_SUFFIXES include targets/x86_64-linux/include)
_kiln_find_versioned_lib(KILN_CUDNN_LIBRARY cudnn "9;8" ${_kiln_cudnn_hints})

if(NOT KILN_CUDNN_INCLUDE_DIR OR NOT KILN_CUDNN_LIBRARY)
  message(STATUS "cuDNN not found: CUDA backend not built (set CUDNN_ROOT, or install nvidia-cudnn-cu13)")
  return()
endif()

# ---- the module ----
get_filename_component(_kiln_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)
file(GLOB KILN_CUDA_SOURCES CONFIGURE_DEPENDS
  ${_kiln_root}/src/backend/cuda/*.cu ${_kiln_root}/src/backend/cuda/*.c)
add_library(kiln_cuda MODULE ${KILN_CUDA_SOURCES})
set_target_properties(kiln_cuda PROPERTIES
  OUTPUT_NAME kiln_cuda
  PREFIX "lib"
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}
  CUDA_STANDARD 17
  CUDA_STANDARD_REQUIRED ON
  CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}"
  C_VISIBILITY_PRESET hidden
  CUDA_VISIBILITY_PRESET hidden
  CXX_VISIBILITY_PRESET hidden
  POSITION_INDEPENDENT_CODE ON
  # find cuDNN/cuBLAS next to the module or where they were at build time (wheel dirs)
  BUILD_RPATH_USE_ORIGIN ON
  INSTALL_RPATH "$ORIGIN")
target_include_directories(kiln_cuda PRIVATE
  ${_kiln_root}/src ${_kiln_root}/include ${KILN_CUDNN_INCLUDE_DIR})
# The directory's add_compile_options (-march=native, -fsanitize, ...) are gcc flags nvcc rejects:
# the module starts from none and sets its own per language.
set_property(TARGET kiln_cuda PROPERTY COMPILE_OPTIONS "")
set_property(TARGET kiln_cuda PROPERTY LINK_OPTIONS "")
target_compile_options(kiln_cuda PRIVATE
  $<$<COMPILE_LANGUAGE:C>:-Wall -Wextra -Wno-unused-parameter -O2>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter,-Wno-missing-field-initializers>
  $<$<COMPILE_LANGUAGE:CUDA>:-O3>)
target_link_libraries(kiln_cuda PRIVATE CUDA::cudart CUDA::cublas ${KILN_CUDNN_LIBRARY})
get_filename_component(_kiln_cudnn_libdir "${KILN_CUDNN_LIBRARY}" DIRECTORY)
set_property(TARGET kiln_cuda APPEND PROPERTY BUILD_RPATH "${_kiln_cudnn_libdir}" "${CUDAToolkit_LIBRARY_DIR}")
install(TARGETS kiln_cuda LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

set(KILN_CUDA_BUILT ON)
message(STATUS "CUDA backend: building libkiln_cuda.so for ${CMAKE_CUDA_ARCHITECTURES} (cuDNN ${KILN_CUDNN_LIBRARY})")

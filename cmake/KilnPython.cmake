# The Python package's C extension, kiln._kiln (python/src/*.c: C against the public API in
# include/kiln/ and CPython's limited API 3.11, so one abi3 module serves every CPython >= 3.11),
# and the wheel's layout. Included at the end of the top-level CMakeLists.txt:
#     include(cmake/KilnPython.cmake)
#
# Off in a normal build: its configure never looks for Python. `pip install .` / `pip wheel .`
# (pyproject.toml, scikit-build-core) defines SKBUILD, which turns KILN_PYTHON on and installs, as
# the install component `python`, into the package folder kiln/ of the wheel:
#   kiln/_kiln.abi3.so      the extension, RUNPATH $ORIGIN
#   kiln/libkiln.so         libkiln (soname libkiln.so in a wheel: a wheel cannot hold symlinks)
#   kiln/libkiln_cuda.so    the CUDA module, when this build makes it (KILN_CUDA, as in a normal
#                           build); src/backend/registry.c looks for it next to libkiln.so
# so the installed package needs neither the source nor the build tree. pyproject.toml builds only
# the target kiln_python and installs only the component python: the CLI, tests, examples,
# benches and the static library are configured but not built.
# -DKILN_PYTHON=ON in a normal build adds the target _kiln (build/python/kiln/_kiln.abi3.so),
# nothing installed; python/dev_build.sh is the quicker way during development.
#
# The test tests/python/test_wheel.sh (label `python`) is registered in every build: it needs no
# Python at configure time, and skips (77) when python3-venv or PyPI is missing.

get_filename_component(_kiln_py_root "${CMAKE_CURRENT_LIST_DIR}/.." ABSOLUTE)

# ---- test: `pip wheel .` from a copy of the checkout, installed in a fresh venv, run elsewhere ----
if(NOT SKBUILD)
  add_test(NAME test_wheel COMMAND bash ${_kiln_py_root}/tests/python/test_wheel.sh
    --out ${CMAKE_BINARY_DIR}/python-wheel ${_kiln_py_root})
  set_tests_properties(test_wheel PROPERTIES LABELS python SKIP_RETURN_CODE 77 TIMEOUT 1800)
endif()

if(SKBUILD)
  set(_kiln_py_default ON)
else()
  set(_kiln_py_default OFF)
endif()
option(KILN_PYTHON "Build the Python extension kiln._kiln (python/src; ON under pip / scikit-build-core)" ${_kiln_py_default})
if(NOT KILN_PYTHON)
  return()
endif()

file(GLOB KILN_PYTHON_SOURCES CONFIGURE_DEPENDS ${_kiln_py_root}/python/src/*.c)
if(NOT KILN_PYTHON_SOURCES)
  message(FATAL_ERROR "KILN_PYTHON: no sources in ${_kiln_py_root}/python/src/*.c")
endif()

# abi3: Py_LIMITED_API 3.11 (the buffer protocol is in the limited API from 3.11). CMake >= 3.26
# has FindPython's SABIModule and Python_add_library(USE_SABI); with an older CMake (Debian 12 has
# 3.25) the same module is made by hand: only the headers are needed (an extension module does not
# link libpython on Linux), named _kiln.abi3.so.
set(KILN_PYTHON_ABI 3.11)
if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.26)
  find_package(Python ${KILN_PYTHON_ABI} REQUIRED COMPONENTS Interpreter Development.SABIModule)
  Python_add_library(_kiln MODULE USE_SABI ${KILN_PYTHON_ABI} WITH_SOABI ${KILN_PYTHON_SOURCES})
else()
  find_package(Python ${KILN_PYTHON_ABI} REQUIRED COMPONENTS Interpreter Development.Module)
  Python_add_library(_kiln MODULE ${KILN_PYTHON_SOURCES})
  set_target_properties(_kiln PROPERTIES SUFFIX ".abi3.so")
endif()
if(Python_INTERPRETER_ID AND NOT Python_INTERPRETER_ID STREQUAL "Python")
  message(FATAL_ERROR "KILN_PYTHON: kiln._kiln is a CPython extension (found ${Python_INTERPRETER_ID})")
endif()
target_compile_definitions(_kiln PRIVATE Py_LIMITED_API=0x030B0000)
target_link_libraries(_kiln PRIVATE kiln_shared)
target_link_options(_kiln PRIVATE -Wl,--as-needed)   # libkiln's own dependencies stay libkiln's
set_target_properties(_kiln PROPERTIES
  PREFIX ""
  OUTPUT_NAME _kiln
  C_VISIBILITY_PRESET hidden                          # only PyInit__kiln is exported
  LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/python/kiln
  INSTALL_RPATH "$ORIGIN")
message(STATUS "Python: building kiln._kiln (abi3, CPython >= ${KILN_PYTHON_ABI}) with ${Python_EXECUTABLE} (${Python_VERSION})")

# the targets `pip install .` builds (pyproject.toml: build.targets)
add_custom_target(kiln_python)
add_dependencies(kiln_python _kiln kiln_shared)
if(KILN_CUDA_BUILT)
  add_dependencies(kiln_python kiln_cuda)
endif()

if(NOT SKBUILD)
  return()
endif()

# ---- the wheel: everything in the package folder kiln/, found through $ORIGIN ----
# libkiln.so without VERSION/SOVERSION: one file (libkiln.so, soname libkiln.so) instead of a
# file and two symlinks that a wheel would turn into three copies. Its dependencies are system
# libraries (OpenBLAS, oneDNN, ...: the wheel is for the machine that built it, like the build
# tree); non-default link directories (Open MPI's) stay in its RUNPATH as in the build tree.
set_property(TARGET kiln_shared PROPERTY VERSION)
set_property(TARGET kiln_shared PROPERTY SOVERSION)
set_target_properties(kiln_shared PROPERTIES INSTALL_RPATH "$ORIGIN" INSTALL_RPATH_USE_LINK_PATH ON)
install(TARGETS _kiln kiln_shared LIBRARY DESTINATION kiln COMPONENT python)
if(KILN_CUDA_BUILT)
  # cuDNN / cuBLAS / the CUDA runtime: next to the module, in NVIDIA's PyPI wheels beside the
  # package (site-packages/nvidia/...), or where they were found at build time
  set_property(TARGET kiln_cuda APPEND PROPERTY INSTALL_RPATH
    "$ORIGIN/../nvidia/cudnn/lib" "$ORIGIN/../nvidia/cublas/lib" "$ORIGIN/../nvidia/cuda_runtime/lib"
    "$ORIGIN/../nvidia/cu13/lib" ${_kiln_cudnn_libdir} ${CUDAToolkit_LIBRARY_DIR})
  set_target_properties(kiln_cuda PROPERTIES INSTALL_RPATH_USE_LINK_PATH ON)
  install(TARGETS kiln_cuda LIBRARY DESTINATION kiln COMPONENT python)
  message(STATUS "Python: the wheel carries libkiln_cuda.so (-DKILN_CUDA=OFF: without)")
else()
  message(STATUS "Python: the wheel has no CUDA module (CUDA backend not built)")
endif()

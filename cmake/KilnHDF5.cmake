# Keras model files with their weights (.keras, legacy .h5, .weights.h5) through libhdf5 (Debian
# libhdf5-dev), found through pkg-config (hdf5) or its Debian paths. Optional: without it the
# Keras file API and --model-file model.keras|model.h5 say what to install. libhdf5 is used in one
# file, src/io/keras_h5.c. Option: -DKILN_HDF5=OFF. Included from the top-level CMakeLists.txt:
#     include(cmake/KilnHDF5.cmake)
# Also registers the Keras file tests (tests/keras): test_keras_files (Keras-made files against
# Keras's predictions, Kiln's exports loaded in Keras; PyPI, skipped when unreachable) and
# test_keras_hostile (truncated and corrupted files: clean errors).

option(KILN_HDF5 "Read and write Keras .keras/.h5 files when libhdf5 is found" ON)
set(KILN_HDF5_BUILT OFF)
set(KILN_PC_HDF5 "")
if(KILN_HDF5)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(KILN_H5 QUIET hdf5)
  endif()
  if(NOT KILN_H5_FOUND)   # no pkg-config file: Debian's serial layout
    find_path(KILN_H5_INCLUDE_DIRS hdf5.h PATH_SUFFIXES hdf5/serial)
    find_library(KILN_H5_LINK_LIBRARIES NAMES hdf5_serial hdf5 PATH_SUFFIXES hdf5/serial)
    if(KILN_H5_INCLUDE_DIRS AND KILN_H5_LINK_LIBRARIES)
      set(KILN_H5_FOUND ON)
    endif()
  endif()
endif()
if(KILN_HDF5 AND KILN_H5_FOUND)
  target_compile_definitions(kiln_obj PRIVATE KILN_HAVE_HDF5)
  target_include_directories(kiln_obj PRIVATE ${KILN_H5_INCLUDE_DIRS})
  foreach(t kiln_static kiln_shared)
    target_link_libraries(${t} PUBLIC ${KILN_H5_LINK_LIBRARIES})
  endforeach()
  string(REPLACE ";" " " KILN_PC_HDF5 "${KILN_H5_LDFLAGS} ")
  set(KILN_HDF5_BUILT ON)
  message(STATUS "HDF5: found (${KILN_H5_LINK_LIBRARIES}): .keras / .h5 model files")
elseif(NOT KILN_HDF5)
  message(STATUS "HDF5: disabled (KILN_HDF5=OFF): .keras / .h5 model files are refused")
else()
  message(STATUS "HDF5: not found (.keras / .h5 model files are refused): apt-get install libhdf5-dev")
endif()

# ---- tests ----
set(_ksrc ${CMAKE_CURRENT_SOURCE_DIR}/tests/keras)
add_executable(keras_probe ${_ksrc}/keras_probe.c)
target_link_libraries(keras_probe PRIVATE kiln_static)
set_target_properties(keras_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
add_executable(test_keras_hostile ${_ksrc}/test_keras_hostile.c ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit/check.c)
target_include_directories(test_keras_hostile PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit)
target_link_libraries(test_keras_hostile PRIVATE kiln_static)
target_compile_definitions(test_keras_hostile PRIVATE KILN_KERAS_FILES="${CMAKE_CURRENT_SOURCE_DIR}/tests/data/keras/files")
add_test(NAME test_keras_hostile COMMAND test_keras_hostile WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
set_tests_properties(test_keras_hostile PROPERTIES SKIP_RETURN_CODE 77)
# Keras-made files read by Kiln and Kiln's exports read by Keras (tensorflow-cpu from PyPI)
add_test(NAME test_keras_files COMMAND bash ${_ksrc}/test_keras_files.sh $<TARGET_FILE:kiln_cli> $<TARGET_FILE:keras_probe> ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(test_keras_files PROPERTIES SKIP_RETURN_CODE 77)

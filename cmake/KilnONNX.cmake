# ONNX export and import (src/onnx), optional. Included from the top-level CMakeLists.txt after
# the library targets exist:
#     include(cmake/KilnONNX.cmake)
# Needs protobuf-c (library, headers and protoc-c) and the onnx.proto that libonnx-dev installs.
# The C code for onnx.proto is generated at build time with protoc-c into the build tree (the
# installed onnx.proto is only read; protoc-c takes its proto2 syntax and `package onnx` as they
# are: the messages are Onnx__ModelProto, ...). Without them the API in include/kiln/onnx.h says
# what to install (src/onnx/onnx_none.c). Option: -DKILN_ONNX=OFF.
# Tests (registered at the end of the configure, once kiln_cli and the CUDA simulator exist):
#   test_onnx            export / import / round trip / errors (tests/onnx/test_onnx.c)
#   test_onnx_hostile    crafted files: clean errors, no overflow, bounded folding (tests/onnx/test_onnx_hostile.c)
#   test_onnx_node       the ONNX backend node tests of libonnx-testdata on the cpu backend
#   test_onnx_node_cudasim   the same on the CUDA simulator
#   test_onnx_ort        exported zoo models against onnxruntime (PyPI; skipped when unreachable)
#   test_transformer_ort the Keras transformer model exported, against onnxruntime (the same)
#   test_rnn_ort         the recurrent layers exported (RNN / LSTM / GRU ops), against onnxruntime (the same)
#   test_onnx_cli        kiln export, --model-file FILE.onnx
#   test_gpt_onnx        GPTs exported and imported back; test_gpt_onnx_ort: the same files in onnxruntime

option(KILN_ONNX "Build ONNX export / import when protobuf-c and onnx.proto are found" ON)
set(KILN_ONNX_BUILT OFF)
set(KILN_PC_ONNX "")
set(_onnx_missing "")
if(KILN_ONNX)
  find_program(KILN_PROTOC_C NAMES protoc-c protoc-gen-c)
  find_path(KILN_PROTOBUF_C_INCLUDE_DIR protobuf-c/protobuf-c.h)
  find_library(KILN_PROTOBUF_C_LIBRARY NAMES protobuf-c)
  find_file(KILN_ONNX_PROTO onnx.proto PATH_SUFFIXES onnx)
  if(NOT KILN_PROTOC_C)
    list(APPEND _onnx_missing "protoc-c")
  endif()
  if(NOT KILN_PROTOBUF_C_INCLUDE_DIR OR NOT KILN_PROTOBUF_C_LIBRARY)
    list(APPEND _onnx_missing "libprotobuf-c")
  endif()
  if(NOT KILN_ONNX_PROTO)
    list(APPEND _onnx_missing "onnx/onnx.proto")
  endif()
endif()

if(KILN_ONNX AND NOT _onnx_missing)
  set(_gen ${CMAKE_BINARY_DIR}/onnx_gen)
  file(MAKE_DIRECTORY ${_gen})
  get_filename_component(_proto_dir ${KILN_ONNX_PROTO} DIRECTORY)
  add_custom_command(
    OUTPUT ${_gen}/onnx.pb-c.c ${_gen}/onnx.pb-c.h
    COMMAND ${KILN_PROTOC_C} --proto_path=${_proto_dir} --c_out=${_gen} ${KILN_ONNX_PROTO}
    DEPENDS ${KILN_ONNX_PROTO}
    COMMENT "protoc-c: C messages from ${KILN_ONNX_PROTO}")
  file(GLOB _onnx_sources CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/onnx/*.c)
  list(REMOVE_ITEM _onnx_sources ${CMAKE_CURRENT_SOURCE_DIR}/src/onnx/onnx_none.c)
  target_sources(kiln_obj PRIVATE ${_onnx_sources} ${_gen}/onnx.pb-c.c)
  set_source_files_properties(${_gen}/onnx.pb-c.c PROPERTIES COMPILE_OPTIONS "-w")   # generated code
  target_include_directories(kiln_obj PRIVATE ${_gen} ${KILN_PROTOBUF_C_INCLUDE_DIR})
  foreach(t kiln_static kiln_shared)
    target_link_libraries(${t} PUBLIC ${KILN_PROTOBUF_C_LIBRARY})
  endforeach()
  set(KILN_PC_ONNX "-lprotobuf-c ")
  set(KILN_ONNX_BUILT ON)
  message(STATUS "ONNX: found (${KILN_PROTOBUF_C_LIBRARY}, ${KILN_ONNX_PROTO}): kiln export, --model-file FILE.onnx")
else()
  target_sources(kiln_obj PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src/onnx/onnx_none.c)
  if(NOT KILN_ONNX)
    message(STATUS "ONNX: disabled (KILN_ONNX=OFF)")
  else()
    string(REPLACE ";" ", " _onnx_missing "${_onnx_missing}")
    message(STATUS "ONNX: not found (missing ${_onnx_missing}): apt-get install libprotobuf-c-dev protobuf-c-compiler libonnx-dev")
  endif()
endif()

# ---- tests, registered once the whole project is configured ----
function(kiln_onnx_tests)
  if(NOT KILN_ONNX_BUILT)
    return()
  endif()
  set(_src ${CMAKE_CURRENT_SOURCE_DIR}/tests/onnx)
  add_executable(onnx_node_tests ${_src}/node_tests.c)
  target_include_directories(onnx_node_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src ${_gen} ${KILN_PROTOBUF_C_INCLUDE_DIR})
  target_link_libraries(onnx_node_tests PRIVATE kiln_static)
  set_target_properties(onnx_node_tests PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  add_executable(test_onnx ${_src}/test_onnx.c ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit/check.c)
  target_include_directories(test_onnx PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit ${_gen} ${KILN_PROTOBUF_C_INCLUDE_DIR})
  target_link_libraries(test_onnx PRIVATE kiln_static)
  add_test(NAME test_onnx COMMAND test_onnx WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  add_executable(test_onnx_hostile ${_src}/test_onnx_hostile.c ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit/check.c)
  target_include_directories(test_onnx_hostile PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit ${_gen} ${KILN_PROTOBUF_C_INCLUDE_DIR})
  target_link_libraries(test_onnx_hostile PRIVATE kiln_static)
  add_test(NAME test_onnx_hostile COMMAND test_onnx_hostile WORKING_DIRECTORY ${CMAKE_BINARY_DIR})
  # GPTs (GPTBlock, TiedOutput, the gpt_char preset) exported and imported back; test_gpt_onnx_ort
  # runs the same files in onnxruntime
  add_executable(test_gpt_onnx ${_src}/test_gpt_onnx.c ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit/check.c)
  target_include_directories(test_gpt_onnx PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/tests/unit)
  target_link_libraries(test_gpt_onnx PRIVATE kiln_static)
  add_test(NAME test_gpt_onnx COMMAND test_gpt_onnx)
  add_test(NAME test_gpt_onnx_ort COMMAND bash ${_src}/test_gpt_onnx_ort.sh ${CMAKE_CURRENT_SOURCE_DIR} $<TARGET_FILE:test_gpt_onnx>)
  set_tests_properties(test_gpt_onnx_ort PROPERTIES SKIP_RETURN_CODE 77 LABELS pypi)
  add_executable(onnx_probe ${_src}/onnx_probe.c)
  target_link_libraries(onnx_probe PRIVATE kiln_static)
  set_target_properties(onnx_probe PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})
  add_test(NAME test_onnx_ort COMMAND bash ${_src}/test_onnx_ort.sh ${CMAKE_CURRENT_SOURCE_DIR} $<TARGET_FILE:kiln_cli> $<TARGET_FILE:onnx_probe>)
  set_tests_properties(test_onnx_ort PROPERTIES SKIP_RETURN_CODE 77)
  # the Keras transformer (Embedding, LayerNormalization, causal MultiHeadAttention) exported and
  # run in onnxruntime against Keras's predictions
  add_test(NAME test_transformer_ort COMMAND bash ${_src}/test_transformer_ort.sh ${CMAKE_CURRENT_SOURCE_DIR} $<TARGET_FILE:test_transformer>)
  set_tests_properties(test_transformer_ort PROPERTIES SKIP_RETURN_CODE 77)
  # the recurrent layers exported to ONNX's RNN / LSTM / GRU, run in onnxruntime against Kiln
  add_test(NAME test_rnn_ort COMMAND bash ${_src}/test_rnn_ort.sh ${CMAKE_CURRENT_SOURCE_DIR} $<TARGET_FILE:test_rnn>)
  set_tests_properties(test_rnn_ort PROPERTIES SKIP_RETURN_CODE 77 LABELS pypi)
  # kiln predict --image on a channels-first (PyTorch-style) model, against onnxruntime
  add_test(NAME test_onnx_chw COMMAND bash ${_src}/test_onnx_chw.sh ${CMAKE_CURRENT_SOURCE_DIR} $<TARGET_FILE:kiln_cli>)
  set_tests_properties(test_onnx_chw PROPERTIES SKIP_RETURN_CODE 77 LABELS pypi)
  add_test(NAME test_onnx_cli COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli/test_onnx_cli.sh $<TARGET_FILE:kiln_cli>)
  add_test(NAME test_onnx_node COMMAND bash ${_src}/run.sh $<TARGET_FILE:onnx_node_tests>)
  set_tests_properties(test_onnx_node PROPERTIES SKIP_RETURN_CODE 77)
  # PyTorch's PReLU exports at opset 6 (a per-channel slope of C values): libonnx-testdata's pytorch-converted tests
  add_test(NAME test_onnx_node_prelu COMMAND bash ${_src}/run.sh $<TARGET_FILE:onnx_node_tests> test_PReLU)
  set_tests_properties(test_onnx_node_prelu PROPERTIES SKIP_RETURN_CODE 77
    ENVIRONMENT "KILN_ONNX_TESTDATA=/usr/share/libonnx-testdata/data/pytorch-converted")
  if(TARGET kiln_cuda_sim)
    add_test(NAME test_onnx_node_cudasim COMMAND bash ${_src}/run.sh $<TARGET_FILE:onnx_node_tests> --backend cuda)
    set_tests_properties(test_onnx_node_cudasim PROPERTIES SKIP_RETURN_CODE 77
      ENVIRONMENT "KILN_CUDA_MODULE=$<TARGET_FILE:kiln_cuda_sim>")
  endif()
endfunction()
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL kiln_onnx_tests)

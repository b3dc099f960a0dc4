# Issue 12's data files and logs through the CLI: npz / CSV data, --loss / --metrics, --tensorboard
# (tests/cli/test_datalogs.sh; skipped without python3, which writes its CSV files), and the
# TensorBoard event files read back by the tensorboard package from PyPI (test_tensorboard.sh;
# skipped, exit 77, when PyPI cannot be reached).
add_test(NAME test_datalogs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli/test_datalogs.sh $<TARGET_FILE:kiln_cli> ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME test_tensorboard COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli/test_tensorboard.sh $<TARGET_FILE:kiln_cli> ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(test_datalogs test_tensorboard PROPERTIES SKIP_RETURN_CODE 77)

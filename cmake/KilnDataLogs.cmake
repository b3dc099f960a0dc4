# Issue 12's data files and logs through the CLI: npz / CSV data, --loss / --metrics, --tensorboard
# (tests/cli/test_datalogs.sh; skipped without python3, which writes its CSV files), and the
# TensorBoard event files read back by the tensorboard package from PyPI (test_tensorboard.sh;
# skipped, exit 77, when PyPI cannot be reached).
add_test(NAME test_datalogs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli/test_datalogs.sh $<TARGET_FILE:kiln_cli> ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME test_tensorboard COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli/test_tensorboard.sh $<TARGET_FILE:kiln_cli> ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(test_datalogs test_tensorboard PROPERTIES SKIP_RETURN_CODE 77)
# Issue 24: every reader refuses a FIFO at once (tests/cli/test_fifo_inputs.sh; skipped, exit 77,
# where mkfifo fails), and the files a run writes: no output over an input, one writer per
# --save / --history, resuming a history with other columns refused, strict numbers
# (tests/cli/test_outputs.sh).
add_test(NAME test_fifo_inputs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli/test_fifo_inputs.sh $<TARGET_FILE:kiln_cli>)
add_test(NAME test_outputs COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli/test_outputs.sh $<TARGET_FILE:kiln_cli>)
set_tests_properties(test_fifo_inputs PROPERTIES SKIP_RETURN_CODE 77)
# kiln predict --output FILE.npy|FILE.csv (issue 29)
add_test(NAME test_predict_output COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/tests/cli/test_predict_output.sh $<TARGET_FILE:kiln_cli>)

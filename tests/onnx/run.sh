#!/usr/bin/env bash
# Runs the ONNX backend node tests that Debian's libonnx-testdata installs through Kiln's ONNX
# import (tests/onnx/node_tests.c) and prints passed / failed / unsupported counts and the tests
# that did not pass. Exit 77 (skipped) without the test data; 1 when a test failed.
#   run.sh ONNX_NODE_TESTS [--backend cpu|cuda|ref] [--table FILE] [NAME_FILTER]
# KILN_ONNX_TESTDATA: the node test folder (default /usr/share/libonnx-testdata/data/node).
set -u
bin=${1:?usage: run.sh ONNX_NODE_TESTS [--backend B] [--table FILE] [FILTER]}; shift
data=${KILN_ONNX_TESTDATA:-/usr/share/libonnx-testdata/data/node}
if [ ! -d "$data" ]; then
  echo "skipped: no ONNX node tests in $data (apt-get install libonnx-testdata)"
  exit 77
fi
args=() filter=()
while [ $# -gt 0 ]; do
  case $1 in
    --backend|--table) args+=("$1" "$2"); shift 2 ;;
    *) filter=("$1"); shift ;;
  esac
done
exec "$bin" "${args[@]}" "$data" "${filter[@]}"

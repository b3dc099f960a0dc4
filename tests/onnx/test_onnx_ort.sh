#!/usr/bin/env bash
# Exported models against onnxruntime (tests/onnx/compare_ort.py), in a venv with onnx,
# onnxruntime and numpy from PyPI (scripts/pyenv.sh; exit 77 = skipped when PyPI is unreachable).
#   test_onnx_ort.sh SOURCE_DIR KILN ONNX_PROBE
set -u
src=${1:?usage: test_onnx_ort.sh SOURCE_DIR KILN ONNX_PROBE}; kiln=${2:?}; probe=${3:?}
py=$(bash "$src/scripts/pyenv.sh" onnx onnx onnxruntime numpy) || exit 77
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$py" "$src/tests/onnx/compare_ort.py" "$kiln" "$probe" "$work"

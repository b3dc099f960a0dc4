#!/usr/bin/env bash
# Installs what Kiln needs on Debian 12 (when run as root, or with sudo available) and is quiet
# when everything is already there.
set -euo pipefail
pkgs=(build-essential cmake pkg-config zlib1g-dev libopenblas-dev libdnnl-dev libpng-dev libjpeg62-turbo-dev dataset-fashion-mnist
      clang libclang-rt-14-dev strace libcjson-dev libcairo2-dev libprotobuf-c-dev protobuf-c-compiler
      libonnx-dev libonnx-testdata libopenmpi-dev openmpi-bin python3-venv python3-dev libhdf5-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "setup: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else
  echo "setup: please install as root: apt-get install ${missing[*]}" >&2; exit 1; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null

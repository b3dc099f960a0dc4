#!/usr/bin/env bash
# pyenv.sh NAME PKG... : prints the python of a venv that has PKG... from PyPI, creating or
# completing it first. Tests and benches that need PyPI packages (tensorflow-cpu, onnxruntime,
# tensorboard, torch) call this; README's set-up and the library never do.
#   venv: $KILN_VENV if set (used as is when it already has the packages), else
#         ${XDG_CACHE_HOME:-~/.cache}/kiln/venv-NAME
# Exit 77 (ctest's "skipped") with the reason on stderr when python3-venv is missing or PyPI
# cannot be reached.
set -uo pipefail
name=${1:?usage: pyenv.sh NAME PKG...}; shift
dir=${KILN_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/kiln/venv-$name}
py=$dir/bin/python
mods=()
for p in "$@"; do                      # import names of the packages, to check what is there
  m=${p%%[<>=]*}; m=${m//-/_}
  case $m in tensorflow_cpu) m=tensorflow ;; esac
  mods+=("$m")
done
have() { [ -x "$py" ] && "$py" -c "import $(IFS=,; echo "${mods[*]}")" 2>/dev/null; }
if have; then echo "$py"; exit 0; fi
if [ ! -x "$py" ]; then
  python3 -m venv "$dir" 2>/dev/null || { echo "pyenv: cannot create a venv (apt-get install python3-venv)" >&2; exit 77; }
fi
if ! "$py" -m pip install -q --disable-pip-version-check "$@" >&2; then
  echo "pyenv: pip could not install $* (is PyPI reachable?)" >&2; exit 77
fi
have || { echo "pyenv: $* installed but not importable" >&2; exit 77; }
echo "$py"

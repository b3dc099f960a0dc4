#!/usr/bin/env bash
# Development build of the extension, without pip: compiles python/src/*.c with gcc against an
# existing build tree's libkiln.so (`bash scripts/build.sh` first) into
# python/kiln/_kiln.abi3.so (gitignored), with an rpath to that build tree, so that
#     PYTHONPATH=python python3 -c "import kiln"
# works from the checkout. Same flags as the wheel's CMake build (cmake/KilnPython.cmake):
# CPython's limited API 3.11 (abi3), C11 + GNU extensions, -O2 here, warnings on.
#   python/dev_build.sh [BUILD_DIR]      BUILD_DIR: default build/ (or $KILN_BUILD_DIR)
#   env: PYTHON (default python3) gives the headers; CC (default gcc); CFLAGS added at the end
# Only the objects whose .c or a header changed are recompiled (objects in BUILD_DIR/python-dev/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-${KILN_BUILD_DIR:-$root/build}}" 2>/dev/null && pwd) || {
  echo "dev_build: no build tree ${1:-${KILN_BUILD_DIR:-$root/build}} (run: bash scripts/build.sh)" >&2; exit 1; }
[ -e "$build/libkiln.so" ] || { echo "dev_build: $build/libkiln.so missing (run: bash scripts/build.sh)" >&2; exit 1; }
py=${PYTHON:-python3}
cc=${CC:-gcc}
inc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
[ -f "$inc/Python.h" ] || { echo "dev_build: no $inc/Python.h (apt-get install python3-dev)" >&2; exit 1; }
shopt -s nullglob
srcs=("$root"/python/src/*.c)
[ ${#srcs[@]} -gt 0 ] || { echo "dev_build: no python/src/*.c" >&2; exit 1; }

obj=$build/python-dev
out=$root/python/kiln/_kiln.abi3.so
mkdir -p "$obj" "$root/python/kiln"
flags=(-std=gnu11 -O2 -g -fPIC -fvisibility=hidden -Wall -Wextra -Wno-unused-parameter
       -Wno-missing-field-initializers -DPy_LIMITED_API=0x030B0000
       -I"$inc" -I"$root/include" ${CFLAGS:-})
# a flags or Python change rebuilds everything
stamp="$cc ${flags[*]}"
if [ "$(cat "$obj/flags" 2>/dev/null)" != "$stamp" ]; then rm -f "$obj"/*.o "$obj"/*.d; printf '%s' "$stamp" >"$obj/flags"; fi

# compile what is out of date (the .d files list each object's headers), two at a time
stale() {   # stale OBJ SRC: true when OBJ is older than SRC or than a header it was built with
  local o=$1 s=$2 d=${1%.o}.d
  [ -f "$o" ] && [ -f "$d" ] && [ "$o" -nt "$s" ] || return 0
  local h
  for h in $(sed -e 's/^[^:]*://' -e 's/\\$//' "$d"); do [ "$h" -nt "$o" ] && return 0; done
  return 1
}
pids=(); objs=(); n=0
for s in "${srcs[@]}"; do
  o=$obj/$(basename "${s%.c}").o
  objs+=("$o")
  if stale "$o" "$s"; then
    "$cc" "${flags[@]}" -MMD -MF "${o%.o}.d" -c "$s" -o "$o" & pids+=($!); n=$((n + 1))
    if [ ${#pids[@]} -ge "$(nproc)" ]; then wait "${pids[0]}" || exit 1; pids=("${pids[@]:1}"); fi
  fi
done
for p in "${pids[@]}"; do wait "$p" || exit 1; done
# objects of .c files that are gone are not linked (only this list is)
if [ $n -gt 0 ] || [ ! -f "$out" ] || [ "$build/libkiln.so" -nt "$out" ]; then
  "$cc" -shared -o "$out.tmp" "${objs[@]}" -L"$build" -lkiln -Wl,-rpath,"$build"
  mv "$out.tmp" "$out"
fi
echo "dev_build: $out ($n of ${#srcs[@]} recompiled; libkiln from $build)"

#!/usr/bin/env bash
# Installs the build to a temporary prefix and builds a small program against it as README shows:
# pkg-config + libkiln.so with an rpath, and libkiln.a linked statically. Both must run, the CUDA
# module must not be called missing from the build ("built without the CUDA backend") when the
# build made one, and without a GPU the default note must be the plain one-liner.
# Usage: test_install.sh BUILD_DIR SOURCE_DIR
set -u
B=$(cd "${1:?usage: test_install.sh BUILD_DIR SOURCE_DIR}" && pwd)
S=$(cd "${2:?usage: test_install.sh BUILD_DIR SOURCE_DIR}" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
P=$tmp/prefix
cmake --install "$B" --prefix "$P" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; bad "cmake --install"; exit 1; }
LIBDIR=$(dirname "$(find "$P" -name kiln.pc | head -1)")/..
LIBDIR=$(cd "$LIBDIR" && pwd)
export PKG_CONFIG_PATH=$LIBDIR/pkgconfig
cat >"$tmp/prog.c" <<'C'
#include <stdio.h>
#include <kiln/kiln.h>
int main(void) {
    kiln_model *m = kiln_sequential("m", KILN_SHAPE(4));
    kiln_layer_dense(m, &(kiln_dense_opts){ .units = 2 });
    kiln_compile(m, &(kiln_compile_opts){ .optimizer = kiln_sgd(0.1), .loss = KILN_LOSS_SPARSE_CATEGORICAL_CROSSENTROPY,
                                          .from_logits = true });
    kiln_dataset *d = kiln_dataset_synthetic(KILN_SHAPE(4), 2, 64, 1);
    kiln_eval_result r;
    if (kiln_model_status(m) != KILN_OK || kiln_evaluate(m, d, NULL, &r) != KILN_OK) { printf("error: %s\n", kiln_last_error()); return 1; }
    printf("evaluated %lld\nreason: %s\n", (long long)r.count, kiln_gpu_unavailable_reason());
    kiln_model_free(m);
    kiln_dataset_free(d);
    return 0;
}
C
CC=${CC:-cc}
$CC "$tmp/prog.c" $(pkg-config --cflags --libs kiln) -Wl,-rpath,"$LIBDIR" -o "$tmp/prog_shared" 2>"$tmp/cc1.log" || { cat "$tmp/cc1.log"; bad "shared link"; }
$CC "$tmp/prog.c" $(pkg-config --cflags kiln) $(pkg-config --static --libs kiln | sed 's/-lkiln /-l:libkiln.a /') \
    -o "$tmp/prog_static" 2>"$tmp/cc2.log" || { cat "$tmp/cc2.log"; bad "static link"; }
$CC "$tmp/prog.c" $(pkg-config --cflags kiln) $(pkg-config --static --libs kiln | sed 's/-lkiln /-l:libkiln.a /') \
    -Wl,-rpath,"$LIBDIR" -o "$tmp/prog_static_rpath" 2>"$tmp/cc3.log" || { cat "$tmp/cc3.log"; bad "static link with rpath"; }
if [ -x "$tmp/prog_static" ] && readelf -d "$tmp/prog_static" | grep -q "libkiln\.so"; then bad "prog_static needs libkiln.so"; fi
has_module=no
[ -e "$LIBDIR/libkiln_cuda.so" ] && has_module=yes
for p in prog_shared prog_static prog_static_rpath; do
  [ -x "$tmp/$p" ] || continue
  out=$(cd "$tmp" && env -u KILN_VERBOSE -u KILN_CUDA_MODULE "./$p" 2>&1); rc=$?
  [ $rc -eq 0 ] && grep -q "^evaluated 64$" <<<"$out" || bad "$p (rc $rc): $out"
  if [ $has_module = yes ] && grep -q "built without" <<<"$out"; then bad "$p: the build made libkiln_cuda.so, but: $out"; fi
  if grep -q "^reason: ." <<<"$out" && [ ! -e /proc/driver/nvidia/version ]; then
    [ "$(grep -c '^kiln: no GPU found; using the CPU$' <<<"$out")" -eq 1 ] || bad "$p: the default no-GPU note should be plain, once: $out"
  fi
  echo "$p: $(grep '^reason' <<<"$out")"
done
# with the module installed: the shared program and the static one linked with an rpath find it
# through the loader, and the static one placed in PREFIX/bin finds it in PREFIX/lib with no rpath
if [ $has_module = yes ] && [ -x "$tmp/prog_static" ]; then
  for p in prog_shared prog_static_rpath; do
    out=$(env -u KILN_CUDA_MODULE "$tmp/$p" 2>&1)
    grep -q "not found (looked in\|built without" <<<"$out" && bad "$p did not load $LIBDIR/libkiln_cuda.so: $out"
  done
  cp "$tmp/prog_static" "$P/bin/prog_static"
  out=$(env -u KILN_CUDA_MODULE "$P/bin/prog_static" 2>&1)
  grep -q "not found (looked in\|built without" <<<"$out" && bad "PREFIX/bin/prog_static did not find PREFIX/lib/libkiln_cuda.so: $out"
  KILN_VERBOSE=1 "$tmp/prog_static" >"$tmp/v.log" 2>&1
  echo "verbose, outside the prefix: $(grep '^kiln:' "$tmp/v.log")"
fi
[ $fail -eq 0 ] && echo "test_install: ok" || echo "test_install: FAILED"
exit $fail

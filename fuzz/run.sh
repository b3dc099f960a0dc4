#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) into build-fuzz/ and
# runs each for SECONDS (default 30) on a copy of its seed corpus (fuzz/corpus/TARGET, plus the
# inputs that once crashed it, fuzz/crashes/TARGET) with its dictionary (fuzz/TARGET.dict). Needs clang and Debian's libclang-rt-14-dev (libFuzzer runtime),
# libpng-dev, libjpeg62-turbo-dev, zlib1g-dev; the targets of the whole library (fuzz_onnx,
# fuzz_keras_json, fuzz_history_csv) also what CMakeLists.txt needs (cmake, libopenblas-dev,
# libcjson-dev, libprotobuf-c-dev protobuf-c-compiler libonnx-dev; libdnnl-dev when found).
#   bash fuzz/run.sh            # 30 s each
#   bash fuzz/run.sh 3600       # an hour each
#   FUZZ_TARGETS="fuzz_images" FUZZ_JOBS=4 bash fuzz/run.sh 600
#   FUZZ_KEEP_GOING=1 FUZZ_TARGETS=fuzz_onnx bash fuzz/run.sh 600   # past crashes, keeping each
# A crash leaves crash-* / leak-* / timeout-* / oom-* files in build-fuzz/ and makes the script
# fail; reproduce with: build-fuzz/fuzz_images build-fuzz/crash-<hash>
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-30}
CC=${CC_FUZZ:-$(command -v clang || command -v clang-14 || true)}
if [ -z "$CC" ]; then echo "fuzz: clang not found (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; fi
out=build-fuzz
mkdir -p "$out"
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cflags="-std=gnu11 -g -O1 $san -Iinclude -Isrc "
libs="-lpng -ljpeg -lz -lm -lpthread"
targets=${FUZZ_TARGETS:-"fuzz_idx fuzz_cifar fuzz_images fuzz_safetensors fuzz_npz fuzz_csv fuzz_onnx fuzz_keras_json fuzz_history_csv fuzz_tokenizer"}
lib_targets=" fuzz_onnx fuzz_keras_json fuzz_history_csv fuzz_tokenizer "   # these link the whole library

# core/data/io with coverage instrumentation (no libFuzzer main), once, for the loader targets
objs=()
need_objs=""
for t in $targets; do case "$lib_targets" in *" $t "*) ;; *) need_objs=1 ;; esac; done
for s in ${need_objs:+src/core/*.c src/data/*.c src/io/*.c}; do
  o="$out/$(echo "$s" | tr / _).o"
  if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ "$(find src/data src/core src/io include -name '*.h' -newer "$o" | head -1)" ]; then
    $CC $cflags -fsanitize=fuzzer-no-link -c "$s" -o "$o"
  fi
  objs+=("$o")
done

# the whole library's targets: built by CMake in build-fuzz-lib (-DKILN_FUZZ=ON, fuzz/fuzz.cmake)
# against kiln_static, which is compiled there sanitized and coverage-instrumented, without OpenMP
# (the fuzzers run one thread; clang would need libomp) and only as far as these targets need it.
# make rebuilds only what changed.
libdir=build-fuzz-lib
want=()
for t in $targets; do case "$lib_targets" in *" $t "*) want+=("$t") ;; esac; done
if [ ${#want[@]} -gt 0 ]; then
  if [ ! -f "$libdir/CMakeCache.txt" ] || [ fuzz/run.sh -nt "$libdir/CMakeCache.txt" ]; then
    cmake -S . -B "$libdir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER="$CC" -DKILN_FUZZ=ON -DKILN_SANITIZE=ON \
      -DKILN_CUDA=OFF -DKILN_CUDA_SIM=OFF -DKILN_BENCH=OFF -DKILN_NATIVE=OFF -DKILN_MPI=OFF \
      -DCMAKE_DISABLE_FIND_PACKAGE_OpenMP=ON -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g" \
      -DCMAKE_C_FLAGS="-fsanitize=fuzzer-no-link -Wno-unknown-pragmas" >"$out/lib-cmake.log" ||
      { cat "$out/lib-cmake.log" >&2; echo "fuzz: configuring $libdir failed" >&2; exit 1; }
    touch "$libdir/CMakeCache.txt"
  fi
  start=$(date +%s)
  cmake --build "$libdir" --target "${want[@]}" -j"$(nproc)" >"$out/lib-build.log" 2>&1 ||
    { tail -30 "$out/lib-build.log" >&2; echo "fuzz: building ${want[*]} in $libdir failed (see $out/lib-build.log)" >&2; exit 1; }
  echo "fuzz: ${want[*]} built in $libdir ($(( $(date +%s) - start )) s)"
fi

# files a target leaves in /dev/shm or /tmp (named kiln_fuzz*), and the inputs libFuzzer keeps
leftovers() { { find /dev/shm /tmp -maxdepth 1 -name 'kiln_fuzz*' 2>/dev/null || true; } | sort; }
artifacts() { find "$out" -maxdepth 1 -newer "$out/.started" \( -name 'crash-*' -o -name 'leak-*' -o -name 'oom-*' -o -name 'timeout-*' \) -printf '%f '; }
status=0
opts=""
if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then opts="-fork=$FUZZ_JOBS"; fi
# FUZZ_KEEP_GOING=1: fuzz the whole time past crashes (fork mode), keeping every crashing input;
# the script still fails if there was one
if [ -n "${FUZZ_KEEP_GOING:-}" ]; then opts="-fork=${FUZZ_JOBS:-1} -ignore_crashes=1 -ignore_ooms=1 -ignore_timeouts=1"; fi
for t in $targets; do
  max_len=65536
  case "$lib_targets" in
    *" $t "*) cp -p "$libdir/$t" "$out/$t" ;;
    *) $CC $cflags -fsanitize=fuzzer "fuzz/$t.c" "${objs[@]}" $libs -o "$out/$t" ;;
  esac
  if [ "$t" = fuzz_onnx ]; then max_len=131072; fi   # the zoo seeds reach 92 KB
  corpus="$out/corpus_$t"
  mkdir -p "$corpus"
  cp -n fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  cp -n fuzz/crashes/"$t"/* "$corpus"/ 2>/dev/null || true   # inputs that crashed once: regressions
  dict=""
  if [ -f "fuzz/$t.dict" ]; then dict="-dict=$PWD/fuzz/$t.dict"; fi
  left_before=$(leftovers)
  touch "$out/.started"
  echo "fuzz: $t for ${secs}s"
  rc=0
  (cd "$out" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    "./$t" -max_total_time="$secs" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
    $opts $dict -print_final_stats=1 "corpus_$t" 2>"$t.log") || rc=$?
  new_arts=$(artifacts)
  if [ "$rc" -ne 0 ] || [ -n "${new_arts// /}" ]; then
    echo "fuzz: $t FAILED (see $out/$t.log${new_arts:+; inputs kept: $new_arts})" >&2
    if [ -z "${FUZZ_KEEP_GOING:-}" ]; then tail -40 "$out/$t.log" >&2; fi
    status=1
  fi
  # the totals (in fork mode the parent's last status line)
  grep -E "^(stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)" "$out/$t.log" | sed "s/^/fuzz: $t /" ||
    grep -E "^#[0-9]+: cov" "$out/$t.log" | tail -1 | sed "s/^/fuzz: $t /" || true
  left=$(comm -13 <(echo "$left_before") <(leftovers))
  if [ -n "$left" ]; then   # a target must not leave files behind (removed after saying so)
    echo "fuzz: $t left files behind: $(echo "$left" | head -5 | tr '\n' ' ')" >&2
    echo "$left" | xargs rm -f
    status=1
  fi
done
exit $status

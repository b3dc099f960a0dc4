#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, -fsanitize=fuzzer,address,undefined) into build-fuzz/ and
# runs each for SECONDS (default 30) on a copy of its seed corpus. Needs clang and Debian's
# libclang-rt-14-dev (libFuzzer runtime), libpng-dev, libjpeg62-turbo-dev, zlib1g-dev.
#   bash fuzz/run.sh            # 30 s each
#   bash fuzz/run.sh 3600       # an hour each
#   FUZZ_TARGETS="fuzz_images" FUZZ_JOBS=4 bash fuzz/run.sh 600
# A crash leaves crash-* / leak-* / timeout-* files in build-fuzz/ and makes the script fail;
# reproduce with: build-fuzz/fuzz_images build-fuzz/crash-<hash>
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
lib_src=(src/core/*.c src/data/*.c src/io/*.c)
# the library with coverage instrumentation (no libFuzzer main), once
objs=()
for s in "${lib_src[@]}"; do
  o="$out/$(echo "$s" | tr / _).o"
  if [ ! -f "$o" ] || [ "$s" -nt "$o" ] || [ "$(find src/data src/core src/io include -name '*.h' -newer "$o" | head -1)" ]; then
    $CC $cflags -fsanitize=fuzzer-no-link -c "$s" -o "$o"
  fi
  objs+=("$o")
done
targets=${FUZZ_TARGETS:-"fuzz_idx fuzz_cifar fuzz_images fuzz_safetensors fuzz_npz fuzz_csv"}
# files a target leaves in /dev/shm or /tmp (named kiln_fuzz*)
leftovers() { { find /dev/shm /tmp -maxdepth 1 -name 'kiln_fuzz*' 2>/dev/null || true; } | wc -l; }
status=0
jobs=""
if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then jobs="-fork=$FUZZ_JOBS"; fi
for t in $targets; do
  $CC $cflags -fsanitize=fuzzer "fuzz/$t.c" "${objs[@]}" $libs -o "$out/$t"
  corpus="$out/corpus_$t"
  mkdir -p "$corpus"
  cp -n fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  dict=""
  if [ -f "fuzz/$t.dict" ]; then dict="-dict=$PWD/fuzz/$t.dict"; fi
  left_before=$(leftovers)
  echo "fuzz: $t for ${secs}s"
  if ! (cd "$out" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "./$t" -max_total_time="$secs" -max_len=65536 -rss_limit_mb=2048 -timeout=10 \
        $jobs $dict -print_final_stats=1 "corpus_$t" 2>"$t.log"); then
    echo "fuzz: $t FAILED (see $out/$t.log)" >&2
    tail -40 "$out/$t.log" >&2
    status=1
  else
    grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)" "$out/$t.log" | sed "s/^/fuzz: $t /" || true
  fi
  if [ "$(leftovers)" -gt "$left_before" ]; then   # a target must not leave files behind
    echo "fuzz: $t left files behind: $({ find /dev/shm /tmp -maxdepth 1 -name 'kiln_fuzz*' 2>/dev/null || true; } | head -5 | tr '\n' ' ')" >&2
    status=1
  fi
done
exit $status

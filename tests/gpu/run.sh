#!/usr/bin/env bash
# The GPU machine's one script (H200, sm_90; nvcc, cuBLAS, cuDNN as Python wheels, PyTorch; no apt,
# no network). Run from the repository root:
#     tests/gpu/run.sh
# 1. reports what the machine has (GPU, driver, nvcc, cuDNN wheel, OpenBLAS, zlib, torch)
# 2. configures and builds Kiln with the CUDA backend for sm_90 in build-gpu
# 3. runs the op conformance test (cuda vs ref): build-gpu/test_ops, again with our pooling and
#    batch-norm kernels in place of cuDNN's (KILN_CUDA_OWN_POOL_NORM=1), and test_cudasim_large
# 4. trains fashion_cnn 2 epochs with seed 1 on the GPU and on the CPU; test accuracies must agree
#    within 0.5 points
# 4b. mixed precision: test_ops with every f32 case also in f16 and bf16 (KILN_TEST_HALF=1), and
#    fashion_cnn 2 epochs with --precision mixed_bfloat16 on the GPU: within 0.5 points of f32's
# 5. runs `kiln bench` (f32, and --precision mixed_bfloat16) and the PyTorch peer (eager +
#    torch.compile), prints a short table
# 6. data parallelism: NCCL with one rank (test_mirrored --one), 2 replicas == 1 GPU when there
#    are two GPUs (test_mirrored), 2 MPI ranks on the GPU == 1 process when mpirun exists
# Everything under a global deadline (default 470 s; KILN_GPU_DEADLINE=seconds); each step gets a
# timeout from what is left. Output goes to $OUT/gpu_results.txt when $OUT is set (else
# build-gpu/gpu_results.txt). Exit status: 0 when every check that ran passed.
# Environment knobs: KILN_FASHION_DIR (Fashion-MNIST .gz folder), KILN_GPU_CMAKE_ARGS (extra
# cmake arguments, e.g. -DOPENBLAS_LIBRARY=... for a carried OpenBLAS), KILN_GPU_SKIP_BUILD=1,
# KILN_GPU_BUILD_DIR (default build-gpu), KILN_GPU_TRAIN_ARGS / KILN_GPU_BENCH_ARGS (extra
# arguments, e.g. "--limit 1000" / "--steps 2" for a rehearsal on the CUDA simulator:
#     KILN_CUDA_MODULE=$PWD/build/libkiln_cuda_sim.so KILN_GPU_BUILD_DIR=$PWD/build \
#     KILN_GPU_SKIP_BUILD=1 KILN_GPU_TRAIN_ARGS="--limit 1000" KILN_GPU_BENCH_ARGS="--steps 2" tests/gpu/run.sh)
set -u
START=$(date +%s)
DEADLINE=$((START + ${KILN_GPU_DEADLINE:-470}))
ROOT=$(pwd)
BUILD=${KILN_GPU_BUILD_DIR:-$ROOT/build-gpu}
mkdir -p "$BUILD"
RESULTS=${OUT:+$OUT/gpu_results.txt}
RESULTS=${RESULTS:-$BUILD/gpu_results.txt}
: > "$RESULTS"
LOGDIR=${OUT:-$BUILD}

say() { echo "$*" | tee -a "$RESULTS"; }
left() { echo $((DEADLINE - $(date +%s))); }
# tmo SECONDS: min(SECONDS, time left - 5), at least 1
tmo() { local l; l=$(( $(left) - 5 )); [ "$l" -lt 1 ] && l=1; [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }

declare -A ROW
FAILS=0
status() { ROW[$1]="$2"; case "$2" in FAIL*|TIMEOUT*) FAILS=$((FAILS + 1));; esac; }

say "== Kiln GPU run $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname) =="
# ---- 0. libraries and data carried from the Debian machine (tests/gpu/carry.sh) ----
if [ -f "$ROOT/.gpu-carry/deps.tar.xz" ]; then
  DEPS=/tmp/kiln-deps/deps
  mkdir -p /tmp/kiln-deps && tar -C /tmp/kiln-deps -xJf "$ROOT/.gpu-carry/deps.tar.xz"
  export LD_LIBRARY_PATH="$DEPS/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  KILN_GPU_CMAKE_ARGS="-DOPENBLAS_INCLUDE_DIR=$DEPS/include -DOPENBLAS_LIBRARY=$DEPS/lib/libopenblas.so \
    -DZLIB_INCLUDE_DIR=$DEPS/include -DZLIB_LIBRARY=$DEPS/lib/libz.so -DPNG_PNG_INCLUDE_DIR=$DEPS/include \
    -DPNG_LIBRARY=$DEPS/lib/libpng16.so -DJPEG_INCLUDE_DIR=$DEPS/include -DJPEG_LIBRARY=$DEPS/lib/libjpeg.so \
    -DCMAKE_BUILD_RPATH=$DEPS/lib ${KILN_GPU_CMAKE_ARGS:-}"
  say "deps: carried OpenBLAS/zlib/libpng/libjpeg unpacked in $DEPS"
fi
[ -z "${KILN_FASHION_DIR:-}" ] && [ -f "$ROOT/.gpu-carry/fashion-mnist/train-images-idx3-ubyte.gz" ] && export KILN_FASHION_DIR="$ROOT/.gpu-carry/fashion-mnist"
# ---- 1. the machine ----
if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv,noheader 2>&1 | sed 's/^/gpu: /' | tee -a "$RESULTS"
else
  say "gpu: nvidia-smi not found"
fi
NVCC=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
say "nvcc: ${NVCC:-not found} $( [ -n "$NVCC" ] && "$NVCC" --version | tail -1)"
PY=$(command -v python3 || true)
say "python3: ${PY:-not found}"
CUDNN_LIBDIR=""
WHEEL_LIBDIRS=""
if [ -n "$PY" ]; then
  say "torch: $("$PY" -c 'import torch; print(torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())' 2>&1 | tail -1)"
  # nvidia wheels' lib dirs (cudnn, cublas, nccl, ...)
  WHEEL_LIBDIRS=$("$PY" - <<'EOF' 2>/dev/null
import site, sys, os, glob
seen = []
for s in site.getsitepackages() + sys.path:
    for d in glob.glob(os.path.join(s, "nvidia", "*", "lib")) + glob.glob(os.path.join(s, "nvidia", "cu13", "lib")):
        if os.path.isdir(d) and d not in seen:
            seen.append(d)
print(":".join(seen))
EOF
)
  CUDNN_LIBDIR=$(echo "$WHEEL_LIBDIRS" | tr ':' '\n' | grep -m1 cudnn || true)
fi
say "cuDNN wheel lib: ${CUDNN_LIBDIR:-not found} $( [ -n "$CUDNN_LIBDIR" ] && cd "$CUDNN_LIBDIR" 2>/dev/null && echo libcudnn.so* )"
for lib in openblas z; do
  if ldconfig -p 2>/dev/null | grep -q "lib$lib\.so"; then say "lib$lib: $(ldconfig -p | grep -m1 "lib$lib\.so" | awk '{print $NF}')"; else say "lib$lib: NOT FOUND (pass its location in KILN_GPU_CMAKE_ARGS)"; fi
done
[ -f /usr/include/cblas.h ] || ls /usr/include/*/cblas.h >/dev/null 2>&1 || say "cblas.h: NOT FOUND in /usr/include"
[ -f /usr/include/zlib.h ] || say "zlib.h: NOT FOUND in /usr/include"
export LD_LIBRARY_PATH="${WHEEL_LIBDIRS:+$WHEEL_LIBDIRS:}${LD_LIBRARY_PATH:-}"
JOBS=$(nproc 2>/dev/null || echo 8)

# ---- 2. build ----
if [ "${KILN_GPU_SKIP_BUILD:-0}" != 1 ]; then
  GEN=""
  command -v ninja >/dev/null && GEN="-G Ninja"
  [ -f "$BUILD/CMakeCache.txt" ] && GEN=""
  say "-- configure (build-gpu)"
  # shellcheck disable=SC2086
  timeout "$(tmo 90)" cmake -S "$ROOT" -B "$BUILD" $GEN -DCMAKE_BUILD_TYPE=Release -DKILN_CUDA_ARCHS="90-real;90-virtual" \
      ${PY:+-DKILN_PYTHON=$PY} ${KILN_GPU_CMAKE_ARGS:-} > "$LOGDIR/gpu_configure.log" 2>&1
  rc=$?
  grep -E "CUDA|cuDNN|NCCL|OpenBLAS|Error|error" "$LOGDIR/gpu_configure.log" | head -20 | tee -a "$RESULTS"
  if [ $rc -ne 0 ]; then status build "FAIL (configure rc $rc; see gpu_configure.log)"; fi
  if [ $rc -eq 0 ]; then
    say "-- build (-j$JOBS)"
    timeout "$(tmo 240)" cmake --build "$BUILD" -j "$JOBS" > "$LOGDIR/gpu_build.log" 2>&1
    rc=$?
    grep -iE "warning|error" "$LOGDIR/gpu_build.log" | grep -v "test_errors" | head -20 | tee -a "$RESULTS"
    if [ $rc -eq 0 ]; then status build "ok ($(( $(date +%s) - START )) s)"
    elif [ $rc -eq 124 ]; then status build "TIMEOUT"
    else status build "FAIL (rc $rc; see gpu_build.log)"; tail -20 "$LOGDIR/gpu_build.log" | tee -a "$RESULTS"; fi
  fi
else
  status build "skipped (KILN_GPU_SKIP_BUILD=1)"
fi
[ -f "$BUILD/libkiln_cuda.so" ] && say "module: $BUILD/libkiln_cuda.so ($(nm -D --defined-only "$BUILD/libkiln_cuda.so" | grep -c kiln_cuda) exported kiln_cuda symbols)" \
  || say "module: libkiln_cuda.so NOT BUILT"
KILN=$BUILD/kiln
[ -x "$KILN" ] && { say "-- kiln devices"; timeout "$(tmo 30)" "$KILN" devices 2>&1 | tee -a "$RESULTS"; }

# ---- 3. op conformance (cuda vs ref) ----
if [ -x "$BUILD/test_ops" ]; then
  say "-- test_ops"
  timeout "$(tmo 120)" "$BUILD/test_ops" > "$LOGDIR/gpu_test_ops.log" 2>&1
  rc=$?
  grep -E "^FAIL|cuda|passed|failed|skipped|cuDNN cannot" "$LOGDIR/gpu_test_ops.log" | head -40 | tee -a "$RESULTS"
  tail -3 "$LOGDIR/gpu_test_ops.log" | tee -a "$RESULTS"
  if [ $rc -eq 0 ]; then status test_ops "ok"; elif [ $rc -eq 124 ]; then status test_ops "TIMEOUT"; else status test_ops "FAIL (rc $rc, $(grep -c '^FAIL' "$LOGDIR/gpu_test_ops.log") failures)"; fi
else
  status test_ops "FAIL (not built)"
fi

if [ -x "$BUILD/test_ops" ] && [ "$(left)" -gt 200 ]; then   # our pooling / batch-norm kernels where cuDNN's run by default
  say "-- test_ops with KILN_CUDA_OWN_POOL_NORM=1"
  KILN_CUDA_OWN_POOL_NORM=1 timeout "$(tmo 120)" "$BUILD/test_ops" > "$LOGDIR/gpu_test_ops_own.log" 2>&1
  rc=$?
  grep -E "^FAIL" "$LOGDIR/gpu_test_ops_own.log" | head -20 | tee -a "$RESULTS"
  tail -1 "$LOGDIR/gpu_test_ops_own.log" | tee -a "$RESULTS"
  if [ $rc -eq 0 ]; then status test_ops_own "ok"; else status test_ops_own "FAIL (rc $rc)"; fi
fi

LARGE=$BUILD/tests/cudasim/test_cudasim_large   # multi-block / multi-pass shapes, cuda vs ref
if [ -x "$LARGE" ]; then
  say "-- test_cudasim_large (on the real GPU)"
  timeout "$(tmo 60)" "$LARGE" > "$LOGDIR/gpu_test_large.log" 2>&1
  rc=$?
  tail -3 "$LOGDIR/gpu_test_large.log" | tee -a "$RESULTS"
  if [ $rc -eq 0 ]; then status test_large "ok"; else status test_large "FAIL (rc $rc)"; fi
fi

# ---- 4. fashion_cnn GPU vs CPU ----
DATA=""
for d in "${KILN_FASHION_DIR:-}" "$ROOT/data/fashion-mnist" "$ROOT/data/fashion" "$ROOT/data/fashion_mnist" /usr/share/datasets/fashion-mnist; do
  [ -n "$d" ] && [ -f "$d/train-images-idx3-ubyte.gz" ] && { DATA=$d; break; }
done
acc_of() { grep -oE "Test accuracy: [0-9.]+" "$1" | tail -1 | awk '{print $3}'; }
if [ -z "$DATA" ] || [ ! -x "$KILN" ]; then
  status accuracy "FAIL (no Fashion-MNIST folder: set KILN_FASHION_DIR)"
  [ -x "$KILN" ] || status accuracy "FAIL (kiln not built)"
else
  say "-- kiln train fashion_cnn, 2 epochs, seed 1, data $DATA"
  T0=$(date +%s)
  timeout "$(tmo 120)" "$KILN" train --device gpu --data "$DATA" --epochs 2 --seed 1 ${KILN_GPU_TRAIN_ARGS:-} > "$LOGDIR/gpu_train_gpu.log" 2>&1
  rg=$?; TG=$(( $(date +%s) - T0 ))
  tail -4 "$LOGDIR/gpu_train_gpu.log" | tee -a "$RESULTS"
  T0=$(date +%s)
  timeout "$(tmo 180)" "$KILN" train --device cpu --data "$DATA" --epochs 2 --seed 1 ${KILN_GPU_TRAIN_ARGS:-} > "$LOGDIR/gpu_train_cpu.log" 2>&1
  rc=$?; TC=$(( $(date +%s) - T0 ))
  tail -4 "$LOGDIR/gpu_train_cpu.log" | tee -a "$RESULTS"
  AG=$(acc_of "$LOGDIR/gpu_train_gpu.log"); AC=$(acc_of "$LOGDIR/gpu_train_cpu.log")
  if [ $rg -ne 0 ] || [ -z "$AG" ]; then status accuracy "FAIL (gpu run rc $rg)"
  elif [ $rc -ne 0 ] || [ -z "$AC" ]; then status accuracy "FAIL (cpu run rc $rc; gpu ${AG}%)"
  else
    if awk -v a="$AG" -v b="$AC" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.5) }'; then
      status accuracy "ok (gpu ${AG}% in ${TG} s, cpu ${AC}% in ${TC} s)"
    else
      status accuracy "FAIL (gpu ${AG}% vs cpu ${AC}%: more than 0.5 points apart)"
    fi
  fi
fi

# ---- 4b. mixed precision (bf16) ----
if [ -x "$BUILD/test_ops" ] && [ "$(left)" -gt 240 ]; then
  say "-- test_ops with KILN_TEST_HALF=1 (f16 and bf16, mixed conv/matmul with f32 accumulation)"
  KILN_TEST_HALF=1 timeout "$(tmo 120)" "$BUILD/test_ops" > "$LOGDIR/gpu_test_ops_half.log" 2>&1
  rc=$?
  grep -E "^FAIL" "$LOGDIR/gpu_test_ops_half.log" | head -20 | tee -a "$RESULTS"
  tail -1 "$LOGDIR/gpu_test_ops_half.log" | tee -a "$RESULTS"
  if [ $rc -eq 0 ]; then status test_ops_half "ok"; elif [ $rc -eq 124 ]; then status test_ops_half "TIMEOUT"; else status test_ops_half "FAIL (rc $rc)"; fi
fi
if [ -n "$DATA" ] && [ -x "$KILN" ] && [ -n "${AG:-}" ] && [ "$(left)" -gt 120 ]; then
  say "-- kiln train fashion_cnn, 2 epochs, seed 1, --precision mixed_bfloat16 on the GPU"
  T0=$(date +%s)
  timeout "$(tmo 120)" "$KILN" train --device gpu --data "$DATA" --epochs 2 --seed 1 --precision mixed_bfloat16 ${KILN_GPU_TRAIN_ARGS:-} \
      > "$LOGDIR/gpu_train_bf16.log" 2>&1
  rb=$?; TB=$(( $(date +%s) - T0 ))
  tail -4 "$LOGDIR/gpu_train_bf16.log" | tee -a "$RESULTS"
  AB=$(acc_of "$LOGDIR/gpu_train_bf16.log")
  if [ $rb -ne 0 ] || [ -z "$AB" ]; then status accuracy_bf16 "FAIL (rc $rb)"
  elif awk -v a="$AB" -v b="$AG" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.5) }'; then
    status accuracy_bf16 "ok (bf16 ${AB}% in ${TB} s vs f32 ${AG}%)"
  else
    status accuracy_bf16 "FAIL (bf16 ${AB}% vs f32 ${AG}%: more than 0.5 points apart)"
  fi
fi

# ---- 5. benchmarks ----
if [ -x "$KILN" ]; then
  say "-- kiln bench"
  timeout "$(tmo 150)" "$KILN" bench ${KILN_GPU_BENCH_ARGS:-} > "$LOGDIR/gpu_bench.log" 2>&1
  rc=$?
  tail -15 "$LOGDIR/gpu_bench.log" | tee -a "$RESULTS"
  if [ $rc -eq 0 ]; then status kiln_bench "ok"; elif [ $rc -eq 124 ]; then status kiln_bench "TIMEOUT"; else status kiln_bench "FAIL (rc $rc)"; fi
fi
if [ -x "$KILN" ] && [ "$(left)" -gt 90 ]; then
  say "-- kiln bench --device gpu --precision mixed_bfloat16"
  timeout "$(tmo 60)" "$KILN" bench --device gpu --precision mixed_bfloat16 ${KILN_GPU_BENCH_ARGS:-} > "$LOGDIR/gpu_bench_bf16.log" 2>&1
  rc=$?
  tail -4 "$LOGDIR/gpu_bench_bf16.log" | tee -a "$RESULTS"
  if [ $rc -eq 0 ]; then status kiln_bench_bf16 "ok"; elif [ $rc -eq 124 ]; then status kiln_bench_bf16 "TIMEOUT"; else status kiln_bench_bf16 "FAIL (rc $rc)"; fi
fi
if [ -x "$KILN" ] && [ "$(left)" -gt 60 ]; then   # where the GPU step's time goes (for the next tuning round)
  say "-- per-op GPU kernel times (KILN_PROFILE=1 kiln bench --device gpu --steps 10; kernels synchronised one by one)"
  KILN_PROFILE=1 timeout "$(tmo 40)" "$KILN" bench --device gpu --steps 10 > "$LOGDIR/gpu_profile.log" 2>&1
  grep -A12 "kiln profile" "$LOGDIR/gpu_profile.log" | head -26 | tee -a "$RESULTS"
fi
if [ -n "$PY" ] && [ "$(left)" -gt 30 ]; then
  say "-- PyTorch peer (cifar_cnn batch 128, eager + torch.compile)"
  PYTHONUNBUFFERED=1 timeout "$(tmo 150)" "$PY" "$ROOT/bench/peers/cifar_cnn_torch_gpu.py" --device cuda > "$LOGDIR/gpu_torch.log" 2>&1
  rc=$?
  grep -E "^torch|^RESULT" "$LOGDIR/gpu_torch.log" | tee -a "$RESULTS"
  E=$(grep -oE "mode=eager device=cuda images_per_s=[0-9]+" "$LOGDIR/gpu_torch.log" | grep -oE "[0-9]+$")
  C=$(grep -oE "mode=compile device=cuda images_per_s=[0-9]+" "$LOGDIR/gpu_torch.log" | grep -oE "[0-9]+$")
  if [ -n "$E" ]; then status torch_peer "eager $E img/s${C:+, compile $C img/s}"; else status torch_peer "FAIL (rc $rc)"; fi
  # Kiln's GPU training images/s over PyTorch's, same model, batch and GPU (goal: >= 1.5x eager, >= 1.0x compile)
  K=$(grep -oE "RESULT peer=kiln model=cifar_cnn device=gpu train_ips=[0-9.]+" "$LOGDIR/gpu_bench.log" 2>/dev/null | grep -oE "[0-9.]+$")
  if [ -n "$K" ] && [ -n "$E" ]; then
    r() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2fx", a / b }'; }
    status kiln_vs_torch "kiln $K img/s: $(r "$K" "$E") eager${C:+, $(r "$K" "$C") torch.compile}"
  fi
else
  status torch_peer "skipped (no python3 or no time left)"
fi

# ---- 6. data parallelism (issue 11): NCCL with one rank; 2 replicas == 1 device ----
MIRR=$BUILD/tests/cudasim/test_mirrored
if [ -x "$MIRR" ] && [ "$(left)" -gt 20 ]; then
  NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || echo 1)
  say "-- NCCL, one rank (test_mirrored --one: libnccl from the wheels, 1-rank all-reduce, devices gpu:0)"
  timeout "$(tmo 60)" "$MIRR" --one > "$LOGDIR/gpu_nccl_one.log" 2>&1
  rc=$?
  tail -3 "$LOGDIR/gpu_nccl_one.log" | tee -a "$RESULTS"
  if [ $rc -eq 0 ]; then status nccl_1gpu "ok"; else status nccl_1gpu "FAIL (rc $rc)"; fi
  if [ "$NGPU" -ge 2 ]; then
    say "-- 2 replicas (MirroredStrategy, NCCL) == 1 GPU (test_mirrored)"
    timeout "$(tmo 90)" "$MIRR" > "$LOGDIR/gpu_mirrored.log" 2>&1
    rc=$?
    grep -E "x 32 vs|resumed|test_mirrored" "$LOGDIR/gpu_mirrored.log" | tee -a "$RESULTS"
    if [ $rc -eq 0 ]; then status mirrored_2 "ok"; else status mirrored_2 "FAIL (rc $rc)"; fi
  else
    status mirrored_2 "skipped (one GPU: NCCL takes one GPU per replica)"
  fi
  # two MPI ranks sharing the one GPU (gradients through host memory) == one process
  MPIRUN=$(command -v mpirun || true)
  if [ -n "$MPIRUN" ] && [ -x "$BUILD/test_dist_mpi" ]; then
    say "-- 2 MPI ranks on the GPU == 1 process (test_dist_mpi)"
    ROOTFLAG=""; [ "$(id -u)" = 0 ] && ROOTFLAG=--allow-run-as-root
    timeout "$(tmo 90)" "$MPIRUN" -np 2 --oversubscribe $ROOTFLAG "$BUILD/test_dist_mpi" > "$LOGDIR/gpu_mpi.log" 2>&1
    rc=$?
    grep -E "x 32 vs|test_dist_mpi" "$LOGDIR/gpu_mpi.log" | tee -a "$RESULTS"
    if [ $rc -eq 0 ]; then status mpi_2ranks "ok"; else status mpi_2ranks "FAIL (rc $rc)"; fi
  else
    status mpi_2ranks "skipped (no mpirun or no MPI build)"
  fi
fi

# ---- table ----
say ""
say "== summary ($(( $(date +%s) - START )) s) =="
for k in build test_ops test_ops_own test_large accuracy test_ops_half accuracy_bf16 kiln_bench kiln_bench_bf16 torch_peer kiln_vs_torch nccl_1gpu mirrored_2 mpi_2ranks; do
  printf "%-16s %s\n" "$k" "${ROW[$k]:-not run}" | tee -a "$RESULTS"
done
say "results: $RESULTS"
[ $FAILS -eq 0 ]

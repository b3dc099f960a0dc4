#!/usr/bin/env bash
# CLI checks: help texts, devices (and the one-line no-GPU message), summary, a short training
# run, errors that name the problem. Usage: test_cli.sh path/to/kiln [path/to/libkiln_cuda_sim.so]
set -u
K=${1:?usage: test_cli.sh path/to/kiln [path/to/libkiln_cuda_sim.so]}
SIM=${2:-}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
expect() {   # expect "description" "pattern" command... : exit status 0 and output matching pattern
  local what=$1 pat=$2; shift 2
  local out; out=$("$@" 2>&1); local rc=$?
  if [ $rc -eq 0 ] && grep -qE -- "$pat" <<<"$out"; then ok; else bad "$what (rc $rc): $(head -c 600 <<<"$out")"; fi
}
expect_fail() {   # non-zero exit and output matching pattern
  local what=$1 pat=$2; shift 2
  local out; out=$("$@" 2>&1); local rc=$?
  if [ $rc -ne 0 ] && grep -qE -- "$pat" <<<"$out"; then ok; else bad "$what (rc $rc): $(head -c 600 <<<"$out")"; fi
}

expect "kiln --help" "commands:" "$K" --help
expect "kiln --version" "^kiln [0-9]" "$K" --version
for c in train eval predict summary devices bench; do expect "kiln $c --help" "usage: kiln $c" "$K" "$c" --help; done
expect_fail "unknown command" "unknown command" "$K" frobnicate
expect "devices lists the CPU" "/device:CPU:0" "$K" devices
expect "devices says whether a GPU is there" "GPU available: (yes|no \(.+\))" "$K" devices
CUDA_VISIBLE_DEVICES= expect "CUDA_VISIBLE_DEVICES= hides GPUs" "GPU available: no \(CUDA_VISIBLE_DEVICES is empty" "$K" devices
if [ -n "$SIM" ]; then   # two simulated GPUs: both listed, each with its own index
  out=$(CUSIM_DEVICES=2 KILN_CUDA_MODULE="$SIM" "$K" devices 2>&1)
  if grep -q "^/device:GPU:0  Kiln CUDA simulator" <<<"$out" && grep -q "^/device:GPU:1  Kiln CUDA simulator" <<<"$out" &&
     [ "$(grep -c "^/device:GPU:" <<<"$out")" -eq 2 ] && grep -q "GPU available: yes" <<<"$out"; then ok
  else bad "devices with CUSIM_DEVICES=2 should list GPU:0 and GPU:1: $out"; fi
  CUSIM_DEVICES=0 KILN_CUDA_MODULE="$SIM" expect "no simulated GPU: says why" "GPU available: no \(cudaGetDeviceCount: no CUDA-capable device" "$K" devices
fi
expect "summary counts fashion_cnn's parameters" "421,?642" "$K" summary --model fashion_cnn
expect_fail "missing dataset names the apt-get package" "apt-get install dataset-fashion-mnist" "$K" train --data "$tmp/none" --epochs 1
expect_fail "missing checkpoint names the file" "$tmp/none.safetensors" "$K" eval --load "$tmp/none.safetensors" --data synthetic
expect_fail "bad option" "unknown option" "$K" train --frobnicate 3

# a short run on synthetic data: trains, saves, says once why there is no GPU (when there is none)
out=$("$K" train --model mlp --data synthetic --epochs 1 --limit 2048 --batch-size 64 --save "$tmp/m.safetensors" --history "$tmp/h.csv" 2>&1)
rc=$?
if [ $rc -eq 0 ] && grep -q "Test accuracy" <<<"$out"; then ok; else bad "short training run (rc $rc): $out"; fi
if "$K" devices | grep -q "GPU available: no"; then
  # plain by default; with the reason under KILN_VERBOSE=1 or when an NVIDIA driver is loaded
  n=$(grep -cE "^kiln: no GPU (found|used \(.*\)); using the CPU$" <<<"$out")
  [ "$n" -eq 1 ] && ok || bad "the no-GPU line should appear exactly once, got $n: $out"
  if [ ! -e /proc/driver/nvidia/version ] && [ -z "${KILN_VERBOSE:-}" ]; then
    grep -q "^kiln: no GPU found; using the CPU$" <<<"$out" && ok || bad "the default no-GPU line should be plain: $out"
  fi
fi
head -1 "$tmp/h.csv" | grep -q "^epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds,images_per_sec" && ok || bad "history header: $(head -1 "$tmp/h.csv")"
[ "$(wc -l < "$tmp/h.csv")" -eq 2 ] && ok || bad "history rows"
expect "eval of the saved model" "accuracy" "$K" eval --load "$tmp/m.safetensors" --data synthetic
expect_fail "checkpoint of another model is refused, naming a tensor" "conv2d|dense|missing|shape" "$K" eval --load "$tmp/m.safetensors" --model fashion_cnn --data synthetic
expect "bench runs on the CPU" "RESULT peer=kiln model=mlp device=cpu" "$K" bench --model mlp --batch-size 32 --steps 3 --device cpu
KILN_LOG_DEVICE_PLACEMENT=1 expect "placement log" "MatMul: \(MatMul\): /device:(CPU|GPU):0" "$K" train --model mlp --data synthetic --epochs 1 --limit 256 --batch-size 64

expect "--data-on-device trains (host memory without a GPU)" "Test accuracy" "$K" train --model fashion_cnn --data synthetic --epochs 1 --limit 256 --batch-size 64 --data-on-device --augment crop,flip
# without augmentation, resident data trains on the very batches of the host pipeline
acc_of() { "$K" train --model fashion_cnn --data synthetic --epochs 2 --limit 256 --batch-size 32 --seed 5 "$@" 2>&1 | grep -E "Test accuracy"; }
a_host=$(acc_of); a_res=$(acc_of --data-on-device)
if [ -n "$a_host" ] && [ "$a_host" = "$a_res" ]; then ok; else bad "--data-on-device vs host pipeline: '$a_host' vs '$a_res'"; fi
# with crop and flip too: the device draws each example's crop/flip from the host augment's key
a_host=$(acc_of --augment flip,crop); a_res=$(acc_of --augment flip,crop --data-on-device)
if [ -n "$a_host" ] && [ "$a_host" = "$a_res" ]; then ok; else bad "--data-on-device vs host pipeline with --augment flip,crop: '$a_host' vs '$a_res'"; fi
expect_fail "--data-on-device refuses cutout" "not cutout" "$K" train --model fashion_cnn --data synthetic --epochs 1 --limit 256 --data-on-device --augment cutout

# ---- hardening (issue 16): each check failed on main at 40e3030 ----
# one thread, no prefetch: a loaded 2-core CI machine otherwise spends seconds per run in OpenMP spin-waits
Q=(--model mlp --data synthetic --limit 64 --batch-size 32 --epochs 1 --verbose 0 --threads 1 --prefetch 0)
lacks() {   # lacks "description" "pattern" "$out": the output must not match
  if grep -qE -- "$2" <<<"$3"; then bad "$1: $(grep -E -- "$2" <<<"$3" | head -3)"; else ok; fi
}
# 16.2: every numeric option is range-checked by one parser (no wrap, no empty-as-0, no overflow)
expect_fail "--threads 100000 is refused (crashed libgomp)" "--threads wants a whole number from 0 to 1024" "$K" train "${Q[@]}" --threads 100000
expect_fail "--batch-size 4294967297 is refused (ran as batch 1)" "--batch-size wants a whole number" "$K" train "${Q[@]}" --batch-size 4294967297
expect_fail "--epochs= is refused (ran as 0 epochs)" "--epochs wants a whole number" "$K" train "${Q[@]}" --epochs=
expect_fail "--epochs 4294967296 is refused (ran as 0 epochs)" "--epochs wants a whole number" "$K" train "${Q[@]}" --epochs 4294967296
expect_fail "--seed -1 is refused (wrapped)" "--seed wants a whole number" "$K" train "${Q[@]}" --seed -1
expect_fail "--lr inf is refused" "--lr wants a number" "$K" train "${Q[@]}" --lr inf
expect_fail "--limit 99999999999999999999 is refused (ERANGE)" "--limit wants a whole number" "$K" train "${Q[@]}" --limit 99999999999999999999
expect_fail "bench --steps 2147483647 is refused (overflowed: negative images/s)" "--steps wants a whole number from 1 to 1000000" "$K" bench --model mlp --device cpu --batch-size 8 --steps 2147483647
expect_fail "bench --optimizer bogus is refused" "unknown optimizer 'bogus'" "$K" bench --model mlp --device cpu --batch-size 8 --steps 1 --optimizer bogus
# 16.7: an --augment list longer than 255 characters is read whole (was cut silently at 255)
expect_fail "--augment list of 300 characters is read whole" "unknown augmentation 'bogus'" "$K" train "${Q[@]}" --augment "$(printf 'flip,%.0s' {1..51})bogus"

# 16.4: --save and --history problems fail before the first epoch (they failed after it)
T2=(--model mlp --data synthetic --limit 64 --batch-size 32 --epochs 2 --verbose 2 --threads 1 --prefetch 0)
early_fail() {   # early_fail "description" "pattern" args...: non-zero, message matches, no epoch ran
  local what=$1 pat=$2; shift 2
  local out; out=$("$K" train "${T2[@]}" "$@" 2>&1); local rc=$?
  if [ $rc -ne 0 ] && grep -qE -- "$pat" <<<"$out" && ! grep -q "^Epoch 1/" <<<"$out"; then ok; else bad "$what (rc $rc): $(head -c 600 <<<"$out")"; fi
}
early_fail "--save into a missing directory fails before training" "directory '$tmp/nodir' does not exist" --save "$tmp/nodir/m.safetensors"
mkdir -p "$tmp/adir"
early_fail "--save naming a directory fails before training" "it is a directory" --save "$tmp/adir"
if [ "$(id -u)" -ne 0 ]; then
  mkdir -p "$tmp/ro" && chmod 555 "$tmp/ro"
  early_fail "--save into an unwritable directory fails before training" "Permission denied" --save "$tmp/ro/m.safetensors"
else   # root writes anywhere chmod allows; /proc takes no new files even from root
  early_fail "--save into an unwritable directory fails before training" "cannot create a temp file in '/proc'" --save /proc/m.safetensors
fi
early_fail "--history on a full disk (/dev/full) fails before training" "cannot write '/dev/full': No space left" --history /dev/full
early_fail "--save with an unknown placeholder fails before training" "unknown placeholder '\{step\}'" --save "$tmp/m-{step}.safetensors"
# a --save path over 1023 characters is used whole (was cut at 1023 while "Saved: <path>" printed it)
long="$tmp"; for i in 1 2 3 4 5; do long="$long/$(printf 'd%.0s' {1..220})"; done
mkdir -p "$long"
out=$("$K" train "${Q[@]}" --save "$long/m.safetensors" 2>&1)
if [ -f "$long/m.safetensors" ] && grep -qF "Saved: $long/m.safetensors" <<<"$out"; then ok; else bad "--save path of ${#long} characters: $(tail -c 400 <<<"$out")"; fi
# Keras placeholders make one file per epoch; '%d' is literal (it was expanded silently)
mkdir -p "$tmp/ph"
out=$("$K" train "${T2[@]}" --save "$tmp/ph/m-{epoch:02d}.safetensors" 2>&1)
if [ -f "$tmp/ph/m-01.safetensors" ] && [ -f "$tmp/ph/m-02.safetensors" ] && grep -qF "Saved: $tmp/ph/m-02.safetensors" <<<"$out"; then ok; else bad "--save {epoch:02d}: $(ls "$tmp/ph") $(tail -c 300 <<<"$out")"; fi
"$K" train "${Q[@]}" --save "$tmp/ph/p%d.safetensors" >/dev/null 2>&1
[ -f "$tmp/ph/p%d.safetensors" ] && ok || bad "--save with %d: expected the literal file p%d.safetensors, found: $(ls "$tmp/ph")"
# 16.7: --epochs 0 claims no file it did not write
out=$("$K" train "${Q[@]}" --epochs 0 --save "$tmp/e0.safetensors" --history "$tmp/e0.csv" 2>&1)
lacks "--epochs 0 prints no Saved:/History: line" "^(Saved|History):" "$out"
[ ! -e "$tmp/e0.safetensors" ] && ok || bad "--epochs 0 wrote a checkpoint"

# 16.5: image folders: the test split's classes are matched to the training split's by name
png() { case $1 in   # solid 28x28 grey PNGs: black, grey, white
  0) echo iVBORw0KGgoAAAANSUhEUgAAABwAAAAcCAAAAABXZoBIAAAAEElEQVR42mNgGAWjYBQQAwADLAAB1wvpfAAAAABJRU5ErkJggg== ;;
  1) echo iVBORw0KGgoAAAANSUhEUgAAABwAAAAcCAAAAABXZoBIAAAAFElEQVR42mNowAMYRiVHJUclYQAA14+IELSdtnwAAAAASUVORK5CYII= ;;
  2) echo iVBORw0KGgoAAAANSUhEUgAAABwAAAAcCAAAAABXZoBIAAAAFElEQVR42mP4jwcwjEqOSo5KwgAA0FYNHp/Mo7cAAAAASUVORK5CYII= ;;
  esac | base64 -d; }
mkimg() {   # mkimg DIR CLASS COLOUR COUNT
  mkdir -p "$1/$2"; for i in $(seq "$4"); do png "$3" > "$1/$2/$i.png"; done
}
mkimg "$tmp/img/train" a 0 8; mkimg "$tmp/img/train" b 1 8; mkimg "$tmp/img/train" c 2 8
mkimg "$tmp/img/test" b 1 4; mkimg "$tmp/img/test" c 2 4        # a test split without class a
expect "test folders labelled by class name (test lacks a class: was 0% accuracy)" "Test accuracy: 100.00%" \
  "$K" train --model mlp --data "images:$tmp/img" --epochs 30 --batch-size 8 --lr 0.05 --verbose 0 --threads 1 --prefetch 0 --save "$tmp/img.safetensors"
expect "eval labels the test folders by the training folders' names" "test accuracy 100.00%" \
  "$K" eval --load "$tmp/img.safetensors" --data "images:$tmp/img" --threads 1
mkimg "$tmp/img2/train" cat 0 4; mkimg "$tmp/img2/train" dog 2 4
mkimg "$tmp/img2/test" ant 0 2; mkimg "$tmp/img2/test" bee 2 2   # same count, other names
expect_fail "a test class folder unknown to training is refused" "class folder .*/test/ant is not one of the 2 training classes" \
  "$K" train --model mlp --data "images:$tmp/img2" --epochs 1 --batch-size 4 --verbose 0 --threads 1

# 16.6: resuming checks the checkpoint's epoch and optimizer state
set_meta() {   # set_meta FILE KEY VALUE: rewrites one metadata value of a safetensors file (perl-base is always on Debian)
  perl -e 'local $/; open my $f, "<:raw", $ARGV[0] or die; my $b = <$f>; close $f;
    my $n = unpack("Q<", substr($b, 0, 8)); my $h = substr($b, 8, $n); my $d = substr($b, 8 + $n);
    $h =~ s/"\Q$ARGV[1]\E":"[^"]*"/"$ARGV[1]":"$ARGV[2]"/ or die "no $ARGV[1]\n"; $h =~ s/ +$//;
    $h .= " " x ((8 - length($h) % 8) % 8);
    open $f, ">:raw", $ARGV[0] or die; print $f pack("Q<", length $h), $h, $d; close $f' "$@"
}
"$K" train "${Q[@]}" --save "$tmp/r1.safetensors" >/dev/null 2>&1
expect_fail "resume with --history /dev/full fails at once (reading back /dev/full must not spin)" "cannot write '/dev/full'" timeout 30 "$K" train "${Q[@]}" --epochs 2 --load "$tmp/r1.safetensors" --history /dev/full
cp "$tmp/r1.safetensors" "$tmp/neg.safetensors" && set_meta "$tmp/neg.safetensors" kiln.epoch -5
expect_fail "resume from kiln.epoch -5 is refused (trained ~7 epochs)" "kiln.epoch is '-5', not a whole number" "$K" train "${Q[@]}" --epochs 2 --load "$tmp/neg.safetensors"
cp "$tmp/r1.safetensors" "$tmp/huge.safetensors" && set_meta "$tmp/huge.safetensors" kiln.epoch 99999999999
expect_fail "resume from kiln.epoch 99999999999 is refused (skipped training)" "kiln.epoch is '99999999999'" "$K" train "${Q[@]}" --epochs 2 --load "$tmp/huge.safetensors"
"$K" train "${Q[@]}" --optimizer rmsprop --save "$tmp/rms.safetensors" >/dev/null 2>&1
expect "resume with another optimizer warns that its state starts fresh" "warning: checkpoint .* holds rmsprop optimizer state but the model uses adam" "$K" train "${Q[@]}" --epochs 2 --load "$tmp/rms.safetensors"
expect_fail "--strict-load refuses another optimizer's state" "holds rmsprop optimizer state but the model uses adam" "$K" train "${Q[@]}" --epochs 2 --load "$tmp/rms.safetensors" --strict-load
"$K" train "${Q[@]}" --optimizer sgd --save "$tmp/sgd.safetensors" >/dev/null 2>&1
expect_fail "--strict-load refuses plain-SGD state for SGD with momentum (same optimizer name)" "holds sgd state without momentum but the model's sgd uses it" "$K" train "${Q[@]}" --epochs 2 --optimizer momentum --load "$tmp/sgd.safetensors" --strict-load
out=$("$K" train "${Q[@]}" --epochs 2 --optimizer sgd --load "$tmp/sgd.safetensors" --strict-load 2>&1)
grep -q "^Test accuracy" <<<"$out" && ok || bad "resume with the model's own optimizer state: $(tail -c 300 <<<"$out")"
lacks "resume with the model's own optimizer state gives no warning" "warning" "$out"
# a kill between the checkpoint and the history row: the row is written first; resume drops rows past the checkpoint
"$K" train "${Q[@]}" --save "$tmp/h1.safetensors" --history "$tmp/h.csv" >/dev/null 2>&1
"$K" train "${Q[@]}" --epochs 2 --load "$tmp/h1.safetensors" --history "$tmp/h.csv" >/dev/null 2>&1
# now as if epoch 2's run was killed after its row, before its checkpoint: resume from h1 again
out=$("$K" train "${Q[@]}" --epochs 2 --load "$tmp/h1.safetensors" --history "$tmp/h.csv" 2>&1); rc=$?
rows=$(cut -d, -f1 "$tmp/h.csv" | tr '\n' ' ')
[ $rc -eq 0 ] && [ "$rows" = "epoch 1 2 " ] && ok || bad "history after resuming twice from epoch 1 of 2 (rc $rc): epochs '$rows', want 'epoch 1 2 '"

# 16.7: a FIFO given to --load is refused at once (it hung waiting for a writer)
mkfifo "$tmp/fifo"
expect_fail "--load of a FIFO is refused, not waited on" "not a regular file" timeout 20 "$K" eval --load "$tmp/fifo" --data synthetic --threads 1
# predict with NaN weights is an error (it printed nan% with rc 0)
cp "$tmp/r1.safetensors" "$tmp/nan.safetensors"
perl -e 'open my $f, "+<:raw", $ARGV[0] or die; read $f, my $l, 8; seek $f, 8 + unpack("Q<", $l), 0; print $f "\xff" x 256; close $f' "$tmp/nan.safetensors"
expect_fail "predict with NaN weights fails" "not finite" "$K" predict --load "$tmp/nan.safetensors" --data synthetic --threads 1
# eval and predict read the checkpoint once (they read it three times)
if command -v strace >/dev/null && strace -o /dev/null true 2>/dev/null; then
  for c in eval predict; do
    strace -f -e trace=open,openat -o "$tmp/trace" "$K" $c --load "$tmp/r1.safetensors" --data synthetic --threads 1 >/dev/null 2>&1
    n=$(grep -c "r1.safetensors" "$tmp/trace")
    [ "$n" -eq 1 ] && ok || bad "$c opened the checkpoint $n times, want 1"
  done
else
  echo "SKIP: strace not usable here: the read-once checks did not run (scripts/setup.sh installs strace)"
fi

echo "test_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]

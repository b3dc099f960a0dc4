#!/usr/bin/env bash
# CLI checks: help texts, devices (and the one-line no-GPU message), summary, a short training
# run, errors that name the problem. Usage: test_cli.sh path/to/kiln [path/to/libkiln_cuda_sim.so]
set -u
K=${1:?usage: test_cli.sh path/to/kiln [path/to/libkiln_cuda_sim.so]}
SIM=${2:-}
pass=0 fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/lib.sh"   # ok, bad, expect, expect_fail

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
# issue 28: typos get a suggestion, for every command's options
expect_fail "train --epoch: did you mean --epochs" "unknown option '--epoch' \(did you mean --epochs\?" "$K" train --epoch 3
expect_fail "eval --dat: did you mean --data" "unknown option '--dat' \(did you mean --data\?" "$K" eval --dat x
expect_fail "predict --imgae: did you mean --image" "did you mean --image\?" "$K" predict --imgae x.png
expect_fail "summary --modle: did you mean --model" "did you mean --model\?" "$K" summary --modle mlp
grep -q "did you mean" <<<"$("$K" train --frobnicate 3 2>&1)" && bad "a suggestion for --frobnicate" || ok

# a short run on synthetic data: trains, saves, says once why there is no GPU (when there is none)
out=$("$K" train --model mlp --data synthetic --epochs 1 --limit 2048 --batch-size 64 --threads 1 --save "$tmp/m.safetensors" --history "$tmp/h.csv" 2>&1)
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
expect "eval of the saved model" "accuracy" "$K" eval --load "$tmp/m.safetensors" --data synthetic:28x28x1:1024 --threads 1
expect_fail "checkpoint of another model is refused, naming a tensor" "conv2d|dense|missing|shape" "$K" eval --load "$tmp/m.safetensors" --model fashion_cnn --data synthetic:28x28x1:1024 --threads 1
expect "bench runs on the CPU" "RESULT peer=kiln model=mlp device=cpu" "$K" bench --model mlp --batch-size 32 --steps 3 --device cpu
KILN_LOG_DEVICE_PLACEMENT=1 expect "placement log" "MatMul: \(MatMul\): /device:(CPU|GPU):0" "$K" train --model mlp --data synthetic:28x28x1:1024 --epochs 1 --limit 256 --batch-size 64 --threads 1

expect "--data-on-device trains (host memory without a GPU)" "Test accuracy" "$K" train --model fashion_cnn --data synthetic:28x28x1:1024 --epochs 1 --limit 256 --batch-size 64 --threads 1 --data-on-device --augment crop,flip
# without augmentation, resident data trains on the very batches of the host pipeline
acc_of() { "$K" train --model fashion_cnn --data synthetic:28x28x1:1024 --epochs 2 --limit 256 --batch-size 32 --seed 5 --threads 1 "$@" 2>&1 | grep -E "Test accuracy"; }
a_host=$(acc_of); a_res=$(acc_of --data-on-device)
if [ -n "$a_host" ] && [ "$a_host" = "$a_res" ]; then ok; else bad "--data-on-device vs host pipeline: '$a_host' vs '$a_res'"; fi
# with crop and flip too: the device draws each example's crop/flip from the host augment's key
a_host=$(acc_of --augment flip,crop); a_res=$(acc_of --augment flip,crop --data-on-device)
if [ -n "$a_host" ] && [ "$a_host" = "$a_res" ]; then ok; else bad "--data-on-device vs host pipeline with --augment flip,crop: '$a_host' vs '$a_res'"; fi
expect_fail "--data-on-device refuses cutout" "not cutout" "$K" train --model fashion_cnn --data synthetic:28x28x1:1024 --epochs 1 --limit 256 --threads 1 --data-on-device --augment cutout

# (issue 28: small synthetic sets and one thread: the test set of plain `synthetic` is 10,000
# examples, seconds of evaluation per run)

# ---- hardening (issue 16): each check failed on main at 40e3030 ----
# one thread, no prefetch: a loaded 2-core CI machine otherwise spends seconds per run in OpenMP spin-waits
Q=(--model mlp --data synthetic:28x28x1:256 --limit 64 --batch-size 32 --epochs 1 --verbose 0 --threads 1 --prefetch 0)
lacks() {   # lacks "description" "pattern" "$out": the output must not match
  if grep -qE -- "$2" <<<"$3"; then bad "$1: $(grep -E -- "$2" <<<"$3" | head -3)"; else ok; fi
}
# issue 28: --momentum / --nesterov as Keras's SGD(momentum=, nesterov=); --batch-size auto on the CPU is capped
expect "--momentum 0.5 --nesterov" "Options: SGD momentum 0.5 \(Nesterov\)" "$K" train "${Q[@]}" --optimizer sgd --momentum 0.5 --nesterov
expect "--nesterov alone: momentum 0.9" "Options: SGD momentum 0.9 \(Nesterov\)" "$K" train "${Q[@]}" --optimizer sgd --nesterov
expect_fail "--momentum with adam is refused" "--momentum is an option of SGD" "$K" train "${Q[@]}" --momentum 0.9
expect_fail "--momentum 1 is refused" "--momentum wants a number" "$K" train "${Q[@]}" --optimizer sgd --momentum 1
expect "--batch-size auto on the CPU: a power of two up to 256, not the whole set" "Batch size auto: 256 on the CPU: the largest power of two up to 256" \
  "$K" train "${Q[@]}" --limit 2048 --batch-size auto
expect "--batch-size auto on the CPU: at most the training set" "Batch size auto: 64 on the CPU" "$K" train "${Q[@]}" --limit 100 --batch-size auto
expect "train --help says why auto is capped on the CPU" "largest power of two up to 256" "$K" train --help
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
T2=(--model mlp --data synthetic:28x28x1:256 --limit 64 --batch-size 32 --epochs 2 --verbose 2 --threads 1 --prefetch 0)
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

# ---- issue 17 (CLI) ----
# 17.2: each command accepts only its own options and says which ones it takes
expect_fail "summary --epochs is a training option" "kiln summary: --epochs is a training option; summary takes --model, --load, (.*, )?--help" "$K" summary --epochs 3
expect_fail "eval --augment is a training option" "kiln eval: --augment is a training option; eval takes --model, --load, (--model-file, )?--data" "$K" eval --augment flip
expect_fail "summary --data names the commands that take it" "--data is an option of kiln train, kiln eval, kiln predict; summary takes" "$K" summary --data synthetic
expect_fail "summary --bogus is unknown (was 'needs a value')" "kiln summary: unknown option '--bogus'" "$K" summary --bogus
expect_fail "a valued option followed by another option lacks its value" "option --load needs a value" "$K" eval --load --data synthetic
expect_fail "a flag takes no value" "--save-best takes no value" "$K" train --save-best=yes
out=$("$K" train "${Q[@]}" --save-best --save "$tmp/f.safetensors" 2>&1)
grep -q "^Test accuracy" <<<"$out" && ok || bad "a flag before a valued option: $(tail -c 300 <<<"$out")"
# summary --load summarises the checkpoint's model (it printed fashion_cnn's), with its class count
"$K" train --model cifar_cnn --data synthetic:32x32x3:128 --limit 32 --batch-size 32 --epochs 1 --verbose 0 --threads 1 --prefetch 0 --save "$tmp/c.safetensors" >/dev/null 2>&1
out=$("$K" summary --load "$tmp/c.safetensors" 2>&1); rc=$?
ref=$("$K" summary --model cifar_cnn 2>&1 | grep "^Total params")
[ $rc -eq 0 ] && grep -q 'Model: "cifar_cnn"' <<<"$out" && grep -qF "$ref" <<<"$out" && ok || bad "summary --load of a cifar_cnn checkpoint (rc $rc): $(head -c 400 <<<"$out")"
expect "summary --load: the image folder's 3 classes" "dense_1 \(Dense\) +\(None, 3\)" "$K" summary --load "$tmp/img.safetensors"
expect_fail "summary --load of a missing file names it" "$tmp/none.safetensors" "$K" summary --load "$tmp/none.safetensors"

# 17.6: eval on a folder without a test split uses all of it, and says so (it used a silent 10%)
mkimg "$tmp/flat" a 0 6; mkimg "$tmp/flat" b 1 6; mkimg "$tmp/flat" c 2 6
out=$("$K" eval --load "$tmp/img.safetensors" --data "images:$tmp/flat" --threads 1 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "has no test split .*: using all 18 examples" <<<"$out" && grep -q "accuracy 100.00%, loss [0-9.]*, 18 examples" <<<"$out" && ok ||
  bad "eval of a folder without a test split (rc $rc): $out"
expect "eval --validation-split still evaluates the held-out part" "held-out \(0.5 of the training data\) accuracy .* 9 examples" \
  "$K" eval --load "$tmp/img.safetensors" --data "images:$tmp/flat" --validation-split 0.5 --threads 1

# 17.4: predict --image: the top three classes, named
png 1 > "$tmp/grey.png"; png 2 > "$tmp/white.png"
expect "predict --image with the folder's class names" "^$tmp/grey.png: b [0-9.]+%, [ac] [0-9.]+%, [ac] [0-9.]+%$" \
  "$K" predict --load "$tmp/img.safetensors" --data "images:$tmp/img" --image "$tmp/grey.png" --threads 1
# without --data: the class names the checkpoint holds (kiln train stores the folder's)
out=$("$K" predict --load "$tmp/img.safetensors" --image "$tmp/grey.png" "$tmp/white.png" --image "$tmp/grey.png" --threads 1 2>&1)
[ "$(grep -cE "^$tmp/(grey|white).png: [abc] " <<<"$out")" -eq 3 ] && grep -q "white.png: c " <<<"$out" && ok ||
  bad "predict --image with several files, the checkpoint's class names: $out"
echo "not an image" > "$tmp/bad.png"
expect_fail "predict --image of a non-image names it" "$tmp/bad.png: not a PNG or JPEG" "$K" predict --load "$tmp/img.safetensors" --image "$tmp/bad.png"
head -c 60 "$tmp/grey.png" > "$tmp/cut.png"
expect_fail "predict --image of a truncated PNG names it" "$tmp/cut.png: corrupt" "$K" predict --load "$tmp/img.safetensors" --image "$tmp/cut.png"
expect_fail "predict --image of a missing file names it" "$tmp/none.png" "$K" predict --load "$tmp/img.safetensors" --image "$tmp/none.png"
expect_fail "predict --image with --count is refused" "with --image the given files are predicted" "$K" predict --load "$tmp/img.safetensors" --image "$tmp/grey.png" --count 2
# a Fashion-MNIST test image as a PNG gives what predict gives for the same test example
FM=/usr/share/datasets/fashion-mnist
if [ -f "$FM/t10k-images-idx3-ubyte.gz" ] && command -v python3 >/dev/null; then
  python3 - "$FM" "$tmp/fm0.png" <<'PY'
import gzip, struct, sys, zlib
with gzip.open(sys.argv[1] + "/t10k-images-idx3-ubyte.gz") as f:
    px = f.read(16 + 784)[16:]
rows = b"".join(b"\0" + px[r * 28:(r + 1) * 28] for r in range(28))
chunk = lambda t, d: struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
open(sys.argv[2], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 28, 28, 8, 0, 0, 0, 0))
                              + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
PY
  "$K" train --model mlp --epochs 1 --limit 2048 --verbose 0 --threads 1 --save "$tmp/fm.safetensors" >/dev/null 2>&1
  row=$("$K" predict --load "$tmp/fm.safetensors" --count 1 --threads 1 2>&1 | grep -E "^ +0  ")   # "     0  Ankle boot     Ankle boot      45.6%"
  want="$(cut -c9-22 <<<"$row" | sed 's/ *$//') $(grep -oE "[0-9.]+%" <<<"$row")"
  got=$("$K" predict --load "$tmp/fm.safetensors" --image "$tmp/fm0.png" --threads 1 2>&1 | grep "^$tmp/fm0.png: ")
  [ -n "$row" ] && grep -qE "^$tmp/fm0.png: $want, [A-Za-z/ -]+ [0-9.]+%, [A-Za-z/ -]+ [0-9.]+%$" <<<"$got" && ok ||
    bad "predict --image of Fashion-MNIST test image 0: got '$got', predict --count 1 says '$want'"
else
  echo "SKIP: no Fashion-MNIST or python3: the Fashion-MNIST PNG check did not run"
fi

# 17.8: training options of the C API
out=$("$K" train "${Q[@]}" --epochs 5 --early-stopping 1 --min-delta 100 --history "$tmp/es.csv" 2>&1)
grep -q "stopped after epoch 2 of 5" <<<"$out" && [ "$(wc -l < "$tmp/es.csv")" -eq 3 ] && ok || bad "--early-stopping 1 --min-delta 100 should stop after epoch 2: $out"
"$K" train "${Q[@]}" --epochs 3 --schedule step --lr-step-epochs 1 --lr-step-factor 0.1 --history "$tmp/st.csv" >/dev/null 2>&1
[ "$(cut -d, -f6 "$tmp/st.csv" | tr '\n' ' ')" = "lr 0.001 0.0001 1e-05 " ] && ok || bad "--lr-step-epochs 1 --lr-step-factor 0.1: lr column $(cut -d, -f6 "$tmp/st.csv" | tr '\n' ' ')"
"$K" train "${Q[@]}" --epochs 2 --schedule cosine --history "$tmp/c1.csv" >/dev/null 2>&1
"$K" train "${Q[@]}" --epochs 2 --schedule cosine --warmup-epochs 0 --history "$tmp/c0.csv" >/dev/null 2>&1
[ "$(sed -n 2p "$tmp/c0.csv" | cut -d, -f6)" != "$(sed -n 2p "$tmp/c1.csv" | cut -d, -f6)" ] && ok || bad "--warmup-epochs 0 changed no learning rate"
mkdir -p "$tmp/sb"
out=$("$K" train "${Q[@]}" --epochs 6 --lr 0.05 --save "$tmp/sb/m-{epoch}.safetensors" --save-best --history "$tmp/sb.csv" 2>&1)
best=$(awk -F, 'NR > 1 && (b == "" || $4 < b) { b = $4; e = $1 } END { print e }' "$tmp/sb.csv")
n_imp=$(awk -F, 'NR > 1 && (b == "" || $4 < b) { b = $4; n++ } END { print n }' "$tmp/sb.csv")
grep -qF "Saved: $tmp/sb/m-$best.safetensors (epoch $best, best val_loss)" <<<"$out" && [ "$(ls "$tmp/sb" | wc -l)" -eq "$n_imp" ] && ok ||
  bad "--save-best: best epoch $best, $n_imp improvements, files: $(ls "$tmp/sb" | tr '\n' ' '), $(grep Saved <<<"$out")"
loss_of() { "$K" train "${Q[@]}" --epochs 2 --optimizer sgd --history "$tmp/l.csv" "$@" >/dev/null 2>&1; sed -n 3p "$tmp/l.csv" | cut -d, -f2; }
l_plain=$(loss_of); l_wd=$(loss_of --weight-decay 0.5); l_clip=$(loss_of --clipnorm 0.001)
[ -n "$l_plain" ] && [ "$l_wd" != "$l_plain" ] && ok || bad "--weight-decay 0.5 changed nothing: $l_wd vs $l_plain"
[ -n "$l_plain" ] && [ "$l_clip" != "$l_plain" ] && ok || bad "--clipnorm 0.001 changed nothing: $l_clip vs $l_plain"
expect_fail "--clipnorm 0 is refused" "--clipnorm wants a number above 0" "$K" train "${Q[@]}" --clipnorm 0
expect_fail "--lr-step-factor 1.5 is refused" "--lr-step-factor wants a number above 0 and up to 1" "$K" train "${Q[@]}" --schedule step --lr-step-factor 1.5
expect_fail "--lr-step-epochs without --schedule step is refused" "set up --schedule step \(the schedule is constant\)" "$K" train "${Q[@]}" --lr-step-epochs 2
expect_fail "--warmup-epochs without cosine is refused" "--warmup-epochs sets up --schedule cosine" "$K" train "${Q[@]}" --warmup-epochs 1
expect_fail "--weight-decay with rmsprop is refused" "not rmsprop" "$K" train "${Q[@]}" --optimizer rmsprop --weight-decay 0.1
expect_fail "unknown --monitor is refused" "unknown --monitor 'foo'" "$K" train "${Q[@]}" --early-stopping 2 --monitor foo
expect_fail "--save-best without --save is refused" "--save-best needs --save PATH" "$K" train "${Q[@]}" --save-best
expect_fail "--min-delta without --early-stopping is refused" "--min-delta needs --early-stopping" "$K" train "${Q[@]}" --min-delta 0.1
expect "train --help states the step and warm-up defaults" "--lr-step-epochs N .*default 2" "$K" train --help

# 17.3: a checkpoint holds its model's architecture: a model built with the C API (not built in)
# is summarised, evaluated and predicted from its file alone
EX="$(dirname "$K")/example_custom_model"
if [ -x "$EX" ]; then
  "$EX" "$tmp/custom.safetensors" 1 >/dev/null 2>&1 || bad "example_custom_model did not write its checkpoint"
  expect "summary --load shows a C-API model's layers" "residual \(Add\) .*conv2d, batch_normalization" "$K" summary --load "$tmp/custom.safetensors"
  expect "summary --load counts its parameters" "Total params: 778 " "$K" summary --load "$tmp/custom.safetensors"
  expect "eval --load of a C-API model (was: unknown model 'tiny_resnet')" "^tiny_resnet \(epoch 1\) on synthetic: test accuracy" \
    "$K" eval --load "$tmp/custom.safetensors" --data synthetic --threads 1
  expect "predict --load of a C-API model" "of 3 correct" "$K" predict --load "$tmp/custom.safetensors" --data synthetic --count 3 --threads 1
  cp "$tmp/custom.safetensors" "$tmp/custom_bad.safetensors"
  perl -i -0pe 's/GlobalAveragePooling2D/GlobalAveragePooling9D/' "$tmp/custom_bad.safetensors"
  expect_fail "eval --load with a corrupt architecture names the key and the layer type" "kiln.architecture.*unknown type 'GlobalAveragePooling9D'" \
    "$K" eval --load "$tmp/custom_bad.safetensors" --data synthetic --threads 1
  expect_fail "summary --load with a corrupt architecture fails" "kiln.architecture" "$K" summary --load "$tmp/custom_bad.safetensors"
else
  bad "example_custom_model is not built next to $K (the 17.3 checks need it)"
fi

echo "test_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]

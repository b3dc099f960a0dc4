#!/bin/bash
# The files a run writes (issue 24.13, 24.14, 24.15): an output that is one of the run's inputs is
# refused (compared as files: ./a, a symlink, a hard link), --save over --load resumes in place;
# two runs writing the same --history / --save at once: the second is refused naming the first's
# pid, and a lock left by a killed run does not block the next; resuming a --history with other
# columns is refused and leaves it as it was; numeric options take only plain decimal numbers.
# Usage: test_outputs.sh path/to/kiln
K=${1:?usage: test_outputs.sh path/to/kiln}
tmp=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; rm -rf "$tmp"' EXIT
pass=0 fail=0
source "$(dirname "$0")/lib.sh"
cd "$tmp" || exit 1
T=(--model mlp --data synthetic:8x8x1:64 --batch-size 32 --threads 1 --verbose 0 --prefetch 0)

"$K" train "${T[@]}" --epochs 1 --save c.safetensors --history h.csv >/dev/null 2>&1 || bad "the first checkpoint"
cp c.safetensors c0.safetensors; cp h.csv h0.csv

# ---- an output that is an input (24.13) ----
same() {   # same "what" command...: refused (exit 2, "same file"), and c.safetensors / h.csv untouched
  local what=$1; shift
  expect_fail "$what" "same file|is the history" "$@"
  cmp -s c.safetensors c0.safetensors && cmp -s h.csv h0.csv && ok || bad "$what: an input was changed"
}
same "train --load c --history c" "$K" train "${T[@]}" --epochs 2 --load c.safetensors --history c.safetensors
same "train --load c --history ./c" "$K" train "${T[@]}" --epochs 2 --load c.safetensors --history ./c.safetensors
ln -s c.safetensors link.safetensors; ln c.safetensors hard.safetensors
same "train --load c --history a symlink to c" "$K" train "${T[@]}" --epochs 2 --load c.safetensors --history link.safetensors
same "summary --load c --json a hard link to c" "$K" summary --load c.safetensors --json hard.safetensors
same "summary --load c --json c" "$K" summary --load c.safetensors --json "$tmp/c.safetensors"
same "export --load c -o c" "$K" export --load c.safetensors -o ./c.safetensors
printf 'a,b,label\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n1,2,0\n3,4,1\n5,6,0\n7,8,1\n1,2,0\n3,4,1\n' >d.csv; cp d.csv d0.csv
same "train --data csv:d --history d" "$K" train --model mlp --data csv:d.csv --epochs 1 --history d.csv
same "train --test-csv d --save d" "$K" train --model mlp --data csv:h.csv --test-csv d.csv --epochs 1 --save d.csv
cmp -s d.csv d0.csv && ok || bad "the CSV data was changed"
same "train --save x --history x (two outputs)" "$K" train "${T[@]}" --epochs 1 --save out.csv --history ./out.csv
[ ! -e out.csv ] && ok || bad "out.csv written"
# --save over --load: resuming in place (Keras' ModelCheckpoint does it), allowed
expect "train --load c --save c resumes in place" "" "$K" train "${T[@]}" --epochs 2 --load c.safetensors --save c.safetensors --history h.csv
[ "$(wc -l <h.csv)" -eq 3 ] && ok || bad "history after resuming in place: $(cat h.csv)"
cp c.safetensors c0.safetensors; cp h.csv h0.csv

# ---- two runs on the same files (24.14) ----
"$K" train "${T[@]}" --epochs 1000000 --save run.safetensors --history run.csv >/dev/null 2>&1 &
first=$!; pids+=("$first")
for _ in $(seq 200); do [ -e run.csv.lock ] && [ -e run.safetensors.lock ] && break; sleep 0.1; done
expect_fail "a second run on the same --history" "history '?run.csv'? is being written by another run \(pid $first" \
  "$K" train "${T[@]}" --epochs 1 --history run.csv
expect_fail "a second run on the same --save" "checkpoint '\./run.safetensors' is being written by another run \(pid $first" \
  "$K" train "${T[@]}" --epochs 1 --save ./run.safetensors
kill -9 "$first"; wait "$first" 2>/dev/null
[ -e run.csv.lock ] || echo "note: the killed run left no lock file to test"
expect "a lock left by a killed run does not block" "" "$K" train "${T[@]}" --epochs 1 --history run.csv --save run.safetensors
[ ! -e run.csv.lock ] && [ ! -e run.safetensors.lock ] && ok || bad "lock files left after a run: $(ls)"

# resuming a history with other columns: refused, naming both headers; the file is kept
printf 'epoch,accuracy,loss\n1,0.5,0.3\n' >keras.csv; cp keras.csv keras0.csv
expect_fail "resume into another header" "header is 'epoch,accuracy,loss' but this run writes 'epoch,loss,accuracy" \
  "$K" train "${T[@]}" --epochs 3 --load c.safetensors --history keras.csv
cmp -s keras.csv keras0.csv && ok || bad "the other CSV was changed: $(cat keras.csv)"
printf '1,2,3\n4,5,6\n' >numbers.csv
expect_fail "resume into a CSV without a header" "header is '\(none" "$K" train "${T[@]}" --epochs 3 --load c.safetensors --history numbers.csv
# the run's own history with a row cut short by a kill: resumed, the cut row dropped
{ cat h0.csv; printf '3,0.12'; } >cut.csv
expect "resume a history with a cut row" "" "$K" train "${T[@]}" --epochs 3 --load c.safetensors --history cut.csv
[ "$(wc -l <cut.csv)" -eq 4 ] && ! grep -q '^3,0.12$' cut.csv && tail -1 cut.csv | grep -q '^3,' && ok || bad "cut.csv: $(cat cut.csv)"

# ---- numeric options: plain decimal numbers only (24.15) ----
for v in 0x10 ' 0.1' '0.1 ' inf nan 1e; do
  expect_fail "--lr '$v'" "--lr wants a number" "$K" train "${T[@]}" --epochs 1 --lr "$v"
done
expect_fail "--epochs ' 1'" "--epochs wants a whole number" "$K" train "${T[@]}" --epochs ' 1'
expect_fail "--seed 0x10" "--seed wants a whole number" "$K" train "${T[@]}" --epochs 1 --seed 0x10
expect_fail "--batch-size 1e2" "--batch-size wants a whole number" "$K" train "${T[@]}" --epochs 1 --batch-size 1e2
expect "--lr 1e-3" "lr 0.001" "$K" train "${T[@]}" --epochs 0 --lr 1e-3 --verbose 1

echo "test_outputs: $pass passed, $fail failed"
[ $fail -eq 0 ]

#!/bin/bash
# mpirun -np 2 kiln train (ctest test_dist_cli; args: the kiln binary, the mpirun command line
# "mpirun -np 2 --oversubscribe [--allow-run-as-root]"): it trains, only rank 0 prints and
# writes files, a rank given a corrupt file ends the whole job promptly naming the rank and the
# cause, checkpoints resume across process counts, a global batch that does not split is refused,
# ranks whose options or data sizes differ fail at once on every rank.
K=$1
MPI=($2)
MPI_BASE=(); skip=0
for w in "${MPI[@]}"; do
  if [ $skip -eq 1 ]; then skip=0; continue; fi
  if [ "$w" = "-np" ]; then skip=1; continue; fi
  MPI_BASE+=("$w")
done
pass=0 fail=0
source "$(dirname "$0")/../cli/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# 640 rows, 4 features, 3 classes
awk 'BEGIN{srand(3); print "a,b,c,d,label"; for(i=0;i<640;i++){a=rand()*2-1;b=rand()*2-1;c=rand()*2-1;d=rand()*2-1;
     l=(a+b>0)?((c>0)?2:1):0; printf "%.4f,%.4f,%.4f,%.4f,%d\n",a,b,c,d,l}}' > "$tmp/train.csv"
(head -100 "$tmp/train.csv"; echo "0.1,0.2,oops"; tail -n +101 "$tmp/train.csv") > "$tmp/bad.csv"
T=(train --model mlp --data csv:"$tmp/train.csv" --batch-size 64 --verbose 2 --threads 1)

# two processes train; rank 0 alone prints the progress and writes the history and checkpoint
out=$(timeout 120 "${MPI[@]}" "$K" "${T[@]}" --epochs 2 --save "$tmp/ck2.safetensors" --history "$tmp/h2.csv" 2>&1); rc=$?
[ $rc -eq 0 ] && ok || bad "mpirun kiln train (rc $rc): $(tail -5 <<<"$out")"
grep -q "Data parallel: 2 processes (MPI), global batch 64 = 32 per process" <<<"$out" && ok || bad "the data-parallel line: $(head -3 <<<"$out")"
[ "$(grep -c '^Epoch 2/2' <<<"$out")" -eq 1 ] && ok || bad "progress printed by more than rank 0: $(grep -c '^Epoch 2/2' <<<"$out") lines"
[ "$(grep -c '^Training mlp' <<<"$out")" -eq 1 ] && ok || bad "the header printed by more than rank 0"
# issue 28: "no GPU found; using the CPU" once (rank 0's), and no progress frames (\r, escapes)
# in the job's output: mpirun's forwarding looks like a terminal even when redirected
if "$K" devices | grep -q "GPU available: no"; then
  [ "$(grep -c 'no GPU' <<<"$out")" -eq 1 ] && ok || bad "the no-GPU line printed by $(grep -c 'no GPU' <<<"$out") ranks"
fi
out1=$(timeout 120 "${MPI[@]}" "$K" train --model mlp --data csv:"$tmp/train.csv" --batch-size 64 --threads 1 --epochs 1 --verbose 1 2>&1)
grep -q $'\r\|\033' <<<"$out1" && bad "progress frames under mpirun: $(od -c <<<"$out1" | head -3)" || ok
[ "$(grep -c '^Epoch 1/1' <<<"$out1")" -eq 1 ] && ok || bad "one epoch line under mpirun --verbose 1: $out1"
[ -f "$tmp/ck2.safetensors" ] && [ "$(wc -l < "$tmp/h2.csv")" -eq 3 ] && ok || bad "rank 0's checkpoint and history (2 rows): $(cat "$tmp/h2.csv")"
loss2=$(tail -1 "$tmp/h2.csv" | cut -d, -f2)
# one process, same global batch: close to it (mlp has dropout, whose masks follow the batch
# layout; the exact equality without dropout is test_dist_mpi's)
"$K" "${T[@]}" --epochs 2 --history "$tmp/h1.csv" > /dev/null 2>&1 || bad "one-process run"
loss1=$(tail -1 "$tmp/h1.csv" | cut -d, -f2)
awk -v a="$loss1" -v b="$loss2" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(a>0 && d<0.02)}' && ok || bad "epoch-2 loss: 1 process $loss1, 2 processes $loss2"

# a rank given a corrupt file ends the job at once, naming the rank and the cause
start=$(date +%s)
out=$(timeout 60 "${MPI_BASE[@]}" -np 1 "$K" "${T[@]}" --epochs 2 : -np 1 "$K" train --model mlp --data csv:"$tmp/bad.csv" \
      --batch-size 64 --epochs 2 --threads 1 2>&1); rc=$?
secs=$(( $(date +%s) - start ))
[ $rc -ne 0 ] && [ $rc -ne 124 ] && ok || bad "a failing rank: exit status $rc (124: the job hung)"
grep -q "rank 1 of 2 .*failed: .*bad.csv: line 101 has 3 fields but the first row has 5" <<<"$out" && ok || bad "the failing rank's message: $(head -c 600 <<<"$out")"
[ "$secs" -lt 30 ] && ok || bad "the job took $secs s to end"

# a NaN on one rank (its data blows the loss up) stops every rank at the same step (the loss is
# reduced), and the job ends naming the rank
awk 'BEGIN{srand(4); print "a,b,c,d,label"; for(i=0;i<640;i++) printf "%.4g,%.4f,%.4f,%.4f,%d\n",(rand()*2-1)*1e18,rand(),rand(),rand(),i%3}' > "$tmp/huge.csv"
out=$(timeout 60 "${MPI_BASE[@]}" -np 1 "$K" "${T[@]}" --epochs 2 --optimizer sgd --lr 1e6 : -np 1 "$K" train --model mlp \
      --data csv:"$tmp/huge.csv" --batch-size 64 --epochs 2 --optimizer sgd --lr 1e6 --threads 1 2>&1); rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "rank [01] of 2 .*failed: .*the loss became NaN at epoch 1" <<<"$out" && ok || bad "a NaN on one rank (rc $rc): $(head -c 600 <<<"$out")"

# checkpoints resume across process counts: the 2-process one in 1 process, a 1-process one in 2
expect "a 2-process checkpoint resumes in one process" "Resuming from .*ck2.safetensors at epoch 2" "$K" "${T[@]}" --epochs 3 --load "$tmp/ck2.safetensors"
"$K" "${T[@]}" --epochs 1 --save "$tmp/ck1.safetensors" > /dev/null 2>&1 || bad "one-process checkpoint"
out=$(timeout 120 "${MPI[@]}" "$K" "${T[@]}" --epochs 2 --load "$tmp/ck1.safetensors" --history "$tmp/hr.csv" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "Resuming from .*ck1.safetensors at epoch 1" <<<"$out" && grep -q "^2," "$tmp/hr.csv" && ok || bad "a 1-process checkpoint resumed on 2 (rc $rc): $(tail -4 <<<"$out")"

# --sync-batchnorm: a model with batch norm (resnet20, small images and test set: fast under ASan) trains with the global batch's statistics
out=$(timeout 120 "${MPI[@]}" "$K" train --model resnet20 --data synthetic:16x16x3:128 --limit 64 --batch-size 32 --epochs 1 --verbose 2 \
      --threads 1 --sync-batchnorm --history "$tmp/hs.csv" 2>&1); rc=$?
[ $rc -eq 0 ] && [ "$(wc -l < "$tmp/hs.csv")" -eq 2 ] && ok || bad "--sync-batchnorm on 2 processes (rc $rc): $(tail -4 <<<"$out")"

# a global batch two processes cannot share
out=$(timeout 60 "${MPI[@]}" "$K" "${T[@]}" --epochs 1 --batch-size 63 2>&1); rc=$?
[ $rc -eq 2 ] && grep -q "batch-size 63 is the global batch, split over 2 processes: make it a multiple of 2" <<<"$out" && ok || bad "batch 63 on 2 (rc $rc): $(head -c 400 <<<"$out")"

# ranks that disagree fail at start-up on every rank, naming the option or size and the values
# (they hung in the first all-reduce until killed: timeout's 124); a different --seed only warns
S=(train --model mlp --verbose 2 --threads 1 --epochs 1 --batch-size 64)
disagree() {     # what, the message, rank 0's extra arguments, then ':', rank 1's
  local what=$1 msg=$2; shift 2
  local a=() b=(); while [ "$1" != ":" ]; do a+=("$1"); shift; done; shift; b=("$@")
  out=$(timeout 60 "${MPI_BASE[@]}" -np 1 "$K" "${S[@]}" "${a[@]}" : -np 1 "$K" "${S[@]}" "${b[@]}" 2>&1); rc=$?
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && ok || bad "$what: exit status $rc (124: the job hung)"
  for r in 0 1; do
    grep -q "rank $r of 2 .*must train alike: .*$msg" <<<"$out" && ok || bad "$what: rank $r's message: $(head -c 600 <<<"$out")"
  done
}
D=(--data csv:"$tmp/train.csv")
disagree "--batch-size" "rank 1 has --batch-size 32, rank 0 has 64" "${D[@]}" : "${D[@]}" --batch-size 32
disagree "--epochs" "rank 1 has --epochs 2, rank 0 has 1" "${D[@]}" : "${D[@]}" --epochs 2
disagree "--limit" "rank 1 has --limit 0, rank 0 has 320" "${D[@]}" --limit 320 : "${D[@]}"
head -321 "$tmp/train.csv" > "$tmp/half.csv"
disagree "data size" "rank 1 has training examples 288, rank 0 has 576" "${D[@]}" : --data csv:"$tmp/half.csv"
out=$(timeout 60 "${MPI_BASE[@]}" -np 1 "$K" "${S[@]}" "${D[@]}" --seed 5 : -np 1 "$K" "${S[@]}" "${D[@]}" --seed 6 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "warning: rank 1 has --seed 6, rank 0 has 5" <<<"$out" && grep -q "^Epoch 1/1" <<<"$out" && ok || bad "different --seed (rc $rc): $(head -c 600 <<<"$out")"

echo "test_dist_cli: $pass passed, $fail failed"
[ $fail -eq 0 ]

#!/usr/bin/env bash
# kiln predict --output FILE.npy|FILE.csv (issue 29): every test example's outputs, read back
# here without numpy: the .npy header (magic, '<f4', shape (N, C), 64-byte aligned), its float32
# values equal to the .csv's rows, the .csv's header and row count; a wrong suffix is refused.
# Usage: test_predict_output.sh path/to/kiln
set -u -o pipefail
K=${1:?usage: test_predict_output.sh path/to/kiln}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
source "$(dirname "$0")/lib.sh"
awk 'BEGIN { srand(3); print "a,b,c,label"; for (i = 0; i < 300; i++) { a = rand(); b = rand(); c = rand(); print a "," b "," c "," (a + b > 1 ? 2 : c > 0.5) } }' >"$tmp/d.csv"
expect "train" "Saved" "$K" train --model mlp --data "csv:$tmp/d.csv" --epochs 1 --verbose 0 --save "$tmp/m.safetensors"
expect "predict --output npy" "predictions of 30 examples \(3 outputs" "$K" predict --load "$tmp/m.safetensors" --data "csv:$tmp/d.csv" --output "$tmp/p.npy"
expect "predict --output csv" "predictions of 30 examples" "$K" predict --load "$tmp/m.safetensors" --data "csv:$tmp/d.csv" --output "$tmp/p.csv"
expect "predict --output --count" "predictions of 7 examples" "$K" predict --load "$tmp/m.safetensors" --data "csv:$tmp/d.csv" --count 7 --output "$tmp/p7.csv"
expect_fail "predict --output .txt" "give a .npy or .csv" "$K" predict --load "$tmp/m.safetensors" --data "csv:$tmp/d.csv" --output "$tmp/p.txt"
hl=$(od -A n -t u2 -j 8 -N 2 "$tmp/p.npy" | tr -d ' ')
head -c 10 "$tmp/p.npy" | od -c | grep -q "N   U   M   P   Y" && ok || bad "npy magic"
[ $(((10 + hl) % 64)) -eq 0 ] && ok || bad "npy header length $hl not 64-aligned"
head -c $((10 + hl)) "$tmp/p.npy" | grep -q "'descr': '<f4', 'fortran_order': False, 'shape': (30, 3)" && ok || bad "npy header: $(head -c $((10 + hl)) "$tmp/p.npy")"
[ "$(head -1 "$tmp/p.csv")" = "output_0,output_1,output_2" ] && ok || bad "csv header: $(head -1 "$tmp/p.csv")"
[ "$(wc -l <"$tmp/p.csv")" -eq 31 ] && [ "$(wc -l <"$tmp/p7.csv")" -eq 8 ] && ok || bad "csv rows: $(wc -l <"$tmp/p.csv")"
[ "$(stat -c %s "$tmp/p.npy")" -eq $((10 + hl + 30 * 3 * 4)) ] && ok || bad "npy size"
od -A n -v -t f4 -j $((10 + hl)) "$tmp/p.npy" | tr -s ' ' '\n' | grep . >"$tmp/npy.txt"
tail -n +2 "$tmp/p.csv" | tr ',' '\n' >"$tmp/csv.txt"
paste "$tmp/npy.txt" "$tmp/csv.txt" | awk '{ d = $1 - $2; if (d < 0) d = -d; if (d > 1e-6 * (1 + ($2 < 0 ? -$2 : $2))) bad++ } END { exit bad || NR != 90 }' && ok || bad "npy values differ from the csv's"
echo "test_predict_output: $pass passed, $fail failed"
[ "$fail" -eq 0 ]

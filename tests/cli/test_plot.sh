#!/bin/bash
# kiln plot: a history CSV written by kiln train --history drawn to PNG and SVG (valid files with
# the expected size, title and labels), and the errors for malformed CSVs and bad arguments.
# Usage: test_plot.sh path/to/kiln. Exit 77 (skipped) when kiln was built without cairo.
K=${1:?usage: test_plot.sh path/to/kiln}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
source "$(dirname "$0")/lib.sh"   # ok, bad (expect_fail is redefined below: exit status and stderr)
# expect_fail NAME RC PATTERN CMD...: exit status RC and the (fixed-string) PATTERN on stderr
expect_fail() {
  local name=$1 want=$2 pat=$3; shift 3
  local out rc
  out=$("$@" 2>&1 >/dev/null); rc=$?
  [ $rc -eq "$want" ] && grep -qF -- "$pat" <<<"$out" && ok || bad "$name (rc $rc, want $want): $out"
}

printf 'epoch,loss\n1,0.5\n' >"$tmp/probe.csv"
if "$K" plot "$tmp/probe.csv" -o "$tmp/probe.png" 2>&1 | grep -q "built without cairo"; then
  echo "test_plot: skipped: this kiln was built without cairo (install libcairo2-dev and re-run cmake)"
  exit 77
fi
"$K" plot --help | grep -q "usage: kiln plot" && ok || bad "kiln plot --help"
"$K" --help | grep -q "plot " && ok || bad "kiln --help lists plot"

# a real history: three epochs of the CSV logger's columns, validation on the test split
"$K" train --model mlp --data synthetic:28x28x1:256 --epochs 3 --batch-size 32 --threads 1 --verbose 0 \
     --prefetch 0 --history "$tmp/history.csv" >/dev/null 2>&1 || bad "kiln train --history"
head -1 "$tmp/history.csv" | grep -q "^epoch,loss,accuracy,val_loss,val_accuracy" && [ "$(wc -l <"$tmp/history.csv")" -eq 4 ] \
  && ok || bad "history.csv: $(cat "$tmp/history.csv")"

out=$("$K" plot "$tmp/history.csv" -o "$tmp/curves.png" 2>&1); rc=$?
[ $rc -eq 0 ] && grep -q "Loss (loss, val_loss); Accuracy (accuracy, val_accuracy)" <<<"$out" && ok || bad "plot to PNG (rc $rc): $out"
sig=$(head -c 8 "$tmp/curves.png" | od -An -tx1 | tr -d ' \n')
[ "$sig" = "89504e470d0a1a0a" ] && ok || bad "PNG signature: $sig"
size=$(stat -c %s "$tmp/curves.png")
[ "$size" -gt 15000 ] && ok || bad "PNG size $size bytes (a blank image compresses to a few)"
# IHDR: width and height, big-endian, at bytes 16..23: two panels
dims=$(od -An -tu1 -j16 -N8 "$tmp/curves.png" | awk '{ print $1*16777216+$2*65536+$3*256+$4 "x" $5*16777216+$6*65536+$7*256+$8 }')
[ "$dims" = "1160x480" ] && ok || bad "PNG dimensions $dims, expected 1160x480"

out=$("$K" plot "$tmp/history.csv" -o "$tmp/curves.svg" --title "MLP & <synthetic>" 2>&1); rc=$?
[ $rc -eq 0 ] && ok || bad "plot to SVG (rc $rc): $out"
if command -v python3 >/dev/null; then
  # parses as XML, and says what it shows (cairo draws text as glyph outlines; kiln puts the title
  # and the panels' labels and legends in <title> and <desc>)
  python3 - "$tmp/curves.svg" <<'EOF' && ok || bad "SVG checks"
import sys, xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
ns = "{http://www.w3.org/2000/svg}"
assert root.tag == ns + "svg", root.tag
assert root.get("width") == "1160pt", root.get("width")
title, desc = root.find(ns + "title").text, root.find(ns + "desc").text
assert title == "MLP & <synthetic>", title
for label in ("Panel 'Loss'", "Panel 'Accuracy'", "against epoch", "training loss", "validation loss",
              "training accuracy", "validation accuracy"):
    assert label in desc, (label, desc)
assert len(root.findall(".//" + ns + "path")) > 20, "too few paths: nothing drawn?"
EOF
else
  grep -q "<title>MLP &amp; &lt;synthetic&gt;</title>" "$tmp/curves.svg" && grep -q "validation accuracy" "$tmp/curves.svg" && ok || bad "SVG labels"
fi

# other layouts: no header (columns against the row number), one epoch without validation
printf '0.9,0.5\n0.7,0.6\n0.6,0.7\n' >"$tmp/bare.csv"
out=$("$K" plot "$tmp/bare.csv" -o "$tmp/bare.png" 2>&1)
[ $? -eq 0 ] && grep -q "Values (column 1, column 2)" <<<"$out" && ok || bad "headerless CSV: $out"
printf 'epoch,loss,accuracy,val_loss,val_accuracy,lr,seconds,images_per_sec\n1,2.3,0.1,,,0.001,1.0,100\r\n' >"$tmp/one.csv"
out=$("$K" plot "$tmp/one.csv" -o "$tmp/one.png" 2>&1)
[ $? -eq 0 ] && grep -q "Loss (loss); Accuracy (accuracy)" <<<"$out" && ok || bad "one epoch, no validation: $out"
out=$("$K" plot "$tmp/history.csv" -o "$tmp/lr.svg" --columns loss,lr 2>&1)
[ $? -eq 0 ] && grep -q "Loss (loss); Other metrics (lr)" <<<"$out" && ok || bad "--columns: $out"

# malformed files name the line (and the column); nothing is written
{ head -3 "$tmp/history.csv"; echo "3,abc,0.5,0.4,0.5,0.001,1.0,100"; } >"$tmp/word.csv"
expect_fail "a word in a number column" 1 "word.csv: line 4 (data row 3), column 'loss': 'abc' is not a number" "$K" plot "$tmp/word.csv" -o "$tmp/word.png"
[ ! -e "$tmp/word.png" ] && ok || bad "an image was written for a malformed CSV"
{ head -2 "$tmp/history.csv"; echo "2,0.5"; } >"$tmp/short.csv"
expect_fail "a short row" 1 "short.csv: line 3 (data row 2) has 2 fields but the header has 8" "$K" plot "$tmp/short.csv" -o "$tmp/short.png"
printf 'epoch,loss\n1,"0.5\n' >"$tmp/quote.csv"
expect_fail "an open quote" 1 "quote.csv: line 2: a quoted field is not closed" "$K" plot "$tmp/quote.csv" -o "$tmp/q.png"
head -1 "$tmp/history.csv" >"$tmp/header.csv"
expect_fail "a header without rows" 1 "header.csv: no data rows after the header" "$K" plot "$tmp/header.csv" -o "$tmp/h.png"
: >"$tmp/empty.csv"
expect_fail "an empty file" 1 "empty.csv: the file is empty" "$K" plot "$tmp/empty.csv" -o "$tmp/e.png"
expect_fail "a missing file" 1 "$tmp/none.csv': cannot open" "$K" plot "$tmp/none.csv" -o "$tmp/n.png"
printf 'epoch,lr\n1,0.1\n' >"$tmp/nothing.csv"
expect_fail "only bookkeeping columns" 1 "nothing to draw" "$K" plot "$tmp/nothing.csv" -o "$tmp/n.png"

# arguments
expect_fail "-o is required" 2 "give the image to write with -o" "$K" plot "$tmp/history.csv"
expect_fail "the format comes from -o" 2 "must end in .png or .svg" "$K" plot "$tmp/history.csv" -o "$tmp/curves.jpg"
expect_fail "an unknown option" 2 "unexpected argument '--bogus'" "$K" plot "$tmp/history.csv" -o "$tmp/c.png" --bogus
expect_fail "--columns names a missing column" 2 "no column 'top5'; the file has: epoch, loss, accuracy" "$K" plot "$tmp/history.csv" -o "$tmp/c.png" --columns loss,top5
expect_fail "an unwritable output" 1 "cannot write $tmp/no/dir.png" "$K" plot "$tmp/history.csv" -o "$tmp/no/dir.png"

# a full disk (a write that fails: `ulimit -f` with SIGXFSZ ignored makes writes past 1 KiB fail
# with EFBIG) is an error, the old file stays as it was, and no partial or temp file is left
# (issue 24.12: the SVG was cut short and "Plotted" printed with exit 0; the PNG left a partial file)
full() { bash -c 'trap "" XFSZ; ulimit -f 1; exec "$@"' full "$@"; }
mkdir "$tmp/disk"
echo "old image" >"$tmp/disk/keep.svg"
expect_fail "SVG on a full disk" 1 "cannot write $tmp/disk/keep.svg" full "$K" plot "$tmp/history.csv" -o "$tmp/disk/keep.svg"
[ "$(cat "$tmp/disk/keep.svg")" = "old image" ] && ok || bad "the old SVG was replaced by a failed write: $(head -c 80 "$tmp/disk/keep.svg")"
expect_fail "PNG on a full disk" 1 "cannot write $tmp/disk/new.png" full "$K" plot "$tmp/history.csv" -o "$tmp/disk/new.png"
[ "$(ls "$tmp/disk")" = "keep.svg" ] && ok || bad "files left by failed writes: $(ls "$tmp/disk")"
# replaced atomically when it works: the new image, no temp file
"$K" plot "$tmp/history.csv" -o "$tmp/disk/keep.svg" >/dev/null 2>&1 && grep -q "<svg" "$tmp/disk/keep.svg" \
  && [ "$(ls "$tmp/disk")" = "keep.svg" ] && ok || bad "SVG replacing an old file: $(ls "$tmp/disk")"
# the image is never written over the history it draws (the same file under another name)
ln "$tmp/history.csv" "$tmp/disk/history.png"
expect_fail "-o the history itself" 2 "is the history" "$K" plot "$tmp/history.csv" -o "$tmp/disk/history.png"
head -1 "$tmp/history.csv" | grep -q "^epoch," && ok || bad "the history was overwritten"
# a FIFO is refused at once, not waited on
if mkfifo "$tmp/fifo.csv" 2>/dev/null; then
  expect_fail "a FIFO history" 1 "not a regular file" timeout 10 "$K" plot "$tmp/fifo.csv" -o "$tmp/f.png"
fi

echo "test_plot: $pass passed, $fail failed"
[ $fail -eq 0 ]

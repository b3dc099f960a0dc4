# Shared by the CLI test scripts (sourced): pass/fail counters and the two checks they all use.
# The script sets pass=0 fail=0 and prints its own summary.
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
expect() {   # expect "description" "pattern" command... : exit status 0 and output matching pattern
  local what=$1 pat=$2; shift 2
  local out; out=$("$@" 2>&1); local rc=$?
  if [ $rc -eq 0 ] && grep -qE -- "$pat" <<<"$out"; then ok; else bad "$what (rc $rc): $(head -c 800 <<<"$out")"; fi
}
expect_fail() {   # non-zero exit and output matching pattern
  local what=$1 pat=$2; shift 2
  local out; out=$("$@" 2>&1); local rc=$?
  if [ $rc -ne 0 ] && grep -qE -- "$pat" <<<"$out"; then ok; else bad "$what (rc $rc): $(head -c 800 <<<"$out")"; fi
}

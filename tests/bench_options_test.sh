#!/usr/bin/env bash
# CTest Benchmarks.RefuseBadOptions: the benchmark drivers issue 50 added options to refuse a bad
# value before running anything, with exit status 1 and a message naming the option and what
# was expected.
#   bench_options_test.sh SOURCE_DIR NCORE_BINARY BENCH_CORE_BINARY
set -uo pipefail
src=$1 ncore=$2 bench_core=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
expect() {  # expect MESSAGE COMMAND...: exit 1 and MESSAGE in the output
  local want=$1
  shift
  local out code
  out=$("$@" 2>&1)
  code=$?
  [[ $code == 1 ]] || fail "$*: exit $code, expected 1: $out"
  grep -qF -- "$want" <<<"$out" || fail "$*: expected '$want' in: $out"
  echo "ok   $*"
}
expect "--band: expected a fraction in (0, 1), found 2.0" \
  /usr/bin/python3 "$src/scripts/silicon_bench" --band 2 --ncore "$ncore"
expect "/nonexistent/ncore: expected an ncore binary, found none" \
  /usr/bin/python3 "$src/scripts/system_bench" --long --baseline /nonexistent/ncore --ncore "$ncore"
expect "--mix-timing: trn3 not in {uniform,trn2,trn1}" "$bench_core" --mix 1 --mix-timing trn3
# Issue 52's build choices (speed_bench NAME=PATH@CHOICES).
expect "expected logic, host-fpu, threads=N or engine-cols=N after '@', found 'fast'" \
  /usr/bin/python3 "$src/scripts/speed_bench" "x=$ncore@fast" --only array
expect "expected logic, host-fpu, threads=N or engine-cols=N after '@', found 'threads=two'" \
  /usr/bin/python3 "$src/scripts/speed_bench" "x=$ncore@logic,threads=two" --only array
expect "--base y: expected one of the builds' names (x)" \
  /usr/bin/python3 "$src/scripts/speed_bench" "x=$ncore" --only array --base y

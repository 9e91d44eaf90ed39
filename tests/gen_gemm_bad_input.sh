#!/usr/bin/env bash
# tests/gen_gemm.py on bad sizes and an output it cannot write: each must stop it with exit
# status 1 and a message naming the option and what is wrong, and write nothing.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() {  # expected message, then the arguments
  local want=$1; shift
  out=$(/usr/bin/python3 "$root/tests/gen_gemm.py" "$@" 2>&1)
  code=$?
  if [[ $code -ne 1 || "$out" != *"$want"* || -e "$work/g.s" ]]; then
    echo "FAIL: $*: exit $code, expected 1 and '$want', got: $out"; fail=1
  else
    echo "ok: ${out##*$'\n'}"
  fi
}
check "--k: expected a positive multiple of 128, found 100" --k 100 -o "$work/g.s"
check "--m: expected a positive multiple of 512, found 128" --m 128 -o "$work/g.s"
check "--n: expected a positive multiple of 512, found 0" --n 0 -o "$work/g.s"
check "--k 8192: needs" --k 8192 -o "$work/g.s"
check "argument --k: invalid int value: 'many'" --k many -o "$work/g.s"
check "-o $work/no/such/g.s: cannot write the program" -o "$work/no/such/g.s"
# and a good one writes a program that names its shape
/usr/bin/python3 "$root/tests/gen_gemm.py" --k 128 --m 512 --n 512 -o "$work/ok.s" &&
  grep -q "C\[512, 512\] = A\[128, 512\]" "$work/ok.s" || { echo "FAIL: a good size wrote no program"; fail=1; }
exit $fail

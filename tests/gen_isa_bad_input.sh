#!/usr/bin/env bash
# scripts/gen_isa on a broken copy of model/isa/ncore.isa: each break must stop it with exit
# status 2 and a message naming the line and what is wrong, and write nothing.
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail=0
check() {  # sed expression, expected message
  rm -rf "$work/out"
  sed "$1" "$root/model/isa/ncore.isa" > "$work/bad.isa"
  cmp -s "$work/bad.isa" "$root/model/isa/ncore.isa" && { echo "break did not apply: $1"; fail=1; return; }
  out=$(NCORE_GEN_ISA_SOURCE="$work/bad.isa" NCORE_GEN_ISA_OUT="$work/out" "$root/scripts/gen_isa" 2>&1)
  code=$?
  if [[ $code -ne 2 || "$out" != "gen_isa: bad.isa:"[0-9]*": "*"$2"* || -e "$work/out" ]]; then
    echo "FAIL: $1: exit $code, expected 2 and 'bad.isa:LINE: ...$2', got: $out"; fail=1
  else
    echo "ok: $out"
  fi
}
check 's/^format ve 64 opcode=tensor_copy/format ve 64 opcode=nosuch/' 'opcode=nosuch is not an opcode'
check 's/^format te 64 "/format te 64 intx=5 "/' 'found intx=5'
check 's/^format dma 64 int=uint64_t/format dma 64 int=float/' 'int=float: expected int'
check 's/^  partitions       8  default=1 /  partitions       8  default=300 /' 'default 300 outside 0..255'
check 's/^  src0             access /  src0             acces /' "unknown struct or width 'acces'"
check 's/^  op0              4  alu_op /  op0              4  alu_opx /' "unknown enum 'alu_opx'"
check 's/^  in0              4  d_type /  in0              3  d_type /' '3 bits, but enum d_type is 4'
check 's/^  count\[4\]  16 default=1 /  count[4]  16 default=1,2 /' '2 defaults for 4 elements'
exit $fail

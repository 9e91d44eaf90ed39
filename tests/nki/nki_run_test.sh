#!/usr/bin/env bash
# CTest Nki.RunsAKernelFileFromTheShell: scripts/nki-run runs an unmodified kernel file (its
# imports of either dialect aliased) on .npy inputs, writes the output, keeps a program `ncore run`
# re-runs to the same output, and refuses a missing kernel and a bad input file (exit 1).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 -c "
import numpy as np
rng = np.random.default_rng(7)
np.save('$tmp/a.npy', rng.standard_normal((16, 64)).astype(np.float32))
np.save('$tmp/b.npy', rng.standard_normal((16, 64)).astype(np.float32))"
"$root/scripts/nki-run" "$root/tests/nki/tensor_add.py" tensor_add_kernel --inputs "$tmp/a.npy" "$tmp/b.npy" \
  --size 8 --grid 2,2 --outputs "$tmp/out" --program-out "$tmp/prog/add.s"
ncore=$(/usr/bin/python3 -c 'import ncore.tool as t; print(t.ncore_binary())')
"$ncore" run "$tmp/prog/add.s" --size 8 --outputs "$tmp/rerun" > /dev/null
/usr/bin/python3 -c "
import numpy as np
a, b = np.load('$tmp/a.npy'), np.load('$tmp/b.npy')
out, rerun = np.load('$tmp/out/out0.npy'), np.load('$tmp/rerun/out0.npy')
assert np.array_equal(out, a + b), 'nki-run output differs from numpy'
assert np.array_equal(out, rerun), 'ncore run of the kept program differs'
print('outputs equal numpy and the rerun')"
# A kernel file of the current dialect (import nki) runs unchanged too.
"$root/scripts/nki-run" "$root/tests/nki/current/tensor_add.py" tensor_add_kernel --inputs "$tmp/a.npy" "$tmp/b.npy" \
  --size 8 --grid 2 --outputs "$tmp/current"
/usr/bin/python3 -c "
import numpy as np
a, b = np.load('$tmp/a.npy'), np.load('$tmp/b.npy')
assert np.array_equal(np.load('$tmp/current/out0.npy'), a + b), 'the current dialect kernel differs from numpy'
print('the current dialect kernel equals numpy')"
for bad in "tensor_add_kernel --inputs $tmp/missing.npy" "no_such_kernel --inputs $tmp/a.npy $tmp/b.npy" \
           "tensor_add_kernel --engine verilog"; do
  # shellcheck disable=SC2086
  status=0
  "$root/scripts/nki-run" "$root/tests/nki/tensor_add.py" $bad 2> "$tmp/err" || status=$?
  [[ $status == 1 ]] || { echo "FAIL: nki-run $bad: exit status $status, expected 1"; exit 1; }
  grep -q "nki-run" "$tmp/err" || { echo "FAIL: no nki-run message for $bad"; cat "$tmp/err"; exit 1; }
  echo "refused: $(tail -1 "$tmp/err")"
done

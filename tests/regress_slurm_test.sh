#!/usr/bin/env bash
# CTest Regress.SlurmBackend: scripts/regress --backend slurm against a real single-node Slurm
# (scripts/slurm_local: munged, slurmctld, slurmd on loopback). Two seeds of the 8-lane vector
# family and one injected failing run go out as one job array; the test checks that every task
# ran under Slurm, that the failure is reported with its reproduce command and re-run with waves,
# and that the JUnit and HTML reports count 2 passes and 1 failure.
# Usage: regress_slurm_test.sh BUILD_DIR
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$1
cluster=$build/slurm-ctest/cluster
out=$build/slurm-ctest/out
rm -rf "$build/slurm-ctest"
mkdir -p "$build/slurm-ctest"
trap 'bash "$root/scripts/slurm_local" stop "$cluster"' EXIT

eval "$(bash "$root/scripts/slurm_local" start "$cluster")" || { echo "FAIL: the local Slurm did not start"; exit 1; }
"$root/scripts/regress" --backend slurm --no-build --seeds 2 --base-seed 5 --family vector-8 \
  --inject-failure --jobs 2 --timeout 600 --out "$out" > "$out.log" 2>&1
code=$?
cat "$out.log"
fail() { echo "FAIL: $*"; exit 1; }
[[ $code == 1 ]] || fail "regress exited $code, expected 1 (one injected failure)"
grep -q 'Slurm job array [0-9]* (3 tasks' "$out.log" || fail "no job array submitted"
for i in 0 1 2; do
  [[ -f $out/slurm/result_$i.json ]] || fail "task $i left no result"
  grep -q '"node": "ncore-node"' "$out/slurm/result_$i.json" || fail "task $i did not run on the Slurm node"
done
grep -q 'reproduce: NCORE_SEED=0' "$out.log" || fail "the failure has no reproduce command"
grep -q 're-run with waves: ' "$out.log" || fail "the failure was not re-run with waves"
grep -q 'tests="3" failures="1"' "$out/junit.xml" || fail "JUnit does not count 3 runs, 1 failure"
grep -q '2/3 passed' "$out/index.html" || fail "HTML summary does not say 2/3 passed"
grep -q 'backend slurm' "$out/index.html" || fail "HTML summary does not name the backend"
echo "PASS: 3 Slurm array tasks, 2 passed, the injected failure reported and re-run"

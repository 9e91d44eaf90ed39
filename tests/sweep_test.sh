#!/usr/bin/env bash
# CTests Sweep.Local and Sweep.SlurmBackend: scripts/sweep runs two configurations (the chip's
# HBM pin rate) x two programs on a chip, here or as a Slurm job array on a real single-node
# Slurm (scripts/slurm_local). Checks: the CSV has one row per point, with its program and axis
# value; every point passed (on Slurm: on the Slurm node); each row's sim_time_us is the one a
# direct `ncore tlm run` of that point gives; the plot was written. Locally also: a point whose
# configuration ncore refuses is a failed row with ncore's error and the sweep exits 1; a bad
# grid is refused naming its key.
#   sweep_test.sh SOURCE_DIR BUILD_DIR local|slurm
set -uo pipefail
root=$1
build=$2
backend=$3
work=$build/sweep-ctest-$backend
rm -rf "$work"
mkdir -p "$work"
fail() { echo "FAIL: $*"; exit 1; }
ncore=$build/tb/ncore
cd "$root" || fail "no source tree at $root"  # the grid's programs are relative to it

if [[ $backend == slurm ]]; then
  cluster=$work/cluster
  trap 'bash "$root/scripts/slurm_local" stop "$cluster"' EXIT
  eval "$(bash "$root/scripts/slurm_local" start "$cluster")" || fail "the local Slurm did not start"
fi

cat > "$work/grid.json" <<'EOF'
{"run": "tlm", "system": "chip",
 "programs": ["tests/programs/system/tp_mlp.s", "tests/programs/system/hbm_stream.s"],
 "axes": {"chip.hbm_pin_gbps": [2.832, 5.664]}, "options": ["--no-data"], "metric": "sim_time_us"}
EOF
"$root/scripts/sweep" "$work/grid.json" --backend "$backend" --jobs 2 --timeout 600 --ncore "$ncore" \
  --out "$work/out" > "$work/sweep.log" 2>&1
code=$?
cat "$work/sweep.log"
[[ $code == 0 ]] || fail "sweep exited $code"
[[ -s $work/out/sweep.png ]] || fail "no plot"
# Each row against a direct run of its point (independent of the sweep's own plumbing).
/usr/bin/python3 - "$work" "$ncore" "$backend" <<'EOF' || exit 1
import csv, json, subprocess, sys
work, ncore, backend = sys.argv[1:]
rows = list(csv.DictReader(open(f"{work}/out/sweep.csv")))
want = [(p, v) for p in ("tests/programs/system/tp_mlp.s", "tests/programs/system/hbm_stream.s") for v in ("2.832", "5.664")]
got = [(r["program"], r["chip.hbm_pin_gbps"]) for r in rows]
if got != want:
    sys.exit(f"FAIL: rows {got}, expected {want}")
for r in rows:
    if r["status"] != "pass":
        sys.exit(f"FAIL: point {r['point']}: {r['status']}: {r['error']}")
    if backend == "slurm" and r["node"] != "ncore-node":
        sys.exit(f"FAIL: point {r['point']} ran on '{r['node']}', not on the Slurm node")
    cfg = f"{work}/direct.json"
    json.dump({"system": "chip", "chip": {"hbm_pin_gbps": float(r["chip.hbm_pin_gbps"])}}, open(cfg, "w"))
    out = subprocess.run([ncore, "tlm", "run", r["program"], "--system", "chip", "--config", cfg, "--no-data", "--json"],
                         capture_output=True, text=True, check=True)
    direct = json.loads(out.stdout)["sim_time_us"]
    if float(r["sim_time_us"]) != direct:
        sys.exit(f"FAIL: point {r['point']}: the sweep says {r['sim_time_us']} us, a direct run {direct}")
print(f"ok   {len(rows)} points, each the time a direct run gives")
EOF
[[ $backend == slurm ]] && { echo "PASS: 4 points as a Slurm job array, each checked"; exit 0; }

# A point ncore refuses: a failed row with ncore's error, exit 1; the others still run.
sed 's/\[2.832, 5.664\]/[0.25, 5.664]/' "$work/grid.json" > "$work/refused.json"
"$root/scripts/sweep" "$work/refused.json" --jobs 2 --ncore "$ncore" --out "$work/refused" > "$work/refused.log" 2>&1
code=$?
[[ $code == 1 ]] || fail "a refused point: sweep exited $code, expected 1"
grep -q "FAIL point 0 (tests/programs/system/tp_mlp.s, chip.hbm_pin_gbps 0.25): .*key 'chip.hbm_pin_gbps'" \
  "$work/refused.log" || fail "the refused point's error is not reported: $(cat "$work/refused.log")"
[[ $(grep -c ',pass,' "$work/refused/sweep.csv") == 2 && $(grep -c ',fail,' "$work/refused/sweep.csv") == 2 ]] ||
  fail "expected 2 passed and 2 failed rows: $(cat "$work/refused/sweep.csv")"

# A bad grid: refused before anything runs, naming the key.
echo '{"run": "tlm", "system": "chip", "programs": ["tests/programs/system/tp_mlp.s"], "axes": {"chip.hbm_pin_gbps": []}, "metric": "sim_time_us"}' \
  > "$work/bad.json"
msg=$("$root/scripts/sweep" "$work/bad.json" --ncore "$ncore" --out "$work/bad" 2>&1)
code=$?
[[ $code == 1 ]] || fail "a bad grid: exit $code, expected 1"
grep -q "bad.json: key 'axes.chip.hbm_pin_gbps': expected a non-empty list of values, found \[\]" <<<"$msg" ||
  fail "a bad grid's message: $msg"
# An axis through a base value that is no object, and a bad option: refused, naming them.
echo '{"run": "tlm", "system": "chip", "programs": ["tests/programs/system/tp_mlp.s"], "base": {"chip": 3}, "axes": {"chip.hbm_pin_gbps": [5.664]}, "metric": "sim_time_us"}' \
  > "$work/base.json"
msg=$("$root/scripts/sweep" "$work/base.json" --ncore "$ncore" --out "$work/base" 2>&1)
[[ $? == 1 ]] && grep -q "base.json: key 'axes.chip.hbm_pin_gbps': expected a key whose 'chip' is an object" <<<"$msg" ||
  fail "an axis through a non-object: $msg"
msg=$("$root/scripts/sweep" "$work/grid.json" --jobs 0 --ncore "$ncore" --out "$work/jobs" 2>&1)
[[ $? == 1 ]] && grep -q "sweep: --jobs 0: expected at least 1" <<<"$msg" || fail "--jobs 0: $msg"
echo "PASS: 4 points checked against direct runs; a refused point, bad grids and a bad option reported"

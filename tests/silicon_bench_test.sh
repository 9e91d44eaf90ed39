#!/usr/bin/env bash
# CTest SiliconBench.MicroRows: scripts/silicon_bench --only micro times all 40 of its micro rows
# (model/README.md, "Against silicon") at both timings (uniform and the hardware's preset), and
# the warm tensor engine's rows match nki.isa.nc_matmul's cost formula exactly (ratio 1.00:
# cycles are exact, so this is no benchmark figure). The other rows' ratios are the
# calibration's work (issue 49) and are not asserted here; tests/test_core_timing.cpp checks
# each fixed cost cycle for cycle.
#   silicon_bench_test.sh SOURCE_DIR NCORE_BINARY
set -euo pipefail
out=$(/usr/bin/python3 "$1/scripts/silicon_bench" --only micro --ncore "$2")
echo "$out"
rows=$(grep -c '^| [nNT]' <<<"$out" || true)
if [[ $rows -ne 40 ]]; then
  echo "FAIL: $rows micro rows, expected 40" >&2
  exit 1
fi
# Both timings: uniform (column 9) and the hardware's preset (column 11), the engine warm.
ratios=$(grep 'multiply_moving reusing one stationary' <<<"$out" | awk -F'|' '{gsub(/ /, "", $9); gsub(/ /, "", $11); print $9; print $11}')
if [[ $(grep -c . <<<"$ratios") -ne 8 || -n $(grep -v '^1.00$' <<<"$ratios" || true) ]]; then
  echo "FAIL: the tensor engine's rows against nc_matmul's formula: $(tr '\n' ' ' <<<"$ratios")(expected eight 1.00)" >&2
  exit 1
fi
echo "ok   40 micro rows; the tensor engine matches nc_matmul's cost formula on all 4, at both timings"

#!/usr/bin/env bash
# CTest SiliconBench.MicroRows: scripts/silicon_bench --only micro times all 29 of its micro rows
# (model/README.md, "Against silicon"), and the tensor engine's rows match nki.isa.nc_matmul's
# cost formula exactly (ratio 1.00: cycles are exact, so this is no benchmark figure). The other
# rows' ratios are the calibration's work (issue 49) and are not asserted.
#   silicon_bench_test.sh SOURCE_DIR NCORE_BINARY
set -euo pipefail
out=$(/usr/bin/python3 "$1/scripts/silicon_bench" --only micro --ncore "$2")
echo "$out"
rows=$(grep -c '^| [nNT]' <<<"$out" || true)
if [[ $rows -ne 29 ]]; then
  echo "FAIL: $rows micro rows, expected 29" >&2
  exit 1
fi
ratios=$(grep 'multiply_moving' <<<"$out" | awk -F'|' '{gsub(/ /, "", $9); print $9}')
if [[ $(grep -c . <<<"$ratios") -ne 4 || -n $(grep -v '^1.00$' <<<"$ratios" || true) ]]; then
  echo "FAIL: the tensor engine's rows against nc_matmul's formula: $(tr '\n' ' ' <<<"$ratios")(expected four 1.00)" >&2
  exit 1
fi
echo "ok   29 micro rows; the tensor engine matches nc_matmul's cost formula on all 4"

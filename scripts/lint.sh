#!/usr/bin/env bash
# verilator --lint-only -Wall over the RTL, at the default size and at a small one.
set -euo pipefail
cd "$(dirname "$0")/.."
srcs=(rtl/lint.vlt rtl/common/nc_pkg.sv rtl/common/nc_fp_pkg.sv rtl/tensor/nc_tensor_pkg.sv
      rtl/common/nc_fifo.sv rtl/tensor/nc_systolic_array.sv rtl/tensor/nc_psum.sv
      rtl/tensor/nc_tensor_engine.sv)
for params in "" "-GRows=8 -GCols=8" "-GRows=12 -GCols=8"; do
  # shellcheck disable=SC2086
  verilator --lint-only -Wall --assert -Irtl/common "${srcs[@]}" --top-module nc_tensor_engine $params
done
verilator --lint-only -Wall -Irtl/common rtl/common/nc_pkg.sv rtl/common/nc_fp_pkg.sv \
  tb/common/nc_fp_probe.sv --top-module nc_fp_probe
echo "lint: clean"

#!/usr/bin/env bash
# verilator --lint-only -Wall over the RTL, at the default size and at a small one.
set -euo pipefail
cd "$(dirname "$0")/.."
srcs=(rtl/common/lint.vlt rtl/common/nc_isa_pkg.sv rtl/common/nc_pkg.sv rtl/common/nc_fp_pkg.sv rtl/tensor/nc_tensor_pkg.sv
      rtl/common/nc_fifo.sv rtl/tensor/nc_systolic_array.sv rtl/tensor/nc_psum.sv
      rtl/tensor/nc_tensor_engine.sv)
# ExternalArray: the array outside (column slices, tb/tensor/array_slices.h); NCORE_FAST_PE: the
# fast PE build's host-FPU arithmetic (rtl/common/README.md).
for params in "" "-GRows=8 -GCols=8" "-GRows=12 -GCols=8" "-GExternalArray=1" "+define+NCORE_FAST_PE"; do
  # shellcheck disable=SC2086
  verilator --lint-only -Wall --assert -Irtl/common "${srcs[@]}" --top-module nc_tensor_engine $params
done
for params in "" "-GSliced=1" "-GRows=16 -GCols=16 -GSliced=1" "+define+NCORE_FAST_PE" "-GSliced=1 +define+NCORE_FAST_PE"; do
  # shellcheck disable=SC2086
  verilator --lint-only -Wall --assert -Irtl/common "${srcs[@]}" --top-module nc_systolic_array $params
done
hbm=(rtl/common/lint.vlt rtl/common/nc_isa_pkg.sv rtl/hbm/nc_hbm_pkg.sv rtl/common/nc_fifo.sv rtl/hbm/nc_hbm_sched.sv
     rtl/hbm/nc_hbm_refresh.sv rtl/hbm/nc_hbm_ctrl.sv)
for params in "" "-GRdDepth=8 -GWrDepth=16" "-GRdDepth=256 -GWrDepth=256"; do
  # shellcheck disable=SC2086
  verilator --lint-only -Wall --assert -Irtl/common "${hbm[@]}" --top-module nc_hbm_ctrl $params
done
verilator --lint-only -Wall --assert -Irtl/common "${hbm[@]}" tb/hbm/nc_hbm_ctrl_tb.sv \
  --top-module nc_hbm_ctrl_tb
dma=(rtl/common/lint.vlt rtl/common/nc_isa_pkg.sv rtl/dma/nc_dma_pkg.sv rtl/common/nc_fifo.sv rtl/dma/nc_dma.sv)
for params in "" "-GEngines=4 -GTags=4" "-GEngines=2 -GTags=32 -GStageDepth=8"; do
  # shellcheck disable=SC2086
  verilator --lint-only -Wall --assert -Irtl/common "${dma[@]}" --top-module nc_dma $params
done
verilator --lint-only -Wall --assert -Irtl/common "${dma[@]}" tb/dma/nc_dma_tb.sv \
  --top-module nc_dma_tb
vec=(rtl/common/lint.vlt rtl/common/nc_isa_pkg.sv rtl/common/nc_pkg.sv rtl/common/nc_fp_pkg.sv rtl/scalar/nc_act_pkg.sv
     rtl/vector/nc_vector_pkg.sv rtl/common/nc_fifo.sv rtl/vector/nc_vector_engine.sv
     rtl/scalar/nc_scalar_engine.sv)
for params in "" "-GLanes=8" "-GLanes=32 -GRspDepth=2"; do
  # shellcheck disable=SC2086
  verilator --lint-only -Wall --assert -Irtl/common "${vec[@]}" --top-module nc_vector_engine $params
done
for params in "" "-GLanes=8"; do
  # shellcheck disable=SC2086
  verilator --lint-only -Wall --assert -Irtl/common "${vec[@]}" --top-module nc_scalar_engine $params
done
for params in "-GScalar=0" "-GScalar=1"; do
  # shellcheck disable=SC2086
  verilator --lint-only -Wall --assert -Irtl/common "${vec[@]}" tb/vector/nc_vector_engine_tb.sv \
    --top-module nc_vector_engine_tb $params
done
verilator --lint-only -Wall -Irtl/common rtl/common/nc_isa_pkg.sv rtl/common/nc_pkg.sv \
  rtl/common/nc_fp_pkg.sv rtl/scalar/nc_act_pkg.sv tb/scalar/nc_act_probe.sv --top-module nc_act_probe
verilator --lint-only -Wall -Irtl/common rtl/common/nc_isa_pkg.sv rtl/common/nc_pkg.sv \
  rtl/common/nc_fp_pkg.sv tb/common/nc_fp_probe.sv --top-module nc_fp_probe
verilator --lint-only -Wall -Irtl/common rtl/common/nc_fp_pkg.sv tb/common/nc_pe_fp_probe.sv \
  --top-module nc_pe_fp_probe
verilator --lint-only -Wall rtl/common/lint.vlt rtl/common/nc_isa_pkg.sv rtl/core/nc_isa_decode.sv \
  --top-module nc_isa_decode
core=(rtl/common/lint.vlt rtl/common/nc_isa_pkg.sv rtl/common/nc_pkg.sv rtl/common/nc_fp_pkg.sv rtl/tensor/nc_tensor_pkg.sv
      rtl/common/nc_fifo.sv rtl/tensor/nc_systolic_array.sv rtl/tensor/nc_psum.sv
      rtl/tensor/nc_tensor_engine.sv rtl/scalar/nc_act_pkg.sv rtl/vector/nc_vector_pkg.sv
      rtl/vector/nc_vector_engine.sv rtl/scalar/nc_scalar_engine.sv rtl/dma/nc_dma_pkg.sv
      rtl/dma/nc_dma.sv rtl/core/nc_isa_decode.sv rtl/core/nc_sbuf.sv rtl/common/nc_clock_gate.sv
      rtl/core/nc_core_clocks.sv rtl/core/nc_core_bridge.sv rtl/core/nc_core_pipeline.sv rtl/core/nc_core_seq.sv rtl/core/nc_core_fetch.sv rtl/core/nc_core_lists.sv rtl/core/nc_core.sv)
for params in "" "-GSize=8" "-GSize=32 -GFetchDepth=32 -GFetchChunk=8 -GFetchStreams=4" "-GSize=8 +define+NCORE_FAST_PE"; do
  # shellcheck disable=SC2086
  verilator --lint-only -Wall --assert -Irtl/common "${core[@]}" --top-module nc_core $params
done
echo "lint: clean"

#!/usr/bin/env bash
# The main job on defaults: installs what is missing, builds, then runs a co-simulated
# regression of the tensor-engine RTL against the golden model (GEMMs over every input type,
# the double-row, sparse and transpose modes and row/column tiling, random back-pressure,
# every value class), then the HBM controller RTL in lockstep with its reference scheduler on
# DMA-like, sequential and random traffic, reorder against FCFS, then one vector-engine
# instruction of each class and scalar-engine activations in lockstep with the golden model,
# with FST waves written under build/waves/.
# Last, the example NeuronCore programs on the RTL core (128), co-simulated with the golden
# core, waves written.
# Usage: bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$(nproc)"

ncore=build/tb/ncore
mkdir -p build/waves
printf '\n%-36s %8s %11s %7s %9s %9s  %s\n' "case" "cycles" "MACs" "util" "compared" "mismatch" "waves"
run() {
  local name=$1; shift
  local wave="build/waves/${name}.fst"
  local out
  out=$("$ncore" gemm "$@" --waves "$wave" --json) || { echo "$out"; echo "FAILED: $name"; exit 1; }
  local cycles macs util mism compared
  cycles=$(grep -o '"cycles": [0-9]*' <<<"$out" | grep -o '[0-9]*$')
  macs=$(grep -o '"macs": [0-9]*' <<<"$out" | grep -o '[0-9]*$')
  util=$(grep -o '"utilization": [0-9.e-]*' <<<"$out" | grep -o '[0-9.e-]*$')
  mism=$(grep -o '"mismatches": [0-9]*' <<<"$out" | grep -o '[0-9]*$')
  compared=$(grep -o '"psum_writes_compared": [0-9]*' <<<"$out" | grep -o '[0-9]*$')
  printf '%-36s %8s %11s %6.1f%% %9s %9s  %s\n' "$name" "$cycles" "$macs" \
    "$(awk "BEGIN{print 100*$util}")" "$compared" "$mism" "$wave"
}
run bf16_k256_n64_m256_32x32  --k 256 --n 64 --m 256 --dtype bf16 --rows 32 --cols 32 --stall 0.2 --all-classes
run e4m3xe5m2_k96_n40_m600_32x32 --k 96 --n 40 --m 600 --dtype e4m3 --dtype-moving e5m2 --rows 32 --cols 32 --stall 0.1 --all-classes
run fp32_k64_n32_m128_16x16 --k 64 --n 32 --m 128 --dtype fp32 --rows 16 --cols 16 --all-classes
run fp16xtf32_k40_n12_m100_12x8 --k 40 --n 12 --m 100 --dtype fp16 --dtype-moving tf32 --rows 12 --cols 8 --stall 0.3 --all-classes
run double_row_e4m3xe5m2_k512_32x32 --mode double-row --k 512 --n 32 --m 256 --dtype e4m3 --dtype-moving e5m2 --rows 32 --cols 32 --stall 0.1 --all-classes
run sparse_4of16_bf16_k512_32x32 --mode sparse-4:16 --k 512 --n 32 --m 256 --dtype bf16 --rows 32 --cols 32 --stall 0.1 --all-classes
run transpose_fp16_k32_32x32 --mode transpose --k 32 --n 32 --m 32 --dtype fp16 --rows 32 --cols 32 --all-classes
run tiled_4x4_bf16_batch16_32x32 --tiling 4x4 --batch 16 --k 8 --n 8 --m 256 --dtype bf16 --rows 32 --cols 32 --stall 0.1 --all-classes
run bf16_k128_n128_m512_128x128 --k 128 --n 128 --m 512 --dtype bf16 --rows 128 --cols 128
echo
echo "Every PSUM write above was compared with the golden model as it happened."

# The HBM controller: traces of 512 KiB, each run in lockstep (every command, every cycle).
scripts/hbm_traces --out build/traces/demo --bytes 524288 dma16 seq random mixed > /dev/null
printf '\n%-22s %-8s %9s %8s %9s %10s %10s  %s\n' "HBM trace" "sched" "cycles" "util" "GB/s" \
  "row hits" "compared" "waves"
hbm() {
  local trace=$1 sched=$2
  local wave="build/waves/hbm_${trace}_${sched}.fst"
  local out
  out=$("$ncore" hbm --trace "build/traces/demo/${trace}.trace" --sched "$sched" --engine cosim \
        --stall 0.1 --waves "$wave" --to 20000 --json) || { echo "FAILED: hbm $trace $sched"; exit 1; }
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%-22s %-8s %9d %7.2f%% %9.2f %9.1f%% %10d  %s" % (sys.argv[2], d["sched"], d["cycles"], 100*d["utilization"], d["gbps"], 100*d["row_hit_rate"], d["commands_compared"], sys.argv[3]))' "$out" "$trace" "$wave"
}
for t in dma16 seq random mixed; do
  hbm "$t" reorder
  hbm "$t" fcfs
done
echo
echo "Every HBM command above was compared with the reference scheduler cycle for cycle and"
echo "passed the independent timing checker; every read returned the latest earlier write."

# The vector engine: one instruction of each class on 128 lanes (and transposes on 8), each in
# lockstep with the golden model, every element of every write compared as it happens.
printf '\n%-44s %8s %8s %10s %9s  %s\n' "vector / scalar engine" "cycles" "cost" "compared" "mismatch" "waves"
vec() {
  local name=$1; shift
  local wave="build/waves/ve_${name}.fst"
  local out
  out=$("$ncore" vec "$@" --engine cosim --stall 0.1 --waves "$wave" --json) || { echo "$out"; echo "FAILED: vec $name"; exit 1; }
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print("%-44s %8d %8d %10d %9d  %s" % (sys.argv[2], d["cycles"], d["cost_model_cycles"], d["elements_compared"], d["mismatches"], sys.argv[3]))' "$out" "$name" "$wave"
}
vec copy_fp32_to_e4m3_sr       --op tensor_copy --dtype-in fp32 --dtype-out e4m3 --rounding sr --free 1024
vec scalar_bf16_perf_mode      --op tensor_scalar --dtype-in bf16 --dtype-out bf16 --alu0 multiply --alu1 add --free 2048
vec tensor_fp16_sub_to_fp8     --op tensor_tensor --dtype-in fp16 --dtype-out e5m2 --alu0 subtract --saturate --free 512
vec reduce_max_bf16_96parts    --op tensor_reduce --dtype-in bf16 --dtype-out fp32 --alu0 max --partitions 96 --free 2048
vec scan_fp32                  --op tensor_tensor_scan --dtype-in fp32 --dtype-out fp32 --free 512
vec xor_int16_to_int8          --op tensor_tensor --dtype-in int16 --dtype-out int8 --alu0 xor --free 512
vec transpose_bf16             --op transpose --dtype-in bf16 --free 512
vec shuffle_e4m3_8lanes        --op shuffle --dtype-in e4m3 --lanes 8 --free 256
vec act_gelu_bf16_sum          --op activation --func gelu --dtype-in bf16 --dtype-out bf16 --scale 0.5 --bias 0.25 --accumulate --free 1024
vec act_exp_fp32               --op activation --func exp --dtype-in fp32 --dtype-out fp32 --scale 4 --bias -2 --free 512
vec act_rsqrt_fp16_to_e4m3_sr  --op activation --func rsqrt --dtype-in fp16 --dtype-out e4m3 --rounding sr --free 512
vec act_sigmoid_8lanes         --op activation --func sigmoid --dtype-in e5m2 --lanes 8 --free 256
echo
echo "Every vector- and scalar-engine write above was compared with the golden model as it happened."
echo "View a run: scripts/waves build/waves/<case>.fst (HBM runs: scripts/waves FILE hbm;"
echo "vector/scalar-engine runs at 8 lanes: scripts/waves FILE vector_engine | scalar_engine)"

# NeuronCore programs: the example kernels on the RTL core (128x128 PE array, 128 lanes, all
# four queues, semaphores, 16 DMA engines, HBM reference controller) co-simulated with the
# golden core: the run status, the semaphores, every SBUF byte and every HBM burst written are
# compared bit for bit at the end. Waves of each run's first 40,000 cycles are written. The
# timing is trn2's (the default: engine clocks divided from a 4.8 GHz base clock, fixed costs;
# model/README.md, "Timing presets"): cycles are base-clock cycles.
echo
echo "NeuronCore programs at the trn2 timing (cycles of the 4.8 GHz base clock)"
printf '%-20s %7s %10s %10s %8s %9s %7s %8s  %s\n' "program (RTL core)" "status" "RTL cyc" "golden cyc" \
  "PE util" "HBM GB/s" "cosim" "wall s" "waves"
for prog in softmax rmsnorm gemm_bf16_1024; do
  wave="build/waves/core_${prog}.fst"
  out=$("$ncore" run "tests/programs/${prog}.s" --engine cosim --waves "$wave" --to 40000 --json) || {
    echo "$out"; echo "FAILED: run $prog"; exit 1; }
  python3 -c 'import json,sys; d=json.loads(sys.argv[1]); c=d["cosim"]; print("%-20s %7s %10d %10d %7.1f%% %9.1f %7s %8.1f  %s" % (sys.argv[2], d["status"], d["cycles"], c["golden_cycles"], 100*d["te_utilization"], d["hbm_gbps"], "match" if c["ok"] else "MISMATCH", d["wall_seconds"], sys.argv[3]))' "$out" "$prog" "$wave"
done
echo
echo "Each program's end state (SBUF, HBM, semaphores) matched the golden core bit for bit."
echo "View a core run: scripts/waves build/waves/core_softmax.fst core"

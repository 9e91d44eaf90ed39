// Benchmark (not a test): the vector engine's cycles per instruction class and free size
// against the cost model (rtl/vector/README.md, "Timing"), 128 lanes, every partition active,
// no back-pressure; and the simulation speed of the 128-lane RTL in lockstep with the golden
// model. Cycle counts are exact properties of the design; the speed depends on the machine.

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "tb/vector/ve_random.h"
#include "tb/vector/ve_sim.h"

int main() {
  using ncore::model::DType;
  using ncore::isa::Opcode;
  struct Case {
    const char* name;
    Opcode op;
    DType in, out;
  };
  const Case cases[] = {
      {"tensor_copy fp32->bf16", Opcode::kTensorCopy, DType::kFp32, DType::kBf16},
      {"tensor_copy bf16->bf16 (perf mode)", Opcode::kTensorCopy, DType::kBf16, DType::kBf16},
      {"tensor_scalar fp32 (mul, add)", Opcode::kTensorScalar, DType::kFp32, DType::kFp32},
      {"tensor_scalar bf16 (perf mode)", Opcode::kTensorScalar, DType::kBf16, DType::kBf16},
      {"tensor_tensor bf16 (mul)", Opcode::kTensorTensor, DType::kBf16, DType::kFp32},
      {"tensor_reduce fp32 (add, rows of 512)", Opcode::kTensorReduce, DType::kFp32, DType::kFp32},
      {"tensor_tensor_scan fp32", Opcode::kTensorTensorScan, DType::kFp32, DType::kFp32},
      {"transpose bf16 (32x32 blocks)", Opcode::kTranspose, DType::kBf16, DType::kBf16},
      {"shuffle bf16", Opcode::kShuffle, DType::kBf16, DType::kBf16},
  };
  const uint32_t sizes[] = {64, 512, 4096};
  fmt::print("| instruction | free size | cycles | cost model | cycles / cost |\n");
  fmt::print("|---|---|---|---|---|\n");
  uint64_t total_cycles = 0;
  double total_seconds = 0;
  for (const Case& c : cases) {
    for (uint32_t n : sizes) {
      ncore::tb::VeSim sim(128, {});
      ncore::model::SplitMix64 rng(n);
      const auto in = ncore::tb::simple_ve_instruction(sim.config(), c.op, c.in, c.out, n);
      ncore::tb::fill_random(sim.memory(), in.src0.space, in.src0.addr, n, c.in, rng);
      ncore::tb::fill_random(sim.memory(), in.src1.space, in.src1.addr, n, c.in, rng);
      const auto start = std::chrono::steady_clock::now();
      const auto r = sim.run({in});
      total_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!r.ok) {
        fmt::print(stderr, "bench_vector: {}\n", r.failure);
        return 1;
      }
      const uint64_t cycles = r.instr_cycles.front();
      const uint64_t cost = ncore::model::ve_cost_cycles(in, sim.config());
      total_cycles += r.cycles;
      fmt::print("| {} | {} | {} | {} | {:.3f} |\n", c.name, n, cycles, cost,
                 static_cast<double>(cycles) / static_cast<double>(cost));
    }
  }
  fmt::print("\nsimulation speed (128 lanes, lockstep with the golden model, incl. set-up and the "
             "end-of-run memory compare): {:.0f} cycles/s\n", total_cycles / total_seconds);
  return 0;
}

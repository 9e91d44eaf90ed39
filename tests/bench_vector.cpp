// Benchmark (not a test): the vector engine's cycles per instruction class and free size
// against the cost model (rtl/vector/README.md, "Timing"), 128 lanes, every partition active,
// no back-pressure; and the simulation speed of the 128-lane RTL in lockstep with the golden
// model. Cycle counts are exact properties of the design; the speed depends on the machine.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

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
    const char* nki;  // NKI's published cost estimate (hardware.md; the nki.isa pages), in N
  };
  const Case cases[] = {
      {"tensor_copy fp32->bf16", Opcode::kTensorCopy, DType::kFp32, DType::kBf16, "N"},
      {"tensor_copy bf16->bf16 (perf mode)", Opcode::kTensorCopy, DType::kBf16, DType::kBf16, "N/2 to N/4"},
      {"tensor_scalar fp32 (mul, add)", Opcode::kTensorScalar, DType::kFp32, DType::kFp32, "N"},
      {"tensor_scalar bf16 (perf mode)", Opcode::kTensorScalar, DType::kBf16, DType::kBf16, "N/2 to N/4"},
      {"tensor_tensor bf16 (mul)", Opcode::kTensorTensor, DType::kBf16, DType::kFp32, "2N"},
      {"tensor_reduce fp32 (add, rows of 512)", Opcode::kTensorReduce, DType::kFp32, DType::kFp32, "N"},
      {"tensor_tensor_scan fp32", Opcode::kTensorTensorScan, DType::kFp32, DType::kFp32, "2N"},
      {"transpose bf16 (32x32 blocks)", Opcode::kTranspose, DType::kBf16, DType::kBf16, "-"},
      {"shuffle bf16", Opcode::kShuffle, DType::kBf16, DType::kBf16, "-"},
      {"memset bf16", Opcode::kMemset, DType::kBf16, DType::kBf16, "-"},
      {"iota fp32 (GpSimd cost)", Opcode::kIota, DType::kFp32, DType::kFp32, "150 + N"},
      {"affine_select bf16 (causal mask, GpSimd cost)", Opcode::kAffineSelect, DType::kBf16, DType::kBf16, "150 + N"},
      {"bn_stats fp32 (at most 512)", Opcode::kBnStats, DType::kFp32, DType::kFp32, "-"},
      {"bn_aggr fp32 (N/3 triples)", Opcode::kBnAggr, DType::kFp32, DType::kFp32, "max(64, 13 N/3)"},
      {"scalar_tensor_tensor bf16 (mul, add)", Opcode::kScalarTensorTensor, DType::kBf16, DType::kBf16, "2N"},
      {"tensor_scalar_reduce fp32 (mul; add)", Opcode::kTensorScalarReduce, DType::kFp32, DType::kFp32, "max(64, N) + 64"},
  };
  const uint32_t sizes[] = {64, 512, 4096};
  fmt::print("| instruction | free size | cycles | cost model | cycles / cost | NKI's estimate |\n");
  fmt::print("|---|---|---|---|---|---|\n");
  uint64_t total_cycles = 0;
  double total_seconds = 0;
  for (const Case& c : cases) {
    for (uint32_t n : sizes) {
      if (c.op == Opcode::kBnStats && n > ncore::model::kBnStatsMaxElements) continue;
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
      const uint64_t m = ncore::model::ve_source_elements(in);
      const std::string nki = std::string(c.nki) == "N" ? fmt::format("N = {}", m)
                            : std::string(c.nki) == "2N" ? fmt::format("2N = {}", 2 * m)
                            : std::string(c.nki) == "150 + N" ? fmt::format("150 + N = {}", 150 + m)
                            : std::string(c.nki) == "max(64, 13 N/3)" ? fmt::format("max(64, 13 N/3) = {}", std::max<uint64_t>(64, 13 * m / 3))
                            : std::string(c.nki) == "max(64, N) + 64" ? fmt::format("max(64, N) + 64 = {}", std::max<uint64_t>(64, m) + 64)
                            : std::string(c.nki) == "N/2 to N/4" ? fmt::format("N/2 to N/4 = {} to {}", m / 2, m / 4)
                                                                 : std::string(c.nki);
      fmt::print("| {} | {} | {} | {} | {:.3f} | {} |\n", c.name, m, cycles, cost,
                 static_cast<double>(cycles) / static_cast<double>(cost), nki);
    }
  }
  fmt::print("\nsimulation speed (128 lanes, lockstep with the golden model, incl. set-up and the "
             "end-of-run memory compare): {:.0f} cycles/s\n", total_cycles / total_seconds);
  return 0;
}

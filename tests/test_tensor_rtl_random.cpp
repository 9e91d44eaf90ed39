// Constrained-random co-simulation of the tensor-engine RTL against the golden model: 1,000
// seeds over the small array sizes. NCORE_SEED=S reruns one seed alone; NCORE_WAVES adds waves.

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tb/tensor/te_sim.h"
#include "tests/te_test_util.h"

namespace ncore {
namespace {

using model::DType;
using model::TeInstruction;
using test::kInputTypes;
using test::options;

// ---------------------------------------------------------------------------------------
// Constrained random: programs of LS and MM with random shapes, types, value classes,
// strides, PSUM windows, overwrite/accumulate, modes (double-row, transpose, sparsity),
// row/column tiling with MMs streaming in parallel, illegal fields and random back-pressure.
// ---------------------------------------------------------------------------------------
std::vector<TeInstruction> random_program(int rows, int cols, model::Sbuf& sbuf,
                                          model::SplitMix64& rng) {
  std::vector<TeInstruction> program;
  const int count = 2 + static_cast<int>(rng.below(7));
  uint32_t addr = 0;
  int k = 1 + static_cast<int>(rng.below(rows));
  bool in_mode = false;  // the loaded stationary is in a mode: next comes an LS
  for (int i = 0; i < count; ++i) {
    const DType t = kInputTypes[rng.below(6)];
    const uint32_t bytes = model::storage_bits(t) / 8;
    const uint32_t stride = bytes * (rng.below(4) == 0 ? 2 + rng.below(3) : 1);
    addr = (addr + 3) / 4 * 4;
    const bool ls = i == 0 || in_mode || rng.below(3) == 0;
    if (ls && rng.below(6) == 0) {
      // Up to four tiles with their LSs and MMs streaming together.
      const auto group = test::tiled_program(rows, cols, sbuf, rng, addr, nullptr);
      program.insert(program.end(), group.begin(), group.end());
      in_mode = true;
      continue;
    }
    if (ls && rng.below(3) == 0) {
      // A mode block: an LS in double-row, transpose or sparse mode and 1-3 MMs using it.
      model::TeModes modes;
      DType ts = t, tm = kInputTypes[rng.below(6)];
      switch (rng.below(3)) {
        case 0:
          modes.double_row = true;
          ts = rng.below(2) ? DType::kE4m3 : DType::kE5m2;
          tm = rng.below(2) ? DType::kE4m3 : DType::kE5m2;
          break;
        case 1: modes.transpose = true; break;
        default: modes.sparsity = static_cast<model::TeSparsity>(1 + rng.below(3)); break;
      }
      test::append_mode_program(rows, cols, modes, ts, tm, 1 + static_cast<int>(rng.below(3)),
                                sbuf, rng, addr, program);
      in_mode = true;
      continue;
    }
    in_mode = false;
    TeInstruction instr;
    if (ls) {
      if (rng.below(2)) k = 1 + static_cast<int>(rng.below(rows));
      const int m = 1 + static_cast<int>(rng.below(cols));
      sbuf.write_tile(model::random_tile(t, k, m, rng), addr, stride);
      instr = model::load_stationary(t, k, m, addr, stride);
      addr += m * stride;
    } else {
      const int n = 1 + static_cast<int>(rng.below(rng.below(4) == 0 ? 512 : 80));
      const int offset = static_cast<int>(rng.below(513 - n));
      sbuf.write_tile(model::random_tile(t, k, n, rng), addr, stride);
      instr = model::multiply_moving(t, k, n, addr, stride, static_cast<int>(rng.below(8)),
                                     offset, rng.below(2));
      addr += n * stride;
    }
    if (rng.below(12) == 0) {  // an illegal field now and then
      switch (rng.below(7)) {
        case 0: instr.k = rows + 1; break;
        case 1: instr.dtype = DType::kInt16; break;
        case 2: instr.sbuf_addr += 1; break;
        case 3: instr.psum_offset = 512; break;
        case 4: instr.double_row = instr.transpose = true; break;
        case 5: instr.sparsity = model::TeSparsity::k4of12; break;  // a mode mismatch, or K
        default: instr.opcode = isa::Opcode::kNop; break;
      }
    }
    program.push_back(instr);
  }
  return program;
}

void random_regression(int rows, int cols, int seeds, uint64_t base) {
  const char* only = std::getenv("NCORE_SEED");
  int ran = 0;
  uint64_t writes = 0;
  for (int s = 0; s < seeds; ++s) {
    const uint64_t seed = only && *only ? std::strtoull(only, nullptr, 0) : base + s;
    model::SplitMix64 rng(seed);
    auto opts = options(seed, 0.5 * rng.below(100) / 100.0);
    opts.readback = rng.below(4) == 0;
    opts.reproduce = fmt::format("NCORE_SEED={} NCORE_WAVES=fail.fst build/tests/test_tensor_rtl_random "
                                 "--gtest_filter={}", seed,
                                 ::testing::UnitTest::GetInstance()->current_test_info()->name());
    auto sim = tb::make_te_sim(rows, cols, opts);
    const auto program = random_program(rows, cols, sim->sbuf(), rng);
    const auto r = sim->run(program);
    ASSERT_TRUE(r.ok) << "seed " << seed << ": " << r.failure;
    writes += r.psum_writes_checked;
    ++ran;
    if (only && *only) break;
  }
  std::printf("[ random   ] %dx%d: %d seeds from %llu, %llu PSUM writes compared\n", rows, cols,
              ran, static_cast<unsigned long long>(base), static_cast<unsigned long long>(writes));
  EXPECT_GT(writes, 0u);
}

#if NCORE_ALL_SIZES  // the 4x4 array is built with NCORE_ALL_SIZES (label sizes)
TEST(TensorRtlRandom, Array4x4) { random_regression(4, 4, 400, 40000); }
#endif
TEST(TensorRtlRandom, Array8x8) { random_regression(8, 8, 300, 80000); }
TEST(TensorRtlRandom, Array12x8) { random_regression(12, 8, 150, 120000); }
TEST(TensorRtlRandom, Array16x16) { random_regression(16, 16, 100, 160000); }
TEST(TensorRtlRandom, Array32x32) { random_regression(32, 32, 50, 320000); }

}  // namespace
}  // namespace ncore

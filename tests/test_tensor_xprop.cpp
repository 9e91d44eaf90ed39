// X-propagation: the tensor engine built with --x-assign unique --x-initial unique, so every
// flop without a reset (weights, rings, partial sums, data registers) and every X assignment
// starts from a random value drawn from a seed. The same program, under several such seeds and
// under the ordinary build, must give the same PSUM writes (each run checked against the golden
// model), the same cycle count and the same counters.

#include <cstdio>

#include <gtest/gtest.h>

#include "tb/tensor/gemm_plan.h"
#include "tb/tensor/te_sim.h"
#include "tests/seed.h"
#include "tests/te_test_util.h"

namespace ncore {
namespace {

using model::DType;

// A dense GEMM, a block in each mode and a tiled group, on one engine.
std::vector<model::TeInstruction> mixed_program(int rows, int cols, model::Sbuf& sbuf,
                                                uint64_t seed) {
  model::SplitMix64 rng(seed);
  auto program =
      tb::plan_gemm({2 * rows + 3, cols + 2, 70, DType::kBf16, DType::kE4m3}, rows, cols, sbuf,
                    rng, true).program;
  uint32_t addr = 120000;
  const model::TeModes modes[] = {{true, false, model::TeSparsity::kDense},
                                  {false, true, model::TeSparsity::kDense},
                                  {false, false, model::TeSparsity::k4of12}};
  for (const auto& m : modes) {
    const DType t = m.double_row ? DType::kE5m2 : DType::kFp16;
    test::append_mode_program(rows, cols, m, t, t, 2, sbuf, rng, addr, program);
  }
  const auto tiled = test::tiled_program(rows, cols, sbuf, rng, addr, nullptr);
  program.insert(program.end(), tiled.begin(), tiled.end());
  return program;
}

// The X-propagation build really starts from random state: a register without reset (the PSUM
// read data) powers up differently under different seeds, and not as zero.
TEST(TensorXprop, UninitialisedStateIsRandomFromTheSeed) {
  const auto sizes = tb::te_sim_xprop_sizes();
  ASSERT_FALSE(sizes.empty()) << "no X-propagation model built";
  // Not a structured binding: C++17 does not let a lambda capture one (clang refuses it).
  const int rows = sizes.front().first, cols = sizes.front().second;
  auto power_up = [&](uint64_t xprop_seed) {
    auto opts = test::options(1, 0.0);
    opts.xprop_seed = xprop_seed;
    auto sim = tb::make_te_sim(rows, cols, opts);
    std::vector<uint32_t> words;
    for (int p = 0; p < cols; ++p) words.push_back(sim->psum_read_port(p));
    return words;
  };
  const auto a = power_up(1), b = power_up(2);
  EXPECT_NE(a, b);
  EXPECT_NE(a, std::vector<uint32_t>(cols, 0u));
}

TEST(TensorXprop, ResultsAndTimingDoNotDependOnUninitialisedState) {
  const uint64_t seed = test::test_seed(90);
  const auto sizes = tb::te_sim_xprop_sizes();
  ASSERT_FALSE(sizes.empty()) << "no X-propagation model built";
  for (const auto& [rows, cols] : sizes) {
    uint64_t cycles = 0;
    tb::TeCounters first;
    for (uint64_t xprop_seed : {0, 1, 2, 3, 12345}) {  // 0: the ordinary build
      auto opts = test::options(seed, 0.2);
      opts.xprop_seed = xprop_seed;
      auto sim = tb::make_te_sim(rows, cols, opts);
      const auto program = mixed_program(rows, cols, sim->sbuf(), seed);
      const auto r = sim->run(program);
      ASSERT_TRUE(r.ok) << "X-propagation seed " << xprop_seed << ": " << r.failure;
      EXPECT_GT(r.mm_checked, 6u);
      if (xprop_seed == 0) {
        cycles = r.cycles;
        first = r.counters;
        continue;
      }
      EXPECT_EQ(r.cycles, cycles) << rows << "x" << cols << " X seed " << xprop_seed;
      EXPECT_EQ(r.counters.busy, first.busy);
      EXPECT_EQ(r.counters.macs, first.macs);
      EXPECT_EQ(r.counters.stall_mm_wait_ls, first.stall_mm_wait_ls);
      EXPECT_EQ(r.counters.stall_ls_wait_bank, first.stall_ls_wait_bank);
      EXPECT_EQ(r.counters.rejected, first.rejected);
    }
    std::printf("[ xprop    ] %dx%d: 4 X-propagation seeds, %llu cycles each, identical\n", rows,
                cols, static_cast<unsigned long long>(cycles));
  }
}

}  // namespace
}  // namespace ncore

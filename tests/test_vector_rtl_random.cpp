// Constrained-random vector-engine programs in lockstep with the golden model: every opcode,
// type, ALU operation, rounding mode, partition range and access pattern mixed in one stream,
// random back-pressure on every port and random read latency. Each seed prints itself and
// reproduces with NCORE_SEED=<seed>.

#include <cstdlib>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tb/vector/ve_random.h"
#include "tb/vector/ve_sim.h"
#include "tests/seed.h"

namespace ncore {
namespace {

class VeRandom : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(VeRandom, MixedProgramMatchesTheGoldenModel) {
  const auto [lanes, index] = GetParam();
  const uint64_t seed = test::test_seed(1000 * lanes + index);
  model::SplitMix64 rng(seed);
  tb::VeSimOptions o;
  o.seed = seed;
  o.cmd_stall = 0.05 * rng.below(6);
  o.rd_stall = 0.1 * rng.below(5);
  o.wr_stall = 0.1 * rng.below(5);
  o.rsp_extra_latency = static_cast<int>(rng.below(5));
  o.reproduce = fmt::format("NCORE_SEED={} ./tests/test_vector_rtl_random "
                            "--gtest_filter='*L{}_{}*'", seed, lanes, index);
  if (const char* w = std::getenv("NCORE_WAVES")) o.waves = w;  // a failing seed, with waves
  tb::VeSim sim(lanes, o);
  std::vector<model::VeInstruction> program;
  tb::VeGenOptions gen;
  gen.max_elements = lanes == 128 ? 24 : 64;
  gen.illegal = 0.05;
  tb::random_ve_program(sim.config(), sim.memory(), rng, lanes == 128 ? 12 : 30, gen, program);
  const auto r = sim.run(program);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_GT(r.lanes_compared, 0u);
  EXPECT_EQ(r.counters.executed + r.counters.refused, program.size());
}

std::vector<std::tuple<int, int>> cases() {
  std::vector<std::tuple<int, int>> c;
  for (int i = 0; i < 120; ++i) c.emplace_back(8, i);
  for (int i = 0; i < 60; ++i) c.emplace_back(16, i);
  for (int i = 0; i < 40; ++i) c.emplace_back(32, i);
  for (int i = 0; i < 6; ++i) c.emplace_back(128, i);
  return c;
}

INSTANTIATE_TEST_SUITE_P(Seeds, VeRandom, ::testing::ValuesIn(cases()), [](const auto& info) {
  return fmt::format("L{}_{}", std::get<0>(info.param), std::get<1>(info.param));
});

}  // namespace
}  // namespace ncore

// X-propagation: the 8-lane vector and scalar engines also Verilated with --x-assign unique
// --x-initial unique. The unreset state really is random (it differs between seeds), and a
// mixed random program then gives the same results (checked against the golden model), cycles
// and counters under the ordinary build and under several X seeds.

#include <gtest/gtest.h>

#include "tb/vector/ve_random.h"
#include "tb/vector/ve_sim.h"
#include "tests/seed.h"

namespace ncore {
namespace {

class VeXprop : public ::testing::TestWithParam<bool> {};

TEST_P(VeXprop, ResultsDoNotDependOnUninitialisedState) {
  const bool scalar = GetParam();
  const uint64_t seed = test::test_seed(scalar ? 91 : 90);
  auto run = [&](uint64_t xprop_seed) {
    tb::VeSimOptions o;
    o.seed = seed;
    o.rd_stall = o.wr_stall = 0.2;
    o.rsp_extra_latency = 2;
    o.xprop_seed = xprop_seed;
    tb::VeSim sim(8, o, scalar);
    model::SplitMix64 rng(seed);
    std::vector<model::VeInstruction> program;
    tb::VeGenOptions gen;
    gen.illegal = 0.1;
    tb::random_ve_program(sim.config(), sim.memory(), rng, 40, gen, program);
    return sim.run(program);
  };
  const auto plain = run(0);
  ASSERT_TRUE(plain.ok) << plain.failure;
  std::vector<uint64_t> signatures;
  for (uint64_t x : {1u, 2u, 3u}) {
    const auto r = run(x);
    ASSERT_TRUE(r.ok) << "X seed " << x << ": " << r.failure;
    EXPECT_EQ(r.cycles, plain.cycles) << "X seed " << x;
    EXPECT_EQ(r.instr_cycles, plain.instr_cycles) << "X seed " << x;
    EXPECT_EQ(r.lanes_compared, plain.lanes_compared) << "X seed " << x;
    EXPECT_EQ(r.counters.executed, plain.counters.executed);
    EXPECT_EQ(r.counters.refused, plain.counters.refused);
    EXPECT_EQ(r.counters.rd_stall, plain.counters.rd_stall);
    signatures.push_back(r.powerup_signature);
  }
  // The power-up state is random, and differs from seed to seed: the X seeds really bite.
  EXPECT_NE(signatures[0], signatures[1]);
  EXPECT_NE(signatures[1], signatures[2]);
}

INSTANTIATE_TEST_SUITE_P(Engines, VeXprop, ::testing::Values(false, true),
                         [](const auto& info) { return info.param ? "Scalar" : "Vector"; });

}  // namespace
}  // namespace ncore

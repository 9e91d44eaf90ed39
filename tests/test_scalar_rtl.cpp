// The scalar-engine RTL in lockstep with the golden model: every activation function at 8, 32
// and 128 lanes, per-partition and immediate scale and bias, the accumulated sum
// (activation_reduce), every input and output type, refusals, back-pressure, exact timing.

#include <cstdlib>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tb/vector/ve_random.h"
#include "tb/vector/ve_sim.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::ActFunc;
using model::DType;
using isa::Opcode;

model::VeInstruction activation(const model::VeConfig& cfg, ActFunc f, DType in, DType out,
                                uint32_t n) {
  model::VeInstruction i = tb::simple_ve_instruction(cfg, Opcode::kTensorCopy, in, out, n);
  i.opcode = Opcode::kActivation;
  i.act_func = f;
  i.s0 = model::float_to_bits(0.75f);   // scale
  i.s1 = model::float_to_bits(-0.5f);   // bias
  return i;
}

class SeEveryFunction : public ::testing::TestWithParam<std::tuple<int, int>> {};

// Each function over random data of every value class, scale and bias per partition, with the
// sum written, stalls on every port.
TEST_P(SeEveryFunction, MatchesTheGoldenModel) {
  const auto [lanes, f] = GetParam();
  const uint64_t seed = test::test_seed(500 + lanes * 16 + f);
  tb::VeSimOptions o;
  o.seed = seed;
  o.rd_stall = 0.2;
  o.wr_stall = 0.2;
  o.rsp_extra_latency = 2;
  tb::VeSim sim(lanes, o, true);
  model::SplitMix64 rng(seed);
  std::vector<model::VeInstruction> program;
  const uint32_t n = lanes == 128 ? 32 : 96;
  for (DType in : {DType::kFp32, DType::kBf16, DType::kE4m3, DType::kInt16}) {
    auto i = activation(sim.config(), static_cast<ActFunc>(f), in,
                        in == DType::kFp32 ? DType::kFp32 : DType::kBf16, n);
    i.tag = static_cast<uint8_t>(program.size());
    i.acc_enable = true;
    i.acc_addr = 200000 + 4 * static_cast<uint32_t>(program.size());
    if (rng.below(2)) {
      i.s1_per_partition = true;
      i.s1 = 210000;
      for (int l = 0; l < lanes; ++l)
        sim.memory().sbuf.write(l, 210000, 4, model::float_to_bits(static_cast<float>(l) / 8 - 3));
    }
    tb::fill_random(sim.memory(), i.src0.space, i.src0.addr, n, in, rng);
    program.push_back(i);
  }
  const auto r = sim.run(program);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.writes_compared, 4u * (n + 1));
  EXPECT_EQ(r.counters.executed, program.size());
}

INSTANTIATE_TEST_SUITE_P(Lanes, SeEveryFunction,
                         ::testing::Combine(::testing::Values(8, 32, 128),
                                            ::testing::Range(0, ncore::isa::kNumActFunc)),
                         [](const auto& info) {
                           return fmt::format("L{}_{}", std::get<0>(info.param),
                                              model::act_func_name(static_cast<ActFunc>(
                                                  std::get<1>(info.param))));
                         });

// Constrained-random activation programs: any function, type pair, rounding, partition range,
// access pattern and scale/bias, some illegal fields.
class SeRandom : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(SeRandom, MixedProgramMatchesTheGoldenModel) {
  const auto [lanes, index] = GetParam();
  const uint64_t seed = test::test_seed(7000 + 100 * lanes + index);
  model::SplitMix64 rng(seed);
  tb::VeSimOptions o;
  o.seed = seed;
  o.cmd_stall = 0.1 * rng.below(3);
  o.rd_stall = 0.1 * rng.below(4);
  o.wr_stall = 0.1 * rng.below(4);
  o.rsp_extra_latency = static_cast<int>(rng.below(4));
  o.reproduce = fmt::format("NCORE_SEED={} ./tests/test_scalar_rtl --gtest_filter='*SeRandom*L{}_{}'",
                            seed, lanes, index);
  if (const char* w = std::getenv("NCORE_WAVES")) o.waves = w;  // a failing seed, with waves
  tb::VeSim sim(lanes, o, true);
  std::vector<model::VeInstruction> program;
  tb::VeGenOptions gen;
  gen.max_elements = 48;
  gen.illegal = 0.1;
  tb::random_ve_program(sim.config(), sim.memory(), rng, 20, gen, program);
  const auto r = sim.run(program);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_GT(r.lanes_compared, 0u);
  EXPECT_EQ(r.counters.executed + r.counters.refused, program.size());
}

std::vector<std::tuple<int, int>> random_cases() {
  std::vector<std::tuple<int, int>> c;
  for (int i = 0; i < 30; ++i) c.emplace_back(8, i);
  for (int i = 0; i < 10; ++i) c.emplace_back(32, i);
  return c;
}
INSTANTIATE_TEST_SUITE_P(Seeds, SeRandom, ::testing::ValuesIn(random_cases()),
                         [](const auto& info) {
                           return fmt::format("L{}_{}", std::get<0>(info.param), std::get<1>(info.param));
                         });

// The scalar engine takes activation only, and the vector engine never takes it.
TEST(SeRtl, EachEngineRefusesTheOthersInstructions) {
  tb::VeSim scalar(8, {}, true), vector(8, {});
  const auto act = activation(scalar.config(), ActFunc::kExp, DType::kFp32, DType::kFp32, 8);
  const auto copy = tb::simple_ve_instruction(scalar.config(), Opcode::kTensorCopy,
                                              DType::kFp32, DType::kFp32, 8);
  const auto rs = scalar.run({copy, act});
  ASSERT_TRUE(rs.ok) << rs.failure;
  EXPECT_EQ(rs.refusals_compared, 1u);
  EXPECT_EQ(rs.counters.refused, 1u);
  EXPECT_EQ(rs.counters.executed, 1u);
  const auto rv = vector.run({act, copy});
  ASSERT_TRUE(rv.ok) << rv.failure;
  EXPECT_EQ(rv.counters.refused, 1u);
  EXPECT_EQ(rv.counters.executed, 1u);
}

// Timing without stalls, exactly: N + 6 cycles, one more for the sum, one per per-partition
// operand read.
TEST(SeRtl, CyclesFollowTheCostModel) {
  tb::VeSim sim(32, {}, true);
  std::vector<model::VeInstruction> program;
  for (uint32_t n : {64u, 1000u}) {
    auto i = activation(sim.config(), ActFunc::kGelu, DType::kBf16, DType::kBf16, n);
    program.push_back(i);
    i.acc_enable = true;
    i.acc_addr = 200000;
    i.s0_per_partition = true;
    i.s0 = 210000;
    program.push_back(i);
  }
  const auto r = sim.run(program);
  ASSERT_TRUE(r.ok) << r.failure;
  for (size_t k = 0; k < program.size(); ++k)
    EXPECT_EQ(r.instr_cycles[k], model::ve_cost_cycles(program[k], sim.config())) << k;
  EXPECT_EQ(r.instr_cycles[0], 64 + model::kVeFixedCycles);
  EXPECT_EQ(r.instr_cycles[1], 64 + model::kVeFixedCycles + 2);
}

}  // namespace
}  // namespace ncore

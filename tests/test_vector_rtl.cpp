// The vector-engine RTL in lockstep with the golden model: every opcode at every lane count,
// every input and output type, refusal codes, back-pressure, and the engine's timing.

#include <algorithm>
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "tb/vector/ve_coverage.h"
#include "tb/vector/ve_random.h"
#include "tb/vector/ve_sim.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::DType;
using isa::Opcode;

constexpr DType kTypes[] = {DType::kFp32, DType::kTf32, DType::kBf16, DType::kFp16, DType::kE4m3,
                            DType::kE5m2, DType::kInt8, DType::kInt16, DType::kInt32};

void expect_clean(const tb::VeSimResult& r) {
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_GT(r.writes_compared + r.refusals_compared, 0u);
}

// Every opcode on random programs at each lane count, with stalls on every port.
class VeEveryOpcode : public ::testing::TestWithParam<std::tuple<int, Opcode>> {};

TEST_P(VeEveryOpcode, MatchesTheGoldenModel) {
  const auto [lanes, op] = GetParam();
  const uint64_t seed = test::test_seed(100 + lanes * 10 + static_cast<int>(op));
  tb::VeSimOptions o;
  o.seed = seed;
  o.cmd_stall = 0.2;
  o.rd_stall = 0.2;
  o.wr_stall = 0.2;
  o.rsp_extra_latency = 3;
  o.reproduce = fmt::format("NCORE_SEED={} ./tests/test_vector_rtl", seed);
  tb::VeSim sim(lanes, o);
  model::SplitMix64 rng(seed);
  std::vector<model::VeInstruction> program;
  tb::VeGenOptions gen;
  gen.opcode = op;
  gen.max_elements = lanes == 128 ? 24 : 48;
  tb::random_ve_program(sim.config(), sim.memory(), rng, lanes == 128 ? 6 : 16, gen, program);
  const auto r = sim.run(program);
  expect_clean(r);
  EXPECT_EQ(r.counters.executed, program.size());
}

INSTANTIATE_TEST_SUITE_P(
    Lanes, VeEveryOpcode,
    ::testing::Combine(::testing::Values(8, 16, 32, 128),
                       ::testing::Values(Opcode::kTensorTensor, Opcode::kTensorScalar,
                                         Opcode::kTensorReduce, Opcode::kTensorCopy,
                                         Opcode::kTensorTensorScan, Opcode::kTranspose,
                                         Opcode::kShuffle, Opcode::kMemset, Opcode::kIota,
                                         Opcode::kAffineSelect, Opcode::kBnStats, Opcode::kBnAggr,
                                         Opcode::kScalarTensorTensor,
                                         Opcode::kTensorScalarReduce)),
    [](const auto& info) {
      return fmt::format("L{}_{}", std::get<0>(info.param),
                         model::ve_opcode_name(std::get<1>(info.param)));
    });

// Every input type to every output type through tensor_copy and tensor_scalar, both roundings,
// saturating and not: the casts on both edges of the lanes.
TEST(VeRtl, EveryTypePairAndRoundingMode) {
  const uint64_t seed = test::test_seed(7);
  tb::VeSimOptions o;
  o.seed = seed;
  tb::VeSim sim(16, o);
  model::SplitMix64 rng(seed);
  std::vector<model::VeInstruction> program;
  for (DType in : kTypes) {
    for (DType out : kTypes) {
      tb::VeGenOptions gen;
      gen.in_type = in;
      gen.out_type = out;
      gen.psum_share = 0;
      gen.opcode = rng.below(2) ? Opcode::kTensorCopy : Opcode::kTensorScalar;
      tb::random_ve_program(sim.config(), sim.memory(), rng, 2, gen, program);
    }
  }
  const auto r = sim.run(program);
  expect_clean(r);
  EXPECT_EQ(r.counters.executed, program.size());
  // Some 16-bit pairs took the performance-mode layout.
  EXPECT_GT(std::count_if(program.begin(), program.end(), model::ve_perf_mode), 0);
}

// The functional cross (tb/vector/ve_coverage.h): one instruction aimed at every reachable bin,
// opcode x output type x partition class, all of them hit and nothing else.
TEST(VeRtl, FunctionalCrossEveryReachableBinHit) {
  const uint64_t seed = test::test_seed(13);
  tb::VeSimOptions o;
  o.seed = seed;
  o.count_bins = true;
  tb::VeSim sim(8, o);
  model::SplitMix64 rng(seed);
  std::vector<model::VeInstruction> program;
  const std::set<std::string> reachable = tb::ve_reachable_bins(false);
  for (const std::string& bin : reachable) {
    std::istringstream words(bin);
    std::string op, out, part;
    words >> op >> out >> part;
    tb::VeGenOptions gen;
    gen.opcode = model::parse_ve_opcode(op);
    gen.out_type = model::parse_dtype(out);
    const bool moves = *gen.opcode == Opcode::kTranspose || *gen.opcode == Opcode::kShuffle;
    gen.in_type = moves ? *gen.out_type : DType::kBf16;
    gen.partitions = part == "all" ? 8 : part == "many" ? 4 : part == "quadrant" ? 2 : 1;
    gen.max_elements = 8;
    tb::random_ve_program(sim.config(), sim.memory(), rng, 1, gen, program);
  }
  const auto r = sim.run(program);
  expect_clean(r);
  EXPECT_EQ(r.counters.executed, program.size());
  std::set<std::string> hit;
  for (const auto& [bin, hits] : r.bins) hit.insert(bin);
  EXPECT_EQ(hit, reachable);
  EXPECT_GT(reachable.size(), 400u);  // 14 opcodes x 9 types x 4 classes, less the rules' exclusions
}

// Illegal fields among legal instructions, at 8, 32 and 128 lanes: the RTL refuses each with the
// model's code, writes nothing for it, and goes on with the next. Every code occurs.
class VeRefusals : public ::testing::TestWithParam<int> {};

TEST_P(VeRefusals, MatchTheModelAndLoseNothing) {
  const int lanes = GetParam();
  const uint64_t seed = test::test_seed(11 + lanes);
  tb::VeSimOptions o;
  o.seed = seed;
  o.cmd_stall = 0.3;
  tb::VeSim sim(lanes, o);
  model::SplitMix64 rng(seed);
  std::vector<model::VeInstruction> program;
  tb::VeGenOptions gen;
  gen.illegal = 0.5;
  gen.max_elements = 16;
  tb::random_ve_program(sim.config(), sim.memory(), rng, lanes == 128 ? 160 : 300, gen, program);
  std::set<model::VeError> codes;
  for (const auto& in : program) codes.insert(model::ve_check(in, sim.config()));
  EXPECT_EQ(codes.size(), static_cast<size_t>(isa::kNumVeError)) << "some refusal code never drawn";
  const auto r = sim.run(program);
  expect_clean(r);
  EXPECT_GT(r.refusals_compared, 30u);
  EXPECT_EQ(r.counters.executed + r.counters.refused, program.size());
}

INSTANTIATE_TEST_SUITE_P(Lanes, VeRefusals, ::testing::Values(8, 32, 128),
                         [](const auto& info) { return fmt::format("L{}", info.param); });

// Timing without stalls, exactly: one input of free size N takes N + 6 cycles, two inputs
// 2N + 6, a transpose 2N + 6 (its block is written out while reads pause), perf mode N/2 + 6.
TEST(VeRtl, CyclesFollowTheCostModel) {
  tb::VeSim sim(32, {});
  std::vector<model::VeInstruction> program;
  const uint32_t sizes[] = {64, 512};
  for (uint32_t n : sizes) {
    for (Opcode op : {Opcode::kTensorCopy, Opcode::kTensorScalar, Opcode::kTensorReduce,
                        Opcode::kTensorTensor, Opcode::kTensorTensorScan,
                        Opcode::kTranspose, Opcode::kMemset, Opcode::kIota,
                        Opcode::kAffineSelect, Opcode::kBnStats, Opcode::kBnAggr,
                        Opcode::kScalarTensorTensor, Opcode::kTensorScalarReduce}) {
      program.push_back(tb::simple_ve_instruction(sim.config(), op, DType::kBf16, DType::kBf16, n));
    }
  }
  const auto r = sim.run(program);
  ASSERT_TRUE(r.ok) << r.failure;
  ASSERT_EQ(r.instr_cycles.size(), program.size());
  for (size_t i = 0; i < program.size(); ++i) {
    const uint64_t cost = model::ve_cost_cycles(program[i], sim.config());
    EXPECT_EQ(r.instr_cycles[i], cost) << model::ve_opcode_name(program[i].opcode);
  }
}

// Performance mode: a BF16 copy or tensor_scalar moves a pair of elements per lane per cycle,
// twice an FP32 copy's rate; a BF16 tensor_tensor (two inputs) does not qualify.
TEST(VeRtl, PerformanceModeDoublesSixteenBitCopies) {
  tb::VeSim sim(16, {});
  const uint32_t n = 1024;
  std::vector<model::VeInstruction> program = {
      tb::simple_ve_instruction(sim.config(), Opcode::kTensorCopy, DType::kFp32, DType::kFp32, n),
      tb::simple_ve_instruction(sim.config(), Opcode::kTensorCopy, DType::kBf16, DType::kBf16, n),
      tb::simple_ve_instruction(sim.config(), Opcode::kTensorScalar, DType::kFp16, DType::kBf16, n)};
  program[2].stochastic = true;
  program[2].seed = 99;
  EXPECT_FALSE(model::ve_perf_mode(program[0]));
  EXPECT_TRUE(model::ve_perf_mode(program[1]));
  EXPECT_TRUE(model::ve_perf_mode(program[2]));
  const auto r = sim.run(program);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.lanes_compared, 3ull * n * 16 - 2 * (n / 2) * 16);  // pairs compare as one word
  EXPECT_EQ(r.instr_cycles[1], n / 2 + model::kVeFixedCycles);
  EXPECT_EQ(r.instr_cycles[2], n / 2 + model::kVeFixedCycles);
  EXPECT_EQ(r.instr_cycles[0], n + model::kVeFixedCycles);
}

// Layouts one step short of performance mode, each a BF16 copy: an odd row (one element short
// of a pair), rows starting 2 bytes into a word, odd outer strides (rows at odd elements), and
// source and destination rows of different lengths. None may take the paired fast path: each
// runs one element per cycle and matches the golden model byte for byte.
TEST(VeRtl, LayoutsOneElementShortOfPerformanceModeRunUnpaired) {
  tb::VeSim sim(8, {});
  const model::VeInstruction base =
      tb::simple_ve_instruction(sim.config(), Opcode::kTensorCopy, DType::kBf16, DType::kBf16, 256);
  ASSERT_TRUE(model::ve_perf_mode(base));
  std::vector<model::VeInstruction> program;
  model::VeInstruction odd = base;  // 255 elements
  odd.src0.count[0] = odd.dst.count[0] = 255;
  program.push_back(odd);
  model::VeInstruction src_at_2 = base;  // the source 2 bytes into a word
  src_at_2.src0.addr += 2;
  program.push_back(src_at_2);
  model::VeInstruction dst_at_2 = base;  // the destination 2 bytes into a word
  dst_at_2.dst.addr += 2;
  program.push_back(dst_at_2);
  model::VeInstruction odd_stride = base;  // 16 rows of 16, the source's rows 17 elements apart
  odd_stride.src0.count = {16, 16, 1, 1};
  odd_stride.src0.stride = {1, 17, 0, 0};
  odd_stride.dst.count = {16, 16, 1, 1};
  odd_stride.dst.stride = {1, 16, 0, 0};
  program.push_back(odd_stride);
  model::VeInstruction lengths = odd_stride;  // rows of 16 read, rows of 32 written
  lengths.src0.stride = {1, 16, 0, 0};
  lengths.dst.count = {32, 8, 1, 1};
  lengths.dst.stride = {1, 32, 0, 0};
  program.push_back(lengths);
  for (const auto& in : program) {
    std::string why;
    ASSERT_EQ(model::ve_check(in, sim.config(), &why), model::VeError::kNone) << why;
    EXPECT_FALSE(model::ve_perf_mode(in));
  }
  model::SplitMix64 rng(test::test_seed(5));
  tb::fill_random(sim.memory(), model::MemSpace::kSbuf, 0, 1024, DType::kBf16, rng);
  const auto r = sim.run(program);
  ASSERT_TRUE(r.ok) << r.failure;
  ASSERT_EQ(r.instr_cycles.size(), program.size());
  for (size_t i = 0; i < program.size(); ++i) {
    uint32_t elements = 1;
    for (int d = 0; d < model::kVeDims; ++d) elements *= program[i].src0.count[d];
    EXPECT_EQ(r.instr_cycles[i], elements + model::kVeFixedCycles) << "instruction " << i;
  }
  EXPECT_GT(r.writes_compared, 0u);
}

}  // namespace
}  // namespace ncore

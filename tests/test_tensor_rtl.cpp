// The tensor-engine RTL in lockstep co-simulation with the golden model (tb/tensor/te_sim.h).
// Every test checks that it compared something: PSUM writes, retired MMs, rejections.
//
// Reproducing a failure: each test prints its seed; NCORE_SEED=S reruns that seed alone,
// NCORE_WAVES=dump.fst writes waves (scripts/waves opens them with waves/tensor_engine.gtkw).

#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/common/error.h"
#include "tb/tensor/gemm_plan.h"
#include "tb/tensor/te_sim.h"
#include "tests/seed.h"
#include "tests/te_test_util.h"

namespace ncore {
namespace {

using model::DType;
using model::TeError;
using model::TeInstruction;
using test::kInputTypes;
using test::options;

using test::expect_clean;

uint32_t bits_of(DType t, float v) { return model::from_fp32(model::float_to_bits(v), t, {}); }

TEST(TensorRtl, GemmOnEveryArraySize) {
  for (const auto& [rows, cols] : tb::te_sim_sizes()) {
    if (rows > 32) continue;  // full sizes: see FullSizeSmoke
    const uint64_t seed = test::test_seed(100 + rows * 7 + cols);
    auto sim = tb::make_te_sim(rows, cols, options(seed, 0.2));
    model::SplitMix64 rng(seed);
    // K spans two and a bit accumulation groups; the stationary's free size needs two LSs.
    tb::GemmShape shape{rows * 2 + 1, cols + 3, 40, DType::kBf16, DType::kBf16};
    const auto plan = tb::plan_gemm(shape, rows, cols, sim->sbuf(), rng, true);
    const auto r = sim->run(plan.program);
    expect_clean(r, 6);
    EXPECT_EQ(r.counters.macs, plan.macs) << rows << "x" << cols;
    EXPECT_EQ(r.readback_checked, 40u * cols) << "every written PSUM word read back";
  }
}

// stationary = I: PSUM[m][n] = moving[m][n]; moving = I: PSUM[m][n] = stationary[n][m].
TEST(TensorRtl, IdentityAndTransposeByIdentity) {
  const int rows = 8, cols = 8, n = 8;
  auto sim = tb::make_te_sim(rows, cols, options(test::test_seed(5), 0.1));
  model::SplitMix64 rng(5);
  model::Tile eye(DType::kBf16, rows, cols), data(DType::kBf16, rows, n);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) eye.at(r, c) = r == c ? bits_of(DType::kBf16, 1.0f) : 0;
  for (auto& b : data.bits) b = bits_of(DType::kBf16, static_cast<float>(rng.below(200)) - 99.5f);
  sim->sbuf().write_tile(eye, 0, 2);
  sim->sbuf().write_tile(data, 64, 2);
  const auto r = sim->run({model::load_stationary(DType::kBf16, rows, cols, 0, 2),
                           model::multiply_moving(DType::kBf16, rows, n, 64, 2, 0, 0, false),
                           model::load_stationary(DType::kBf16, rows, cols, 64, 2),
                           model::multiply_moving(DType::kBf16, rows, n, 0, 2, 1, 0, false)});
  expect_clean(r, 2);
  for (int m = 0; m < cols; ++m) {
    for (int j = 0; j < n; ++j) {
      EXPECT_EQ(sim->golden().psum(m, 0, j), model::to_fp32_bits(DType::kBf16, data.at(m, j)));
      EXPECT_EQ(sim->golden().psum(m, 1, j), model::to_fp32_bits(DType::kBf16, data.at(j, m)));
    }
  }
}

TEST(TensorRtl, LongContractionInEightAccumulationGroups) {
  const uint64_t seed = test::test_seed(8);
  auto sim = tb::make_te_sim(16, 16, options(seed, 0.1));
  model::SplitMix64 rng(seed);
  const auto plan = tb::plan_gemm({8 * 16, 16, 64, DType::kFp16, DType::kBf16}, 16, 16,
                                  sim->sbuf(), rng, false);
  const auto r = sim->run(plan.program);
  expect_clean(r, 8);
}

TEST(TensorRtl, AllEightPsumBanksAndOffsets) {
  const uint64_t seed = test::test_seed(9);
  auto sim = tb::make_te_sim(8, 8, options(seed, 0.3));
  model::SplitMix64 rng(seed);
  sim->sbuf().write_tile(model::random_tile(DType::kE4m3, 8, 8, rng), 0, 1);
  sim->sbuf().write_tile(model::random_tile(DType::kE4m3, 8, 100, rng), 256, 1);
  std::vector<TeInstruction> program = {model::load_stationary(DType::kE4m3, 8, 8, 0, 1)};
  for (int bank = 0; bank < 8; ++bank)
    program.push_back(model::multiply_moving(DType::kE4m3, 8, 100, 256, 1, bank,
                                             bank * 50, false));
  for (int bank = 0; bank < 8; ++bank)  // accumulate into every bank, last word included
    program.push_back(model::multiply_moving(DType::kE4m3, 8, 12, 256 + bank, 1, bank, 500,
                                             bank % 2 == 1));
  const auto r = sim->run(program);
  expect_clean(r, 16);
}

TEST(TensorRtl, EveryInputTypePairWithEveryValueClass) {
  const uint64_t seed = test::test_seed(10);
  auto sim = tb::make_te_sim(8, 8, options(seed, 0.25));
  model::SplitMix64 rng(seed);
  std::vector<TeInstruction> program;
  uint32_t addr = 0;
  for (DType ts : kInputTypes) {
    for (DType tm : kInputTypes) {
      const int st_bytes = model::storage_bits(ts) / 8, mv_bytes = model::storage_bits(tm) / 8;
      const int k = 1 + static_cast<int>(rng.below(8)), m = 1 + static_cast<int>(rng.below(8));
      sim->sbuf().write_tile(model::random_tile(ts, k, m, rng), addr, st_bytes);
      program.push_back(model::load_stationary(ts, k, m, addr, st_bytes));
      addr += 32;
      sim->sbuf().write_tile(model::random_tile(tm, k, 24, rng), addr, mv_bytes);
      program.push_back(model::multiply_moving(tm, k, 24, addr, mv_bytes,
                                               static_cast<int>(rng.below(8)), 0, rng.below(2)));
      addr += 96;
    }
  }
  const auto r = sim->run(program);
  expect_clean(r, 36);
}

// Zeros of both signs, subnormals, largest finite values, Inf and NaN meeting in one 4x4 tile,
// on an array of rows x cols.
void special_values_directed(int rows, int cols) {
  auto sim = tb::make_te_sim(rows, cols, options(test::test_seed(11), 0.0));
  const std::vector<float> specials = {0.0f, -0.0f, 1e-40f, -1e-45f, 3.4028235e38f,
                                       -3.4028235e38f, INFINITY, -INFINITY, NAN, 1.0f};
  model::Tile st(DType::kFp32, 4, 4), mv(DType::kFp32, 4, 10);
  for (int k = 0; k < 4; ++k) {
    for (int j = 0; j < 4; ++j) st.at(k, j) = model::float_to_bits(specials[(k + 3 * j) % 10]);
    for (int j = 0; j < 10; ++j) mv.at(k, j) = model::float_to_bits(specials[(k * 7 + j) % 10]);
  }
  sim->sbuf().write_tile(st, 0, 4);
  sim->sbuf().write_tile(mv, 64, 4);
  const auto r = sim->run({model::load_stationary(DType::kFp32, 4, 4, 0, 4),
                           model::multiply_moving(DType::kFp32, 4, 10, 64, 4, 0, 0, false),
                           model::multiply_moving(DType::kFp32, 4, 10, 64, 4, 0, 0, true)});
  expect_clean(r, 2);
}

// The tile fills a 4x4 array (built with NCORE_ALL_SIZES, label sizes) and a corner of an 8x8 one.
#if NCORE_ALL_SIZES
TEST(TensorRtl, SpecialValuesDirected) { special_values_directed(4, 4); }
#endif
TEST(TensorRtl, SpecialValuesDirectedOnA4x4TileOf8x8) { special_values_directed(8, 8); }

// Every error code, each between legal instructions: the RTL raises the same code as the
// model, drops the instruction, and carries on.
TEST(TensorRtl, IllegalInstructionsRaiseTheModelsErrorCode) {
  auto sim = tb::make_te_sim(8, 8, options(test::test_seed(12), 0.2));
  model::SplitMix64 rng(12);
  sim->sbuf().write_tile(model::random_tile(DType::kBf16, 8, 8, rng), 0, 2);
  sim->sbuf().write_tile(model::random_tile(DType::kBf16, 8, 64, rng), 64, 2);
  const auto ls = model::load_stationary(DType::kBf16, 8, 8, 0, 2);
  const auto mm = model::multiply_moving(DType::kBf16, 8, 64, 64, 2, 0, 0, false);
  auto with = [](TeInstruction i, auto change) { change(i); return i; };
  const std::vector<std::pair<TeInstruction, TeError>> bad = {
      {mm, TeError::kNoStationary},
      {with(ls, [](auto& i) { i.opcode = static_cast<isa::Opcode>(3); }), TeError::kOpcode},
      {with(ls, [](auto& i) { i.dtype = DType::kInt8; }), TeError::kDtype},
      {with(ls, [](auto& i) { i.k = 0; }), TeError::kK},
      {with(ls, [](auto& i) { i.k = 9; }), TeError::kK},
      {with(ls, [](auto& i) { i.m = 9; }), TeError::kM},
      {with(ls, [](auto& i) { i.sbuf_addr = 1; }), TeError::kSbufAlign},
      {with(ls, [](auto& i) { i.sbuf_stride = 3; }), TeError::kSbufAlign},
      {with(ls, [](auto& i) { i.sbuf_addr = 229376 - 8; }), TeError::kSbufRange},
      {ls, TeError::kNone},
      {with(mm, [](auto& i) { i.n = 0; }), TeError::kN},
      {with(mm, [](auto& i) { i.n = 513; }), TeError::kN},
      {with(mm, [](auto& i) { i.psum_bank = 8; }), TeError::kPsumBank},
      {with(mm, [](auto& i) { i.psum_offset = 449; }), TeError::kPsumRange},
      {with(mm, [](auto& i) { i.k = 7; }), TeError::kKMismatch},
      {with(mm, [](auto& i) { i.sbuf_stride = 65534; }), TeError::kSbufRange},
      {mm, TeError::kNone},
  };
  std::vector<TeInstruction> program;
  size_t expected_rejections = 0;
  for (const auto& [instr, err] : bad) {
    program.push_back(instr);
    if (err != TeError::kNone) ++expected_rejections;
    // The model must agree with the table before the RTL is compared with the model.
  }
  model::TensorEngine probe({8, 8, 8, 512, 229376});
  for (const auto& [instr, err] : bad) {
    EXPECT_EQ(probe.check(instr), err) << model::describe(instr);
    if (err == TeError::kNone && instr.opcode == isa::Opcode::kLoadStationary)
      probe.load_stationary(model::Tile(DType::kBf16, 8, 8));
  }
  const auto r = sim->run(program);
  expect_clean(r, 1);
  EXPECT_EQ(r.rejections_checked, expected_rejections);
  EXPECT_EQ(r.counters.rejected, expected_rejections);
}

TEST(TensorRtl, FieldsExactlyAtTheirLimitsAreAccepted) {
  // The edges IllegalInstructionsRaiseTheModelsErrorCode approaches from outside, here from
  // inside: K and M equal to the array, N = 512 filling a bank from word 0, a tile ending at
  // the last word of bank 7, and stationary and moving data ending at the last SBUF byte.
  constexpr uint32_t kSbufEnd = 229376;
  auto sim = tb::make_te_sim(8, 8, options(test::test_seed(13), 0.2));
  model::SplitMix64 rng(13);
  const uint32_t mv_addr = kSbufEnd - 512 * 2;  // 8 x 512 BF16: its last byte is the SBUF's
  sim->sbuf().write_tile(model::random_tile(DType::kBf16, 8, 512, rng), mv_addr, 2);
  const std::vector<TeInstruction> program = {
      model::load_stationary(DType::kBf16, 8, 8, kSbufEnd - 8 * 2, 2),  // the last 8 columns
      model::multiply_moving(DType::kBf16, 8, 512, mv_addr, 2, 0, 0, false),
      model::multiply_moving(DType::kBf16, 8, 64, mv_addr, 2, 7, 448, false),
      model::multiply_moving(DType::kBf16, 8, 64, kSbufEnd - 64 * 2, 2, 7, 448, true),
  };
  model::TensorEngine probe({8, 8, 8, 512, kSbufEnd});
  for (const auto& in : program) {
    EXPECT_EQ(probe.check(in), TeError::kNone) << model::describe(in);
    if (in.opcode == isa::Opcode::kLoadStationary) probe.load_stationary(model::Tile(DType::kBf16, 8, 8));
  }
  const auto r = sim->run(program);
  expect_clean(r, 3);
  EXPECT_EQ(r.rejections_checked, 0u);
  EXPECT_EQ(r.counters.rejected, 0u);
}

// Cycle counts are properties of the design, not of the machine: exact figures are tests.
uint64_t cycles_of(int rows, int cols, DType t, int n, int mms) {
  auto sim = tb::make_te_sim(rows, cols, options(1, 0.0));
  model::SplitMix64 rng(1);
  const int bytes = model::storage_bits(t) / 8;
  sim->sbuf().write_tile(model::random_tile(t, rows, cols, rng), 0, bytes);
  sim->sbuf().write_tile(model::random_tile(t, rows, n, rng), 1024, bytes);
  std::vector<TeInstruction> program = {model::load_stationary(t, rows, cols, 0, bytes)};
  for (int i = 0; i < mms; ++i)
    program.push_back(model::multiply_moving(t, rows, n, 1024, bytes, i % 8, 0, false));
  const auto r = sim->run(program);
  EXPECT_TRUE(r.ok) << r.failure;
  return r.cycles;
}

TEST(TensorRtl, BackToBackMultiplyMovingIssueEveryMaxOfNAnd64Cycles) {
  // The difference between 11 and 1 MMs is ten issue intervals.
  for (int n : {16, 64, 100, 300}) {
    const uint64_t interval = (cycles_of(8, 8, DType::kBf16, n, 11) -
                               cycles_of(8, 8, DType::kBf16, n, 1)) / 10;
    EXPECT_EQ(interval, static_cast<uint64_t>(std::max(n, 64))) << "N=" << n;
  }
  const uint64_t fp32 =
      (cycles_of(8, 8, DType::kFp32, 100, 11) - cycles_of(8, 8, DType::kFp32, 100, 1)) / 10;
  EXPECT_EQ(fp32, 400u) << "FP32 moving vectors take four cycles each";
}

// Alternating LS/MM pairs with a full stationary and N=512: the next stationary loads in the
// background, so the array streams real work nearly every cycle.
TEST(TensorRtl, AlternatingLoadAndMultiplyKeepThePEsBusy) {
  const uint64_t seed = test::test_seed(13);
  auto sim = tb::make_te_sim(32, 32, options(seed, 0.0));
  model::SplitMix64 rng(seed);
  std::vector<TeInstruction> program;
  for (int i = 0; i < 8; ++i) {
    const uint32_t st = i * 64, mv = 4096 + i * 1024;
    sim->sbuf().write_tile(model::random_tile(DType::kBf16, 32, 32, rng), st, 2);
    sim->sbuf().write_tile(model::random_tile(DType::kBf16, 32, 512, rng), mv, 2);
    program.push_back(model::load_stationary(DType::kBf16, 32, 32, st, 2));
    program.push_back(model::multiply_moving(DType::kBf16, 32, 512, mv, 2, i % 8, 0, false));
  }
  const auto r = sim->run(program);
  expect_clean(r, 8);
  const double utilization = static_cast<double>(r.counters.busy) / static_cast<double>(r.cycles);
  std::printf("[ figures  ] 32x32 alternating LS/MM: %llu busy of %llu cycles (%.1f%%)\n",
              static_cast<unsigned long long>(r.counters.busy),
              static_cast<unsigned long long>(r.cycles), 100 * utilization);
  // Startup (first LS) and drain (last vector through the array) are the only gaps.
  EXPECT_EQ(r.counters.busy, 8u * 512);
  EXPECT_LE(r.cycles, 8u * 512 + 32 + 2 * (32 + 32) + 8);
}

// PSUM reads of a bank whose MM is still in flight are a bank conflict: held back (and
// counted) until the bank drains, then they return exactly the words written so far.
TEST(TensorRtl, PsumReadsDuringTheRunAreHeldOffNotCorrupted) {
  const uint64_t seed = test::test_seed(14);
  auto opts = options(seed, 0.1);
  opts.probe_reads = 0.05;
  auto sim = tb::make_te_sim(8, 8, opts);
  model::SplitMix64 rng(seed);
  const auto plan = tb::plan_gemm({32, 16, 700, DType::kBf16, DType::kFp16}, 8, 8, sim->sbuf(),
                                  rng, true);
  const auto r = sim->run(plan.program);
  expect_clean(r, 8);
  EXPECT_GT(r.probes_checked, 10u);
  EXPECT_GT(r.counters.stall_psum_rd, 0u) << "no read ever met a bank in flight";
}

// One GEMM on the full 128x128 array, every value class, light back-pressure.
TEST(TensorRtl, FullSizeSmoke) {
  bool ran = false;
  for (const auto& [rows, cols] : tb::te_sim_sizes()) {
    if (rows != 128) continue;
    ran = true;
    const uint64_t seed = test::test_seed(128);
    auto sim = tb::make_te_sim(rows, cols, options(seed, 0.05));
    model::SplitMix64 rng(seed);
    const auto plan = tb::plan_gemm({128, 128, 96, DType::kBf16, DType::kE4m3}, rows, cols,
                                    sim->sbuf(), rng, true);
    const auto r = sim->run(plan.program);
    expect_clean(r, 1);
    EXPECT_EQ(r.psum_writes_checked, 128u * 96);
    // K = 1024 in eight accumulation groups of 128, on the same engine.
    const auto deep = tb::plan_gemm({1024, 128, 64, DType::kBf16, DType::kBf16}, rows, cols,
                                    sim->sbuf(), rng, false);
    const auto r2 = sim->run(deep.program);
    expect_clean(r2, 8);
    // Sparse 4:16 at full depth: K = 512 dense-equivalent rows per LS.
    const auto sparse = tb::plan_gemm({512, 128, 64, DType::kBf16, DType::kBf16,
                                       tb::GemmMode::kSparse4of16},
                                      rows, cols, sim->sbuf(), rng, true);
    const auto r3 = sim->run(sparse.program);
    expect_clean(r3, 1);
    EXPECT_EQ(r3.counters.macs - r2.counters.macs, 512ull * 128 * 64);
  }
  if (!ran) GTEST_SKIP() << "built without the 128x128 model (NCORE_RTL_FULL_SIZE=OFF)";
}

}  // namespace
}  // namespace ncore

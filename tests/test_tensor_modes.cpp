// The tensor engine's modes (double-row FP8, transpose, M:N sparsity) in lockstep
// co-simulation with the golden model, their error codes, and their issue rates.
// NCORE_SEED=S reruns a seed; NCORE_WAVES=dump.fst writes waves.

#include <algorithm>
#include <cstdio>
#include <set>
#include <string>
#include <tuple>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tb/tensor/te_sim.h"
#include "tests/seed.h"
#include "tests/te_test_util.h"

namespace ncore {
namespace {

using model::DType;
using model::TeError;
using model::TeInstruction;
using model::TeModes;
using model::TeSparsity;
using test::kInputTypes;
using test::options;

using test::expect_clean;

// Each (instruction, error) pair in order, on an 8x8 array: the model must agree with the
// table, then the RTL with the model, code for code, with the legal ones executed between.
void run_error_table(tb::TeSim& sim, const std::vector<std::pair<TeInstruction, TeError>>& table,
                     uint64_t min_mm) {
  std::vector<TeInstruction> program;
  size_t rejections = 0;
  model::TensorEngine probe({8, 8, 8, 512, 229376});
  for (const auto& [instr, err] : table) {
    program.push_back(instr);
    rejections += err != TeError::kNone;
    EXPECT_EQ(probe.check(instr), err) << model::describe(instr);
    if (err == TeError::kNone) probe.execute(instr, sim.sbuf());
  }
  const auto r = sim.run(program);
  expect_clean(r, min_mm);
  EXPECT_EQ(r.rejections_checked, rejections);
}

const TeModes kDoubleRow{true, false, TeSparsity::kDense};
const TeModes kTranspose{false, true, TeSparsity::kDense};
TeModes sparse(TeSparsity s) { return {false, false, s}; }

struct Case {
  TeModes modes;
  DType st, mv;
};

// Every legal (mode x stationary type x moving type) bin: double-row takes FP8 only.
std::vector<Case> every_mode_bin() {
  std::vector<Case> cases;
  for (DType a : {DType::kE4m3, DType::kE5m2})
    for (DType b : {DType::kE4m3, DType::kE5m2}) cases.push_back({kDoubleRow, a, b});
  for (DType a : kInputTypes) {
    for (DType b : kInputTypes) {
      cases.push_back({kTranspose, a, b});
      for (TeSparsity s : {TeSparsity::k4of8, TeSparsity::k4of12, TeSparsity::k4of16})
        cases.push_back({sparse(s), a, b});
    }
  }
  return cases;
}

// Each bin once, in lockstep, with every value class and random back-pressure; the cases
// run in batches that fit the SBUF. Array sizes: 8x8 and the non-square 12x8.
void run_every_bin(int rows, int cols, uint64_t seed) {
  auto sim = tb::make_te_sim(rows, cols, options(seed, 0.25));
  model::SplitMix64 rng(seed);
  const auto cases = every_mode_bin();
  std::set<std::tuple<std::string, DType, DType>> bins;
  uint64_t checked = 0;
  for (size_t first = 0; first < cases.size(); first += 24) {
    std::vector<TeInstruction> program;
    uint32_t addr = 0;
    for (size_t c = first; c < std::min(cases.size(), first + 24); ++c) {
      test::append_mode_program(rows, cols, cases[c].modes, cases[c].st, cases[c].mv, 2,
                                sim->sbuf(), rng, addr, program);
      bins.insert({test::mode_name(cases[c].modes), cases[c].st, cases[c].mv});
    }
    const auto r = sim->run(program);
    expect_clean(r, 2 * (program.size() / 3));
    EXPECT_EQ(r.counters.rejected, 0u);
    checked += r.psum_writes_checked;
  }
  std::printf("[ bins     ] %dx%d: %zu (mode x type pair) bins, %llu PSUM writes compared\n",
              rows, cols, bins.size(), static_cast<unsigned long long>(checked));
  EXPECT_EQ(bins.size(), 4u + 36u + 3u * 36u);
}

TEST(TensorModes, EveryModeAndTypePairInLockstep8x8) { run_every_bin(8, 8, test::test_seed(61)); }
TEST(TensorModes, EveryModeAndTypePairInLockstep12x8) {
  run_every_bin(12, 8, test::test_seed(62));
}

// Full-depth double-row (K = 2 x rows) and 4:16 sparsity (K = 4 x rows) on 16x16 and 32x32,
// with a run of accumulating MMs.
TEST(TensorModes, FullDepthDoubleRowAndSparseAccumulation) {
  for (int size : {16, 32}) {
    const uint64_t seed = test::test_seed(63 + size);
    auto sim = tb::make_te_sim(size, size, options(seed, 0.1));
    model::SplitMix64 rng(seed);
    std::vector<TeInstruction> program;
    for (const TeModes& modes : {kDoubleRow, sparse(TeSparsity::k4of16)}) {
      const DType t = modes.double_row ? DType::kE4m3 : DType::kBf16;
      const int bytes = model::storage_bits(t) / 8;
      const int k_st = modes.double_row ? 2 * size : size;
      const int k_mv = modes.double_row ? 2 * size : 4 * size;
      const model::Tile st = model::random_tile(t, k_st, size, rng);
      const uint32_t base = modes.double_row ? 0 : 65536;
      model::write_te_operand(sim->sbuf(), st, modes, true, base, bytes);
      auto ls = model::load_stationary(t, size, size, base, bytes);
      test::set_modes(ls, modes);
      if (!modes.double_row) {
        model::Tile tags(DType::kInt16, size, size);
        for (auto& tag : tags.bits) tag = rng.below(16);
        model::write_te_tags(sim->sbuf(), tags, base + 1024);
        ls.tag_addr = base + 1024;
      }
      program.push_back(ls);
      for (int i = 0; i < 4; ++i) {
        const model::Tile mv = model::random_tile(t, k_mv, 128, rng);
        const uint32_t at = base + 4096 + i * 4096;
        model::write_te_operand(sim->sbuf(), mv, modes, false, at, bytes);
        auto mm = model::multiply_moving(t, size, 128, at, bytes, modes.double_row ? 0 : 1, 0,
                                         i > 0);
        test::set_modes(mm, modes);
        program.push_back(mm);
      }
    }
    const auto r = sim->run(program);
    expect_clean(r, 8);
    EXPECT_EQ(r.counters.macs, 4ull * 128 * size * (2 * size + 4 * size));
  }
}

// Each mode rule raises the model's code in the RTL, between legal instructions.
TEST(TensorModes, IllegalModeCombinationsRaiseTheModelsErrorCode) {
  auto sim = tb::make_te_sim(8, 8, options(test::test_seed(64), 0.2));
  model::SplitMix64 rng(64);
  sim->sbuf().write_tile(model::random_tile(DType::kE4m3, 8, 16, rng), 0, 1);
  sim->sbuf().write_tile(model::random_tile(DType::kE4m3, 8, 256, rng), 256, 1);
  auto ls = model::load_stationary(DType::kE4m3, 8, 8, 0, 1);
  auto mm = model::multiply_moving(DType::kE4m3, 8, 64, 256, 1, 0, 0, false);
  auto with = [](TeInstruction i, auto change) { change(i); return i; };
  const auto transpose_ls = with(ls, [](auto& i) { i.transpose = true; });
  const auto transpose_mm = with(mm, [](auto& i) { i.transpose = true; });
  const std::vector<std::pair<TeInstruction, TeError>> table = {
      {with(ls, [](auto& i) { i.double_row = i.transpose = true; }), TeError::kModeCombo},
      {with(ls, [](auto& i) { i.double_row = true; i.sparsity = TeSparsity::k4of8; }),
       TeError::kModeCombo},
      {with(ls, [](auto& i) { i.transpose = true; i.sparsity = TeSparsity::k4of16; }),
       TeError::kModeCombo},
      {with(ls, [](auto& i) { i.double_row = true; i.dtype = DType::kFp16; }),
       TeError::kModeType},
      {with(ls, [](auto& i) { i.sparsity = TeSparsity::k4of12; i.k = 6; }), TeError::kK},
      {with(ls, [](auto& i) { i.sparsity = TeSparsity::k4of8; i.tag_addr = 1; }),
       TeError::kSbufAlign},
      {with(ls, [](auto& i) { i.sparsity = TeSparsity::k4of8; i.tag_addr = 229374; }),
       TeError::kSbufRange},
      {with(ls, [](auto& i) { i.double_row = true; i.sbuf_addr = 229376 - 12; }),
       TeError::kSbufRange},
      {transpose_ls, TeError::kNone},
      {mm, TeError::kModeMismatch},
      {with(transpose_mm, [](auto& i) { i.accumulate = true; }), TeError::kModeCombo},
      {with(transpose_mm, [](auto& i) { i.psum_offset = 1024 - 63; }), TeError::kPsumRange},
      {with(transpose_mm, [](auto& i) { i.psum_offset = 1024 - 64; }), TeError::kNone},
      {with(mm, [](auto& i) { i.double_row = true; }), TeError::kModeMismatch},
      {ls, TeError::kNone},
      {with(mm, [](auto& i) { i.sparsity = TeSparsity::k4of8; }), TeError::kModeMismatch},
      {mm, TeError::kNone},
  };
  run_error_table(*sim, table, 2);
}

// Issue rates are properties of the design: exact cycle counts. The difference between 9
// and 1 back-to-back MMs of N = 128 on one stationary is eight issue intervals.
uint64_t interval(const TeModes& modes, DType t, int n) {
  const int size = 16;
  auto run = [&](int mms) {
    auto sim = tb::make_te_sim(size, size, options(1, 0.0));
    model::SplitMix64 rng(1);
    std::vector<TeInstruction> program;
    uint32_t addr = 0;
    test::append_mode_program(size, size, modes, t, t, 0, sim->sbuf(), rng, addr, program);
    program[0].k = size;  // full depth
    program[0].m = size;
    const int bytes = model::storage_bits(t) / 8;
    const int reps = modes.double_row ? 2 : model::sparsity_group(modes.sparsity) / 4;
    sim->sbuf().write_tile(model::random_tile(t, size, n * reps, rng), 65536, bytes);
    for (int i = 0; i < mms; ++i) {
      auto mm = model::multiply_moving(t, size, n, 65536, bytes, i % 8, 0, false);
      test::set_modes(mm, modes);
      program.push_back(mm);
    }
    const auto r = sim->run(program);
    EXPECT_TRUE(r.ok) << r.failure;
    EXPECT_EQ(r.counters.rejected, 0u);
    return r.cycles;
  };
  return (run(9) - run(1)) / 8;
}

TEST(TensorModes, DoubleRowAndSparseIssueAtTheDenseRate) {
  const uint64_t dense = interval({}, DType::kBf16, 128);
  EXPECT_EQ(dense, 128u);
  EXPECT_EQ(interval(kDoubleRow, DType::kE4m3, 128), dense) << "2 K rows per PE, same time";
  for (TeSparsity s : {TeSparsity::k4of8, TeSparsity::k4of12, TeSparsity::k4of16})
    EXPECT_EQ(interval(sparse(s), DType::kBf16, 128), dense) << "G/4 K rows per PE, same time";
}

TEST(TensorModes, Fp32TransposeTakesHalfTheTimeOfAnIdentityMatmul) {
  const uint64_t matmul = interval({}, DType::kFp32, 128);
  const uint64_t transpose = interval(kTranspose, DType::kFp32, 128);
  EXPECT_EQ(matmul, 4u * 128);
  EXPECT_EQ(transpose, 2u * 128);
  EXPECT_EQ(interval(kTranspose, DType::kBf16, 128), 128u);
}

// ---------------------------------------------------------------------------------------
// Row and column tiling
// ---------------------------------------------------------------------------------------

using test::tile;
using test::tiled_program;

TEST(TensorTiling, DisjointTilesInEveryModeInLockstep) {
  for (const auto& [rows, cols] : {std::pair{16, 16}, std::pair{8, 8}, std::pair{12, 8}}) {
    const uint64_t seed = test::test_seed(70 + rows + cols);
    auto sim = tb::make_te_sim(rows, cols, options(seed, 0.2));
    model::SplitMix64 rng(seed);
    std::set<std::string> bins;
    uint64_t mms = 0;
    for (int round = 0; round < 30; ++round) {
      uint32_t addr = 0;
      const auto program = tiled_program(rows, cols, sim->sbuf(), rng, addr, &bins);
      const auto r = sim->run(program);
      ASSERT_TRUE(r.ok) << r.failure;
      EXPECT_EQ(r.counters.rejected, 0u) << "round " << round;
      mms += r.mm_checked;
    }
    std::printf("[ tiling   ] %dx%d: %zu (mode x row split x column split) bins, %llu MMs\n",
                rows, cols, bins.size(), static_cast<unsigned long long>(mms));
    EXPECT_GE(bins.size(), 12u);
  }
}

// Four small matmuls on the four diagonal tiles of a 4x32-by-4x32 tiling run in parallel:
// together they take about the time of one, a quarter of running them on one tile in turn.
TEST(TensorTiling, FourDiagonalTilesRunInParallel) {
  const int size = 16, quarter = 4, n = 256;
  auto run = [&](bool parallel) {
    auto sim = tb::make_te_sim(size, size, options(test::test_seed(75), 0.0));
    model::SplitMix64 rng(75);
    std::vector<TeInstruction> lss, mms;
    for (int t = 0; t < 4; ++t) {
      const model::TeTiling tiling = parallel ? tile(2, t, 2, t) : tile(2, 0, 2, 0);
      const uint32_t st_at = 256 * t, mv_at = 4096 + 1024 * t;
      for (int p = 0; p < quarter; ++p) {
        for (int m = 0; m < quarter; ++m)
          sim->sbuf().write(tiling.row_tile * quarter + p, st_at + 2 * m, 2,
                            model::random_value(DType::kBf16, rng));
        for (int j = 0; j < n; ++j)
          sim->sbuf().write(tiling.row_tile * quarter + p, mv_at + 2 * j, 2,
                            model::random_value(DType::kBf16, rng));
      }
      auto ls = model::load_stationary(DType::kBf16, quarter, quarter, st_at, 2);
      auto mm = model::multiply_moving(DType::kBf16, quarter, n, mv_at, 2, t, 0, false);
      model::set_tiling(ls, tiling); model::set_tiling(mm, tiling);
      if (parallel) {
        lss.push_back(ls);
        mms.push_back(mm);
      } else {
        lss.push_back(ls);
        lss.push_back(mm);
      }
    }
    std::vector<TeInstruction> program = lss;
    program.insert(program.end(), mms.begin(), mms.end());
    const auto r = sim->run(program);
    EXPECT_TRUE(r.ok) << r.failure;
    EXPECT_EQ(r.mm_checked, 4u);
    EXPECT_EQ(r.counters.macs, 4ull * quarter * quarter * n);
    return r.cycles;
  };
  const uint64_t parallel = run(true), serial = run(false);
  std::printf("[ figures  ] 4 MMs of %dx%dx%d: %llu cycles on four tiles, %llu on one\n",
              quarter, quarter, n, static_cast<unsigned long long>(parallel),
              static_cast<unsigned long long>(serial));
  // Parallel: one MM's N cycles plus the four LSs and one pipeline fill and drain.
  EXPECT_LT(parallel, static_cast<uint64_t>(n) + 64 + 2 * size);
  EXPECT_GT(serial, 4ull * n);
}

TEST(TensorTiling, IllegalTilingsRaiseTheModelsErrorCode) {
  auto sim = tb::make_te_sim(8, 8, options(test::test_seed(76), 0.2));
  model::SplitMix64 rng(76);
  sim->sbuf().write_tile(model::random_tile(DType::kE4m3, 8, 64, rng), 0, 1);
  sim->sbuf().write_tile(model::random_tile(DType::kE4m3, 8, 256, rng), 256, 1);
  auto ls = model::load_stationary(DType::kE4m3, 4, 4, 0, 1);
  auto mm = model::multiply_moving(DType::kE4m3, 4, 64, 256, 1, 0, 0, false);
  auto with = [](TeInstruction i, auto change) { change(i); return i; };
  auto tiled = [&](TeInstruction i, model::TeTiling t) { model::set_tiling(i, t); return i; };
  const std::vector<std::pair<TeInstruction, TeError>> table = {
      {tiled(ls, tile(3, 0, 0, 0)), TeError::kTile},
      {tiled(ls, tile(1, 2, 0, 0)), TeError::kTile},
      {tiled(ls, tile(0, 0, 1, 2)), TeError::kTile},
      {with(tiled(ls, tile(1, 1, 0, 0)), [](auto& i) { i.k = 5; }), TeError::kK},
      {with(tiled(ls, tile(0, 0, 2, 3)), [](auto& i) { i.m = 3; }), TeError::kM},
      {with(tiled(ls, tile(0, 0, 1, 1)), [](auto& i) { i.double_row = true; }),
       TeError::kModeCombo},
      {with(tiled(ls, tile(2, 1, 0, 0)), [](auto& i) {
         i.sparsity = TeSparsity::k4of8;
         i.k = 2;
       }),
       TeError::kTile},
      {tiled(mm, tile(1, 1, 1, 0)), TeError::kNoStationary},
      {tiled(ls, tile(1, 1, 1, 0)), TeError::kNone},                    // rows 4-7, cols 0-3
      {with(tiled(ls, tile(1, 0, 1, 1)), [](auto& i) { i.double_row = false; }), TeError::kNone},
      {tiled(mm, tile(1, 1, 1, 0)), TeError::kNone},
      {tiled(mm, tile(1, 0, 1, 1)), TeError::kNone},
      {tiled(mm, tile(1, 1, 2, 0)), TeError::kModeMismatch},            // a different tiling
      {tiled(mm, tile(0, 0, 1, 1)), TeError::kModeMismatch},            // spans two LSs' tiles
      {tiled(mm, tile(0, 0, 1, 0)), TeError::kNoStationary},            // rows 0-3 empty
      {with(tiled(ls, tile(2, 3, 2, 0)), [](auto& i) { i.k = 2; i.m = 2; }), TeError::kNone},
      {tiled(mm, tile(1, 1, 1, 0)), TeError::kModeMismatch},            // partly overwritten
      {tiled(mm, tile(1, 0, 1, 1)), TeError::kNone},                    // untouched
  };
  run_error_table(*sim, table, 3);
}

}  // namespace
}  // namespace ncore

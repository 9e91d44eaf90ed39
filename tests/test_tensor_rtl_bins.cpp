// Functional-coverage closure for the tensor engine. The cross scripts/coverage reports is
// operation x type pair x mode x shape class x stall pattern x value class (te_sim.cpp,
// "functional coverage"); constrained-random programs reach a few percent of it. This test
// aims one LoadStationary + MultiplyMoving program at every reachable bin, co-simulates it
// against the golden model bit for bit, and checks that the program landed in the bins it
// aimed at. An 8x8 array: the smallest on which a sparse stationary can cover part of K.
// NCORE_SEED=S changes the shapes and values; NCORE_WAVES=dump.fst writes waves.

#include <cstdio>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/common/numerics.h"
#include "model/common/sbuf.h"
#include "model/tensor/tensor_engine.h"
#include "tb/tensor/te_sim.h"
#include "tests/seed.h"
#include "tests/te_test_util.h"

namespace ncore {
namespace {

using model::DType;
using model::SplitMix64;
using model::TeInstruction;
using test::kInputTypes;

constexpr int kRows = 8, kCols = 8, kBankElements = 512;

enum class Mode { kPlain, kDoubleRow, kTranspose, kSparse, kTiled };
constexpr Mode kModes[] = {Mode::kPlain, Mode::kDoubleRow, Mode::kTranspose, Mode::kSparse,
                           Mode::kTiled};
const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kPlain: return "plain";
    case Mode::kDoubleRow: return "double-row";
    case Mode::kTranspose: return "transpose";
    case Mode::kSparse: return "sparse";
    default: return "tiled";
  }
}

enum class ValueClass { kNormal, kSubnormal, kInfNan };
constexpr ValueClass kValueClasses[] = {ValueClass::kNormal, ValueClass::kSubnormal,
                                        ValueClass::kInfNan};
const char* value_name(ValueClass v) {
  return v == ValueClass::kNormal ? "normal" : v == ValueClass::kSubnormal ? "subnormal" : "inf-nan";
}

const char* shape_name(bool full_k, bool full_free) {
  return full_k && full_free ? "full" : full_k ? "part-free" : full_free ? "part-k" : "part-both";
}

bool is_fp8(DType t) { return t == DType::kE4m3 || t == DType::kE5m2; }

// A pattern of class `v`: zero or an ordinary value near 1.0 (so sums stay finite), a
// subnormal, or an infinity / NaN (E4M3 has NaN only).
uint32_t value_of_class(DType t, ValueClass v, SplitMix64& rng) {
  const model::FloatFormat& f = model::float_format(t);
  const uint32_t sign = rng.below(2) << (f.exp_bits + f.man_bits) << f.container_shift;
  const uint32_t man_mask = (1u << f.man_bits) - 1;
  switch (v) {
    case ValueClass::kSubnormal: return sign | ((1 + rng.below(man_mask)) << f.container_shift);
    case ValueClass::kInfNan:
      return f.has_inf && rng.below(2) ? sign | model::infinity(t) : model::canonical_nan(t);
    default: {
      if (rng.below(8) == 0) return sign;
      const uint32_t exp = static_cast<uint32_t>(f.bias - 3 + static_cast<int>(rng.below(7)));
      return sign | (((exp << f.man_bits) | (rng.next32() & man_mask)) << f.container_shift);
    }
  }
}

// Ordinary values everywhere and, for the other classes, one element of the class at a random
// place: the worst class among the elements read is the tile's.
model::Tile class_tile(DType t, int rows, int cols, ValueClass v, SplitMix64& rng) {
  model::Tile tile(t, rows, cols);
  for (auto& bits : tile.bits) bits = value_of_class(t, ValueClass::kNormal, rng);
  if (v != ValueClass::kNormal)
    tile.at(static_cast<int>(rng.below(rows)), static_cast<int>(rng.below(cols))) =
        value_of_class(t, v, rng);
  return tile;
}

// What one program aims at: the MM's bin, and the LS's shape along the free axis and value class.
struct Target {
  DType st, mv;
  Mode mode;
  bool accumulate;
  bool full_k, full_n;   // the MM's shape class (K is shared with the LS)
  ValueClass mv_value;
  bool full_m;           // the LS's shape along M
  ValueClass st_value;
};

std::string stall_name(const tb::TeSimOptions& o) {
  return o.cmd_stall > 0 && o.sbuf_stall > 0 ? "cmd+sbuf" : o.cmd_stall > 0 ? "cmd"
                                                     : o.sbuf_stall > 0    ? "sbuf" : "none";
}

// The LS and MM of a target, operands written to the SBUF from address 0.
std::vector<TeInstruction> target_program(const Target& t, model::Sbuf& sbuf, SplitMix64& rng) {
  model::TeModes modes;
  modes.double_row = t.mode == Mode::kDoubleRow;
  modes.transpose = t.mode == Mode::kTranspose;
  if (t.mode == Mode::kSparse) modes.sparsity = static_cast<model::TeSparsity>(1 + rng.below(3));
  // Tiling: a full K needs every row, so only columns split; a full M needs every column.
  model::TeTiling tiling;
  if (t.mode == Mode::kTiled) {
    tiling.row_split = t.full_k ? 0 : 1;
    tiling.col_split = t.full_m ? 0 : 1;
    tiling.row_tile = static_cast<int>(rng.below(1u << tiling.row_split));
    tiling.col_tile = static_cast<int>(rng.below(1u << tiling.col_split));
  }
  const int rows = kRows >> tiling.row_split, cols = kCols >> tiling.col_split;
  const int row0 = tiling.row_tile * rows;
  const bool sparse = t.mode == Mode::kSparse;
  const int group = model::sparsity_group(modes.sparsity);
  const int k = t.full_k ? rows : sparse ? 4 : 1 + static_cast<int>(rng.below(rows - 1));
  const int m = t.full_m ? cols : 1 + static_cast<int>(rng.below(cols - 1));
  const int st_bytes = model::storage_bits(t.st) / 8, mv_bytes = model::storage_bits(t.mv) / 8;

  uint32_t addr = 0;
  const model::Tile st = class_tile(t.st, modes.double_row ? 2 * k : k, m, t.st_value, rng);
  model::write_te_operand(sbuf, st, modes, true, addr, st_bytes, row0);
  auto ls = model::load_stationary(t.st, k, m, addr, st_bytes);
  test::set_modes(ls, modes);
  model::set_tiling(ls, tiling);
  addr += static_cast<uint32_t>(st.rows / k * m * st_bytes);
  if (sparse) {
    model::Tile tags(DType::kInt16, k, m);
    for (auto& tag : tags.bits) tag = rng.below(group);
    addr = (addr + 3) / 4 * 4;
    model::write_te_tags(sbuf, tags, addr, row0);
    ls.tag_addr = addr;
    addr += static_cast<uint32_t>(2 * ((m + 3) / 4));
  }

  const int n = t.full_n ? kBankElements : 1 + static_cast<int>(rng.below(48));
  const int k_mv = modes.double_row ? 2 * k : sparse ? k / 4 * group : k;
  const model::Tile mv = class_tile(t.mv, k_mv, n, t.mv_value, rng);
  addr = (addr + 3) / 4 * 4;
  model::write_te_operand(sbuf, mv, modes, false, addr, mv_bytes, row0);
  const int offset = t.full_n ? 0 : static_cast<int>(rng.below(kBankElements - n + 1));
  auto mm = model::multiply_moving(t.mv, k, n, addr, mv_bytes, static_cast<int>(rng.below(8)),
                                   offset, t.accumulate);
  test::set_modes(mm, modes);
  model::set_tiling(mm, tiling);
  return {ls, mm};
}

// Every reachable MM target, the LS's free-axis shape and value class rotating through the
// programs of each (stationary type, mode, K class) so that every LS bin is reached too. The
// cross's rules (scripts/coverage, reachable_bins, says the same): double-row takes FP8
// operands only, a transposing MM never accumulates, a tiled LS never covers the whole array.
std::vector<Target> all_targets() {
  std::vector<Target> targets;
  for (DType st : kInputTypes)
    for (Mode mode : kModes) {
      if (mode == Mode::kDoubleRow && !is_fp8(st)) continue;
      for (bool full_k : {true, false}) {
        int turn = 0;
        for (DType mv : kInputTypes) {
          if (mode == Mode::kDoubleRow && !is_fp8(mv)) continue;
          for (bool acc : {false, true}) {
            if (mode == Mode::kTranspose && acc) continue;
            for (bool full_n : {true, false})
              for (ValueClass v : kValueClasses) {
                Target t{st, mv, mode, acc, full_k, full_n, v, turn % 2 == 0,
                         kValueClasses[(turn / 2) % 3]};
                if (mode == Mode::kTiled && full_k) t.full_m = false;
                targets.push_back(t);
                ++turn;
              }
          }
        }
      }
    }
  return targets;
}

class TensorRtlBins : public ::testing::TestWithParam<int> {};

// Param: the stall pattern (0 none, 1 instruction queue, 2 SBUF ports, 3 both).
TEST_P(TensorRtlBins, EveryReachableBinOfAStallPattern) {
  const uint64_t seed = test::test_seed(7000 + GetParam());
  SplitMix64 rng(seed);
  auto opts = test::options(seed, 0.0);
  opts.cmd_stall = GetParam() & 1 ? 0.3 : 0.0;
  opts.sbuf_stall = GetParam() & 2 ? 0.3 : 0.0;
  opts.readback = false;
  opts.count_bins = true;
  const std::string stall = stall_name(opts);
  auto sim = tb::make_te_sim(kRows, kCols, opts);

  std::set<std::string> aimed;
  uint64_t writes = 0;
  const auto targets = all_targets();
  for (const Target& t : targets) {
    const auto program = target_program(t, sim->sbuf(), rng);
    const TeInstruction& ls = program[0];
    const TeInstruction& mm = program[1];
    const std::string ls_bin = fmt::format(
        "ls {} {} {} {} {}", model::dtype_name(t.st), mode_name(t.mode),
        shape_name(ls.k >= kRows, ls.m >= kCols), stall, value_name(t.st_value));
    const std::string mm_bin = fmt::format(
        "mm {}x{} {}{} {} {} {}", model::dtype_name(t.st), model::dtype_name(t.mv),
        mode_name(t.mode), t.accumulate ? "+acc" : "", shape_name(t.full_k, t.full_n), stall,
        value_name(t.mv_value));
    const auto count = [&](const std::string& bin) {
      const auto it = sim->coverage_bins().find(bin);
      return it == sim->coverage_bins().end() ? uint64_t{0} : it->second;
    };
    const uint64_t ls_before = count(ls_bin), mm_before = count(mm_bin);
    const auto r = sim->run(program);
    ASSERT_TRUE(r.ok) << "seed " << seed << ", aiming at " << mm_bin << ": " << r.failure;
    ASSERT_EQ(r.mm_checked, 1u) << mm_bin << ": " << model::describe(mm);
    writes += r.psum_writes_checked;
    for (const auto& [bin, was] : {std::pair{ls_bin, ls_before}, std::pair{mm_bin, mm_before}}) {
      ASSERT_EQ(count(bin), was + 1)
          << "seed " << seed << ": the program aimed at '" << bin << "' landed elsewhere: "
          << model::describe(ls) << "; " << model::describe(mm);
      aimed.insert(bin);
    }
  }
  // Every bin hit is one the programs aimed at, and the count is the cross's reachable size
  // for one stall pattern (26 LS and 260 MM type/mode combinations x 4 shapes x 3 values,
  // less the 3 x 6 tiled LS bins of a full array).
  EXPECT_EQ(sim->coverage_bins().size(), aimed.size());
  EXPECT_EQ(aimed.size(), 286u * 4 * 3 - 18);
  std::printf("[ bins     ] stall %s: %zu programs, %zu bins, %llu PSUM writes compared\n",
              stall.c_str(), targets.size(), aimed.size(), static_cast<unsigned long long>(writes));
}

std::string stall_param_name(const ::testing::TestParamInfo<int>& info) {
  static const char* const kNames[] = {"None", "Cmd", "Sbuf", "CmdAndSbuf"};
  return kNames[info.param];
}

INSTANTIATE_TEST_SUITE_P(Stalls, TensorRtlBins, ::testing::Values(0, 1, 2, 3), stall_param_name);

}  // namespace
}  // namespace ncore

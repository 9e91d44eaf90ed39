#pragma once
// Shared by the tensor-engine co-simulation tests.

#include <algorithm>
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/common/numerics.h"
#include "model/common/sbuf.h"
#include "model/tensor/tensor_engine.h"
#include "tb/tensor/te_sim.h"

namespace ncore::test {

inline const std::vector<model::DType> kInputTypes = {
    model::DType::kFp32, model::DType::kTf32, model::DType::kBf16,
    model::DType::kFp16, model::DType::kE4m3, model::DType::kE5m2};

// Harness options from a seed and a back-pressure probability; NCORE_WAVES (and
// NCORE_WAVES_FROM / NCORE_WAVES_TO) add an FST dump.
inline tb::TeSimOptions options(uint64_t seed, double stall) {
  tb::TeSimOptions o;
  o.seed = seed;
  o.cmd_stall = stall;
  o.sbuf_stall = stall;
  if (const char* w = std::getenv("NCORE_WAVES")) o.waves = w;
  if (const char* f = std::getenv("NCORE_WAVES_FROM")) o.waves_from = std::strtoull(f, nullptr, 0);
  if (const char* t = std::getenv("NCORE_WAVES_TO")) o.waves_to = std::strtoull(t, nullptr, 0);
  return o;
}

// A run that failed, or compared fewer MMs than expected, or nothing at all, fails the test.
inline void expect_clean(const tb::TeRunResult& r, uint64_t min_mm) {
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_GE(r.mm_checked, min_mm);
  if (min_mm > 0) {
    EXPECT_GT(r.psum_writes_checked, 0u);
    EXPECT_GE(r.completions_checked, r.mm_checked);  // every MM (and every LS)
  }
}

// The modes one LoadStationary can take, by name (for bins and messages).
inline std::string mode_name(const model::TeModes& m) {
  if (m.double_row) return "double-row";
  if (m.transpose) return "transpose";
  if (m.sparsity != model::TeSparsity::kDense)
    return "sparse-4:" + std::to_string(model::sparsity_group(m.sparsity));
  return "dense";
}

inline void set_modes(model::TeInstruction& i, const model::TeModes& m) {
  i.double_row = m.double_row;
  i.transpose = m.transpose;
  i.sparsity = m.sparsity;
}

// Appends an LS in `modes` and `mms` MMs that use it, operands of every value class written
// to the SBUF from `addr` on (advanced past them). Shapes are random within the array:
// P partitions (a multiple of 4 when sparse), M columns, N up to 48. A transpose's moving
// tile is the identity half the time (a true transpose) and random otherwise (the
// last-nonzero-row rule); its MMs overwrite, at odd and even 16-bit offsets.
// With a tiling, shapes fit the tile (rows, cols: the array's) and operands lie on its
// partitions.
inline void append_mode_program(int array_rows, int array_cols, const model::TeModes& modes,
                                model::DType ts, model::DType tm, int mms, model::Sbuf& sbuf,
                                model::SplitMix64& rng, uint32_t& addr,
                                std::vector<model::TeInstruction>& program,
                                const model::TeTiling& tiling = {}) {
  const bool sparse = modes.sparsity != model::TeSparsity::kDense;
  const int group = model::sparsity_group(modes.sparsity);
  const int rows = array_rows >> tiling.row_split, cols = array_cols >> tiling.col_split;
  const int row0 = tiling.row_tile * rows;
  const int p = sparse ? 4 * (1 + static_cast<int>(rng.below(rows / 4)))
                       : 1 + static_cast<int>(rng.below(rows));
  const int m = 1 + static_cast<int>(rng.below(cols));
  const int st_bytes = model::storage_bits(ts) / 8, mv_bytes = model::storage_bits(tm) / 8;
  const auto align = [&](uint32_t a) { return (a + 3) / 4 * 4; };
  const model::Tile st = model::random_tile(ts, modes.double_row ? 2 * p : p, m, rng);
  addr = align(addr);
  model::write_te_operand(sbuf, st, modes, true, addr, st_bytes, row0);
  auto ls = model::load_stationary(ts, p, m, addr, st_bytes);
  set_modes(ls, modes);
  model::set_tiling(ls, tiling);
  addr += static_cast<uint32_t>(st.rows / p * m * st_bytes);
  if (sparse) {
    model::Tile tags(model::DType::kInt16, p, m);
    for (auto& t : tags.bits) t = rng.below(4) == 0 ? rng.below(16) : rng.below(group);
    addr = align(addr);
    model::write_te_tags(sbuf, tags, addr, row0);
    ls.tag_addr = addr;
    addr += static_cast<uint32_t>(2 * ((m + 3) / 4));
  }
  program.push_back(ls);
  for (int i = 0; i < mms; ++i) {
    const bool identity = modes.transpose && rng.below(2) == 0;
    const int n = identity ? p : 1 + static_cast<int>(rng.below(48));
    const int k_mv = modes.double_row ? 2 * p : sparse ? p / 4 * group : p;
    model::Tile mv = model::random_tile(tm, k_mv, n, rng);
    if (identity) {
      for (int r = 0; r < p; ++r)
        for (int c = 0; c < n; ++c)
          mv.at(r, c) = r == c ? model::from_fp32(0x3F800000u, tm, {}) : 0u;
    }
    addr = align(addr);
    model::write_te_operand(sbuf, mv, modes, false, addr, mv_bytes, row0);
    const int offset = static_cast<int>(rng.below(64));
    auto mm = model::multiply_moving(tm, p, n, addr, mv_bytes, static_cast<int>(rng.below(8)),
                                     offset, !modes.transpose && i > 0 && rng.below(2));
    set_modes(mm, modes);
    model::set_tiling(mm, tiling);
    addr += static_cast<uint32_t>(k_mv / p * n * mv_bytes);
    program.push_back(mm);
  }
}

inline model::TeTiling tile(int row_split, int row_tile, int col_split, int col_tile) {
  return {row_split, row_tile, col_split, col_tile};
}

// Up to four tiles sharing no rows and no columns (a random placement on a random grid),
// each with an LS in random modes and MMs; all LSs first, then the MMs interleaved, so that
// MMs of different tiles stream together.
inline std::vector<model::TeInstruction> tiled_program(int rows, int cols, model::Sbuf& sbuf,
                                         model::SplitMix64& rng, uint32_t& addr,
                                         std::set<std::string>* bins) {
  const int row_split = static_cast<int>(rng.below(3)), col_split = static_cast<int>(rng.below(3));
  const int tiles = std::min(1 << row_split, 1 << col_split);
  std::vector<int> row_order(1 << row_split), col_order(1 << col_split);
  for (size_t i = 0; i < row_order.size(); ++i) row_order[i] = static_cast<int>(i);
  for (size_t i = 0; i < col_order.size(); ++i) col_order[i] = static_cast<int>(i);
  for (size_t i = row_order.size(); i > 1; --i) std::swap(row_order[i - 1], row_order[rng.below(i)]);
  for (size_t i = col_order.size(); i > 1; --i) std::swap(col_order[i - 1], col_order[rng.below(i)]);
  // One mode for the group most of the time (they stream together), mixed otherwise.
  const int group_mode = static_cast<int>(rng.below(4));
  const bool mixed = rng.below(4) == 0;
  std::vector<model::TeInstruction> lss, mms;
  for (int t = 0; t < tiles; ++t) {
    const model::TeTiling tiling = tile(row_split, row_order[t], col_split, col_order[t]);
    const int tile_rows = rows >> row_split;
    int mode = mixed ? static_cast<int>(rng.below(4)) : group_mode;
    if (mode == 1 && col_split != 0) mode = 0;          // double-row takes no column tiling
    if (mode == 3 && (tile_rows % 4 != 0 || tile_rows < 4)) mode = 2;  // sparse: whole groups
    model::TeModes modes;
    model::DType ts = kInputTypes[rng.below(6)], tm = kInputTypes[rng.below(6)];
    if (mode == 1) {
      modes.double_row = true;
      ts = rng.below(2) ? model::DType::kE4m3 : model::DType::kE5m2;
      tm = rng.below(2) ? model::DType::kE4m3 : model::DType::kE5m2;
    } else if (mode == 2) {
      modes.transpose = true;
    } else if (mode == 3) {
      modes.sparsity = static_cast<model::TeSparsity>(1 + rng.below(3));
    }
    std::vector<model::TeInstruction> block;
    append_mode_program(rows, cols, modes, ts, tm, 1 + static_cast<int>(rng.below(2)),
                              sbuf, rng, addr, block, tiling);
    if (bins)
      bins->insert(mode_name(modes) + " rows " + std::to_string(1 << row_split) + "x col " +
                   std::to_string(1 << col_split) + "x");
    lss.push_back(block.front());
    mms.insert(mms.end(), block.begin() + 1, block.end());
  }
  // MMs of different tiles alternate; each tile's own MMs keep their order.
  std::vector<model::TeInstruction> program = lss;
  std::vector<model::TeInstruction> rest = mms;
  while (!rest.empty()) {
    size_t pick = rng.below(static_cast<uint32_t>(std::min<size_t>(rest.size(), 2)));
    program.push_back(rest[pick]);
    rest.erase(rest.begin() + static_cast<long>(pick));
  }
  return program;
}

}  // namespace ncore::test

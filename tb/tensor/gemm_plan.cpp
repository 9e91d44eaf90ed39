#include "tb/tensor/gemm_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/common/error.h"

namespace ncore::tb {

namespace {

// A value near 1 (both signs), so long sums stay finite and informative.
uint32_t ordinary_value(model::DType t, model::SplitMix64& rng) {
  const float v = (0.25f + static_cast<float>(rng.below(1u << 20)) / (1u << 20)) *
                  (rng.below(2) ? -1.0f : 1.0f);
  return model::from_fp32(model::float_to_bits(v), t, {});
}

}  // namespace

GemmMode parse_gemm_mode(const std::string& name) {
  for (GemmMode m : {GemmMode::kDense, GemmMode::kDoubleRow, GemmMode::kTranspose,
                     GemmMode::kSparse4of8, GemmMode::kSparse4of12, GemmMode::kSparse4of16})
    if (gemm_mode_name(m) == name) return m;
  throw Error(fmt::format("mode '{}' is not one of dense, double-row, transpose, sparse-4:8, "
                          "sparse-4:12, sparse-4:16", name));
}

std::string gemm_mode_name(GemmMode mode) {
  switch (mode) {
    case GemmMode::kDoubleRow: return "double-row";
    case GemmMode::kTranspose: return "transpose";
    case GemmMode::kSparse4of8: return "sparse-4:8";
    case GemmMode::kSparse4of12: return "sparse-4:12";
    case GemmMode::kSparse4of16: return "sparse-4:16";
    default: return "dense";
  }
}

model::TeModes gemm_mode_modes(GemmMode mode) {
  model::TeModes m;
  m.double_row = mode == GemmMode::kDoubleRow;
  m.transpose = mode == GemmMode::kTranspose;
  if (mode == GemmMode::kSparse4of8) m.sparsity = model::TeSparsity::k4of8;
  if (mode == GemmMode::kSparse4of12) m.sparsity = model::TeSparsity::k4of12;
  if (mode == GemmMode::kSparse4of16) m.sparsity = model::TeSparsity::k4of16;
  return m;
}

namespace {

// Bump allocator over one SBUF partition range, 4-byte aligned.
class SbufArena {
 public:
  explicit SbufArena(const model::Sbuf& sbuf) : limit_(sbuf.bytes_per_partition()) {}
  uint32_t take(uint64_t bytes) {
    const uint64_t at = (next_ + 3) / 4 * 4;
    if (at + bytes > limit_)
      throw Error(fmt::format("gemm: operands need more than the {} bytes of an SBUF partition",
                              limit_));
    next_ = at + bytes;
    return static_cast<uint32_t>(at);
  }

 private:
  uint64_t next_ = 0;
  uint64_t limit_;
};

}  // namespace

GemmPlan plan_gemm(const GemmShape& s, int rows, int cols, model::Sbuf& sbuf,
                   model::SplitMix64& rng, bool all_classes) {
  constexpr int kBankElems = 512, kBanks = 8;
  const model::TeModes modes = gemm_mode_modes(s.mode);
  const bool sparse = modes.sparsity != model::TeSparsity::kDense;
  const int group = model::sparsity_group(modes.sparsity);
  if (modes.double_row && (model::storage_bits(s.stationary_type) != 8 ||
                           model::storage_bits(s.moving_type) != 8))
    throw Error("gemm: double-row mode takes FP8 operands (e4m3 or e5m2) only");
  if (sparse && rows % 4 != 0)
    throw Error(fmt::format("gemm: sparse mode needs a multiple of 4 array rows, not {}", rows));
  const int st_bytes = model::storage_bits(s.stationary_type) / 8;
  const int mv_bytes = model::storage_bits(s.moving_type) / 8;
  // Dense K rows per LoadStationary.
  const int k_block = modes.double_row ? 2 * rows : sparse ? rows / 4 * group : rows;
  const int k_blocks = (s.k + k_block - 1) / k_block;
  auto value = [&](model::DType t) {
    return all_classes ? model::random_value(t, rng) : ordinary_value(t, rng);
  };
  SbufArena arena(sbuf);
  GemmPlan plan;

  // Pass 1: every operand tile into the SBUF. Per K block: the moving chunks (<= 512 each;
  // rows past the real K are +0 and add nothing; a transpose streams one identity tile) and
  // the LS of each stationary column block.
  struct Chunk { uint32_t addr; int n; };
  struct Block { int parts = 0, k_mv = 0; std::vector<Chunk> chunks; std::vector<model::TeInstruction> ls; };
  // k_here real K rows on the partitions from row0; stationary column blocks of `width`.
  auto make_block = [&](int k_here, int row0, int width) {
    Block b;
    b.parts = modes.double_row ? (k_here + 1) / 2
              : sparse         ? 4 * ((k_here + group - 1) / group)
                               : k_here;
    b.k_mv = modes.double_row ? 2 * b.parts : sparse ? b.parts / 4 * group : b.parts;
    const int moving_free = modes.transpose ? b.parts : s.moving_free;
    for (int n0 = 0; n0 < moving_free; n0 += kBankElems) {
      const int n_here = std::min(kBankElems, moving_free - n0);
      model::Tile mv(s.moving_type, b.k_mv, n_here);
      for (int r = 0; r < k_here; ++r)
        for (int c = 0; c < n_here; ++c)
          mv.at(r, c) = !modes.transpose ? value(s.moving_type)
                        : r == c         ? model::from_fp32(0x3F800000u, s.moving_type, {})
                                         : 0u;
      const uint32_t at = arena.take(static_cast<uint64_t>(b.k_mv / b.parts) * n_here * mv_bytes);
      model::write_te_operand(sbuf, mv, modes, false, at, mv_bytes, row0);
      b.chunks.push_back({at, n_here});
    }
    for (int c0 = 0; c0 < s.stationary_free; c0 += width) {
      const int m_here = std::min(width, s.stationary_free - c0);
      model::Tile st(s.stationary_type, modes.double_row ? 2 * b.parts : b.parts, m_here);
      model::Tile tags(model::DType::kInt16, b.parts, m_here);
      if (sparse) {
        // Each group of G dense rows keeps 4 distinct places; places past the real K hold +0.
        for (int g = 0; g < b.parts / 4; ++g) {
          for (int c = 0; c < m_here; ++c) {
            std::vector<int> places(group);
            for (int i = 0; i < group; ++i) places[i] = i;
            for (int i = 0; i < 4; ++i)
              std::swap(places[i], places[i + rng.below(static_cast<uint32_t>(group - i))]);
            std::sort(places.begin(), places.begin() + 4);
            for (int i = 0; i < 4; ++i) {
              tags.at(4 * g + i, c) = static_cast<uint32_t>(places[i]);
              st.at(4 * g + i, c) = g * group + places[i] < k_here ? value(s.stationary_type) : 0u;
            }
          }
        }
      } else {
        for (int r = 0; r < k_here; ++r)
          for (int c = 0; c < m_here; ++c) st.at(r, c) = value(s.stationary_type);
      }
      const uint32_t st_at = arena.take(static_cast<uint64_t>(st.rows / b.parts) * m_here * st_bytes);
      model::write_te_operand(sbuf, st, modes, true, st_at, st_bytes, row0);
      auto ls = model::load_stationary(s.stationary_type, b.parts, m_here, st_at, st_bytes);
      ls.double_row = modes.double_row;
      ls.transpose = modes.transpose;
      ls.sparsity = modes.sparsity;
      if (sparse) {
        ls.tag_addr = arena.take(2 * ((m_here + 3) / 4));
        model::write_te_tags(sbuf, tags, ls.tag_addr, row0);
      }
      b.ls.push_back(ls);
    }
    return b;
  };

  if (s.row_split != 0 || s.col_split != 0) {
    // Tiling: a batch of independent matmuls, matmul b on diagonal tile b % T (T = the
    // smaller tile count), so T of them stream at once; matmul b writes PSUM bank (b / T) % 8
    // of its tile's partitions.
    const int tiles = std::min(1 << s.row_split, 1 << s.col_split);
    const int tile_rows = rows >> s.row_split, tile_cols = cols >> s.col_split;
    const int k_tile = modes.double_row ? 2 * tile_rows
                       : sparse         ? tile_rows / 4 * group
                                        : tile_rows;
    if (s.k > k_tile || s.stationary_free > tile_cols || s.moving_free > kBankElems ||
        (sparse && tile_rows % 4 != 0))
      throw Error(fmt::format(
          "gemm: with tiling {}x{} each matmul must fit one tile: K <= {}, N <= {}, M <= {}{}",
          1 << s.row_split, 1 << s.col_split, k_tile, tile_cols, kBankElems,
          sparse ? " (and sparse tiles need a multiple of 4 rows)" : ""));
    for (int b0 = 0; b0 < s.batch; b0 += tiles) {
      std::vector<model::TeInstruction> mms;
      for (int b = b0; b < std::min(s.batch, b0 + tiles); ++b) {
        const model::TeTiling tiling{s.row_split, b % tiles, s.col_split, b % tiles};
        Block blk = make_block(s.k, tiling.row_tile * tile_rows, tile_cols);
        auto ls = blk.ls.front();
        model::set_tiling(ls, tiling);
        plan.program.push_back(ls);
        auto mm = model::multiply_moving(s.moving_type, blk.parts, blk.chunks[0].n,
                                         blk.chunks[0].addr, mv_bytes, (b / tiles) % kBanks, 0,
                                         false);
        mm.double_row = modes.double_row;
        mm.transpose = modes.transpose;
        mm.sparsity = modes.sparsity;
        model::set_tiling(mm, tiling);
        mms.push_back(mm);
        if (!modes.transpose) plan.macs += static_cast<uint64_t>(blk.k_mv) * ls.m * blk.chunks[0].n;
      }
      plan.program.insert(plan.program.end(), mms.begin(), mms.end());
    }
    return plan;
  }

  std::vector<Block> blocks(k_blocks);
  for (int kb = 0; kb < k_blocks; ++kb)
    blocks[kb] = make_block(std::min(k_block, s.k - kb * k_block), 0, cols);

  // Pass 2: the program. Per stationary column block and per run of up to 8 moving chunks
  // (one PSUM bank each), the K blocks accumulate: one LS and its MMs per K block. A
  // transpose writes K block kb to bank kb % 8 instead (later blocks overwrite earlier ones).
  const int column_blocks = (s.stationary_free + cols - 1) / cols;
  const int chunk_count = static_cast<int>(blocks[0].chunks.size());
  for (int cb = 0; cb < column_blocks; ++cb) {
    for (int g0 = 0; g0 < chunk_count; g0 += kBanks) {
      for (int kb = 0; kb < k_blocks; ++kb) {
        const Block& b = blocks[kb];
        const auto& ls = b.ls[cb];
        plan.program.push_back(ls);
        const int g1 = modes.transpose ? static_cast<int>(b.chunks.size())
                                       : std::min(chunk_count, g0 + kBanks);
        for (int g = g0; g < g1; ++g) {
          const int bank = modes.transpose ? kb % kBanks : g - g0;
          auto mm = model::multiply_moving(s.moving_type, b.parts, b.chunks[g].n,
                                           b.chunks[g].addr, mv_bytes, bank, 0,
                                           !modes.transpose && kb > 0);
          mm.double_row = modes.double_row;
          mm.transpose = modes.transpose;
          mm.sparsity = modes.sparsity;
          plan.program.push_back(mm);
          if (!modes.transpose) plan.macs += static_cast<uint64_t>(b.k_mv) * ls.m * b.chunks[g].n;
        }
      }
    }
  }
  return plan;
}

}  // namespace ncore::tb

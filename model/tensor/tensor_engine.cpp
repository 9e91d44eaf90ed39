#include "model/tensor/tensor_engine.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/common/error.h"
#include "model/common/sbuf.h"

namespace ncore::model {
namespace {

// The kernel works on blocks of kBlockM outputs rows x kBlockN output columns held in
// registers. GCC's vector extension compiles to whatever SIMD width the target has. The
// model library is built with -ffp-contract=off, so a*b+c stays a rounded multiply followed
// by a rounded add, as the PE computes it: never a fused multiply-add.
constexpr int kLanes = 8;
constexpr int kBlockM = 6;
constexpr int kVectorsN = 2;
constexpr int kBlockN = kLanes * kVectorsN;
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));
typedef float UnalignedVec
    __attribute__((vector_size(kLanes * sizeof(float)), aligned(4), may_alias));

Vec load(const float* p) { return *reinterpret_cast<const UnalignedVec*>(p); }
void store(float* p, Vec v) { *reinterpret_cast<UnalignedVec*>(p) = v; }

int round_up(int x, int to) { return (x + to - 1) / to * to; }

// Decodes a [K][cols] tile into panels of `width` columns: panel p holds columns
// p*width .. p*width+width-1 for every k, contiguous, zero-padded. The kernel then walks each
// panel with unit stride (a row-major walk down one column block would hit the same few
// cache sets on every row).
void decode_panels(const Tile& t, int width, std::vector<float>& out) {
  const int panels = round_up(t.cols, width) / width;
  out.resize(static_cast<size_t>(panels) * t.rows * width);
  const uint32_t* table = decode_table(t.dtype);
  const uint32_t mask = storage_mask(t.dtype);
  float* dst = out.data();
  for (int p = 0; p < panels; ++p) {
    const int c0 = p * width, live = std::min(width, t.cols - c0);
    for (int k = 0; k < t.rows; ++k, dst += width) {
      const uint32_t* src = &t.bits[static_cast<size_t>(k) * t.cols + c0];
      if (t.dtype == DType::kBf16) {  // the top half of an FP32 word: no table needed
        for (int w = 0; w < live; ++w) dst[w] = bits_to_float(src[w] << 16);
      } else if (table) {
        for (int w = 0; w < live; ++w) dst[w] = bits_to_float(table[src[w] & mask]);
      } else {
        for (int w = 0; w < live; ++w) dst[w] = to_float(t.dtype, src[w]);
      }
      for (int w = live; w < width; ++w) dst[w] = 0.0f;
    }
  }
}

typedef int32_t IntVec __attribute__((vector_size(kLanes * sizeof(int32_t))));

// NaN lanes become the canonical NaN.
Vec canonicalize(Vec v) {
  const IntVec is_nan = v != v;
  const IntVec canonical = IntVec{} + static_cast<int32_t>(kFp32CanonicalNan);
  return reinterpret_cast<Vec>((reinterpret_cast<IntVec>(v) & ~is_nan) | (canonical & is_nan));
}

// Hands each finished lane group to the caller: emit(m, n, lanes) for output row m and
// columns n .. n+kLanes-1 (which may run past the live columns into the padding).
// st^T @ mv from panel-packed operands; every sum starts at +0 and adds in k order.
// Pairs == 2 is double-row: the partial sum adds (st0*mv0 + st1*mv1), that pair sum rounded.
template <int Pairs, class Emit>
void kernel(const float* const st[Pairs], const float* const mv[Pairs], int k_size, int mp,
            int np, Emit&& emit) {
  // n outer: one moving panel stays in L1 while every stationary panel streams past it.
  for (int n0 = 0; n0 < np; n0 += kBlockN) {
    const size_t mv_off = static_cast<size_t>(n0 / kBlockN) * k_size * kBlockN;
    for (int m0 = 0; m0 < mp; m0 += kBlockM) {
      const size_t st_off = static_cast<size_t>(m0 / kBlockM) * k_size * kBlockM;
      Vec acc[kBlockM][kVectorsN];
      for (auto& row : acc)
        for (auto& v : row) v = Vec{} + 0.0f;  // +0
      for (int k = 0; k < k_size; ++k) {
        Vec b[Pairs][kVectorsN];
        for (int p = 0; p < Pairs; ++p)
          for (int j = 0; j < kVectorsN; ++j)
            b[p][j] = load(mv[p] + mv_off + k * kBlockN + j * kLanes);
        for (int i = 0; i < kBlockM; ++i) {
          const float a0 = st[0][st_off + k * kBlockM + i];
          for (int j = 0; j < kVectorsN; ++j) {
            Vec product = a0 * b[0][j];
            if constexpr (Pairs == 2) {
              const float a1 = st[1][st_off + k * kBlockM + i];
              product = product + a1 * b[1][j];
            }
            acc[i][j] = acc[i][j] + product;
          }
        }
      }
      for (int i = 0; i < kBlockM; ++i)
        for (int j = 0; j < kVectorsN; ++j) emit(m0 + i, n0 + j * kLanes, acc[i][j]);
    }
  }
}

// Rows [from, from + count) of a tile.
Tile row_slice(const Tile& t, int from, int count) {
  Tile out(t.dtype, count, t.cols);
  std::copy(t.bits.begin() + static_cast<size_t>(from) * t.cols,
            t.bits.begin() + static_cast<size_t>(from + count) * t.cols, out.bits.begin());
  return out;
}

bool is_fp8(DType t) { return t == DType::kE4m3 || t == DType::kE5m2; }

// The message is formatted only on failure: psum() and set_psum() check every element copy.
template <class... Args>
void require(bool ok, fmt::format_string<Args...> message, Args&&... args) {
  if (!ok) throw Error(fmt::format(message, std::forward<Args>(args)...));
}

void check_range(const char* op, const char* field, int value, int lo, int hi) {
  require(value >= lo && value <= hi,
          "{}: field '{}' = {} is outside the legal range {}..{}", op, field, value, lo, hi);
}

void check_float_type(const char* op, const char* field, DType t) {
  require(is_float(t),
          "{}: field '{}' = {} is not a tensor-engine input type "
          "(expected fp32, tf32, bf16, fp16, e4m3 or e5m2)",
          op, field, dtype_name(t));
}

}  // namespace

TensorEngine::TensorEngine(const TensorEngineConfig& config) : config_(config) {
  check_range("TensorEngineConfig", "rows", config.rows, 1, 4096);
  check_range("TensorEngineConfig", "cols", config.cols, 1, 4096);
  check_range("TensorEngineConfig", "psum_banks", config.psum_banks, 1, 64);
  check_range("TensorEngineConfig", "bank_elements", config.bank_elements, 1, 1 << 16);
  reset_psum();
}

void TensorEngine::reset_psum() {
  psum_.assign(static_cast<size_t>(config_.cols) * config_.psum_banks * config_.bank_elements,
               0.0f);
  group_length_.assign(config_.psum_banks, 0);
}

size_t TensorEngine::psum_index(int partition, int bank, int element) const {
  // Bank-major: one MultiplyMoving touches one contiguous stretch of memory.
  return (static_cast<size_t>(bank) * config_.cols + partition) * config_.bank_elements + element;
}

uint32_t TensorEngine::psum(int partition, int bank, int element) const {
  check_range("psum", "partition", partition, 0, config_.cols - 1);
  check_range("psum", "bank", bank, 0, config_.psum_banks - 1);
  check_range("psum", "element", element, 0, config_.bank_elements - 1);
  return float_to_bits(psum_[psum_index(partition, bank, element)]);
}

void TensorEngine::set_psum(int partition, int bank, int element, uint32_t bits) {
  check_range("set_psum", "partition", partition, 0, config_.cols - 1);
  check_range("set_psum", "bank", bank, 0, config_.psum_banks - 1);
  check_range("set_psum", "element", element, 0, config_.bank_elements - 1);
  psum_[psum_index(partition, bank, element)] = bits_to_float(bits);
}

TeModes modes_of(const TeInstruction& i) { return {i.double_row, i.transpose, i.sparsity}; }

bool TensorEngine::tiling_fits(const TeTiling& t) const {
  const auto fits = [](int split, int tile, int size) {
    return split >= 0 && split <= 2 && tile >= 0 && tile < (1 << split) &&
           (split == 0 || size % 4 == 0);
  };
  return fits(t.row_split, t.row_tile, config_.rows) && fits(t.col_split, t.col_tile, config_.cols);
}

int TensorEngine::tile_rows(const TeTiling& t) const { return config_.rows >> t.row_split; }
int TensorEngine::tile_cols(const TeTiling& t) const { return config_.cols >> t.col_split; }
int TensorEngine::tile_row0(const TeTiling& t) const { return t.row_tile * tile_rows(t); }
int TensorEngine::tile_col0(const TeTiling& t) const { return t.col_tile * tile_cols(t); }

// The 4 x 4 segments a tile covers: rows [r0, r1), columns [c0, c1) of the segment grid.
struct SegmentRange {
  int r0, r1, c0, c1;
};
static SegmentRange segments_of(const TeTiling& t) {
  const int rows = 4 >> t.row_split, cols = 4 >> t.col_split;
  return {t.row_tile * rows, (t.row_tile + 1) * rows, t.col_tile * cols, (t.col_tile + 1) * cols};
}

const TensorEngine::Stationary* TensorEngine::top_left(const TeTiling& t) const {
  if (!tiling_fits(t)) return nullptr;
  const SegmentRange r = segments_of(t);
  const auto it = stationaries_.find(segment_[r.r0][r.c0]);
  return it == stationaries_.end() ? nullptr : &it->second;
}

const TensorEngine::Stationary* TensorEngine::find(const TeTiling& t) const {
  const Stationary* st = top_left(t);
  if (!st || !(st->tiling == t)) return nullptr;
  // Every segment of the tile still holds this stationary (no later LS overlapped it).
  const SegmentRange r = segments_of(t);
  for (int i = r.r0; i < r.r1; ++i)
    for (int j = r.c0; j < r.c1; ++j)
      if (segment_[i][j] != segment_[r.r0][r.c0]) return nullptr;
  return st;
}

bool TensorEngine::has_stationary(const TeTiling& t) const { return find(t) != nullptr; }
int TensorEngine::stationary_k(const TeTiling& t) const { return find(t) ? find(t)->k : 0; }
int TensorEngine::stationary_m(const TeTiling& t) const { return find(t) ? find(t)->m : 0; }
DType TensorEngine::stationary_type(const TeTiling& t) const {
  return find(t) ? find(t)->type : DType::kBf16;
}
const TeModes& TensorEngine::modes(const TeTiling& t) const {
  static const TeModes kNone;
  return find(t) ? find(t)->modes : kNone;
}

void TensorEngine::load_stationary(const Tile& stationary, const TeModes& modes,
                                   const Tile* tags, const TeTiling& tiling) {
  check_float_type("LoadStationary", "dtype", stationary.dtype);
  require(!(modes.double_row && (modes.transpose || modes.sparsity != TeSparsity::kDense ||
                                 tiling.col_split != 0)) &&
              !(modes.transpose && modes.sparsity != TeSparsity::kDense),
          "LoadStationary: forbidden mode combination (double-row takes neither transpose, "
          "sparsity nor column tiling; transpose takes no sparsity)");
  require(tiling_fits(tiling),
          "LoadStationary: tiling rows {}/{} columns {}/{} does not fit a {}x{} "
          "array (splits 0..2, tiles below 2^split, sides multiples of 4)",
          tiling.row_tile, tiling.row_split, tiling.col_tile, tiling.col_split, config_.rows, config_.cols);
  const int partitions = modes.double_row ? stationary.rows / 2 : stationary.rows;
  if (modes.double_row) {
    require(is_fp8(stationary.dtype),
            "LoadStationary: double-row needs FP8, found {}", dtype_name(stationary.dtype));
    require(stationary.rows % 2 == 0,
            "LoadStationary: double-row K = {} is not even", stationary.rows);
  }
  check_range("LoadStationary", "K", partitions, 1, tile_rows(tiling));
  check_range("LoadStationary", "M", stationary.cols, 1, tile_cols(tiling));
  if (modes.sparsity != TeSparsity::kDense) {
    require(partitions % 4 == 0,
            "LoadStationary: sparse K = {} is not a multiple of 4", partitions);
    require(tiling.row_split == 0 || tile_rows(tiling) % 4 == 0,
            "LoadStationary: a sparse tile must hold whole groups of 4 rows");
    require(tags && tags->rows == stationary.rows && tags->cols == stationary.cols,
            "LoadStationary: sparse mode needs a tag tile of the stationary's shape");
  }
  // The new stationary takes over every segment of its tile; ones no segment holds any more
  // are dropped.
  Stationary& st = claim(tiling);
  st.type = stationary.dtype;
  st.modes = modes;
  st.k = partitions;
  st.m = stationary.cols;
  if (modes.double_row) {
    decode_panels(row_slice(stationary, 0, partitions), kBlockM, st.panels);
    decode_panels(row_slice(stationary, partitions, partitions), kBlockM, st.panels_hi);
  } else if (modes.transpose || modes.sparsity != TeSparsity::kDense) {
    st.raw = stationary;
    if (modes.sparsity != TeSparsity::kDense) {
      for (auto& b : st.raw.bits) b = to_fp32_bits(stationary.dtype, b);
      st.tags = *tags;
    }
  } else {
    decode_panels(stationary, kBlockM, st.panels);
  }
}

// The new stationary takes over every segment of its tile; ones no segment holds any more
// are dropped.
TensorEngine::Stationary& TensorEngine::claim(const TeTiling& tiling) {
  const int id = next_id_++;
  Stationary& st = stationaries_[id];
  st.tiling = tiling;
  const SegmentRange range = segments_of(tiling);
  for (int i = range.r0; i < range.r1; ++i)
    for (int j = range.c0; j < range.c1; ++j) segment_[i][j] = id;
  for (auto it = stationaries_.begin(); it != stationaries_.end();) {
    bool held = false;
    for (const auto& row : segment_)
      for (int held_id : row) held = held || held_id == it->first;
    it = held ? std::next(it) : stationaries_.erase(it);
  }
  return st;
}

int TensorEngine::Stationary::k_logical() const {
  if (modes.double_row) return 2 * k;
  return modes.sparsity == TeSparsity::kDense ? k : k / 4 * sparsity_group(modes.sparsity);
}

bool TensorEngine::transpose_is_narrow(const TeTiling& t) const {
  return storage_bits(stationary_type(t)) < 32;
}

void TensorEngine::multiply_moving(const Tile& moving, const MultiplyMoving& mm) {
  cur_ = find(mm.tiling);
  require(cur_ != nullptr, "MultiplyMoving: no stationary loaded in its tile (issue a "
                           "LoadStationary with the same tiling first)");
  out0_ = tile_col0(mm.tiling);
  check_float_type("MultiplyMoving", "dtype", moving.dtype);
  const int k_logical = cur_->k_logical();
  require(moving.rows == k_logical,
          "MultiplyMoving: field 'K' = {} does not match the stationary's K = {}", moving.rows, k_logical);
  if (cur_->modes.double_row)
    require(is_fp8(moving.dtype), "MultiplyMoving: double-row needs FP8, found {}", dtype_name(moving.dtype));
  const int elements = cur_->modes.transpose && transpose_is_narrow(mm.tiling)
                           ? 2 * config_.bank_elements
                           : config_.bank_elements;
  check_range("MultiplyMoving", "N", moving.cols, 1, config_.bank_elements);
  check_range("MultiplyMoving", "psum_bank", mm.psum_bank, 0, config_.psum_banks - 1);
  check_range("MultiplyMoving", "psum_offset", mm.psum_offset, 0, elements - moving.cols);
  require(!(cur_->modes.transpose && mm.accumulate),
          "MultiplyMoving: a transpose cannot accumulate");

  if (cur_->modes.transpose) {
    multiply_transpose(moving, mm);
  } else if (cur_->modes.sparsity != TeSparsity::kDense) {
    multiply_sparse(moving, mm);
    macs_ += static_cast<uint64_t>(k_logical) * cur_->m * moving.cols;
  } else if (cur_->modes.double_row) {
    multiply_double_row(moving, mm);
    macs_ += static_cast<uint64_t>(k_logical) * cur_->m * moving.cols;
  } else {
    const int mp = round_up(cur_->m, kBlockM);
    const int np = round_up(moving.cols, kBlockN);
    decode_panels(moving, kBlockN, moving_scratch_);
    const int n_size = moving.cols;
    const float* st[1] = {cur_->panels.data()};
    const float* mv[1] = {moving_scratch_.data()};
    // Each finished lane group goes straight into PSUM: overwrite, or one rounded add.
    kernel<1>(st, mv, cur_->k, mp, np, [&](int row, int col, Vec lanes) {
      if (row >= cur_->m) return;
      float* dst = &psum_[psum_index(out0_ + row, mm.psum_bank, mm.psum_offset)];
      if (col + kLanes <= n_size) {
        store(dst + col, canonicalize(mm.accumulate ? load(dst + col) + lanes : lanes));
        return;
      }
      for (int l = 0; col + l < n_size; ++l) write_psum(row, mm, col + l, float_to_bits(lanes[l]));
    });
    macs_ += static_cast<uint64_t>(cur_->k) * cur_->m * moving.cols;
  }
  group_length_[mm.psum_bank] = mm.accumulate ? group_length_[mm.psum_bank] + 1 : 1;
  const uint32_t element_bytes = cur_->modes.transpose && transpose_is_narrow(mm.tiling) ? 2 : 4;
  last_region_ = {out0_, cur_->m, mm.psum_bank, static_cast<uint32_t>(mm.psum_offset) * element_bytes,
                  static_cast<uint32_t>(mm.psum_offset + moving.cols) * element_bytes};
}

void TensorEngine::write_psum(int partition, const MultiplyMoving& mm, int n,
                              uint32_t tile_bits) {
  float* dst = &psum_[psum_index(out0_ + partition, mm.psum_bank, mm.psum_offset + n)];
  *dst = bits_to_float(mm.accumulate ? fp32_add(float_to_bits(*dst), tile_bits)
                                     : canonicalize_fp32(tile_bits));
}

void TensorEngine::multiply_double_row(const Tile& moving, const MultiplyMoving& mm) {
  const int mp = round_up(cur_->m, kBlockM);
  const int np = round_up(moving.cols, kBlockN);
  decode_panels(row_slice(moving, 0, cur_->k), kBlockN, moving_scratch_);
  decode_panels(row_slice(moving, cur_->k, cur_->k), kBlockN, moving_hi_scratch_);
  const float* st[2] = {cur_->panels.data(), cur_->panels_hi.data()};
  const float* mv[2] = {moving_scratch_.data(), moving_hi_scratch_.data()};
  kernel<2>(st, mv, cur_->k, mp, np, [&](int row, int col, Vec lanes) {
    if (row >= cur_->m) return;
    for (int l = 0; l < kLanes && col + l < moving.cols; ++l)
      write_psum(row, mm, col + l, float_to_bits(lanes[l]));
  });
}

void TensorEngine::multiply_sparse(const Tile& moving, const MultiplyMoving& mm) {
  const int group = sparsity_group(cur_->modes.sparsity);
  const int n_size = moving.cols;
  std::vector<float> mv(moving.bits.size());
  const uint32_t* table = decode_table(moving.dtype);
  const uint32_t mask = storage_mask(moving.dtype);
  for (size_t i = 0; i < mv.size(); ++i)
    mv[i] = table ? bits_to_float(table[moving.bits[i] & mask]) : to_float(moving.dtype, moving.bits[i]);
  std::vector<float> acc(n_size);
  for (int m = 0; m < cur_->m; ++m) {
    std::fill(acc.begin(), acc.end(), 0.0f);  // +0
    for (int r = 0; r < cur_->k; ++r) {
      const int tag = static_cast<int>(cur_->tags.at(r, m));
      if (tag >= group) continue;  // out of range: adds nothing
      const float w = bits_to_float(cur_->raw.at(r, m));
      const float* x = &mv[static_cast<size_t>(r / 4 * group + tag) * n_size];
      for (int n = 0; n < n_size; ++n) acc[n] = acc[n] + w * x[n];
    }
    for (int n = 0; n < n_size; ++n) write_psum(m, mm, n, float_to_bits(acc[n]));
  }
}

void TensorEngine::multiply_transpose(const Tile& moving, const MultiplyMoving& mm) {
  const bool narrow = storage_bits(cur_->type) < 32;
  const uint32_t mask = storage_mask(moving.dtype);
  for (int n = 0; n < moving.cols; ++n) {
    int last = -1;
    for (int k = 0; k < cur_->k; ++k) {
      const uint32_t x = to_fp32_bits(moving.dtype, moving.at(k, n) & mask);
      if ((x & 0x7FFFFFFFu) != 0) last = k;
    }
    for (int m = 0; m < cur_->m; ++m) {
      const uint32_t bits = last < 0 ? 0u : cur_->raw.at(last, m);
      const int e = mm.psum_offset + n;
      if (!narrow) {
        psum_[psum_index(out0_ + m, mm.psum_bank, e)] = bits_to_float(bits);
        continue;
      }
      float& word = psum_[psum_index(out0_ + m, mm.psum_bank, e / 2)];
      uint32_t w = float_to_bits(word);
      const int shift = 16 * (e % 2);
      w = (w & ~(0xFFFFu << shift)) | ((bits & 0xFFFFu) << shift);
      word = bits_to_float(w);
    }
  }
}

uint32_t TensorEngine::psum16(int partition, int bank, int element) const {
  return (psum(partition, bank, element / 2) >> (16 * (element % 2))) & 0xFFFFu;
}

TeError TensorEngine::check(const TeInstruction& i) const {
  const bool is_ls = i.opcode == Opcode::kLoadStationary;
  const bool sparse = i.sparsity != TeSparsity::kDense;
  const TeTiling& t = tiling_of(i);
  if (!is_ls && i.opcode != Opcode::kMultiplyMoving) return TeError::kOpcode;
  if (!is_float(i.dtype)) return TeError::kDtype;
  if ((i.double_row && (i.transpose || sparse || t.col_split != 0)) || (i.transpose && sparse) ||
      (!is_ls && i.transpose && i.accumulate))
    return TeError::kModeCombo;
  if (i.double_row && !is_fp8(i.dtype)) return TeError::kModeType;
  if (!tiling_fits(t) || (sparse && t.row_split != 0 && tile_rows(t) % 4 != 0))
    return TeError::kTile;
  if (i.k < 1 || i.k > tile_rows(t) || (sparse && i.k % 4 != 0)) return TeError::kK;
  if (is_ls) {
    if (i.m < 1 || i.m > tile_cols(t)) return TeError::kM;
  } else {
    if (i.n < 1 || i.n > config_.bank_elements) return TeError::kN;
    if (i.psum_bank < 0 || i.psum_bank >= config_.psum_banks) return TeError::kPsumBank;
    const Stationary* st = top_left(t);
    if (!st) return TeError::kNoStationary;
    if (i.k != st->k) return TeError::kKMismatch;
    if (!(modes_of(i) == st->modes) || find(t) != st) return TeError::kModeMismatch;
    const int elements = i.transpose && storage_bits(st->type) < 32 ? 2 * config_.bank_elements
                                                                   : config_.bank_elements;
    if (i.psum_offset < 0 || i.psum_offset + i.n > elements) return TeError::kPsumRange;
  }
  const uint64_t bytes = storage_bits(i.dtype) / 8;
  const uint64_t count = static_cast<uint64_t>(is_ls ? i.m : i.n) * te_replicas(i);
  if (i.sbuf_addr % bytes != 0 || i.sbuf_stride % bytes != 0) return TeError::kSbufAlign;
  if (is_ls && sparse && i.tag_addr % 2 != 0) return TeError::kSbufAlign;
  if (i.sbuf_addr + (count - 1) * i.sbuf_stride + bytes > config_.sbuf_bytes)
    return TeError::kSbufRange;
  if (is_ls && sparse && static_cast<uint64_t>(i.tag_addr) + 2 * ((i.m + 3) / 4) > config_.sbuf_bytes)
    return TeError::kSbufRange;
  return TeError::kNone;
}

// The SBUF layouts of the modes (rtl/tensor/README.md): replica j of an operand with free
// size F lies at sbuf_addr + j * F * sbuf_stride, so an access reads te_replicas() elements
// per partition.
TeError TensorEngine::execute(const TeInstruction& i, const Sbuf& sbuf) {
  const TeError err = check(i);
  if (err != TeError::kNone) return err;
  const int reps = te_replicas(i);
  const int free = i.opcode == Opcode::kLoadStationary ? i.m : i.n;
  // Operands lie on the partitions of the tile's PE rows.
  const int p0 = tile_row0(tiling_of(i));
  const Tile packed =
      sbuf.read_tile(i.dtype, i.k, free * reps, i.sbuf_addr, i.sbuf_stride, p0);
  // Logical row of partition p, replica j.
  const int group = sparsity_group(i.sparsity);
  auto logical_row = [&](int p, int j) {
    if (i.double_row) return j * i.k + p;
    return p / 4 * group + 4 * j + p % 4;  // sparse moving; dense: j = 0, row p
  };
  if (i.opcode == Opcode::kLoadStationary) {
    if (!i.double_row) {
      Tile tags;
      if (i.sparsity != TeSparsity::kDense) {
        tags = Tile(DType::kInt16, i.k, i.m);
        for (int p = 0; p < i.k; ++p)
          for (int m = 0; m < i.m; ++m)
            tags.at(p, m) =
                (sbuf.read(p0 + p, i.tag_addr + 2 * (m / 4), 2) >> (4 * (m % 4))) & 0xF;
      }
      load_stationary(packed, modes_of(i), i.sparsity != TeSparsity::kDense ? &tags : nullptr,
                      tiling_of(i));
      return TeError::kNone;
    }
    Tile st(i.dtype, 2 * i.k, i.m);
    for (int p = 0; p < i.k; ++p)
      for (int j = 0; j < 2; ++j)
        for (int m = 0; m < i.m; ++m) st.at(logical_row(p, j), m) = packed.at(p, j * i.m + m);
    load_stationary(st, modes_of(i), nullptr, tiling_of(i));
    return TeError::kNone;
  }
  if (reps == 1) {
    multiply_moving(packed, {i.psum_bank, i.psum_offset, i.accumulate, tiling_of(i)});
    return TeError::kNone;
  }
  Tile mv(i.dtype, i.k * reps, i.n);
  for (int p = 0; p < i.k; ++p)
    for (int j = 0; j < reps; ++j)
      for (int n = 0; n < i.n; ++n) mv.at(logical_row(p, j), n) = packed.at(p, j * i.n + n);
  multiply_moving(mv, {i.psum_bank, i.psum_offset, i.accumulate, tiling_of(i)});
  return TeError::kNone;
}

TeError TensorEngine::track(const TeInstruction& i) {
  const TeError err = check(i);
  if (err != TeError::kNone) return err;
  const TeTiling& t = tiling_of(i);
  if (i.opcode == Opcode::kLoadStationary) {
    Stationary& st = claim(t);
    st.type = i.dtype;
    st.modes = modes_of(i);
    st.k = i.k;
    st.m = i.m;
    return TeError::kNone;
  }
  const Stationary& st = *find(t);  // check() found it
  if (!st.modes.transpose) macs_ += static_cast<uint64_t>(st.k_logical()) * st.m * i.n;
  group_length_[i.psum_bank] = i.accumulate ? group_length_[i.psum_bank] + 1 : 1;
  return TeError::kNone;
}

void write_te_operand(Sbuf& sbuf, const Tile& logical, const TeModes& modes, bool stationary,
                      uint32_t addr, uint32_t stride, int first_partition) {
  const int bytes = storage_bits(logical.dtype) / 8;
  const bool sparse_moving = !stationary && modes.sparsity != TeSparsity::kDense;
  const int reps = modes.double_row ? 2 : sparse_moving ? sparsity_group(modes.sparsity) / 4 : 1;
  const int group = sparsity_group(modes.sparsity);
  const int partitions = modes.double_row ? logical.rows / 2
                         : sparse_moving  ? logical.rows / group * 4
                                          : logical.rows;
  if (partitions * (modes.double_row ? 2 : sparse_moving ? group / 4 : 1) != logical.rows)
    throw Error(fmt::format("write_te_operand: {} rows do not fill whole partitions in this mode",
                            logical.rows));
  for (int p = 0; p < partitions; ++p) {
    for (int j = 0; j < reps; ++j) {
      const int row = modes.double_row ? j * partitions + p
                      : sparse_moving  ? p / 4 * group + 4 * j + p % 4
                                       : p;
      for (int f = 0; f < logical.cols; ++f)
        sbuf.write(first_partition + p, addr + static_cast<uint32_t>(j * logical.cols + f) * stride, bytes,
                   logical.at(row, f));
    }
  }
}

void write_te_tags(Sbuf& sbuf, const Tile& tags, uint32_t tag_addr, int first_partition) {
  for (int p = 0; p < tags.rows; ++p) {
    for (int m0 = 0; m0 < tags.cols; m0 += 4) {
      uint32_t word = 0;
      for (int i = 0; i < 4 && m0 + i < tags.cols; ++i) word |= (tags.at(p, m0 + i) & 0xF) << (4 * i);
      sbuf.write(first_partition + p, tag_addr + static_cast<uint32_t>(m0 / 2), 2, word);
    }
  }
}

}  // namespace ncore::model

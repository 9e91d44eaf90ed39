#include "model/tensor_engine.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/error.h"
#include "model/sbuf.h"

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
template <class Emit>
void kernel(const float* st, const float* mv, int k_size, int mp, int np, Emit&& emit) {
  // n outer: one moving panel stays in L1 while every stationary panel streams past it.
  for (int n0 = 0; n0 < np; n0 += kBlockN) {
    const float* mv_panel = mv + static_cast<size_t>(n0 / kBlockN) * k_size * kBlockN;
    for (int m0 = 0; m0 < mp; m0 += kBlockM) {
      const float* st_panel = st + static_cast<size_t>(m0 / kBlockM) * k_size * kBlockM;
      Vec acc[kBlockM][kVectorsN];
      for (auto& row : acc)
        for (auto& v : row) v = Vec{} + 0.0f;  // +0
      for (int k = 0; k < k_size; ++k) {
        Vec b[kVectorsN];
        for (int j = 0; j < kVectorsN; ++j) b[j] = load(mv_panel + k * kBlockN + j * kLanes);
        const float* a_row = st_panel + k * kBlockM;
        for (int i = 0; i < kBlockM; ++i) {
          const float a = a_row[i];
          for (int j = 0; j < kVectorsN; ++j) {
            const Vec product = a * b[j];
            acc[i][j] = acc[i][j] + product;
          }
        }
      }
      for (int i = 0; i < kBlockM; ++i)
        for (int j = 0; j < kVectorsN; ++j) emit(m0 + i, n0 + j * kLanes, acc[i][j]);
    }
  }
}

void require(bool ok, const std::string& message) {
  if (!ok) throw Error(message);
}

void check_range(const char* op, const char* field, int value, int lo, int hi) {
  require(value >= lo && value <= hi,
          fmt::format("{}: field '{}' = {} is outside the legal range {}..{}", op, field, value,
                      lo, hi));
}

void check_float_type(const char* op, const char* field, DType t) {
  require(is_float(t), fmt::format("{}: field '{}' = {} is not a tensor-engine input type "
                                   "(expected fp32, tf32, bf16, fp16, e4m3 or e5m2)",
                                   op, field, dtype_name(t)));
}

}  // namespace

Tile random_tile(DType t, int rows, int cols, SplitMix64& rng) {
  Tile tile(t, rows, cols);
  for (auto& b : tile.bits) b = random_value(t, rng);
  return tile;
}

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

void TensorEngine::load_stationary(const Tile& stationary) {
  check_float_type("LoadStationary", "dtype", stationary.dtype);
  check_range("LoadStationary", "K", stationary.rows, 1, config_.rows);
  check_range("LoadStationary", "M", stationary.cols, 1, config_.cols);
  stationary_type_ = stationary.dtype;
  k_ = stationary.rows;
  m_ = stationary.cols;
  decode_panels(stationary, kBlockM, stationary_);
  stationary_loaded_ = true;
}

void TensorEngine::multiply_moving(const Tile& moving, const MultiplyMoving& mm) {
  require(stationary_loaded_, "MultiplyMoving: no stationary loaded (issue LoadStationary first)");
  check_float_type("MultiplyMoving", "dtype", moving.dtype);
  require(moving.rows == k_,
          fmt::format("MultiplyMoving: field 'K' = {} does not match the stationary's K = {}",
                      moving.rows, k_));
  check_range("MultiplyMoving", "N", moving.cols, 1, config_.bank_elements);
  check_range("MultiplyMoving", "psum_bank", mm.psum_bank, 0, config_.psum_banks - 1);
  check_range("MultiplyMoving", "psum_offset", mm.psum_offset, 0,
              config_.bank_elements - moving.cols);

  const int mp = round_up(m_, kBlockM);
  const int np = round_up(moving.cols, kBlockN);
  decode_panels(moving, kBlockN, moving_scratch_);
  const int n_size = moving.cols;
  // Each finished lane group goes straight into PSUM: overwrite, or one rounded add.
  kernel(stationary_.data(), moving_scratch_.data(), k_, mp, np, [&](int row, int col, Vec lanes) {
    if (row >= m_) return;
    float* dst = &psum_[psum_index(row, mm.psum_bank, mm.psum_offset)];
    if (col + kLanes <= n_size) {
      store(dst + col, canonicalize(mm.accumulate ? load(dst + col) + lanes : lanes));
      return;
    }
    for (int l = 0; col + l < n_size; ++l) {
      const uint32_t tile_bits = float_to_bits(lanes[l]);
      const uint32_t psum_bits = float_to_bits(dst[col + l]);
      dst[col + l] = bits_to_float(mm.accumulate ? fp32_add(psum_bits, tile_bits)
                                                 : canonicalize_fp32(tile_bits));
    }
  });
  group_length_[mm.psum_bank] = mm.accumulate ? group_length_[mm.psum_bank] + 1 : 1;
  macs_ += static_cast<uint64_t>(k_) * m_ * moving.cols;
}

TeError TensorEngine::check(const TeInstruction& i) const {
  const bool is_ls = i.opcode == TeOpcode::kLoadStationary;
  if (!is_ls && i.opcode != TeOpcode::kMultiplyMoving) return TeError::kOpcode;
  if (!is_float(i.dtype)) return TeError::kDtype;
  if (i.k < 1 || i.k > config_.rows) return TeError::kK;
  if (is_ls) {
    if (i.m < 1 || i.m > config_.cols) return TeError::kM;
  } else {
    if (i.n < 1 || i.n > config_.bank_elements) return TeError::kN;
    if (i.psum_bank < 0 || i.psum_bank >= config_.psum_banks) return TeError::kPsumBank;
    if (i.psum_offset < 0 || i.psum_offset + i.n > config_.bank_elements)
      return TeError::kPsumRange;
    if (!stationary_loaded_) return TeError::kNoStationary;
    if (i.k != k_) return TeError::kKMismatch;
  }
  const uint64_t bytes = storage_bits(i.dtype) / 8;
  const uint64_t count = is_ls ? i.m : i.n;
  if (i.sbuf_addr % bytes != 0 || i.sbuf_stride % bytes != 0) return TeError::kSbufAlign;
  if (i.sbuf_addr + (count - 1) * i.sbuf_stride + bytes > config_.sbuf_bytes)
    return TeError::kSbufRange;
  return TeError::kNone;
}

TeError TensorEngine::execute(const TeInstruction& i, const Sbuf& sbuf) {
  const TeError err = check(i);
  if (err != TeError::kNone) return err;
  if (i.opcode == TeOpcode::kLoadStationary) {
    load_stationary(sbuf.read_tile(i.dtype, i.k, i.m, i.sbuf_addr, i.sbuf_stride));
  } else {
    multiply_moving(sbuf.read_tile(i.dtype, i.k, i.n, i.sbuf_addr, i.sbuf_stride),
                    {i.psum_bank, i.psum_offset, i.accumulate});
  }
  return TeError::kNone;
}

}  // namespace ncore::model

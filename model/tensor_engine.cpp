#include "model/tensor_engine.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/error.h"

namespace ncore::model {
namespace {

// The kernel works on blocks of kBlockM outputs rows x kBlockN output columns held in
// registers. GCC's vector extension compiles to whatever SIMD width the target has. The
// model library is built with -ffp-contract=off, so a*b+c stays a rounded multiply followed
// by a rounded add, as the PE computes it: never a fused multiply-add.
constexpr int kLanes = 8;
constexpr int kBlockM = 4;
constexpr int kVectorsN = 2;
constexpr int kBlockN = kLanes * kVectorsN;
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float)), aligned(4)));

int round_up(int x, int to) { return (x + to - 1) / to * to; }

void decode_padded(const Tile& t, int padded_cols, std::vector<float>& out) {
  out.assign(static_cast<size_t>(t.rows) * padded_cols, 0.0f);
  for (int r = 0; r < t.rows; ++r)
    for (int c = 0; c < t.cols; ++c)
      out[static_cast<size_t>(r) * padded_cols + c] = to_float(t.dtype, t.at(r, c));
}

// out[Mp][Np] = st[K][Mp]^T @ mv[K][Np], sums from +0 in k order.
void kernel(const float* st, const float* mv, int k_size, int mp, int np, float* out) {
  for (int m0 = 0; m0 < mp; m0 += kBlockM) {
    for (int n0 = 0; n0 < np; n0 += kBlockN) {
      Vec acc[kBlockM][kVectorsN];
      for (auto& row : acc)
        for (auto& v : row) v = Vec{} + 0.0f;  // +0
      for (int k = 0; k < k_size; ++k) {
        const float* mv_row = mv + static_cast<size_t>(k) * np + n0;
        Vec b[kVectorsN];
        for (int j = 0; j < kVectorsN; ++j) __builtin_memcpy(&b[j], mv_row + j * kLanes, sizeof(Vec));
        const float* st_row = st + static_cast<size_t>(k) * mp + m0;
        for (int i = 0; i < kBlockM; ++i) {
          const float a = st_row[i];
          for (int j = 0; j < kVectorsN; ++j) {
            const Vec product = a * b[j];
            acc[i][j] = acc[i][j] + product;
          }
        }
      }
      for (int i = 0; i < kBlockM; ++i)
        for (int j = 0; j < kVectorsN; ++j)
          __builtin_memcpy(out + static_cast<size_t>(m0 + i) * np + n0 + j * kLanes, &acc[i][j],
                           sizeof(Vec));
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

void matmul_tile(const Tile& stationary, const Tile& moving, std::vector<uint32_t>& out) {
  const int k_size = stationary.rows;
  const int m = stationary.cols;
  const int n = moving.cols;
  const int mp = round_up(m, kBlockM);
  const int np = round_up(n, kBlockN);
  std::vector<float> st, mv, acc(static_cast<size_t>(mp) * np);
  decode_padded(stationary, mp, st);
  decode_padded(moving, np, mv);
  kernel(st.data(), mv.data(), k_size, mp, np, acc.data());
  out.resize(static_cast<size_t>(m) * n);
  for (int i = 0; i < m; ++i)
    for (int j = 0; j < n; ++j)
      out[static_cast<size_t>(i) * n + j] =
          canonicalize_fp32(float_to_bits(acc[static_cast<size_t>(i) * np + j]));
}

TensorEngine::TensorEngine(const TensorEngineConfig& config) : config_(config) {
  check_range("TensorEngineConfig", "rows", config.rows, 1, 4096);
  check_range("TensorEngineConfig", "cols", config.cols, 1, 4096);
  check_range("TensorEngineConfig", "psum_banks", config.psum_banks, 1, 64);
  check_range("TensorEngineConfig", "bank_elements", config.bank_elements, 1, 1 << 16);
  reset_psum();
}

void TensorEngine::reset_psum() {
  psum_.assign(static_cast<size_t>(config_.cols) * config_.psum_banks * config_.bank_elements, 0);
  group_length_.assign(config_.psum_banks, 0);
}

size_t TensorEngine::psum_index(int partition, int bank, int element) const {
  return (static_cast<size_t>(partition) * config_.psum_banks + bank) * config_.bank_elements +
         element;
}

uint32_t TensorEngine::psum(int partition, int bank, int element) const {
  check_range("psum", "partition", partition, 0, config_.cols - 1);
  check_range("psum", "bank", bank, 0, config_.psum_banks - 1);
  check_range("psum", "element", element, 0, config_.bank_elements - 1);
  return psum_[psum_index(partition, bank, element)];
}

void TensorEngine::load_stationary(const Tile& stationary) {
  check_float_type("LoadStationary", "dtype", stationary.dtype);
  check_range("LoadStationary", "K", stationary.rows, 1, config_.rows);
  check_range("LoadStationary", "M", stationary.cols, 1, config_.cols);
  stationary_type_ = stationary.dtype;
  k_ = stationary.rows;
  m_ = stationary.cols;
  const int mp = round_up(m_, kBlockM);
  decode_padded(stationary, mp, stationary_);
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
  std::vector<float> mv, acc(static_cast<size_t>(mp) * np);
  decode_padded(moving, np, mv);
  kernel(stationary_.data(), mv.data(), k_, mp, np, acc.data());

  for (int m = 0; m < m_; ++m) {
    uint32_t* dst = &psum_[psum_index(m, mm.psum_bank, mm.psum_offset)];
    const float* tile_row = &acc[static_cast<size_t>(m) * np];
    for (int n = 0; n < moving.cols; ++n) {
      const uint32_t tile_bits = float_to_bits(tile_row[n]);
      dst[n] = mm.accumulate ? fp32_add(dst[n], tile_bits) : canonicalize_fp32(tile_bits);
    }
  }
  group_length_[mm.psum_bank] = mm.accumulate ? group_length_[mm.psum_bank] + 1 : 1;
  macs_ += static_cast<uint64_t>(k_) * m_ * moving.cols;
}

}  // namespace ncore::model

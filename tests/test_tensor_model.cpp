// The golden tensor-engine model: its fast kernel against an oracle that applies the
// documented accumulation order with exact arithmetic, PSUM semantics, and its errors.

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/common/error.h"
#include "model/common/sbuf.h"
#include "model/tensor/tensor_engine.h"
#include "tests/oracle.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::DType;
using model::Tile;
using oracle::Decoded;
using oracle::Kind;

const std::vector<DType> kInputTypes = {DType::kFp32, DType::kTf32, DType::kBf16,
                                        DType::kFp16, DType::kE4m3, DType::kE5m2};

const oracle::Format& format_of(DType t) {
  switch (t) {
    case DType::kFp32: return oracle::kFp32;
    case DType::kTf32: return oracle::kTf32;
    case DType::kBf16: return oracle::kBf16;
    case DType::kFp16: return oracle::kFp16;
    case DType::kE4m3: return oracle::kE4m3;
    default: return oracle::kE5m2;
  }
}

// IEEE binary32 multiply and add with RNE, written on the oracle's exact values.
Decoded round_fp32(const oracle::Dyadic& exact) {
  return oracle::decode(oracle::kFp32, oracle::round(oracle::kFp32, exact, false, false, 0));
}
Decoded oracle_mul(const Decoded& a, const Decoded& b) {
  const bool negative = a.value.negative != b.value.negative;
  if (a.kind == Kind::kNan || b.kind == Kind::kNan) return {Kind::kNan, {}};
  const bool a_zero = a.kind == Kind::kFinite && oracle::is_zero(a.value);
  const bool b_zero = b.kind == Kind::kFinite && oracle::is_zero(b.value);
  if (a.kind == Kind::kInf || b.kind == Kind::kInf)
    return (a_zero || b_zero) ? Decoded{Kind::kNan, {}} : Decoded{Kind::kInf, {negative, 0, 0}};
  Decoded r = round_fp32(oracle::multiply(a.value, b.value));
  return r;
}
Decoded oracle_add(const Decoded& a, const Decoded& b) {
  if (a.kind == Kind::kNan || b.kind == Kind::kNan) return {Kind::kNan, {}};
  if (a.kind == Kind::kInf && b.kind == Kind::kInf)
    return a.value.negative == b.value.negative ? a : Decoded{Kind::kNan, {}};
  if (a.kind == Kind::kInf) return a;
  if (b.kind == Kind::kInf) return b;
  const oracle::Dyadic exact = oracle::add(a.value, b.value);
  if (oracle::is_zero(exact)) {
    // RNE: an exact zero sum is -0 only when both operands are -0.
    const bool negative = a.value.negative && b.value.negative;
    return {Kind::kFinite, {negative, 0, 0}};
  }
  return round_fp32(exact);
}
uint32_t to_bits(const Decoded& d) {
  if (d.kind == Kind::kNan) return model::kFp32CanonicalNan;
  if (d.kind == Kind::kInf) return d.value.negative ? 0xFF800000u : 0x7F800000u;
  return oracle::round(oracle::kFp32, d.value, false, false, 0);
}

// PSUM[m][n] by the documented order, in exact arithmetic rounded step by step.
std::vector<uint32_t> oracle_matmul(const Tile& st, const Tile& mv) {
  std::vector<uint32_t> out(static_cast<size_t>(st.cols) * mv.cols);
  for (int m = 0; m < st.cols; ++m) {
    for (int n = 0; n < mv.cols; ++n) {
      Decoded acc{Kind::kFinite, {false, 0, 0}};  // +0
      for (int k = 0; k < st.rows; ++k) {
        const Decoded a = oracle::decode(format_of(st.dtype), st.at(k, m));
        const Decoded b = oracle::decode(format_of(mv.dtype), mv.at(k, n));
        acc = oracle_add(acc, oracle_mul(a, b));
      }
      out[static_cast<size_t>(m) * mv.cols + n] = to_bits(acc);
    }
  }
  return out;
}

void expect_psum_equals(const model::TensorEngine& te, int bank, int offset, int m_size,
                        int n_size, const std::vector<uint32_t>& want, const std::string& what) {
  for (int m = 0; m < m_size; ++m)
    for (int n = 0; n < n_size; ++n)
      ASSERT_EQ(te.psum(m, bank, offset + n), want[static_cast<size_t>(m) * n_size + n])
          << what << " at [m=" << m << ", n=" << n << "] (hex)" << std::hex;
}

TEST(TensorModel, EveryInputTypePairMatchesTheExactOracle) {
  model::SplitMix64 rng(test::test_seed(3));
  for (DType ts : kInputTypes) {
    for (DType tm : kInputTypes) {
      for (int trial = 0; trial < 3; ++trial) {
        const int k = 1 + static_cast<int>(rng.below(128));
        const int m = 1 + static_cast<int>(rng.below(9));
        const int n = 1 + static_cast<int>(rng.below(21));
        const Tile st = model::random_tile(ts, k, m, rng);
        const Tile mv = model::random_tile(tm, k, n, rng);
        model::TensorEngine te;
        te.load_stationary(st);
        const int bank = static_cast<int>(rng.below(8));
        te.multiply_moving(mv, {bank, 0, false});
        expect_psum_equals(te, bank, 0, m, n, oracle_matmul(st, mv),
                           std::string(model::dtype_name(ts)) + " x " +
                               std::string(model::dtype_name(tm)));
      }
    }
  }
}

// Ordinary values only (no NaN/Inf), so that wrong order or a fused multiply-add would show in
// the low bits instead of being hidden behind a NaN.
TEST(TensorModel, FullTileMatchesExactOracleOnFiniteValues) {
  model::SplitMix64 rng(test::test_seed(17));
  const int k = 128, m = 16, n = 64;
  Tile st(DType::kBf16, k, m), mv(DType::kBf16, k, n);
  for (auto& b : st.bits) b = 0x3E00u | (rng.next32() & 0x81FFu);  // ~[0.125, 1) both signs
  for (auto& b : mv.bits) b = 0x3E00u | (rng.next32() & 0x81FFu);
  model::TensorEngine te;
  te.load_stationary(st);
  te.multiply_moving(mv, {2, 100, false});
  expect_psum_equals(te, 2, 100, m, n, oracle_matmul(st, mv), "bf16 finite");
}

// The vectorised kernel at full size, against a plain scalar loop of the documented order
// (every value class, partial lane groups, an unaligned PSUM offset, then accumulation).
TEST(TensorModel, FullSizeKernelMatchesScalarLoop) {
  model::SplitMix64 rng(test::test_seed(41));
  const std::vector<std::pair<DType, DType>> pairs = {
      {DType::kBf16, DType::kBf16}, {DType::kE4m3, DType::kE5m2}, {DType::kFp32, DType::kFp16}};
  for (const auto& [ts, tm] : pairs) {
    const int k = 128, m = 128, n = 500, offset = 7;
    const Tile st = model::random_tile(ts, k, m, rng);
    const Tile mv1 = model::random_tile(tm, k, n, rng), mv2 = model::random_tile(tm, k, n, rng);
    model::TensorEngine te;
    te.load_stationary(st);
    te.multiply_moving(mv1, {6, offset, false});
    te.multiply_moving(mv2, {6, offset, true});
    for (int i = 0; i < m; ++i) {
      for (int j = 0; j < n; ++j) {
        uint32_t t1 = 0, t2 = 0;
        for (int kk = 0; kk < k; ++kk) {
          const uint32_t a = model::to_fp32_bits(ts, st.at(kk, i));
          t1 = model::fp32_add(t1, model::fp32_mul(a, model::to_fp32_bits(tm, mv1.at(kk, j))));
          t2 = model::fp32_add(t2, model::fp32_mul(a, model::to_fp32_bits(tm, mv2.at(kk, j))));
        }
        ASSERT_EQ(te.psum(i, 6, offset + j), model::fp32_add(t1, t2))
            << model::dtype_name(ts) << " x " << model::dtype_name(tm) << " [" << i << ", " << j
            << "]";
      }
    }
  }
}

TEST(TensorModel, AccumulateAddsEachTileToPsumOnce) {
  model::SplitMix64 rng(test::test_seed(23));
  const Tile st = model::random_tile(DType::kFp16, 32, 8, rng);
  const Tile mv1 = model::random_tile(DType::kFp16, 32, 40, rng);
  const Tile mv2 = model::random_tile(DType::kFp16, 32, 40, rng);
  model::TensorEngine te;
  te.load_stationary(st);
  te.multiply_moving(mv1, {5, 7, false});
  te.multiply_moving(mv2, {5, 7, true});
  EXPECT_EQ(te.group_length(5), 2);
  EXPECT_EQ(te.group_length(4), 0);
  const auto t1 = oracle_matmul(st, mv1), t2 = oracle_matmul(st, mv2);
  std::vector<uint32_t> want(t1.size());
  for (size_t i = 0; i < t1.size(); ++i) want[i] = model::fp32_add(t1[i], t2[i]);
  expect_psum_equals(te, 5, 7, 8, 40, want, "accumulated");
  // Elements outside the written window keep their reset value.
  EXPECT_EQ(te.psum(0, 5, 6), 0u);
  EXPECT_EQ(te.psum(0, 5, 47), 0u);
  EXPECT_EQ(te.macs(), 2u * 32 * 8 * 40);
}

TEST(TensorModel, SignedZerosNanAndInfinity) {
  model::TensorEngine te;
  Tile st(DType::kBf16, 2, 3), mv(DType::kBf16, 2, 1);
  // column 0: (-0)*1 + (-0)*1 = +0 (sum starts at +0); column 1: NaN * 1; column 2: Inf - Inf
  st.at(0, 0) = 0x8000; st.at(1, 0) = 0x8000;
  st.at(0, 1) = 0x7FC1; st.at(1, 1) = 0x3F80;  // a NaN with a payload
  st.at(0, 2) = 0x7F80; st.at(1, 2) = 0xFF80;
  mv.at(0, 0) = 0x3F80; mv.at(1, 0) = 0x3F80;
  te.load_stationary(st);
  te.multiply_moving(mv, {});
  EXPECT_EQ(te.psum(0, 0, 0), 0x00000000u);
  EXPECT_EQ(te.psum(1, 0, 0), model::kFp32CanonicalNan);
  EXPECT_EQ(te.psum(2, 0, 0), model::kFp32CanonicalNan);
}

TEST(TensorModel, SmallArrayConfiguration) {
  model::TensorEngine te({4, 4, 2, 16});
  model::SplitMix64 rng(test::test_seed(31));
  const Tile st = model::random_tile(DType::kE4m3, 4, 4, rng);
  const Tile mv = model::random_tile(DType::kE5m2, 4, 16, rng);
  te.load_stationary(st);
  te.multiply_moving(mv, {1, 0, false});
  expect_psum_equals(te, 1, 0, 4, 16, oracle_matmul(st, mv), "4x4 array");
  EXPECT_THROW(te.load_stationary(model::random_tile(DType::kE4m3, 5, 4, rng)), Error);
}

// Each illegal call is rejected with a message naming the field, the value and the limit.
TEST(TensorModel, IllegalFieldsAreRejectedWithTheFieldValueAndLimit) {
  model::SplitMix64 rng(1);
  const auto expect_error = [](const std::function<void()>& call,
                               const std::vector<std::string>& words) {
    try {
      call();
      ADD_FAILURE() << "no error; expected one mentioning " << words.front();
    } catch (const Error& e) {
      for (const auto& w : words)
        EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what() << " lacks " << w;
    }
  };
  model::TensorEngine te;
  expect_error([&] { te.multiply_moving(model::random_tile(DType::kBf16, 4, 4, rng), {}); },
               {"no stationary"});
  expect_error([&] { te.load_stationary(model::random_tile(DType::kBf16, 129, 4, rng)); },
               {"'K'", "129", "128"});
  expect_error([&] { te.load_stationary(model::random_tile(DType::kBf16, 4, 130, rng)); },
               {"'M'", "130", "128"});
  expect_error([&] { te.load_stationary(model::random_tile(DType::kInt8, 4, 4, rng)); },
               {"'dtype'", "int8"});
  te.load_stationary(model::random_tile(DType::kBf16, 4, 4, rng));
  const Tile mv = model::random_tile(DType::kBf16, 4, 8, rng);
  expect_error([&] { te.multiply_moving(model::random_tile(DType::kBf16, 3, 8, rng), {}); },
               {"'K'", "3", "4"});
  expect_error([&] { te.multiply_moving(model::random_tile(DType::kBf16, 4, 513, rng), {}); },
               {"'N'", "513", "512"});
  expect_error([&] { te.multiply_moving(mv, {8, 0, false}); }, {"'psum_bank'", "8", "7"});
  expect_error([&] { te.multiply_moving(mv, {0, 505, false}); }, {"'psum_offset'", "505", "504"});
}

// ---------------------------------------------------------------------------------------
// Modes: double-row FP8, M:N sparsity, transpose (documented in model/tensor/tensor_engine.h)
// ---------------------------------------------------------------------------------------

Decoded oracle_decode(DType t, uint32_t bits) { return oracle::decode(format_of(t), bits); }

// st [2P, M], mv [2P, N]: each PE row adds its two products first, then the pair to the sum.
std::vector<uint32_t> oracle_double_row(const Tile& st, const Tile& mv) {
  const int p_rows = st.rows / 2;
  std::vector<uint32_t> out(static_cast<size_t>(st.cols) * mv.cols);
  for (int m = 0; m < st.cols; ++m) {
    for (int n = 0; n < mv.cols; ++n) {
      Decoded acc{Kind::kFinite, {false, 0, 0}};
      for (int p = 0; p < p_rows; ++p) {
        const Decoded lo = oracle_mul(oracle_decode(st.dtype, st.at(p, m)),
                                      oracle_decode(mv.dtype, mv.at(p, n)));
        const Decoded hi = oracle_mul(oracle_decode(st.dtype, st.at(p_rows + p, m)),
                                      oracle_decode(mv.dtype, mv.at(p_rows + p, n)));
        acc = oracle_add(acc, oracle_add(lo, hi));
      }
      out[static_cast<size_t>(m) * mv.cols + n] = to_bits(acc);
    }
  }
  return out;
}

// Compressed st [P, M] with tags, dense mv [P/4 * G, N].
std::vector<uint32_t> oracle_sparse(const Tile& st, const Tile& tags, int group, const Tile& mv) {
  std::vector<uint32_t> out(static_cast<size_t>(st.cols) * mv.cols);
  for (int m = 0; m < st.cols; ++m) {
    for (int n = 0; n < mv.cols; ++n) {
      Decoded acc{Kind::kFinite, {false, 0, 0}};
      for (int r = 0; r < st.rows; ++r) {
        const int tag = static_cast<int>(tags.at(r, m));
        if (tag >= group) continue;
        acc = oracle_add(acc, oracle_mul(oracle_decode(st.dtype, st.at(r, m)),
                                         oracle_decode(mv.dtype, mv.at(r / 4 * group + tag, n))));
      }
      out[static_cast<size_t>(m) * mv.cols + n] = to_bits(acc);
    }
  }
  return out;
}

Tile random_tags(int rows, int cols, model::SplitMix64& rng) {
  Tile tags(DType::kInt16, rows, cols);
  for (auto& t : tags.bits) t = rng.below(16);  // in range, duplicates and out of range
  return tags;
}

const std::vector<DType> kFp8 = {DType::kE4m3, DType::kE5m2};

TEST(TensorModelModes, DoubleRowMatchesTheExactOracle) {
  model::SplitMix64 rng(test::test_seed(51));
  for (DType ts : kFp8) {
    for (DType tm : kFp8) {
      for (int trial = 0; trial < 3; ++trial) {
        const int p = 1 + static_cast<int>(rng.below(128));
        const int m = 1 + static_cast<int>(rng.below(9)), n = 1 + static_cast<int>(rng.below(21));
        const Tile st = model::random_tile(ts, 2 * p, m, rng);
        const Tile mv = model::random_tile(tm, 2 * p, n, rng);
        model::TensorEngine te;
        te.load_stationary(st, {true, false, model::TeSparsity::kDense});
        te.multiply_moving(mv, {3, 7, false});
        expect_psum_equals(te, 3, 7, m, n, oracle_double_row(st, mv), "double-row");
        EXPECT_EQ(te.macs(), static_cast<uint64_t>(2 * p) * m * n);
      }
    }
  }
}

// Finite values of every magnitude: the sums round, so a different add order would show.
TEST(TensorModelModes, DoubleRowOrderShowsOnFiniteValues) {
  model::SplitMix64 rng(test::test_seed(52));
  const int p = 128, m = 8, n = 40;
  Tile st(DType::kE4m3, 2 * p, m), mv(DType::kE5m2, 2 * p, n);
  // Any pattern but NaN (E4M3 S.1111.111) and Inf/NaN (E5M2 exponent 11111).
  for (auto& b : st.bits) {
    b = rng.next32() & 0xFFu;
    if ((b & 0x7Fu) == 0x7Fu) b -= 1;
  }
  for (auto& b : mv.bits) {
    b = rng.next32() & 0xFFu;
    if ((b & 0x7Cu) == 0x7Cu) b -= 4;
  }
  model::TensorEngine te;
  te.load_stationary(st, {true, false, model::TeSparsity::kDense});
  te.multiply_moving(mv, {0, 0, false});
  const auto want = oracle_double_row(st, mv);
  expect_psum_equals(te, 0, 0, m, n, want, "double-row finite");
  // The same products summed one K row at a time differ somewhere: the order is observable.
  Tile st_dense = st, mv_dense = mv;
  model::TensorEngine dense({2 * p, m, 8, 512, 229376});
  dense.load_stationary(st_dense);
  dense.multiply_moving(mv_dense, {0, 0, false});
  int differ = 0;
  for (int i = 0; i < m * n; ++i) differ += dense.psum(i / n, 0, i % n) != want[i];
  EXPECT_GT(differ, 0) << "pair-first order indistinguishable from row order on this data";
}

TEST(TensorModelModes, SparseMatchesTheExactOracle) {
  model::SplitMix64 rng(test::test_seed(53));
  for (DType ts : kInputTypes) {
    for (DType tm : kInputTypes) {
      const auto sparsity = static_cast<model::TeSparsity>(1 + rng.below(3));
      const int group = model::sparsity_group(sparsity);
      const int p = 4 * (1 + static_cast<int>(rng.below(32)));
      const int m = 1 + static_cast<int>(rng.below(9)), n = 1 + static_cast<int>(rng.below(21));
      const Tile st = model::random_tile(ts, p, m, rng);
      const Tile tags = random_tags(p, m, rng);
      const Tile mv = model::random_tile(tm, p / 4 * group, n, rng);
      model::TensorEngine te;
      te.load_stationary(st, {false, false, sparsity}, &tags);
      te.multiply_moving(mv, {1, 0, false});
      te.multiply_moving(mv, {2, 0, false});
      te.multiply_moving(mv, {2, 0, true});
      const auto want = oracle_sparse(st, tags, group, mv);
      expect_psum_equals(te, 1, 0, m, n, want, "sparse 4:" + std::to_string(group));
      EXPECT_EQ(te.macs(), 3ull * (p / 4 * group) * m * n);
    }
  }
}

// An out-of-range tag adds nothing: a column whose every tag is out of range stays +0 even
// where the moving tile holds NaN.
TEST(TensorModelModes, OutOfRangeTagsAddNothingDuplicatesMultiplyTwice) {
  const int p = 8, m = 2, n = 1;
  Tile st(DType::kBf16, p, m), tags(DType::kInt16, p, m), mv(DType::kBf16, 2 * 8, n);
  for (int r = 0; r < p; ++r) {
    st.at(r, 0) = 0x3F80;  // 1.0
    st.at(r, 1) = 0x4000;  // 2.0
    tags.at(r, 0) = 8 + r % 8;     // all out of range for 4:8
    tags.at(r, 1) = 3;             // every kept row picks the group's row 3
  }
  for (int k = 0; k < 16; ++k) mv.at(k, 0) = k % 8 == 3 ? 0x3F80 : 0x7FC0;  // 1.0 or NaN
  model::TensorEngine te;
  te.load_stationary(st, {false, false, model::TeSparsity::k4of8}, &tags);
  te.multiply_moving(mv, {0, 0, false});
  EXPECT_EQ(te.psum(0, 0, 0), 0u);
  EXPECT_EQ(te.psum(1, 0, 0), model::float_to_bits(16.0f));  // 8 rows x 2.0 x 1.0
}

TEST(TensorModelModes, TransposeKeepsEveryBitOfEveryType) {
  model::SplitMix64 rng(test::test_seed(54));
  for (DType ts : kInputTypes) {
    for (DType tm : kInputTypes) {
      const int k = 1 + static_cast<int>(rng.below(128)), m = 1 + static_cast<int>(rng.below(16));
      Tile st = model::random_tile(ts, k, m, rng);
      if (ts == DType::kFp32) st.at(0, 0) = 0x7FA12345u;  // a signalling NaN with a payload
      Tile eye(tm, k, k);
      for (int i = 0; i < k; ++i) eye.at(i, i) = model::from_fp32(0x3F800000u, tm, {});
      model::TensorEngine te;
      te.load_stationary(st, {false, true, model::TeSparsity::kDense});
      const int offset = static_cast<int>(rng.below(3));
      te.multiply_moving(eye, {4, offset, false});
      const bool narrow = model::storage_bits(ts) < 32;
      EXPECT_EQ(te.transpose_is_narrow(), narrow);
      for (int mm = 0; mm < m; ++mm) {
        for (int n = 0; n < k; ++n) {
          const uint32_t got = narrow ? te.psum16(mm, 4, offset + n) : te.psum(mm, 4, offset + n);
          ASSERT_EQ(got, st.at(n, mm)) << model::dtype_name(ts) << " at " << mm << "," << n;
        }
        if (narrow && offset == 1)  // the half below the first element is untouched
          EXPECT_EQ(te.psum16(mm, 4, 0), 0u);
      }
      EXPECT_EQ(te.macs(), 0u);
    }
  }
}

TEST(TensorModelModes, TransposeTakesTheLastNonzeroMovingRow) {
  const int k = 4, m = 2, n = 4;
  Tile st(DType::kFp32, k, m), mv(DType::kFp32, k, n);
  for (int r = 0; r < k; ++r) {
    st.at(r, 0) = 0x100u + r;
    st.at(r, 1) = 0x200u + r;
  }
  const uint32_t one = 0x3F800000u, neg_zero = 0x80000000u, nan = 0x7FC00000u;
  // column 0: rows 0 and 2 nonzero -> row 2; column 1: -0 only -> none; column 2: NaN at 3;
  // column 3: row 0.
  const uint32_t cells[4][4] = {{one, 0, 0, one}, {0, neg_zero, 0, 0}, {one, 0, 0, 0},
                                {0, 0, nan, 0}};
  for (int r = 0; r < k; ++r)
    for (int c = 0; c < n; ++c) mv.at(r, c) = cells[r][c];
  model::TensorEngine te;
  te.load_stationary(st, {false, true, model::TeSparsity::kDense});
  te.multiply_moving(mv, {0, 0, false});
  EXPECT_EQ(te.psum(0, 0, 0), 0x102u);
  EXPECT_EQ(te.psum(0, 0, 1), 0u);
  EXPECT_EQ(te.psum(1, 0, 2), 0x203u);
  EXPECT_EQ(te.psum(1, 0, 3), 0x200u);
}

// The ISA-level path (operands from the SBUF layouts of each mode) equals the tile-level one.
TEST(TensorModelModes, ExecuteReadsTheDocumentedSbufLayouts) {
  model::SplitMix64 rng(test::test_seed(55));
  const model::TensorEngineConfig config{16, 16, 8, 512, 229376};
  for (int mode = 0; mode < 5; ++mode) {
    model::TeModes modes;
    if (mode == 0) modes.double_row = true;
    else if (mode == 1) modes.transpose = true;
    else modes.sparsity = static_cast<model::TeSparsity>(mode - 1);
    const DType t = mode == 0 ? DType::kE5m2 : DType::kFp16;
    const int p = 8, m = 6, n = 10;
    const int group = model::sparsity_group(modes.sparsity);
    const int k_st = modes.double_row ? 2 * p : p;
    const int k_mv = modes.double_row ? 2 * p : p / 4 * group;
    const Tile st = model::random_tile(t, k_st, m, rng);
    const Tile tags = random_tags(p, m, rng);
    const Tile mv = model::random_tile(t, k_mv, n, rng);
    model::Sbuf sbuf(16, 229376);
    model::write_te_operand(sbuf, st, modes, true, 0, 2);
    model::write_te_operand(sbuf, mv, modes, false, 4096, 2);
    model::write_te_tags(sbuf, tags, 8192);
    auto ls = model::load_stationary(t, p, m, 0, 2);
    auto mm = model::multiply_moving(t, p, n, 4096, 2, 5, 0, false);
    for (auto* i : {&ls, &mm}) {
      i->double_row = modes.double_row;
      i->transpose = modes.transpose;
      i->sparsity = modes.sparsity;
    }
    ls.tag_addr = 8192;
    model::TensorEngine isa(config), direct(config);
    ASSERT_EQ(isa.execute(ls, sbuf), model::TeError::kNone) << model::describe(ls);
    ASSERT_EQ(isa.execute(mm, sbuf), model::TeError::kNone) << model::describe(mm);
    direct.load_stationary(st, modes, modes.sparsity != model::TeSparsity::kDense ? &tags : nullptr);
    direct.multiply_moving(mv, {5, 0, false});
    for (int r = 0; r < m; ++r)
      for (int c = 0; c < n; ++c)
        ASSERT_EQ(isa.psum(r, 5, c), direct.psum(r, 5, c)) << model::describe(ls);
  }
}

// Each mode rule raises its code, in the documented check order.
TEST(TensorModelModes, ModeRulesRaiseTheirErrorCodes) {
  using model::TeError;
  using model::TeSparsity;
  model::TensorEngine te({8, 8, 8, 512, 229376});
  auto ls = model::load_stationary(DType::kE4m3, 8, 8, 0, 1);
  auto with = [](model::TeInstruction i, auto change) { change(i); return i; };
  EXPECT_EQ(te.check(with(ls, [](auto& i) { i.double_row = i.transpose = true; })),
            TeError::kModeCombo);
  EXPECT_EQ(te.check(with(ls, [](auto& i) { i.double_row = true; i.sparsity = TeSparsity::k4of8; })),
            TeError::kModeCombo);
  EXPECT_EQ(te.check(with(ls, [](auto& i) { i.transpose = true; i.sparsity = TeSparsity::k4of16; })),
            TeError::kModeCombo);
  EXPECT_EQ(te.check(with(ls, [](auto& i) { i.double_row = true; i.dtype = DType::kBf16; })),
            TeError::kModeType);
  EXPECT_EQ(te.check(with(ls, [](auto& i) { i.sparsity = TeSparsity::k4of12; i.k = 6; })),
            TeError::kK);
  EXPECT_EQ(te.check(with(ls, [](auto& i) { i.sparsity = TeSparsity::k4of12; i.tag_addr = 3; })),
            TeError::kSbufAlign);
  EXPECT_EQ(te.check(with(ls, [](auto& i) { i.sparsity = TeSparsity::k4of12; i.tag_addr = 229374; })),
            TeError::kSbufRange);
  EXPECT_EQ(te.check(with(ls, [](auto& i) { i.double_row = true; i.sbuf_addr = 229376 - 12; })),
            TeError::kSbufRange) << "double-row reads two replicas of M elements";
  te.load_stationary(Tile(DType::kE4m3, 8, 8), {false, true, TeSparsity::kDense});
  auto mm = model::multiply_moving(DType::kE4m3, 8, 64, 0, 1, 0, 0, false);
  EXPECT_EQ(te.check(mm), TeError::kModeMismatch);
  mm.transpose = true;
  EXPECT_EQ(te.check(mm), TeError::kNone);
  EXPECT_EQ(te.check(with(mm, [](auto& i) { i.accumulate = true; })), TeError::kModeCombo);
  EXPECT_EQ(te.check(with(mm, [](auto& i) { i.psum_offset = 1024 - 64; })), TeError::kNone)
      << "an FP8 transpose writes 16-bit elements: 1024 per bank";
  EXPECT_EQ(te.check(with(mm, [](auto& i) { i.psum_offset = 1024 - 63; })),
            TeError::kPsumRange);
}

// A stationary on a tile: operands from the tile's partitions, outputs on its PSUM partitions,
// the same numbers as untiled; a later LS that overlaps the tile takes it away.
TEST(TensorModelTiling, TilesPlaceOperandsAndOutputsAndOverlapEvicts) {
  model::SplitMix64 rng(test::test_seed(57));
  const model::TensorEngineConfig config{16, 16, 8, 512, 229376};
  const model::TeTiling t{2, 3, 2, 1};  // rows 12..15, columns 4..7
  const Tile st = model::random_tile(DType::kFp16, 4, 3, rng);
  const Tile mv = model::random_tile(DType::kBf16, 4, 20, rng);
  model::Sbuf sbuf(16, 229376);
  sbuf.write_tile(Tile(DType::kFp16, 16, 3), 0, 2);  // zeros everywhere, then the tile's rows
  model::write_te_operand(sbuf, st, {}, true, 0, 2, 12);
  model::write_te_operand(sbuf, mv, {}, false, 1024, 2, 12);
  model::TensorEngine tiled(config), plain(config);
  auto ls = model::load_stationary(DType::kFp16, 4, 3, 0, 2);
  auto mm = model::multiply_moving(DType::kBf16, 4, 20, 1024, 2, 6, 5, false);
  model::set_tiling(ls, t); model::set_tiling(mm, t);
  ASSERT_EQ(tiled.execute(ls, sbuf), model::TeError::kNone);
  ASSERT_EQ(tiled.execute(mm, sbuf), model::TeError::kNone);
  plain.load_stationary(st);
  plain.multiply_moving(mv, {6, 5, false});
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 20; ++n) ASSERT_EQ(tiled.psum(4 + m, 6, 5 + n), plain.psum(m, 6, 5 + n));
  for (int n = 0; n < 20; ++n) EXPECT_EQ(tiled.psum(0, 6, 5 + n), 0u) << "outside the tile";
  EXPECT_EQ(tiled.tile_row0(t), 12);
  EXPECT_EQ(tiled.tile_col0(t), 4);
  EXPECT_TRUE(tiled.has_stationary(t));
  EXPECT_FALSE(tiled.has_stationary({})) << "the whole array holds no single LS";
  tiled.load_stationary(model::random_tile(DType::kBf16, 4, 16, rng), {}, nullptr, {1, 1, 0, 0});
  EXPECT_FALSE(tiled.has_stationary(t)) << "rows 8..15 reloaded over the tile";
  EXPECT_EQ(tiled.check(mm), model::TeError::kModeMismatch);
}

}  // namespace
}  // namespace ncore

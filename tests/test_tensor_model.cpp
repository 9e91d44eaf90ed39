// The golden tensor-engine model: its fast kernel against an oracle that applies the
// documented accumulation order with exact arithmetic, PSUM semantics, and its errors.

#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/error.h"
#include "model/tensor_engine.h"
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

}  // namespace
}  // namespace ncore

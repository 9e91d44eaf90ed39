// The PE's floating-point logic (rtl/common/nc_fp_pkg.sv) against model/numerics, bit for bit:
// every 8- and 16-bit pattern decoded, and millions of FP32 products and sums over every
// value class (zeros of both signs, subnormals, the largest values, Inf, NaN, ties).

#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "Vnc_fp_probe.h"
#include "model/common/numerics.h"
#include "model/vector/vector_engine.h"
#include "tests/fp_operands.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::DType;
using test::operand;

class FpRtl : public ::testing::Test {
 protected:
  std::unique_ptr<Vnc_fp_probe> probe = std::make_unique<Vnc_fp_probe>();

  uint32_t decode(DType t, uint32_t bits) {
    probe->dtype_i = static_cast<uint8_t>(t);
    probe->bits_i = bits;
    probe->eval();
    return probe->decoded_o;
  }
  void arith(uint32_t a, uint32_t b, uint32_t& mul, uint32_t& add) {
    probe->a_i = a;
    probe->b_i = b;
    probe->eval();
    mul = probe->mul_o;
    add = probe->add_o;
  }
  uint32_t cast(uint32_t x, DType t, model::CastMode mode, uint32_t random) {
    probe->a_i = x;
    probe->dtype_i = static_cast<uint8_t>(t);
    probe->stochastic_i = mode.rounding == model::Rounding::kStochastic;
    probe->saturate_i = mode.saturate;
    probe->random_i = random;
    probe->eval();
    return probe->cast_o;
  }
};

constexpr DType kAllTypes[] = {DType::kFp32, DType::kTf32, DType::kBf16, DType::kFp16, DType::kE4m3,
                               DType::kE5m2, DType::kInt8, DType::kInt16, DType::kInt32};
constexpr model::CastMode kAllModes[] = {{model::Rounding::kNearestEven, false},
                                         {model::Rounding::kNearestEven, true},
                                         {model::Rounding::kStochastic, false},
                                         {model::Rounding::kStochastic, true}};

TEST_F(FpRtl, DecodeEveryNarrowPatternAndRandomWidePatterns) {
  for (DType t : {DType::kE4m3, DType::kE5m2, DType::kBf16, DType::kFp16}) {
    const uint32_t count = 1u << model::storage_bits(t);
    for (uint32_t p = 0; p < count; ++p)
      ASSERT_EQ(decode(t, p), model::to_fp32_bits(t, p)) << model::dtype_name(t) << " " << p;
  }
  model::SplitMix64 rng(test::test_seed(8));
  for (int i = 0; i < 200000; ++i) {
    const uint32_t x = rng.next32();
    ASSERT_EQ(decode(DType::kFp32, x), x);
    ASSERT_EQ(decode(DType::kTf32, x), model::to_fp32_bits(DType::kTf32, x));
  }
}

TEST_F(FpRtl, MultiplyAndAddMatchTheModelOnRandomOperands) {
  model::SplitMix64 rng(test::test_seed(19));
  for (int i = 0; i < 3000000; ++i) {
    const uint32_t a = operand(rng);
    // Half of the sums pair a value with a near-negation of itself: cancellation paths.
    const uint32_t b = rng.below(2) ? operand(rng) : (a ^ 0x80000000u) + rng.below(5) - 2;
    uint32_t mul, add;
    arith(a, b, mul, add);
    ASSERT_EQ(mul, model::fp32_mul(a, b)) << std::hex << a << " * " << b;
    ASSERT_EQ(add, model::fp32_add(a, b)) << std::hex << a << " + " << b;
  }
}

// The vector engine's divider (bn_stats, bn_aggr) against the host's IEEE division.
TEST_F(FpRtl, DivideMatchesTheHostOnRandomOperands) {
  model::SplitMix64 rng(test::test_seed(29));
  for (int i = 0; i < 2000000; ++i) {
    const uint32_t a = operand(rng);
    // Some quotients are exact (a multiple of b), and some land on small integers (counts).
    const uint32_t b = rng.below(4) == 0 ? model::float_to_bits(static_cast<float>(1 + rng.below(600)))
                                          : operand(rng);
    const uint32_t a2 = rng.below(8) == 0 ? model::fp32_mul(b, model::float_to_bits(static_cast<float>(rng.below(100)))) : a;
    probe->a_i = a2;
    probe->b_i = b;
    probe->eval();
    ASSERT_EQ(probe->div_o, model::fp32_div(a2, b)) << std::hex << a2 << " / " << b;
  }
}

TEST_F(FpRtl, SignedZerosAndSpecials) {
  const uint32_t values[] = {0x00000000u, 0x80000000u, 0x00000001u, 0x80000001u, 0x007FFFFFu,
                             0x00800000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x7F800000u, 0xFF800000u,
                             0x7FC00000u, 0xFFC00001u, 0x7F800001u, 0x3F800000u, 0xBF800000u,
                             0x3F800001u, 0x33800000u, 0x34000000u};
  for (uint32_t a : values) {
    for (uint32_t b : values) {
      uint32_t mul, add;
      arith(a, b, mul, add);
      EXPECT_EQ(mul, model::fp32_mul(a, b)) << std::hex << a << " * " << b;
      EXPECT_EQ(add, model::fp32_add(a, b)) << std::hex << a << " + " << b;
      EXPECT_EQ(probe->div_o, model::fp32_div(a, b)) << std::hex << a << " / " << b;
    }
  }
}

// FP32 -> every type in every mode (the vector engine's output cast): values around every
// rounding boundary of every target (each narrow pattern decoded, +-1 ulp, and the exact
// midpoint to its neighbour), integers' halves, and random FP32 words, with random SR bits.
TEST_F(FpRtl, CastFromFp32MatchesTheModelInEveryMode) {
  model::SplitMix64 rng(test::test_seed(23));
  std::vector<uint32_t> values;
  for (DType t : {DType::kBf16, DType::kFp16, DType::kE4m3, DType::kE5m2}) {
    for (uint32_t p = 0; p < (1u << model::storage_bits(t)); p += (t == DType::kBf16 || t == DType::kFp16) ? 7 : 1) {
      const uint32_t v = model::to_fp32_bits(t, p);
      const uint32_t w = model::to_fp32_bits(t, p + 1);
      values.insert(values.end(), {v, v + 1, v - 1, v ^ 0x80000000u,
                                   model::float_to_bits((model::bits_to_float(v) +
                                                         model::bits_to_float(w)) / 2)});
    }
  }
  for (int i = -70000; i <= 70000; i += 3) {
    values.push_back(model::float_to_bits(static_cast<float>(i) / 2.0f));
    values.push_back(model::float_to_bits(static_cast<float>(i) * 65537.0f));
  }
  for (uint32_t v : {0x4F000000u, 0xCF000000u, 0x4EFFFFFFu, 0xCF000001u, 0x7F800000u, 0xFF800000u,
                     0x7FC00000u, 0xFF800001u, 0x00000000u, 0x80000000u, 0x00000001u})
    values.push_back(v);
  for (int i = 0; i < 400000; ++i) values.push_back(operand(rng));
  for (uint32_t x : values) {
    for (DType t : kAllTypes) {
      for (const model::CastMode& mode : kAllModes) {
        const uint32_t random = rng.below(4) == 0 ? 0x80000000u : rng.next32();
        ASSERT_EQ(cast(x, t, mode, random), model::from_fp32(x, t, mode, random))
            << std::hex << "0x" << x << " -> " << model::dtype_name(t) << " sr "
            << (mode.rounding == model::Rounding::kStochastic) << " sat " << mode.saturate
            << " random 0x" << random;
      }
    }
  }
}

TEST_F(FpRtl, EveryIntegerTypeToFp32AndMaxMin) {
  model::SplitMix64 rng(test::test_seed(29));
  for (DType t : {DType::kInt8, DType::kInt16}) {
    for (uint32_t p = 0; p < (1u << model::storage_bits(t)); ++p) {
      probe->dtype_i = static_cast<uint8_t>(t);
      probe->bits_i = p;
      probe->eval();
      ASSERT_EQ(probe->any_to_fp32_o, model::to_fp32_bits(t, p)) << model::dtype_name(t) << " " << p;
    }
  }
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t x = i < 64 ? (0x80000000u >> (i / 2)) + (i % 2 ? 1 : -1) : rng.next32();
    probe->dtype_i = static_cast<uint8_t>(DType::kInt32);
    probe->bits_i = x;
    probe->eval();
    ASSERT_EQ(probe->any_to_fp32_o, model::to_fp32_bits(DType::kInt32, x)) << std::hex << x;
  }
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t a = operand(rng);
    const uint32_t b = rng.below(3) == 0 ? a ^ 0x80000000u : operand(rng);
    probe->a_i = a;
    probe->b_i = b;
    probe->eval();
    ASSERT_EQ(probe->max_o, model::ve_alu(model::AluOp::kMax, a, b, false)) << std::hex << a << " " << b;
    ASSERT_EQ(probe->min_o, model::ve_alu(model::AluOp::kMin, a, b, false)) << std::hex << a << " " << b;
  }
}

}  // namespace
}  // namespace ncore

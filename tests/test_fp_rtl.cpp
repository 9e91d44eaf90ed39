// The PE's floating-point logic (rtl/common/nc_fp_pkg.sv) against model/numerics, bit for bit:
// every 8- and 16-bit pattern decoded, and millions of FP32 products and sums over every
// value class (zeros of both signs, subnormals, the largest values, Inf, NaN, ties).

#include <memory>

#include <gtest/gtest.h>

#include "Vnc_fp_probe.h"
#include "model/numerics.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::DType;

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
};

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

// Operands drawn so that products and sums land everywhere: subnormal results, overflow,
// cancellation, exact ties, and special values.
uint32_t operand(model::SplitMix64& rng) {
  switch (rng.below(6)) {
    case 0: return rng.next32();
    case 1: return model::random_value(DType::kFp32, rng);
    case 2: return (rng.next32() & 0x80FFFFFFu) | ((rng.below(48)) << 23);  // tiny
    case 3: return (rng.next32() & 0x80FFFFFFu) | ((200 + rng.below(54)) << 23);  // huge
    case 4: return model::to_fp32_bits(DType::kBf16, model::random_value(DType::kBf16, rng));
    default: return (rng.next32() & 0x807FFFFFu) | ((120 + rng.below(16)) << 23);  // near 1
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
    }
  }
}

}  // namespace
}  // namespace ncore

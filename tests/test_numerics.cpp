// The numerics library against the independent oracle (tests/oracle.h): every 8- and 16-bit
// pattern, every FP8 x FP8 product, every rounding boundary, and a million random values.

#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "model/common/error.h"
#include "model/common/numerics.h"
#include "tests/oracle.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::CastMode;
using model::DType;
using model::Rounding;

struct FloatCase {
  DType type;
  const oracle::Format* format;
};
const std::vector<FloatCase> kNarrow = {{DType::kE4m3, &oracle::kE4m3},
                                        {DType::kE5m2, &oracle::kE5m2},
                                        {DType::kBf16, &oracle::kBf16},
                                        {DType::kFp16, &oracle::kFp16},
                                        {DType::kTf32, &oracle::kTf32}};
const std::vector<CastMode> kAllModes = {{Rounding::kNearestEven, false},
                                         {Rounding::kNearestEven, true},
                                         {Rounding::kStochastic, false},
                                         {Rounding::kStochastic, true}};

// Every pattern of a type, in its container (TF32: the top 19 bits).
std::vector<uint32_t> all_patterns(const oracle::Format& f) {
  const uint32_t count = 1u << (1 + f.exp_bits + f.man_bits);
  std::vector<uint32_t> v(count);
  for (uint32_t p = 0; p < count; ++p) v[p] = p << f.container_shift;
  return v;
}

// Expected result of a cast of FP32 bits x into format f, from the oracle.
uint32_t oracle_cast(const oracle::Format& f, uint32_t x, CastMode mode, uint32_t rnd) {
  const oracle::Decoded d = oracle::decode(oracle::kFp32, x);
  if (d.kind != oracle::Kind::kFinite)
    return oracle::round_special(f, d.kind, d.value.negative, mode.saturate);
  return oracle::round(f, d.value, mode.rounding == Rounding::kStochastic, mode.saturate, rnd);
}

// The model's FP32 result equals the oracle's exact value (both finite, same sign of zero).
void expect_fp32_equals(uint32_t fp32, const oracle::Decoded& want, const std::string& what) {
  const oracle::Decoded got = oracle::decode(oracle::kFp32, fp32);
  ASSERT_EQ(static_cast<int>(got.kind), static_cast<int>(want.kind)) << what;
  if (want.kind == oracle::Kind::kNan) return;
  ASSERT_EQ(got.value.negative, want.value.negative) << what;
  if (want.kind == oracle::Kind::kFinite) {
    ASSERT_EQ(oracle::compare(got.value, want.value), 0)
        << what << ": got " << oracle::to_string(got.value) << " want "
        << oracle::to_string(want.value);
  }
}

TEST(Decode, EveryPatternOfEveryNarrowTypeIsExact) {
  for (const auto& c : kNarrow) {
    for (uint32_t p : all_patterns(*c.format)) {
      const std::string what = std::string(c.format->name) + " pattern " + std::to_string(p);
      expect_fp32_equals(model::to_fp32_bits(c.type, p), oracle::decode(*c.format, p), what);
      const auto kind = oracle::decode(*c.format, p).kind;
      const auto cls = model::classify(c.type, p);
      ASSERT_EQ(kind == oracle::Kind::kNan, cls == model::ValueClass::kNan) << what;
      ASSERT_EQ(kind == oracle::Kind::kInf, cls == model::ValueClass::kInf) << what;
    }
  }
}

TEST(Decode, EveryPatternRoundTripsThroughFp32) {
  for (const auto& c : kNarrow) {
    for (uint32_t p : all_patterns(*c.format)) {
      const uint32_t fp32 = model::to_fp32_bits(c.type, p);
      for (const CastMode& mode : kAllModes) {
        const uint32_t back = model::from_fp32(fp32, c.type, mode, 0xFFFFFFFFu);
        const auto kind = oracle::decode(*c.format, p).kind;
        if (kind == oracle::Kind::kNan) {
          ASSERT_EQ(back, model::canonical_nan(c.type)) << c.format->name << " NaN " << p;
        } else if (kind == oracle::Kind::kInf && mode.saturate) {
          const uint32_t sign = p & (1u << (model::storage_bits(c.type) - 1));
          ASSERT_EQ(back, sign | model::max_finite(c.type)) << c.format->name << " Inf " << p;
        } else {
          ASSERT_EQ(back, p) << c.format->name << " pattern " << p;
        }
      }
    }
  }
}

TEST(Decode, PublishedLimits) {
  EXPECT_EQ(model::to_float(DType::kE4m3, model::max_finite(DType::kE4m3)), 448.0f);
  EXPECT_EQ(model::max_finite(DType::kE4m3), 0x7Eu);
  EXPECT_EQ(model::canonical_nan(DType::kE4m3), 0x7Fu);
  EXPECT_EQ(model::to_float(DType::kE5m2, model::max_finite(DType::kE5m2)), 57344.0f);
  EXPECT_EQ(model::to_float(DType::kFp16, model::max_finite(DType::kFp16)), 65504.0f);
  EXPECT_EQ(model::to_float(DType::kE4m3, 0x01), std::ldexp(1.0f, -9));   // min subnormal
  EXPECT_EQ(model::to_float(DType::kE5m2, 0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(model::canonical_nan(DType::kBf16), 0x7FC0u);
  EXPECT_EQ(model::canonical_nan(DType::kTf32), 0x7FC00000u);
  EXPECT_TRUE(std::isinf(model::to_float(DType::kE5m2, 0x7C)));
  // OCP: E4M3 overflow without saturation is NaN; 464 is the tie between 448 and 480 and
  // rounds to even (448).
  const uint32_t big = model::float_to_bits(500.0f), tie = model::float_to_bits(464.0f);
  EXPECT_EQ(model::from_fp32(big, DType::kE4m3, {Rounding::kNearestEven, false}), 0x7Fu);
  EXPECT_EQ(model::from_fp32(big, DType::kE4m3, {Rounding::kNearestEven, true}), 0x7Eu);
  EXPECT_EQ(model::from_fp32(tie, DType::kE4m3, {Rounding::kNearestEven, false}), 0x7Eu);
  EXPECT_EQ(model::from_fp32(model::float_to_bits(-1e9f), DType::kE5m2, {}), 0xFCu);  // -Inf
}

TEST(Products, AllFp8PairsAreExactInFp32) {
  const std::vector<FloatCase> fp8 = {kNarrow[0], kNarrow[1]};
  for (const auto& a : fp8) {
    for (const auto& b : fp8) {
      for (uint32_t pa = 0; pa < 256; ++pa) {
        for (uint32_t pb = 0; pb < 256; ++pb) {
          const uint32_t got = model::fp32_mul(model::to_fp32_bits(a.type, pa),
                                               model::to_fp32_bits(b.type, pb));
          const auto da = oracle::decode(*a.format, pa), db = oracle::decode(*b.format, pb);
          const bool negative = da.value.negative != db.value.negative;
          oracle::Decoded want;
          if (da.kind == oracle::Kind::kNan || db.kind == oracle::Kind::kNan) {
            want = {oracle::Kind::kNan, {}};
          } else if (da.kind == oracle::Kind::kInf || db.kind == oracle::Kind::kInf) {
            const bool zero = (da.kind == oracle::Kind::kFinite && oracle::is_zero(da.value)) ||
                              (db.kind == oracle::Kind::kFinite && oracle::is_zero(db.value));
            want = zero ? oracle::Decoded{oracle::Kind::kNan, {}}
                        : oracle::Decoded{oracle::Kind::kInf, {negative, 0, 0}};
          } else {
            want = {oracle::Kind::kFinite, oracle::multiply(da.value, db.value)};
          }
          const std::string what = std::string(a.format->name) + " " + std::to_string(pa) +
                                   " x " + b.format->name + " " + std::to_string(pb);
          expect_fp32_equals(got, want, what);
          if (want.kind == oracle::Kind::kNan) {
            ASSERT_EQ(got, model::kFp32CanonicalNan) << what;
          }
        }
      }
    }
  }
}

// Products and sums that leave FP32's range must round exactly once, as IEEE binary32 says.
TEST(Products, RandomWideProductsAndSumsRoundOnceToFp32) {
  model::SplitMix64 rng(test::test_seed(11));
  const std::vector<DType> types = {DType::kBf16, DType::kFp16, DType::kTf32, DType::kFp32,
                                    DType::kE4m3};
  for (int i = 0; i < 300000; ++i) {
    const DType ta = types[rng.below(5)], tb = types[rng.below(5)];
    const uint32_t a = model::to_fp32_bits(ta, model::random_value(ta, rng));
    const uint32_t b = model::to_fp32_bits(tb, model::random_value(tb, rng));
    const auto da = oracle::decode(oracle::kFp32, a), db = oracle::decode(oracle::kFp32, b);
    if (da.kind != oracle::Kind::kFinite || db.kind != oracle::Kind::kFinite) continue;
    const bool use_sum = i & 1;
    const uint32_t got = use_sum ? model::fp32_add(a, b) : model::fp32_mul(a, b);
    const oracle::Dyadic exact =
        use_sum ? oracle::add(da.value, db.value) : oracle::multiply(da.value, db.value);
    uint32_t want = oracle::round(oracle::kFp32, exact, false, false, 0);
    // A zero sum of opposite operands is +0 under round-to-nearest (IEEE 754, 6.3).
    if (use_sum && oracle::is_zero(exact) && !(da.value.negative && db.value.negative))
      want = 0;
    ASSERT_EQ(got, want) << std::hex << a << (use_sum ? " + " : " * ") << b;
  }
}

// For every pair of neighbouring values of each narrow type, both signs: the midpoint and the
// FP32 values one ulp either side of it, in every mode, with edge and random SR bits.
TEST(Rounding, EveryBoundaryPlusMinusOneUlp) {
  model::SplitMix64 rng(test::test_seed(7));
  for (const auto& c : kNarrow) {
    const uint32_t shift = c.format->container_shift;
    const uint32_t max_p = model::max_finite(c.type) >> shift;
    for (uint32_t p = 0; p <= max_p; ++p) {
      const float lo = model::to_float(c.type, p << shift);
      // The value past the largest finite one: the overflow threshold's upper neighbour.
      const float hi = p == max_p ? lo + (lo - model::to_float(c.type, (p - 1) << shift))
                                  : model::to_float(c.type, (p + 1) << shift);
      const float mid = lo + (hi - lo) / 2;  // exact: one more significand bit than the type
      for (float sign : {1.0f, -1.0f}) {
        for (float x : {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, 1e30f),
                        std::nextafter(lo, 1e30f)}) {
          const uint32_t bits = model::float_to_bits(sign * x);
          for (const CastMode& mode : kAllModes) {
            const uint32_t rnd = mode.rounding == Rounding::kStochastic
                                     ? (rng.below(4) == 0 ? 0u : rng.below(2) ? ~0u : rng.next32())
                                     : 0u;
            ASSERT_EQ(model::from_fp32(bits, c.type, mode, rnd), oracle_cast(*c.format, bits, mode, rnd))
                << c.format->name << " x=" << std::hexfloat << sign * x << std::hex
                << " sat=" << mode.saturate << " sr=" << (mode.rounding == Rounding::kStochastic)
                << " rnd=" << rnd;
          }
        }
      }
    }
  }
}

uint32_t random_fp32(model::SplitMix64& rng) {
  switch (rng.below(4)) {
    case 0: return rng.next32();                                       // any pattern
    case 1: return model::random_value(DType::kFp32, rng);             // value classes
    case 2: return (rng.next32() & 0x807FFFFFu) | ((100 + rng.below(60)) << 23);  // FP8/16 range
    default: return (rng.next32() & 0x80FFFFFFu) | (rng.below(2) ? 0x38000000u : 0x47000000u);
  }
}

TEST(Rounding, OneMillionRandomValuesEveryTypeEveryMode) {
  model::SplitMix64 rng(test::test_seed(2024));
  for (int i = 0; i < 1000000; ++i) {
    const uint32_t x = random_fp32(rng);
    const uint32_t rnd = rng.next32();
    for (const auto& c : kNarrow) {
      for (const CastMode& mode : kAllModes) {
        ASSERT_EQ(model::from_fp32(x, c.type, mode, rnd), oracle_cast(*c.format, x, mode, rnd))
            << c.format->name << std::hex << " x=" << x << " rnd=" << rnd
            << " sat=" << mode.saturate << " sr=" << (mode.rounding == Rounding::kStochastic);
      }
    }
  }
}

TEST(Rounding, StochasticRoundingIsUnbiased) {
  // 1 + 1/4 ulp of BF16 rounds up about a quarter of the time; the mean lands on the value.
  model::SplitMix64 rng(test::test_seed(5));
  const uint32_t x = model::float_to_bits(1.0f + 0.25f * std::ldexp(1.0f, -7));
  int ups = 0;
  const int n = 100000;
  for (int i = 0; i < n; ++i)
    ups += model::from_fp32(x, DType::kBf16, {Rounding::kStochastic, false}, rng.next32()) != 0x3F80u;
  EXPECT_NEAR(static_cast<double>(ups) / n, 0.25, 0.01);
}

TEST(Integers, CastsRoundAndSaturate) {
  model::SplitMix64 rng(test::test_seed(99));
  const std::vector<std::pair<DType, int>> ints = {
      {DType::kInt8, 8}, {DType::kInt16, 16}, {DType::kInt32, 32}};
  for (const auto& [type, bits] : ints) {
    for (int i = 0; i < 200000; ++i) {
      uint32_t x = random_fp32(rng);
      if (i % 3 == 0)  // values near the type's range and near half-integers
        x = model::float_to_bits(std::ldexp(static_cast<float>(static_cast<int32_t>(rng.next32())),
                                            -static_cast<int>(rng.below(40))));
      const bool sr = rng.below(2);
      const uint32_t rnd = rng.next32();
      const int64_t want =
          oracle::round_to_int(oracle::decode(oracle::kFp32, x), bits, sr, rnd);
      const uint32_t got = model::from_fp32(
          x, type, {sr ? Rounding::kStochastic : Rounding::kNearestEven, false}, rnd);
      ASSERT_EQ(got, static_cast<uint32_t>(want) & model::storage_mask(type))
          << model::dtype_name(type) << std::hex << " x=" << x << " sr=" << sr;
    }
  }
  EXPECT_EQ(model::to_float(DType::kInt8, 0x80), -128.0f);
  EXPECT_EQ(model::to_float(DType::kInt32, 0x7FFFFFFF), 2147483648.0f);  // rounds (RNE)
  EXPECT_EQ(model::from_fp32(model::kFp32CanonicalNan, DType::kInt16, {}), 0u);
}

TEST(Types, NamesParseAndUnknownNamesAreRejected) {
  for (int i = 0; i < ncore::isa::kNumDType; ++i) {
    const auto t = static_cast<DType>(i);
    EXPECT_EQ(model::parse_dtype(model::dtype_name(t)), t);
  }
  try {
    model::parse_dtype("fp64");
    FAIL() << "fp64 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'fp64'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("e4m3"), std::string::npos);
  }
}

}  // namespace
}  // namespace ncore

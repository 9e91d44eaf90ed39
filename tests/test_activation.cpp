// The scalar engine's activation functions: the RTL lane logic (rtl/scalar/nc_act_pkg.sv)
// against the model (model/vector/activation.cpp) bit for bit on every value class, and the model
// against the exact functions within the error bounds rtl/scalar/README.md states.

#include <cmath>
#include <memory>

#include <gtest/gtest.h>

#include "Vnc_act_probe.h"
#include "model/vector/activation.h"
#include "model/common/numerics.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::ActFunc;

uint32_t input(model::SplitMix64& rng) {
  switch (rng.below(5)) {
    case 0: return rng.next32();                                                   // any pattern
    case 1: return model::random_value(model::DType::kFp32, rng);                  // value classes
    case 2: return (rng.next32() & 0x807FFFFFu) | ((110 + rng.below(30)) << 23);   // |x| in [2^-17, 2^13)
    case 3: return (rng.next32() & 0x807FFFFFu) | ((125 + rng.below(6)) << 23);    // near 1
    default: return rng.next32() & 0x807FFFFFu;                                    // subnormal / zero
  }
}

TEST(ActivationRtl, EveryFunctionMatchesTheModelBitForBit) {
  auto probe = std::make_unique<Vnc_act_probe>();
  model::SplitMix64 rng(test::test_seed(31));
  const uint32_t specials[] = {0, 0x80000000u, 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00001u,
                               0x00000001u, 0x80000001u, 0x007FFFFFu, 0x7F7FFFFFu, 0xFF7FFFFFu,
                               0x3E000000u, 0xBE000000u, 0x41800000u, 0xC1800000u, 0x42B20000u,
                               0xC2D00000u, 0x42B17218u, 0xC2CFF1B5u, 0x3F800000u, 0xBF800000u};
  for (int f = 0; f < ncore::isa::kNumActFunc; ++f) {
    probe->func_i = static_cast<uint8_t>(f);
    for (int i = 0; i < 100000 + static_cast<int>(std::size(specials)); ++i) {
      const uint32_t t = i < static_cast<int>(std::size(specials)) ? specials[i] : input(rng);
      probe->t_i = t;
      probe->eval();
      ASSERT_EQ(probe->act_o, model::act_eval(static_cast<ActFunc>(f), t))
          << model::act_func_name(static_cast<ActFunc>(f)) << " of 0x" << std::hex << t;
    }
  }
}

// The model within its documented error (ulps of the FP32 result; exact special values),
// on a stride through all FP32 patterns.
TEST(ActivationModel, ErrorWithinTheDocumentedBound) {
  struct Bound {
    ActFunc f;
    double ulps;
  };
  const Bound bounds[] = {{ActFunc::kIdentity, 0}, {ActFunc::kExp, 2},        {ActFunc::kTanh, 6},
                          {ActFunc::kSigmoid, 4},  {ActFunc::kGelu, 256},     {ActFunc::kRelu, 0},
                          {ActFunc::kSqrt, 3},     {ActFunc::kRsqrt, 2},      {ActFunc::kReciprocal, 2},
                          {ActFunc::kSquare, 0.5}};
  for (const Bound& b : bounds) {
    double worst = 0;
    uint32_t worst_x = 0;
    for (uint64_t x = 0; x <= 0xFFFFFFFFull; x += 65521) {
      const uint32_t got_bits = model::act_eval(b.f, static_cast<uint32_t>(x));
      const float got = model::bits_to_float(got_bits);
      const double exact = model::act_reference(b.f, model::bits_to_float(static_cast<uint32_t>(x)));
      const float rounded = static_cast<float>(exact);
      if (std::isnan(exact)) {
        EXPECT_EQ(got_bits, model::kFp32CanonicalNan) << model::act_func_name(b.f) << " " << x;
        continue;
      }
      if (std::isinf(rounded) || rounded == 0) {
        if (std::fabs(exact) > 0x1p-140) {
          EXPECT_EQ(got, rounded) << model::act_func_name(b.f) << " " << x;
        }
        continue;
      }
      const double ulp = std::fabs(std::nextafter(rounded, INFINITY) - rounded);
      const double err = std::fabs(got - exact) / (ulp > 0 ? ulp : 0x1p-149);
      if (err > worst) {
        worst = err;
        worst_x = static_cast<uint32_t>(x);
      }
    }
    EXPECT_LE(worst, b.ulps) << model::act_func_name(b.f) << " worst at 0x" << std::hex << worst_x;
  }
}

}  // namespace
}  // namespace ncore

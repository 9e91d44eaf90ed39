#include "model/vector/activation.h"

#include <array>
#include <cmath>

#include <fmt/format.h>

#include "model/common/error.h"
#include "model/common/name_table.h"
#include "model/common/numerics.h"

namespace ncore::model {
namespace {


// Constants as FP32 bit patterns (the RTL uses the same literals).
constexpr uint32_t kOne = 0x3F800000u, kTwo = 0x40000000u, kHalf = 0x3F000000u;
constexpr uint32_t kOneAndHalf = 0x3FC00000u, kMinusTwo = 0xC0000000u;
constexpr uint32_t kLog2e = 0x3FB8AA3Bu;        // 1.44269502
constexpr uint32_t kMinusLn2Hi = 0xBF317200u;   // -0.693145752 (16 significant bits: k*ln2_hi exact)
constexpr uint32_t kMinusLn2Lo = 0xB5BFBE8Eu;   // -1.42860677e-6
constexpr uint32_t kExpMax = 0x42B20000u;       // 89: e^89 overflows
constexpr uint32_t kExpMin = 0xC2D00000u;       // -104: e^-104 rounds to +0
// 1/7!, 1/6!, ..., 1/1!, 1/0! rounded to FP32
constexpr std::array<uint32_t, 8> kExpPoly{0x39500D01u, 0x3AB60B61u, 0x3C088889u, 0x3D2AAAABu,
                                           0x3E2AAAABu, 0x3F000000u, 0x3F800000u, 0x3F800000u};
constexpr uint32_t kRecipSeedA = 0x4034B4B5u;   // 48/17
constexpr uint32_t kRecipSeedB = 0xBFF0F0F1u;   // -32/17
constexpr uint32_t kRsqrtSeedA = 0x3FA30F28u;   // 1.2739 (line near 1/sqrt(m) on [1, 2), error +-2%)
constexpr uint32_t kRsqrtSeedB = 0xBE95F61Au;   // -0.29289
constexpr uint32_t kInvSqrt2 = 0x3F3504F3u;     // 0.70710677
constexpr uint32_t kTanhSmall = 0x3E000000u;    // 0.125: below it tanh is a polynomial
// tanh t = t + t^3 (c3 + t^2 (c5 + t^2 (c7 + t^2 c9))): Taylor coefficients -1/3, 2/15,
// -17/315, 62/2835
constexpr std::array<uint32_t, 4> kTanhPoly{0x3CB327A4u, 0xBD5D0DD1u, 0x3E088889u, 0xBEAAAAABu};
constexpr uint32_t kGeluC = 0x3D372713u;        // 0.044715
constexpr uint32_t kGeluK = 0x3FCC422Au;        // 2 sqrt(2/pi): 0.5 (1 + tanh u) = sigmoid(2u)
constexpr uint32_t kFarLeft = 0x41800000u;      // 16: below -16, sigmoid(t) is e^t

uint32_t add(uint32_t a, uint32_t b) { return fp32_add(a, b); }
uint32_t mul(uint32_t a, uint32_t b) { return fp32_mul(a, b); }
bool is_nan(uint32_t x) { return (x & 0x7FFFFFFFu) > 0x7F800000u; }
bool is_inf(uint32_t x) { return (x & 0x7FFFFFFFu) == 0x7F800000u; }
bool is_zero(uint32_t x) { return (x & 0x7FFFFFFFu) == 0; }
bool is_subnormal(uint32_t x) { return (x & 0x7F800000u) == 0 && !is_zero(x); }
uint32_t pow2(int k) { return static_cast<uint32_t>(k + 127) << 23; }  // k in [-126, 127]
// y * 2^s in two exact-or-once-rounded steps, so s may reach beyond the normal range.
uint32_t scale2(uint32_t y, int s) {
  const int s1 = s >> 1;  // floor(s / 2), as the RTL's arithmetic shift
  return mul(mul(y, pow2(s1)), pow2(s - s1));
}
uint32_t max_min(uint32_t a, uint32_t b, bool is_max) {
  if (is_nan(a) || is_nan(b)) return kFp32CanonicalNan;
  const auto key = [](uint32_t v) { return (v & 0x80000000u) ? ~v : (v | 0x80000000u); };
  return ((key(a) >= key(b)) == is_max) ? a : b;
}
int exponent_of(uint32_t x) { return static_cast<int>((x >> 23) & 0xFF) - 127; }

}  // namespace

std::string_view act_func_name(ActFunc f) { return name_of(isa::kActFuncNames, f); }
ActFunc parse_act_func(std::string_view name) {
  return value_of<ActFunc>(isa::kActFuncNames, name, "activation function");
}

ExpParts act_exp_parts(uint32_t a) {
  if (is_nan(a)) return {kFp32CanonicalNan, 0};
  a = max_min(max_min(a, kExpMin, true), kExpMax, false);
  const uint32_t k_bits = from_fp32(mul(a, kLog2e), DType::kInt32, CastMode{});
  const int k = static_cast<int32_t>(k_bits);
  const uint32_t kf = to_fp32_bits(DType::kInt32, k_bits);
  uint32_t r = add(a, mul(kf, kMinusLn2Hi));
  r = add(r, mul(kf, kMinusLn2Lo));
  uint32_t p = kExpPoly[0];
  for (size_t i = 1; i < kExpPoly.size(); ++i) p = add(mul(p, r), kExpPoly[i]);
  return {p, k};
}

uint32_t act_exp(uint32_t a) {
  const ExpParts e = act_exp_parts(a);
  return scale2(e.p, e.k);
}

uint32_t act_reciprocal(uint32_t d) {
  if (is_nan(d)) return kFp32CanonicalNan;
  const uint32_t sign = d & 0x80000000u;
  if (is_zero(d)) return sign | 0x7F800000u;
  if (is_inf(d)) return sign;
  int adjust = 0;
  if (is_subnormal(d)) {
    d = mul(d, pow2(24));  // exact
    adjust = 24;
  }
  const int e = exponent_of(d);
  const uint32_t mh = (d & 0x007FFFFFu) | (126u << 23);  // the significand / 2, in [0.5, 1)
  uint32_t y = add(kRecipSeedA, mul(kRecipSeedB, mh));
  for (int i = 0; i < 3; ++i) y = mul(y, add(kTwo, mul(mh ^ 0x80000000u, y)));
  return sign | scale2(y, adjust - (e + 1));
}

uint32_t act_rsqrt(uint32_t x) {
  if (is_nan(x)) return kFp32CanonicalNan;
  if (is_zero(x)) return (x & 0x80000000u) | 0x7F800000u;  // rsqrt(-0) = -inf
  if (x & 0x80000000u) return kFp32CanonicalNan;
  if (is_inf(x)) return 0;
  int adjust = 0;
  if (is_subnormal(x)) {
    x = mul(x, pow2(24));
    adjust = 12;
  }
  const int e = exponent_of(x);
  const int j = e >> 1;  // x = m * 4^j, m = 1.f * 2^(e - 2j) in [1, 4)
  const uint32_t frac = x & 0x007FFFFFu;
  const uint32_t m = frac | static_cast<uint32_t>(127 + (e - 2 * j)) << 23;
  const uint32_t m_low = frac | (127u << 23);  // 1.f in [1, 2)
  uint32_t y = add(kRsqrtSeedA, mul(kRsqrtSeedB, m_low));
  if (e - 2 * j) y = mul(y, kInvSqrt2);
  const uint32_t h = mul(m, kHalf);  // exact
  for (int i = 0; i < 3; ++i) y = mul(y, add(kOneAndHalf, mul(mul(h, y), y) ^ 0x80000000u));
  return scale2(y, adjust - j);
}

uint32_t act_eval(ActFunc f, uint32_t t) {
  const uint32_t sign = t & 0x80000000u, abs_t = t & 0x7FFFFFFFu;
  switch (f) {
    case ActFunc::kIdentity: return is_nan(t) ? kFp32CanonicalNan : t;
    case ActFunc::kExp: return act_exp(t);
    case ActFunc::kTanh: {
      if (is_nan(t)) return kFp32CanonicalNan;
      if (abs_t < kTanhSmall) {
        const uint32_t t2 = mul(t, t);
        uint32_t q = kTanhPoly[0];
        for (size_t i = 1; i < kTanhPoly.size(); ++i) q = add(mul(q, t2), kTanhPoly[i]);
        return add(t, mul(mul(t, t2), q));
      }
      const uint32_t e = act_exp(mul(abs_t, kMinusTwo));  // e^(-2|t|)
      const uint32_t r = act_reciprocal(add(kOne, e));
      return sign | mul(add(kOne, e ^ 0x80000000u), r);
    }
    case ActFunc::kSigmoid: {
      // sigmoid(t) = 1 / (1 + e^-t); far left it is e^t (relative difference e^t < 2^-23),
      // which keeps tiny and subnormal results accurate.
      if (is_nan(t)) return kFp32CanonicalNan;
      if (sign && abs_t > kFarLeft) return act_exp(t);
      return act_reciprocal(add(kOne, act_exp(t ^ 0x80000000u)));
    }
    case ActFunc::kGelu: {
      // gelu(t) = t * sigmoid(w), w = 2 sqrt(2/pi) (t + 0.044715 t^3); far left t * e^w, the
      // product taken before the final scaling by 2^k so that it rounds once.
      if (is_nan(t)) return kFp32CanonicalNan;
      if (t == 0xFF800000u) return 0x80000000u;  // -inf * sigmoid(-inf) -> -0
      const uint32_t t3 = mul(mul(t, t), t);
      const uint32_t w = mul(kGeluK, add(t, mul(kGeluC, t3)));
      if ((w & 0x80000000u) && (w & 0x7FFFFFFFu) > kFarLeft) {
        // Past the exponential's clamp (w < -104, t < -10.7) |t e^w| < 6 * 2^-149: -0.
        if ((w & 0x7FFFFFFFu) > (kExpMin & 0x7FFFFFFFu)) return 0x80000000u;
        const ExpParts e = act_exp_parts(w);
        return scale2(mul(t, e.p), e.k);
      }
      return mul(t, act_reciprocal(add(kOne, act_exp(w ^ 0x80000000u))));
    }
    case ActFunc::kRelu: return max_min(t, 0, true);
    case ActFunc::kSqrt:
      if (is_nan(t) || (sign && !is_zero(t))) return kFp32CanonicalNan;
      if (is_zero(t) || is_inf(t)) return t;
      return mul(t, act_rsqrt(t));
    case ActFunc::kRsqrt: return act_rsqrt(t);
    case ActFunc::kReciprocal: return act_reciprocal(t);
    case ActFunc::kSquare: return mul(t, t);
  }
  return kFp32CanonicalNan;
}

double act_reference(ActFunc f, double t) {
  switch (f) {
    case ActFunc::kIdentity: return t;
    case ActFunc::kExp: return std::exp(t);
    case ActFunc::kTanh: return std::tanh(t);
    case ActFunc::kSigmoid: return 1.0 / (1.0 + std::exp(-t));
    case ActFunc::kGelu: {
      if (std::isinf(t)) return t > 0 ? t : -0.0;
      const double u = 0.7978845608028654 * (t + 0.044715 * t * t * t);
      return t / (1.0 + std::exp(-2.0 * u));  // = 0.5 t (1 + tanh u), without cancellation
    }
    case ActFunc::kRelu: return std::isnan(t) ? t : (t > 0 ? t : 0.0);
    case ActFunc::kSqrt: return std::sqrt(t);
    case ActFunc::kRsqrt: return 1.0 / std::sqrt(t);
    case ActFunc::kReciprocal: return 1.0 / t;
    case ActFunc::kSquare: return t * t;
  }
  return std::nan("");
}

}  // namespace ncore::model

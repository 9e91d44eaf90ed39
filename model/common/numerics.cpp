#include "model/common/numerics.h"

#include <array>
#include <cmath>
#include <vector>

#include <fmt/format.h>

#include "model/common/error.h"

namespace ncore::model {
namespace {

//                                  exp man bias  inf   bits shift
constexpr FloatFormat kFp32Format{8, 23, 127, true, 32, 0};
constexpr FloatFormat kTf32Format{8, 10, 127, true, 32, 13};
constexpr FloatFormat kBf16Format{8, 7, 127, true, 16, 0};
constexpr FloatFormat kFp16Format{5, 10, 15, true, 16, 0};
constexpr FloatFormat kE4m3Format{4, 3, 7, false, 8, 0};
constexpr FloatFormat kE5m2Format{5, 2, 15, true, 8, 0};

struct DTypeInfo {
  DType type;
  std::string_view name;
  int storage_bits;
};
constexpr std::array<DTypeInfo, isa::kNumDType> kDTypes{{
    {DType::kFp32, "fp32", 32},
    {DType::kTf32, "tf32", 32},
    {DType::kBf16, "bf16", 16},
    {DType::kFp16, "fp16", 16},
    {DType::kE4m3, "e4m3", 8},
    {DType::kE5m2, "e5m2", 8},
    {DType::kInt8, "int8", 8},
    {DType::kInt16, "int16", 16},
    {DType::kInt32, "int32", 32},
}};

// Pattern fields of a format in its own (unshifted) bit positions.
uint32_t exp_field_max(const FloatFormat& f) { return (1u << f.exp_bits) - 1; }
uint32_t man_mask(const FloatFormat& f) { return (1u << f.man_bits) - 1; }
int sign_pos(const FloatFormat& f) { return f.exp_bits + f.man_bits; }

bool is_nan_pattern(const FloatFormat& f, uint32_t p) {
  const uint32_t e = (p >> f.man_bits) & exp_field_max(f);
  const uint32_t m = p & man_mask(f);
  if (!f.has_inf) return e == exp_field_max(f) && m == man_mask(f);  // E4M3: S.1111.111
  return e == exp_field_max(f) && m != 0;
}

// Exact decode of a narrow float pattern (without container shift) to FP32 bits.
uint32_t decode_generic(const FloatFormat& f, uint32_t p) {
  const uint32_t sign = (p >> sign_pos(f)) & 1u;
  const uint32_t e = (p >> f.man_bits) & exp_field_max(f);
  const uint32_t m = p & man_mask(f);
  const uint32_t sign32 = sign << 31;
  if (is_nan_pattern(f, p)) {
    // Keep the sign and as much payload as fits; the quiet bit is forced so it stays a NaN.
    return sign32 | 0x7FC00000u | (m << (23 - f.man_bits));
  }
  if (f.has_inf && e == exp_field_max(f)) return sign32 | 0x7F800000u;
  // value = m * 2^(1 - bias - man_bits) for subnormals, (2^man_bits + m) * 2^(e - bias -
  // man_bits) for normals; both are exact in FP32, so ldexp cannot round.
  const float magnitude =
      e == 0 ? std::ldexp(static_cast<float>(m), 1 - f.bias - f.man_bits)
             : std::ldexp(static_cast<float>((1u << f.man_bits) | m),
                          static_cast<int>(e) - f.bias - f.man_bits);
  return sign32 | float_to_bits(magnitude);
}

// Decode tables for the 8- and 16-bit float types: the hot path of the golden model.
struct DecodeTables {
  std::array<uint32_t, 256> e4m3{}, e5m2{};
  std::vector<uint32_t> bf16, fp16;
  DecodeTables() : bf16(65536), fp16(65536) {
    for (uint32_t p = 0; p < 256; ++p) {
      e4m3[p] = decode_generic(kE4m3Format, p);
      e5m2[p] = decode_generic(kE5m2Format, p);
    }
    for (uint32_t p = 0; p < 65536; ++p) {
      bf16[p] = p << 16;  // BF16 is the top half of FP32, NaN payloads included
      fp16[p] = decode_generic(kFp16Format, p);
    }
  }
};
const DecodeTables& tables() {
  static const DecodeTables t;
  return t;
}

// FP32 -> narrow float pattern (without container shift). See from_fp32 for the contract.
uint32_t encode_generic(const FloatFormat& f, uint32_t x, CastMode mode, uint32_t random_bits) {
  const uint32_t sign = x >> 31;
  const uint32_t out_sign = sign << sign_pos(f);
  const uint32_t x_exp = (x >> 23) & 0xFFu;
  const uint32_t x_man = x & 0x7FFFFFu;
  const uint32_t max_pattern =
      f.has_inf ? ((exp_field_max(f) - 1) << f.man_bits) | man_mask(f)
                : (exp_field_max(f) << f.man_bits) | (man_mask(f) - 1);
  const uint32_t nan_pattern = f.has_inf
                                   ? (exp_field_max(f) << f.man_bits) | (1u << (f.man_bits - 1))
                                   : (exp_field_max(f) << f.man_bits) | man_mask(f);
  // Overflow keeps the sign, except that E4M3's overflow is a NaN, which is canonical.
  const uint32_t overflow_pattern =
      mode.saturate ? out_sign | max_pattern
                    : (f.has_inf ? out_sign | (exp_field_max(f) << f.man_bits) : nan_pattern);

  if (x_exp == 0xFF) {
    if (x_man != 0) return nan_pattern;                 // canonical NaN, positive
    return overflow_pattern;                            // +-Inf: saturate or Inf (E4M3: NaN)
  }
  if (x_exp == 0 && x_man == 0) return out_sign;        // +-0

  // Significand with its hidden bit and unbiased exponent of the lowest significand bit:
  // |x| = sig * 2^lsb_exp.
  const uint64_t sig = x_exp == 0 ? x_man : (x_man | 0x800000u);
  const int lsb_exp = (x_exp == 0 ? 1 : static_cast<int>(x_exp)) - 127 - 23;
  // The target's smallest step in the binade of x: subnormals share the lowest binade.
  const int x_top_exp = lsb_exp + 63 - __builtin_clzll(sig);  // exponent of the leading bit
  const int min_normal_exp = 1 - f.bias;
  const int target_lsb_exp = std::max(x_top_exp, min_normal_exp) - f.man_bits;
  const int drop = target_lsb_exp - lsb_exp;  // bits of sig below the target's lsb

  uint64_t q;       // target significand (hidden bit included for normals)
  uint32_t frac32;  // discarded fraction as floor(f * 2^32)
  if (drop <= 0) {
    q = sig << -drop;  // cannot happen for narrower targets, kept for completeness
    frac32 = 0;
  } else if (drop >= 64) {
    q = 0;
    frac32 = 0;  // below 2^-40 of the smallest subnormal step: sig < 2^24 << 2^(drop-32)
  } else {
    q = sig >> drop;
    const uint64_t rem = sig & ((uint64_t{1} << drop) - 1);
    frac32 = drop <= 32 ? static_cast<uint32_t>(rem << (32 - drop))
                        : static_cast<uint32_t>(rem >> (drop - 32));
  }

  bool round_up;
  if (mode.rounding == Rounding::kNearestEven) {
    round_up = frac32 > 0x80000000u || (frac32 == 0x80000000u && (q & 1u));
    // frac32 is exact when drop <= 32; a longer tail only matters to break a tie, which a
    // truncated fraction of exactly 1/2 with non-zero lower bits would be.
    if (drop > 32 && drop < 64 && frac32 == 0x80000000u) {
      const uint64_t lower = sig & ((uint64_t{1} << (drop - 32)) - 1);
      if (lower != 0) round_up = true;
    }
  } else {
    round_up = static_cast<uint64_t>(frac32) + random_bits >= (uint64_t{1} << 32);
  }
  if (round_up) ++q;

  // Normal results: pattern = (biased_exp - 1) << man_bits + q, where q's hidden bit adds
  // the missing 1 and a carry out of the mantissa bumps the exponent for free. Subnormal
  // results (the binade below min_normal_exp) are q itself.
  const int biased_minus_one = target_lsb_exp + f.man_bits - min_normal_exp;
  const uint64_t pattern =
      x_top_exp >= min_normal_exp ? (static_cast<uint64_t>(biased_minus_one) << f.man_bits) + q : q;
  if (pattern > max_pattern) return overflow_pattern;
  return out_sign | static_cast<uint32_t>(pattern);
}

int64_t int_min(DType t) { return -(int64_t{1} << (storage_bits(t) - 1)); }
int64_t int_max(DType t) { return (int64_t{1} << (storage_bits(t) - 1)) - 1; }

uint32_t encode_int(DType t, uint32_t x, CastMode mode, uint32_t random_bits) {
  const float v = bits_to_float(x);
  if (std::isnan(v)) return 0;
  if (std::isinf(v))
    return static_cast<uint32_t>(v > 0 ? int_max(t) : int_min(t)) & storage_mask(t);
  // Round the magnitude, as for the float targets, so that stochastic rounding treats both
  // signs alike; then apply the sign and clamp.
  const double magnitude = std::fabs(static_cast<double>(v));  // exact
  const double lo = std::floor(magnitude);
  const double frac = magnitude - lo;  // exact: fewer than 53 significant bits
  const uint64_t frac32 = static_cast<uint64_t>(std::ldexp(frac, 32));
  bool round_up;
  if (mode.rounding == Rounding::kNearestEven) {
    const bool lo_odd = std::fmod(lo, 2.0) != 0.0;
    round_up = frac > 0.5 || (frac == 0.5 && lo_odd);
  } else {
    round_up = frac32 + random_bits >= (uint64_t{1} << 32);
  }
  double r = round_up ? lo + 1 : lo;
  if (v < 0) r = -r;
  r = std::min(std::max(r, static_cast<double>(int_min(t))), static_cast<double>(int_max(t)));
  return static_cast<uint32_t>(static_cast<int64_t>(r)) & storage_mask(t);
}

int64_t sign_extend(DType t, uint32_t bits) {
  const int n = storage_bits(t);
  const uint32_t masked = bits & storage_mask(t);
  const uint32_t sign_bit = 1u << (n - 1);
  return static_cast<int64_t>(masked ^ sign_bit) - static_cast<int64_t>(sign_bit);
}

}  // namespace

bool is_float(DType t) {
  // A code outside the table (an instruction word's 4-bit field can hold one) is no type at all.
  if (static_cast<size_t>(t) >= kDTypes.size()) return false;
  return t != DType::kInt8 && t != DType::kInt16 && t != DType::kInt32;
}

const FloatFormat& float_format(DType t) {
  switch (t) {
    case DType::kFp32: return kFp32Format;
    case DType::kTf32: return kTf32Format;
    case DType::kBf16: return kBf16Format;
    case DType::kFp16: return kFp16Format;
    case DType::kE4m3: return kE4m3Format;
    case DType::kE5m2: return kE5m2Format;
    default: break;
  }
  throw Error(fmt::format("float_format: '{}' is an integer type", dtype_name(t)));
}

static const DTypeInfo& info(DType t) {
  const auto i = static_cast<size_t>(t);
  if (i >= kDTypes.size()) throw Error(fmt::format("invalid DType value {}", i));
  return kDTypes[i];
}

int storage_bits(DType t) { return info(t).storage_bits; }

uint32_t storage_mask(DType t) {
  return storage_bits(t) == 32 ? 0xFFFFFFFFu : (1u << storage_bits(t)) - 1;
}

std::string_view dtype_name(DType t) { return info(t).name; }

std::string dtype_list() {
  std::string s;
  for (const auto& d : kDTypes) s += (s.empty() ? "" : ", ") + std::string(d.name);
  return s;
}

DType parse_dtype(std::string_view name) {
  for (const auto& d : kDTypes)
    if (d.name == name) return d.type;
  if (name == "fp8e4m3" || name == "float8_e4m3") return DType::kE4m3;
  if (name == "fp8e5m2" || name == "float8_e5m2") return DType::kE5m2;
  throw Error(fmt::format("unknown type '{}': expected one of {}", name, dtype_list()));
}

std::string_view value_class_name(ValueClass c) {
  switch (c) {
    case ValueClass::kZero: return "zero";
    case ValueClass::kSubnormal: return "subnormal";
    case ValueClass::kNormal: return "normal";
    case ValueClass::kInf: return "inf";
    case ValueClass::kNan: return "nan";
  }
  return "?";
}

ValueClass classify(DType t, uint32_t bits) {
  if (!is_float(t)) return (bits & storage_mask(t)) == 0 ? ValueClass::kZero : ValueClass::kNormal;
  const FloatFormat& f = float_format(t);
  const uint32_t p = (bits & storage_mask(t)) >> f.container_shift;
  const uint32_t e = (p >> f.man_bits) & exp_field_max(f);
  const uint32_t m = p & man_mask(f);
  if (is_nan_pattern(f, p)) return ValueClass::kNan;
  if (f.has_inf && e == exp_field_max(f)) return ValueClass::kInf;
  if (e == 0) return m == 0 ? ValueClass::kZero : ValueClass::kSubnormal;
  return ValueClass::kNormal;
}

uint32_t canonical_nan(DType t) {
  return encode_generic(float_format(t), kFp32CanonicalNan, {}, 0) << float_format(t).container_shift;
}

uint32_t max_finite(DType t) {
  CastMode sat{Rounding::kNearestEven, true};
  return from_fp32(0x7F800000u, t, sat);
}

uint32_t infinity(DType t) {
  const FloatFormat& f = float_format(t);
  if (!f.has_inf) throw Error(fmt::format("infinity: '{}' has no infinity", dtype_name(t)));
  return (exp_field_max(f) << f.man_bits) << f.container_shift;
}

const uint32_t* decode_table(DType t) {
  switch (t) {
    case DType::kBf16: return tables().bf16.data();
    case DType::kFp16: return tables().fp16.data();
    case DType::kE4m3: return tables().e4m3.data();
    case DType::kE5m2: return tables().e5m2.data();
    default: return nullptr;
  }
}

uint32_t to_fp32_bits(DType from, uint32_t bits) {
  switch (from) {
    case DType::kFp32: return bits;
    case DType::kTf32: return bits & 0xFFFFE000u;
    case DType::kBf16: return tables().bf16[bits & 0xFFFFu];
    case DType::kFp16: return tables().fp16[bits & 0xFFFFu];
    case DType::kE4m3: return tables().e4m3[bits & 0xFFu];
    case DType::kE5m2: return tables().e5m2[bits & 0xFFu];
    case DType::kInt8:
    case DType::kInt16:
    case DType::kInt32:
      return float_to_bits(static_cast<float>(sign_extend(from, bits)));  // RNE for INT32
  }
  return bits;
}

uint32_t from_fp32(uint32_t fp32_bits, DType to, CastMode mode, uint32_t random_bits) {
  if (!is_float(to)) return encode_int(to, fp32_bits, mode, random_bits);
  if (to == DType::kFp32) {
    // Only special values change: NaN canonicalises and Inf saturates when asked to.
    if ((fp32_bits & 0x7FFFFFFFu) > 0x7F800000u) return kFp32CanonicalNan;
    if ((fp32_bits & 0x7FFFFFFFu) == 0x7F800000u && mode.saturate)
      return (fp32_bits & 0x80000000u) | 0x7F7FFFFFu;
    return fp32_bits;
  }
  if (to == DType::kBf16 && mode.rounding == Rounding::kNearestEven && !mode.saturate) {
    // BF16 keeps FP32's exponent: round the low 16 bits to nearest even (Inf stays Inf, an
    // overflow carries into it), as encode_generic does, at a fraction of its cost.
    if ((fp32_bits & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0u;  // canonical NaN
    return (fp32_bits + 0x7FFFu + ((fp32_bits >> 16) & 1u)) >> 16;
  }
  const FloatFormat& f = float_format(to);
  return encode_generic(f, fp32_bits, mode, random_bits) << f.container_shift;
}

uint32_t random_value(DType t, SplitMix64& rng) {
  const uint32_t raw = rng.next32() & storage_mask(t);
  if (!is_float(t)) {
    switch (rng.below(4)) {
      case 0: return 0;
      case 1: return static_cast<uint32_t>(int_max(t)) & storage_mask(t);
      case 2: return static_cast<uint32_t>(int_min(t)) & storage_mask(t);
      default: return raw;
    }
  }
  const FloatFormat& f = float_format(t);
  const uint32_t sign = (rng.next32() & 1u) << sign_pos(f) << f.container_shift;
  const uint32_t shift = f.container_shift;
  switch (rng.below(16)) {
    case 0: return sign;                                                     // +-0
    case 1: return sign | ((1 + rng.below(man_mask(f))) << shift);          // subnormal
    case 2: return sign | max_finite(t);                                     // largest finite
    case 3: return f.has_inf ? (sign | infinity(t)) : (sign | max_finite(t));
    case 4:  // NaN: canonical, or any payload the format has
      if (!f.has_inf || rng.below(2)) return sign | canonical_nan(t);
      return raw | (exp_field_max(f) << f.man_bits << shift) | (1u << shift);
    default: {
      // Ordinary values near 1.0 so that sums do not all overflow, with full-range raw bits
      // a quarter of the time.
      if (rng.below(4) == 0) return raw & ~((1u << shift) - 1);
      const uint32_t exp = static_cast<uint32_t>(f.bias - 3 + static_cast<int>(rng.below(7)));
      const uint32_t man = rng.next32() & man_mask(f);
      return sign | (((exp << f.man_bits) | man) << shift);
    }
  }
}

}  // namespace ncore::model

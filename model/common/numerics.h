#pragma once
// Bit-exact numerics shared by the golden model, the co-simulation checker and the CLI.
//
// Values travel as raw bit patterns in a uint32_t (low bits used for the narrow types).
// Every narrow floating-point value is exactly representable in FP32, so decoding is exact and
// a cast between two narrow types is "decode, then one rounding".
//
// NaN rule (documented in README.md, "Numeric semantics"): decoding keeps a NaN's bits, but
// every arithmetic result and every cast that produces a NaN produces the target type's
// canonical NaN: positive sign, quiet bit set, rest of the payload zero.

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "model/isa/isa_gen.h"

namespace ncore::model {

// The element types are the ISA's (model/isa/ncore.isa, enum d_type).
using isa::DType;

// Shape of a binary floating-point format. TF32 lives in a 32-bit container: its 19 bits
// (1-8-10) are the top bits of an FP32 word and the low 13 bits are zero (container_shift).
struct FloatFormat {
  int exp_bits;
  int man_bits;
  int bias;
  bool has_inf;          // E4M3 has none: S.1111.111 is its only NaN
  int storage_bits;      // bits of the container
  int container_shift;   // 13 for TF32, else 0
};

bool is_float(DType t);
const FloatFormat& float_format(DType t);  // throws ncore::Error for an integer type
int storage_bits(DType t);
uint32_t storage_mask(DType t);
std::string_view dtype_name(DType t);
// Accepts fp32, tf32, bf16, fp16, e4m3 (fp8e4m3), e5m2 (fp8e5m2), int8, int16, int32.
DType parse_dtype(std::string_view name);
std::string dtype_list();  // "fp32, tf32, ..." for error messages

enum class Rounding : uint8_t { kNearestEven, kStochastic };

// How FP32 -> narrow conversion treats values outside the target's finite range.
// saturate: overflow and +-Inf become +-largest finite. Otherwise overflow becomes +-Inf
// (NaN for E4M3, which has no Inf). NaN stays NaN in both. Integer targets always saturate.
struct CastMode {
  Rounding rounding = Rounding::kNearestEven;
  bool saturate = false;
};

enum class ValueClass : uint8_t { kZero, kSubnormal, kNormal, kInf, kNan };
std::string_view value_class_name(ValueClass c);
ValueClass classify(DType t, uint32_t bits);

inline constexpr uint32_t kFp32CanonicalNan = 0x7FC00000u;
uint32_t canonical_nan(DType t);          // float types only
uint32_t max_finite(DType t);             // positive largest finite pattern, float types only
uint32_t infinity(DType t);               // float types with Inf only

inline float bits_to_float(uint32_t b) { float f; std::memcpy(&f, &b, 4); return f; }
inline uint32_t float_to_bits(float f) { uint32_t b; std::memcpy(&b, &f, 4); return b; }

// Exact for every float type (TF32 ignores the 13 container bits below its mantissa); integer
// types convert with round-to-nearest-even (only INT32 can round). A NaN keeps its bits.
uint32_t to_fp32_bits(DType from, uint32_t bits);
inline float to_float(DType from, uint32_t bits) { return bits_to_float(to_fp32_bits(from, bits)); }

// The table behind to_fp32_bits for the 8- and 16-bit float types (indexed by the pattern),
// or nullptr for the 32-bit and integer types. For hot loops that decode whole tiles.
const uint32_t* decode_table(DType t);

// FP32 -> any type, one rounding. Stochastic rounding consumes random_bits (uniform 32-bit):
// with the discarded fraction f in [0,1) truncated to 32 bits as F = floor(f * 2^32), the
// result rounds away from zero iff F + random_bits >= 2^32. So it reproduces from a seed and a
// hardware rounder is a 32-bit adder's carry-out. For integers, NaN -> 0 and out-of-range
// values clamp to the type's range.
uint32_t from_fp32(uint32_t fp32_bits, DType to, CastMode mode, uint32_t random_bits = 0);

inline uint32_t cast(DType from, uint32_t bits, DType to, CastMode mode,
                     uint32_t random_bits = 0) {
  return from_fp32(to_fp32_bits(from, bits), to, mode, random_bits);
}

// IEEE binary32 arithmetic with round-to-nearest-even and subnormals (no flush), with the
// result NaN canonicalised. These are what a PE's multiplier and adder compute.
inline uint32_t canonicalize_fp32(uint32_t b) {
  return ((b & 0x7F800000u) == 0x7F800000u && (b & 0x007FFFFFu)) ? kFp32CanonicalNan : b;
}
inline uint32_t fp32_mul(uint32_t a, uint32_t b) {
  return canonicalize_fp32(float_to_bits(bits_to_float(a) * bits_to_float(b)));
}
inline uint32_t fp32_add(uint32_t a, uint32_t b) {
  return canonicalize_fp32(float_to_bits(bits_to_float(a) + bits_to_float(b)));
}
inline uint32_t fp32_sub(uint32_t a, uint32_t b) { return fp32_add(a, b ^ 0x80000000u); }
// The vector engine's divider (bn_stats, bn_aggr): correctly rounded like the others.
inline uint32_t fp32_div(uint32_t a, uint32_t b) {
  return canonicalize_fp32(float_to_bits(bits_to_float(a) / bits_to_float(b)));
}

// A small seedable generator used wherever numerics need random bits (stochastic rounding,
// random stimulus). splitmix64: tiny, fast, and fully specified, so seeds reproduce anywhere.
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  uint32_t next32() { return static_cast<uint32_t>(next() >> 32); }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>((next() >> 32) * n >> 32); }

 private:
  uint64_t state_;
};

// A random pattern of type t drawn to exercise the numbers (verification.md, rule 3): zeros
// of both signs, subnormals, the largest finite values, Inf, NaN and ordinary values.
uint32_t random_value(DType t, SplitMix64& rng);

}  // namespace ncore::model

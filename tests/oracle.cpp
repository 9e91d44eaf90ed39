#include "tests/oracle.h"

#include <algorithm>
#include <stdexcept>

namespace ncore::oracle {

const Format kFp32{"fp32", 8, 23, 127, true, 0};
const Format kTf32{"tf32", 8, 10, 127, true, 13};
const Format kBf16{"bf16", 8, 7, 127, true, 0};
const Format kFp16{"fp16", 5, 10, 15, true, 0};
const Format kE4m3{"e4m3", 4, 3, 7, false, 0};
const Format kE5m2{"e5m2", 5, 2, 15, true, 0};

namespace {

using u128 = unsigned __int128;

int bit_length(u128 v) {
  const uint64_t high = static_cast<uint64_t>(v >> 64), low = static_cast<uint64_t>(v);
  if (high) return 128 - __builtin_clzll(high);
  return low ? 64 - __builtin_clzll(low) : 0;
}

int trailing_zeros(u128 v) {
  const uint64_t low = static_cast<uint64_t>(v);
  return low ? __builtin_ctzll(low) : 64 + __builtin_ctzll(static_cast<uint64_t>(v >> 64));
}

// Same value with the mantissa's trailing zeros moved into the exponent.
Dyadic normalize(Dyadic d) {
  if (d.mant == 0) return {d.negative, 0, 0};
  const int tz = trailing_zeros(d.mant);
  d.mant >>= tz;
  d.exp += tz;
  return d;
}

int compare_magnitude(const Dyadic& a0, const Dyadic& b0) {
  const Dyadic a = normalize(a0), b = normalize(b0);
  if (a.mant == 0 || b.mant == 0) return (a.mant != 0) - (b.mant != 0);
  const int top_a = a.exp + bit_length(a.mant), top_b = b.exp + bit_length(b.mant);
  if (top_a != top_b) return top_a < top_b ? -1 : 1;
  // Same leading position: align to the smaller exponent (both mantissas are short).
  const int e = std::min(a.exp, b.exp);
  const u128 ma = a.mant << (a.exp - e), mb = b.mant << (b.exp - e);
  return ma < mb ? -1 : ma > mb ? 1 : 0;
}

// The positive value a pattern's fields give by the normal/subnormal formula, ignoring the
// special encodings: the value an exponent range without limit would give that pattern.
Dyadic formula_value(const Format& f, uint64_t magnitude_pattern) {
  const uint64_t e = magnitude_pattern >> f.man_bits;
  const uint64_t m = magnitude_pattern & ((uint64_t{1} << f.man_bits) - 1);
  if (e == 0) return normalize({false, m, 1 - f.bias - f.man_bits});
  return normalize({false, (uint64_t{1} << f.man_bits) | m,
                    static_cast<int>(e) - f.bias - f.man_bits});
}

uint64_t max_finite_pattern(const Format& f) {
  const uint64_t all_exp = (uint64_t{1} << f.exp_bits) - 1;
  const uint64_t all_man = (uint64_t{1} << f.man_bits) - 1;
  return f.has_inf ? ((all_exp - 1) << f.man_bits) | all_man : (all_exp << f.man_bits) | (all_man - 1);
}

uint32_t with_sign(const Format& f, bool negative, uint64_t magnitude) {
  const uint64_t sign = negative ? uint64_t{1} << (f.exp_bits + f.man_bits) : 0;
  return static_cast<uint32_t>((sign | magnitude) << f.container_shift);
}

uint32_t canonical_nan(const Format& f) {
  const uint64_t all_exp = (uint64_t{1} << f.exp_bits) - 1;
  if (!f.has_inf) return with_sign(f, false, (all_exp << f.man_bits) | ((1u << f.man_bits) - 1));
  return with_sign(f, false, (all_exp << f.man_bits) | (uint64_t{1} << (f.man_bits - 1)));
}

uint32_t overflow(const Format& f, bool negative, bool saturate) {
  if (saturate) return with_sign(f, negative, max_finite_pattern(f));
  if (!f.has_inf) return canonical_nan(f);
  return with_sign(f, negative, ((uint64_t{1} << f.exp_bits) - 1) << f.man_bits);
}

}  // namespace

bool is_zero(const Dyadic& a) { return a.mant == 0; }

int compare(const Dyadic& a, const Dyadic& b) {
  if (is_zero(a) && is_zero(b)) return 0;
  const bool na = a.negative && !is_zero(a), nb = b.negative && !is_zero(b);
  if (na != nb) return na ? -1 : 1;
  const int c = compare_magnitude(a, b);
  return na ? -c : c;
}

Dyadic add(const Dyadic& a0, const Dyadic& b0) {
  const Dyadic a = normalize(a0), b = normalize(b0);
  if (a.mant == 0) return b;
  if (b.mant == 0) return a;
  const int top_a = a.exp + bit_length(a.mant), top_b = b.exp + bit_length(b.mant);
  if (std::max(top_a, top_b) - std::min(a.exp, b.exp) > 126) {
    // Too far apart for 128 bits. When the larger operand has at most 40 significant bits,
    // the smaller one lies more than 80 binades below it and can be replaced by any value of
    // its sign that is too: every rounding to a format of <= 32-bit precision (the nearest
    // value, the tie test, and floor(fraction * 2^32)) comes out the same.
    const Dyadic& big = top_a > top_b ? a : b;
    const Dyadic& small = top_a > top_b ? b : a;
    if (bit_length(big.mant) > 40)
      throw std::runtime_error("oracle::add: operands too far apart for 128 bits");
    return add(big, {small.negative, 1, std::max(top_a, top_b) - 84});
  }
  const int e = std::min(a.exp, b.exp);
  const int sa = a.exp - e, sb = b.exp - e;
  const u128 ma = a.mant << sa, mb = b.mant << sb;
  if (a.negative == b.negative) return normalize({a.negative, ma + mb, e});
  if (ma >= mb) return normalize({a.negative, ma - mb, e});
  return normalize({b.negative, mb - ma, e});
}

Dyadic multiply(const Dyadic& a, const Dyadic& b) {
  const Dyadic na = normalize(a), nb = normalize(b);
  if (bit_length(na.mant) + bit_length(nb.mant) > 127)
    throw std::runtime_error("oracle::multiply: product too wide");
  return normalize({a.negative != b.negative, na.mant * nb.mant, na.exp + nb.exp});
}

Decoded decode(const Format& f, uint32_t container) {
  const uint64_t p = container >> f.container_shift;
  const int width = f.exp_bits + f.man_bits;
  const bool negative = (p >> width) & 1;
  const uint64_t magnitude = p & ((uint64_t{1} << width) - 1);
  const uint64_t all_exp = (uint64_t{1} << f.exp_bits) - 1;
  const uint64_t e = magnitude >> f.man_bits;
  const uint64_t m = magnitude & ((uint64_t{1} << f.man_bits) - 1);
  if (f.has_inf && e == all_exp) return {m == 0 ? Kind::kInf : Kind::kNan, {negative, 0, 0}};
  if (!f.has_inf && e == all_exp && m == (uint64_t{1} << f.man_bits) - 1)
    return {Kind::kNan, {negative, 0, 0}};
  Dyadic v = formula_value(f, magnitude);
  v.negative = negative;
  return {Kind::kFinite, v};
}

uint32_t round_special(const Format& f, Kind kind, bool negative, bool saturate) {
  if (kind == Kind::kNan) return canonical_nan(f);
  return overflow(f, negative, saturate);  // Inf
}

uint32_t round(const Format& f, const Dyadic& x, bool stochastic, bool saturate,
               uint32_t random_bits) {
  const bool negative = x.negative;
  Dyadic mag = x;
  mag.negative = false;
  if (is_zero(mag)) return with_sign(f, negative, 0);
  // Largest pattern lo whose value <= |x|, searched over 0 .. max_finite + 1, where
  // max_finite + 1 stands for the first value beyond the format's range.
  const uint64_t top = max_finite_pattern(f) + 1;
  uint64_t lo = 0, hi = top;
  if (compare(formula_value(f, top), mag) <= 0) {
    lo = top;
  } else {
    while (hi - lo > 1) {
      const uint64_t mid = lo + (hi - lo) / 2;
      (compare(formula_value(f, mid), mag) <= 0 ? lo : hi) = mid;
    }
  }
  uint64_t result;
  const Dyadic lo_value = formula_value(f, lo);
  if (lo >= top) {
    result = top;  // at or beyond the first value past the range: overflow
  } else if (compare(lo_value, mag) == 0) {
    result = lo;
  } else {
    const Dyadic hi_value = formula_value(f, lo + 1);
    if (!stochastic) {
      Dyadic midpoint = add(lo_value, hi_value);
      midpoint.exp -= 1;
      const int c = compare(mag, midpoint);
      result = c < 0 ? lo : c > 0 ? lo + 1 : ((lo & 1) ? lo + 1 : lo);
    } else {
      // fraction = (|x| - lo) / (hi - lo); the step is a power of two 2^s.
      Dyadic neg_lo = lo_value;
      neg_lo.negative = true;
      const Dyadic diff = add(mag, neg_lo);
      Dyadic step = add(hi_value, {true, lo_value.mant, lo_value.exp});
      step = normalize(step);
      if (step.mant != 1) throw std::runtime_error("oracle::round: step is not a power of two");
      // floor(diff * 2^(32 - s)).
      const int shift = diff.exp + 32 - step.exp;
      const u128 scaled = shift >= 0 ? diff.mant << shift
                                     : (-shift >= 127 ? u128{0} : diff.mant >> -shift);
      result = scaled + random_bits >= (u128{1} << 32) ? lo + 1 : lo;
    }
  }
  if (result > max_finite_pattern(f)) return overflow(f, negative, saturate);
  return with_sign(f, negative, result);
}

int64_t round_to_int(const Decoded& x, int bits, bool stochastic, uint32_t random_bits) {
  const int64_t lo_limit = -(int64_t{1} << (bits - 1)), hi_limit = (int64_t{1} << (bits - 1)) - 1;
  if (x.kind == Kind::kNan) return 0;
  if (x.kind == Kind::kInf) return x.value.negative ? lo_limit : hi_limit;
  // |x| = mant * 2^exp; split into integer part and fraction exactly.
  const Dyadic v = normalize(x.value);
  if (v.exp >= 40) return v.negative ? lo_limit : hi_limit;
  u128 integer, fraction_scaled;  // fraction as floor(frac * 2^32) and exact remainder flag
  bool fraction_exact_half, fraction_over_half, fraction_nonzero;
  if (v.exp >= 0) {
    integer = v.mant << v.exp;
    fraction_scaled = 0;
    fraction_exact_half = fraction_over_half = fraction_nonzero = false;
  } else {
    const int s = -v.exp;
    integer = s >= 127 ? 0 : v.mant >> s;
    const u128 rem = s >= 127 ? v.mant : v.mant - (integer << s);
    fraction_nonzero = rem != 0;
    // rem / 2^s compared with 1/2, and floor(rem * 2^32 / 2^s).
    fraction_scaled = s <= 32 ? rem << (32 - s) : (s - 32 >= 127 ? 0 : rem >> (s - 32));
    const u128 half = s >= 1 && s <= 127 ? u128{1} << (s - 1) : 0;
    fraction_exact_half = s <= 127 && rem == half;
    fraction_over_half = s <= 127 && rem > half;
  }
  // Round the magnitude, then apply the sign (round-half-even and SR are symmetric).
  bool up;
  if (stochastic) {
    up = fraction_scaled + random_bits >= (u128{1} << 32);
  } else {
    up = fraction_over_half || (fraction_exact_half && (integer & 1));
  }
  (void)fraction_nonzero;
  const u128 magnitude = integer + (up ? 1 : 0);
  if (v.negative) {
    return magnitude > static_cast<u128>(-(lo_limit + 1)) + 1 ? lo_limit
                                                             : -static_cast<int64_t>(magnitude);
  }
  return magnitude > static_cast<u128>(hi_limit) ? hi_limit : static_cast<int64_t>(magnitude);
}

std::string to_string(const Dyadic& d) {
  const Dyadic n = normalize(d);
  std::string digits;
  u128 m = n.mant;
  do {
    digits.insert(digits.begin(), static_cast<char>('0' + static_cast<int>(m % 10)));
    m /= 10;
  } while (m);
  return (n.negative ? "-" : "") + digits + "*2^" + std::to_string(n.exp);
}

}  // namespace ncore::oracle

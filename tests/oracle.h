#pragma once
// An independent oracle for ncore's numerics, written from the format definitions with exact
// wide-integer arithmetic. It shares no code with model/numerics: no decode tables, no FPU,
// no bit tricks. Values are dyadic rationals: (-1)^negative * mant * 2^exp.
// Rounding works by binary search over a format's ordered patterns, comparing exact values.

#include <cstdint>
#include <string>

namespace ncore::oracle {

struct Dyadic {
  bool negative = false;
  unsigned __int128 mant = 0;
  int exp = 0;
};

// The six float formats as the specifications define them.
struct Format {
  const char* name;
  int exp_bits, man_bits, bias;
  bool has_inf;          // OCP E4M3 has no Inf; S.1111.111 is NaN
  int container_shift;   // TF32 sits in the top 19 bits of a 32-bit word
};
extern const Format kFp32, kTf32, kBf16, kFp16, kE4m3, kE5m2;

enum class Kind { kFinite, kInf, kNan };
struct Decoded {
  Kind kind;
  Dyadic value;  // for kInf only the sign is meaningful
};

Decoded decode(const Format& f, uint32_t pattern_in_container);

// Exact comparison of values (signs included; -0 == +0).
int compare(const Dyadic& a, const Dyadic& b);
Dyadic add(const Dyadic& a, const Dyadic& b);
Dyadic multiply(const Dyadic& a, const Dyadic& b);
bool is_zero(const Dyadic& a);

// Rounds an exact value into format f following ncore's documented rules (README, "Numeric
// semantics"). A zero result keeps the sign of x. stochastic: round away from zero iff
// floor(fraction * 2^32) + random_bits >= 2^32.
uint32_t round(const Format& f, const Dyadic& x, bool stochastic, bool saturate,
               uint32_t random_bits);
// The same for a special input: +-Inf or NaN.
uint32_t round_special(const Format& f, Kind kind, bool negative, bool saturate);

// Integer targets: round to an integer, clamp, NaN -> 0.
int64_t round_to_int(const Decoded& x, int bits, bool stochastic, uint32_t random_bits);

std::string to_string(const Dyadic& d);

}  // namespace ncore::oracle

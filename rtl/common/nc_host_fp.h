// The fast build's PE arithmetic (-DNCORE_FAST_PE=ON; rtl/common/README.md): nc_fp_pkg's
// pe_mul and pe_add (and fp32_mul_unit and fp32_add_unit, the vector and scalar engines') computed
// by the host's FPU, which the RTL calls through Verilator's $c.
// Simulation only, never the default; tests/test_host_fp.cpp proves these functions equal to
// the synthesizable fp32_mul and fp32_add (every FP8 and BF16 operand pair, millions of FP32
// pairs), and the fast and default builds of the array and the core give the same outputs and
// cycles (tests/test_rtl_fast.cpp).
//
// Equal only under IEEE binary32 round-to-nearest-even with subnormals kept, each operation
// rounded on its own: the Verilated units that include this header are compiled with
// -ffp-contract=off (cmake/nc_verilate.cmake, HOST_FP), and the array checks the rounding mode
// and the SSE flush/denormals-are-zero flags when the model starts (require_environment).
#pragma once

#include <cfenv>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace nc_host_fp {

inline constexpr uint32_t kCanonicalNan = 0x7FC00000u;  // nc_fp_pkg::Fp32CanonicalNan

inline float to_float(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}
inline uint32_t to_bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return bits;
}

// NC_HOST_FP_MUTANT_*: deliberate faults that only tests/CMakeLists.txt's mutant builds of
// test_host_fp define, to show that the proof catches them.

// Every NaN the FPU makes (a quieted operand, x86's negative default NaN) becomes the RTL's one.
inline uint32_t canonical(uint32_t bits) {
#ifndef NC_HOST_FP_MUTANT_NAN_KEPT
  if ((bits & 0x7FFFFFFFu) > 0x7F800000u) return kCanonicalNan;
#endif
  return bits;
}

// nc_fp_pkg::fp_unpacked_t (38 bits, MSB first: is_nan, is_inf, is_zero, sign, exp (10-bit
// signed, the unbiased exponent of sig[23]), sig (24 bits)) back to FP32 bits: pack_fp32.
inline uint32_t pack(uint64_t u) {
  const uint32_t sign = static_cast<uint32_t>(u >> 34) & 1u;
  const uint32_t sig = static_cast<uint32_t>(u) & 0xFFFFFFu;
  if (__builtin_expect(((u >> 35) & 7u) != 0, 0)) {  // NaN, Inf or zero
    if ((u >> 37) & 1u) return kCanonicalNan;
    if ((u >> 36) & 1u) return sign << 31 | 0x7F800000u;
    return sign << 31;
  }
  // Sign-extend the 10-bit exponent.
  const int exp = static_cast<int>(static_cast<int32_t>(static_cast<uint32_t>(u >> 24) << 22) >> 22);
#ifdef NC_HOST_FP_MUTANT_SUBNORMAL_AS_NORMAL
  if (true) {
#else
  if (__builtin_expect(exp >= -126, 1)) {
#endif
    return sign << 31 | static_cast<uint32_t>(exp + 127) << 23 | (sig & 0x7FFFFFu);
  }
  return sign << 31 | sig >> (-126 - exp);  // subnormal: 1 to 23 places right
}

// fp32_mul(a, b) on unpacked operands.
inline uint32_t mul(uint64_t a, uint64_t b) {
  return canonical(to_bits(to_float(pack(a)) * to_float(pack(b))));
}

// fp32_mul_unit(a, b): the same product on FP32 bits (the vector and scalar engines').
inline uint32_t mul_bits(uint32_t a, uint32_t b) { return canonical(to_bits(to_float(a) * to_float(b))); }

// fp32_add(a, b) on FP32 bits.
inline uint32_t add(uint32_t a, uint32_t b) { return canonical(to_bits(to_float(a) + to_float(b))); }

// What makes the host's results differ from the RTL's, or empty: a rounding mode other than
// round-to-nearest-even, the SSE flush-to-zero or denormals-are-zero flag, or a multiply and
// add fused into one rounding (which -ffp-contract=off rules out in the unit that calls this).
inline std::string environment_error() {
  std::string error;
  if (std::fegetround() != FE_TONEAREST) error += " rounding mode is not round-to-nearest-even;";
#if defined(__x86_64__) || defined(__i386__)
  const unsigned csr = _mm_getcsr();
  if (csr & 0x8000u) error += " SSE flush-to-zero (MXCSR.FTZ) is set;";
  if (csr & 0x0040u) error += " SSE denormals-are-zero (MXCSR.DAZ) is set;";
#endif
  // (1 + 2^-12)^2 - (1 + 2^-11): rounded separately, the square's 2^-24 is a tie to even and
  // the difference is 0; fused, it is 2^-24. volatile keeps the compiler from folding it.
  volatile uint32_t one_plus = 0x3F800800u, minus = 0xBF801000u;
  if (add(to_bits(to_float(one_plus) * to_float(one_plus)), minus) != 0)
    error += " a multiply and an add were fused (build with -ffp-contract=off);";
  return error;
}

// Called from the fast array's initial block: the run stops with an error before the first
// cycle rather than compute anything the default build would not.
inline void require_environment() {
  const std::string error = environment_error();
  if (!error.empty())
    throw std::runtime_error("the fast PE build (NCORE_FAST_PE) needs the default floating-point "
                             "environment:" + error);
}

}  // namespace nc_host_fp

#pragma once
// The scalar engine's activation functions: each is one fixed sequence of IEEE binary32
// operations (round to nearest even, as fp32_add / fp32_mul) plus exponent arithmetic, so the
// RTL (rtl/scalar/nc_act_pkg.sv) computes the same bits. rtl/scalar/README.md documents each
// approximation and its measured error against the exact function.

#include <cstdint>
#include <string_view>

#include "model/isa/isa_gen.h"

namespace ncore::model {

// The functions are the ISA's (model/isa/ncore.isa, enum act_func).
using isa::ActFunc;
std::string_view act_func_name(ActFunc f);
ActFunc parse_act_func(std::string_view name);  // throws ncore::Error

// The shared units of a lane, exposed for tests. Arguments and results are FP32 bits.
// e^a = p * 2^k: a clamped to [-104, 89], k = rne(a log2e), r = a - k ln2 (in two parts),
// p = degree-7 Taylor polynomial of e^r (Horner); act_exp scales p by 2^k in two steps.
struct ExpParts {
  uint32_t p;
  int k;
};
ExpParts act_exp_parts(uint32_t a);
uint32_t act_exp(uint32_t a);
uint32_t act_reciprocal(uint32_t d);  // 1/d: linear seed, three Newton-Raphson steps
uint32_t act_rsqrt(uint32_t x);       // 1/sqrt(x): linear seed, three Newton-Raphson steps

// func(t) for a pre-activation value t = x * scale + bias (already rounded to FP32).
uint32_t act_eval(ActFunc f, uint32_t t);

// The exact function in double precision, for measuring the error.
double act_reference(ActFunc f, double t);

}  // namespace ncore::model

// Benchmark (not a test): each scalar-engine function's error against the exact function
// (double precision), over every FP32 input class: a stride through all 2^32 patterns (every
// exponent, both signs, subnormals, Inf, NaN) plus a dense sweep of the range where the function
// varies. Prints max ulp (in units of the FP32 result's last place) and max relative error,
// where the exact result is a finite nonzero FP32 value (relative error: normal results only).

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "model/vector/activation.h"
#include "model/common/numerics.h"

namespace {

using ncore::model::ActFunc;

struct Error {
  double max_ulp = 0, max_rel = 0;
  uint32_t worst_input = 0;
  uint64_t inputs = 0, special_mismatches = 0;
};

double ulp_of(double exact) {
  const float f = static_cast<float>(exact);
  const float next = std::nextafter(std::fabs(f), INFINITY);
  const double u = static_cast<double>(next) - std::fabs(static_cast<double>(f));
  return u > 0 ? u : std::ldexp(1.0, -149);
}

void measure(ActFunc f, uint32_t x, Error& e) {
  ++e.inputs;
  const uint32_t got_bits = ncore::model::act_eval(f, x);
  const double got = ncore::model::bits_to_float(got_bits);
  const double exact = ncore::model::act_reference(f, ncore::model::bits_to_float(x));
  if (std::isnan(exact) || std::isinf(exact) || std::fabs(exact) > 3.4028234663852886e38 ||
      exact == 0) {
    // Special results must be exactly right (NaN for NaN; Inf; zero).
    const bool same = (std::isnan(exact) && std::isnan(got)) ||
                      (!std::isnan(exact) && static_cast<float>(exact) == static_cast<float>(got));
    if (!same) ++e.special_mismatches;
    return;
  }
  if (std::isnan(got) || std::isinf(got)) {
    ++e.special_mismatches;
    return;
  }
  const double ulps = std::fabs(got - exact) / ulp_of(exact);
  const double rel = std::fabs(got - exact) / std::fabs(exact);
  if (ulps > e.max_ulp) {
    e.max_ulp = ulps;
    e.worst_input = x;
  }
  if (rel > e.max_rel && std::fabs(exact) >= 0x1p-126) e.max_rel = rel;  // normal results
}

}  // namespace

int main(int argc, char** argv) {
  const uint32_t stride = argc > 1 ? static_cast<uint32_t>(std::strtoul(argv[1], nullptr, 0)) : 251;
  fmt::print("| function | inputs | max error (ulp) | max relative error | worst input | wrong specials |\n");
  fmt::print("|---|---|---|---|---|---|\n");
  for (int i = 0; i < ncore::isa::kNumActFunc; ++i) {
    const auto f = static_cast<ActFunc>(i);
    Error e;
    for (uint64_t x = 0; x <= 0xFFFFFFFFull; x += stride) measure(f, static_cast<uint32_t>(x), e);
    // Dense: every pattern with |x| in [2^-4, 2^5) (where the non-linear functions bend).
    for (uint32_t x = 0x3D800000u; x < 0x42000000u; x += 7) {
      measure(f, x, e);
      measure(f, x | 0x80000000u, e);
    }
    fmt::print("| {} | {} | {:.2f} | {:.2e} | 0x{:08x} ({:g}) | {} |\n",
               ncore::model::act_func_name(f), e.inputs, e.max_ulp, e.max_rel, e.worst_input,
               ncore::model::bits_to_float(e.worst_input), e.special_mismatches);
  }
  return 0;
}

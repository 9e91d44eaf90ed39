#pragma once
// FP32 operands drawn so that products and sums land everywhere: subnormal results, overflow,
// cancellation, exact ties and special values (test_fp_rtl, test_host_fp).

#include <cstdint>

#include "model/common/numerics.h"

namespace ncore::test {

inline uint32_t operand(model::SplitMix64& rng) {
  using model::DType;
  switch (rng.below(6)) {
    case 0: return rng.next32();
    case 1: return model::random_value(DType::kFp32, rng);
    case 2: return (rng.next32() & 0x80FFFFFFu) | ((rng.below(48)) << 23);  // tiny
    case 3: return (rng.next32() & 0x80FFFFFFu) | ((200 + rng.below(54)) << 23);  // huge
    case 4: return model::to_fp32_bits(DType::kBf16, model::random_value(DType::kBf16, rng));
    default: return (rng.next32() & 0x807FFFFFu) | ((120 + rng.below(16)) << 23);  // near 1
  }
}

}  // namespace ncore::test

#pragma once
// Tiles a GEMM into the tensor engine's instructions, the way a kernel would:
// out[N_st, M_mv] = stationary[K, N_st]^T @ moving[K, M_mv], with K split into array-row
// blocks (one PSUM accumulation group each), the stationary's free size into array-column
// blocks (one LoadStationary each) and the moving's free size into PSUM-bank chunks of at
// most 512 (one MultiplyMoving each, up to 8 banks in flight). Operands are laid out in SBUF,
// one K block after another, contiguous along the free axis.

#include <cstdint>
#include <vector>

#include "model/sbuf.h"
#include "model/tensor_isa.h"

namespace ncore::tb {

struct GemmShape {
  int k = 128;
  int stationary_free = 128;  // N in `ncore gemm`: output partitions
  int moving_free = 512;      // M in `ncore gemm`: output elements per partition
  model::DType stationary_type = model::DType::kBf16;
  model::DType moving_type = model::DType::kBf16;
};

struct GemmPlan {
  std::vector<model::TeInstruction> program;
  uint64_t macs = 0;
};

// Writes both operands into sbuf (drawn from rng: every value class when `all_classes`,
// else ordinary finite values) and returns the program. Throws ncore::Error when the
// operands do not fit the SBUF.
GemmPlan plan_gemm(const GemmShape& shape, int rows, int cols, model::Sbuf& sbuf,
                   model::SplitMix64& rng, bool all_classes);

}  // namespace ncore::tb

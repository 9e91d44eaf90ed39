#pragma once
// Tiles a GEMM into the tensor engine's instructions, the way a kernel would:
// out[N_st, M_mv] = stationary[K, N_st]^T @ moving[K, M_mv], with K split into array-row
// blocks (one PSUM accumulation group each), the stationary's free size into array-column
// blocks (one LoadStationary each) and the moving's free size into PSUM-bank chunks of at
// most 512 (one MultiplyMoving each, up to 8 banks in flight). Operands are laid out in SBUF,
// one K block after another, contiguous along the free axis.

#include <cstdint>
#include <vector>

#include <string>

#include "model/common/sbuf.h"
#include "model/tensor/tensor_engine.h"
#include "model/tensor/tensor_isa.h"

namespace ncore::tb {

// How the tensor engine runs the GEMM (rtl/tensor/README.md, "Modes"):
//   dense        one K row per PE row
//   double-row   FP8, two K rows per PE row: K blocks of 2 x rows
//   transpose    no GEMM: each K block of the stationary is transposed into PSUM by an
//                identity moving tile (out[N_st, K]); the moving free size is unused
//   sparse-4:G   the stationary is drawn M:N sparse along K (4 nonzeros in every G rows,
//                random places) and loaded compressed with its tags: K blocks of rows/4 x G
enum class GemmMode { kDense, kDoubleRow, kTranspose, kSparse4of8, kSparse4of12, kSparse4of16 };
GemmMode parse_gemm_mode(const std::string& name);  // throws ncore::Error naming the choices
std::string gemm_mode_name(GemmMode mode);
model::TeModes gemm_mode_modes(GemmMode mode);

struct GemmShape {
  int k = 128;
  int stationary_free = 128;  // N in `ncore gemm`: output partitions
  int moving_free = 512;      // M in `ncore gemm`: output elements per partition
  model::DType stationary_type = model::DType::kBf16;
  model::DType moving_type = model::DType::kBf16;
  GemmMode mode = GemmMode::kDense;
  // Tiling (split codes: 0 none, 1 two tiles, 2 four): a batch of `batch` independent
  // matmuls of [K, N] x [K, M], each fitting one tile, spread over the diagonal tiles.
  int row_split = 0, col_split = 0, batch = 1;
};

struct GemmPlan {
  std::vector<model::TeInstruction> program;
  uint64_t macs = 0;  // as the engine counts them: dense-equivalent, 0 for a transpose
};

// Writes both operands into sbuf (drawn from rng: every value class when `all_classes`,
// else ordinary finite values) and returns the program. Throws ncore::Error when the
// operands do not fit the SBUF.
GemmPlan plan_gemm(const GemmShape& shape, int rows, int cols, model::Sbuf& sbuf,
                   model::SplitMix64& rng, bool all_classes);

}  // namespace ncore::tb

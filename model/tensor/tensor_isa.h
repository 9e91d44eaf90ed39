#pragma once
// The tensor engine's instruction: the ISA's te format as it is (isa::TeInstruction, generated
// from model/isa/ncore.isa: the payload fields with the opcode and a tag), its refusal codes and
// sparsity modes, and helpers over it.

#include <cstdint>
#include <string>
#include <string_view>

#include "model/common/numerics.h"
#include "model/isa/isa_gen.h"

namespace ncore::model {

using isa::TeError;
std::string_view te_error_name(TeError e);

// M:N structured sparsity of the stationary along K: 4 of every G consecutive K rows kept.
using isa::TeSparsity;
// G, the group length (4 for dense: every row is kept).
inline int sparsity_group(TeSparsity s) { return 4 + 4 * static_cast<int>(s); }

// Row and column tiling: the PE rows (columns) split into 1, 2 or 4 tiles (split code 0, 1, 2;
// 3 is illegal). An instruction uses PE rows [row_tile * Rows/tiles, +Rows/tiles) and columns
// [col_tile * Cols/tiles, +Cols/tiles): its operands lie on the partitions of those rows, its
// output on the PSUM partitions of those columns. MMs on disjoint tiles run in parallel.
struct TeTiling {
  int row_split = 0, row_tile = 0, col_split = 0, col_tile = 0;
  bool operator==(const TeTiling& o) const {
    return row_split == o.row_split && row_tile == o.row_tile && col_split == o.col_split &&
           col_tile == o.col_tile;
  }
};

// The instruction (isa::TeInstruction). Modes (the same on an LS and on every MM that uses its
// stationary; see rtl/tensor/README.md for layouts and arithmetic):
//   double_row  FP8 only: each partition holds two K rows, so K = 2 * k.
//   transpose   PSUM[m][n] = stationary[k*][m], bit for bit, k* = last k with moving[k][n]
//               nonzero: with an identity moving tile, the stationary transposed.
//   sparsity    the stationary is compressed M:N along K; tags give each kept row's place.
// Forbidden (kModeCombo): double_row with transpose, sparsity or column tiling, transpose with
// sparsity, transpose with accumulate.
using isa::Opcode;
using isa::TeInstruction;

inline TeTiling tiling_of(const TeInstruction& i) {
  return {i.row_split, i.row_tile, i.col_split, i.col_tile};
}
inline void set_tiling(TeInstruction& i, const TeTiling& t) {
  i.row_split = t.row_split;
  i.row_tile = t.row_tile;
  i.col_split = t.col_split;
  i.col_tile = t.col_tile;
}

// K rows held in each SBUF partition (replicas of the operand read per access): 2 for
// double-row, G / 4 for a sparse MM's moving tile, else 1.
int te_replicas(const TeInstruction& i);
inline constexpr int kMaxTeReplicas = 4;
std::string describe(const TeInstruction& i);

TeInstruction load_stationary(DType t, int k, int m, uint32_t addr, uint32_t stride,
                              uint8_t tag = 0);
TeInstruction multiply_moving(DType t, int k, int n, uint32_t addr, uint32_t stride, int bank,
                              int offset, bool accumulate, uint8_t tag = 0);

}  // namespace ncore::model

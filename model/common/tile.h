#pragma once
// A dense 2-D tile of bit patterns: the unit the engines, the SBUF and the tests exchange.

#include <cstdint>
#include <vector>

#include "model/common/numerics.h"

namespace ncore::model {

// A dense 2-D tile of bit patterns, row-major: rows lie on SBUF/PSUM partitions.
struct Tile {
  DType dtype = DType::kBf16;
  int rows = 0;
  int cols = 0;
  std::vector<uint32_t> bits;

  Tile() = default;
  Tile(DType t, int r, int c) : dtype(t), rows(r), cols(c), bits(static_cast<size_t>(r) * c) {}
  uint32_t& at(int r, int c) { return bits[static_cast<size_t>(r) * cols + c]; }
  uint32_t at(int r, int c) const { return bits[static_cast<size_t>(r) * cols + c]; }
};

// A tile of random patterns that exercises every value class (numerics.h, random_value).
Tile random_tile(DType t, int rows, int cols, SplitMix64& rng);

}  // namespace ncore::model

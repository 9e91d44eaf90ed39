#include "model/common/tile.h"

namespace ncore::model {

Tile random_tile(DType t, int rows, int cols, SplitMix64& rng) {
  Tile tile(t, rows, cols);
  for (auto& b : tile.bits) b = random_value(t, rng);
  return tile;
}

}  // namespace ncore::model

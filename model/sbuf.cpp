#include "model/sbuf.h"

#include <fmt/format.h>

#include "model/error.h"

namespace ncore::model {

Sbuf::Sbuf(int partitions, uint32_t bytes_per_partition)
    : partitions_(partitions),
      bytes_(bytes_per_partition),
      data_(static_cast<size_t>(partitions) * bytes_per_partition) {}

void Sbuf::check(int partition, uint32_t addr, int bytes) const {
  if (partition < 0 || partition >= partitions_ || bytes < 1 || bytes > 4 ||
      static_cast<uint64_t>(addr) + bytes > bytes_)
    throw Error(fmt::format("SBUF access outside the buffer: partition {} (of {}), bytes "
                            "{}..{} (of {})", partition, partitions_, addr, addr + bytes - 1,
                            bytes_));
}

uint32_t Sbuf::read(int partition, uint32_t addr, int bytes) const {
  check(partition, addr, bytes);
  const uint8_t* p = &data_[static_cast<size_t>(partition) * bytes_ + addr];
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void Sbuf::write(int partition, uint32_t addr, int bytes, uint32_t value) {
  check(partition, addr, bytes);
  uint8_t* p = &data_[static_cast<size_t>(partition) * bytes_ + addr];
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(value >> (8 * i));
}

void Sbuf::write_tile(const Tile& tile, uint32_t addr, uint32_t stride) {
  const int bytes = storage_bits(tile.dtype) / 8;
  for (int r = 0; r < tile.rows; ++r)
    for (int c = 0; c < tile.cols; ++c) write(r, addr + c * stride, bytes, tile.at(r, c));
}

Tile Sbuf::read_tile(DType type, int rows, int cols, uint32_t addr, uint32_t stride,
                     int first_partition) const {
  Tile t(type, rows, cols);
  const int bytes = storage_bits(type) / 8;
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      t.at(r, c) = read(first_partition + r, addr + c * stride, bytes);
  return t;
}

void write_te_operand(Sbuf& sbuf, const Tile& logical, const TeModes& modes, bool stationary,
                      uint32_t addr, uint32_t stride, int first_partition) {
  const int bytes = storage_bits(logical.dtype) / 8;
  const bool sparse_moving = !stationary && modes.sparsity != TeSparsity::kDense;
  const int reps = modes.double_row ? 2 : sparse_moving ? sparsity_group(modes.sparsity) / 4 : 1;
  const int group = sparsity_group(modes.sparsity);
  const int partitions = modes.double_row ? logical.rows / 2
                         : sparse_moving  ? logical.rows / group * 4
                                          : logical.rows;
  if (partitions * (modes.double_row ? 2 : sparse_moving ? group / 4 : 1) != logical.rows)
    throw Error(fmt::format("write_te_operand: {} rows do not fill whole partitions in this mode",
                            logical.rows));
  for (int p = 0; p < partitions; ++p) {
    for (int j = 0; j < reps; ++j) {
      const int row = modes.double_row ? j * partitions + p
                      : sparse_moving  ? p / 4 * group + 4 * j + p % 4
                                       : p;
      for (int f = 0; f < logical.cols; ++f)
        sbuf.write(first_partition + p, addr + static_cast<uint32_t>(j * logical.cols + f) * stride, bytes,
                   logical.at(row, f));
    }
  }
}

void write_te_tags(Sbuf& sbuf, const Tile& tags, uint32_t tag_addr, int first_partition) {
  for (int p = 0; p < tags.rows; ++p) {
    for (int m0 = 0; m0 < tags.cols; m0 += 4) {
      uint32_t word = 0;
      for (int i = 0; i < 4 && m0 + i < tags.cols; ++i) word |= (tags.at(p, m0 + i) & 0xF) << (4 * i);
      sbuf.write(first_partition + p, tag_addr + static_cast<uint32_t>(m0 / 2), 2, word);
    }
  }
}

}  // namespace ncore::model

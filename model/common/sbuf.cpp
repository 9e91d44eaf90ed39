#include "model/common/sbuf.h"

#include <cstdlib>
#include <cstring>

#include <fmt/format.h>

#include "model/common/error.h"

namespace ncore::model {

Sbuf::Sbuf(int partitions, uint32_t bytes_per_partition)
    : partitions_(partitions),
      bytes_(bytes_per_partition),
      data_(static_cast<uint8_t*>(std::calloc(static_cast<size_t>(partitions) * bytes_per_partition, 1))) {
  if (!data_ && partitions > 0 && bytes_per_partition > 0)
    throw Error(fmt::format("SBUF: cannot allocate {} partitions of {} bytes", partitions, bytes_per_partition));
}

void Sbuf::Free::operator()(uint8_t* p) const { std::free(p); }

Sbuf::Sbuf(const Sbuf& other) : Sbuf(other.partitions_, other.bytes_) {
  std::memcpy(data_.get(), other.data_.get(), static_cast<size_t>(partitions_) * bytes_);
}

Sbuf& Sbuf::operator=(const Sbuf& other) {
  if (this != &other) *this = Sbuf(other);
  return *this;
}

void Sbuf::check(int partition, uint32_t addr, uint64_t bytes) const {
  if (partition < 0 || partition >= partitions_ || bytes < 1 || static_cast<uint64_t>(addr) + bytes > bytes_)
    throw Error(fmt::format("SBUF access outside the buffer: partition {} (of {}), bytes "
                            "{}..{} (of {})", partition, partitions_, addr, addr + bytes - 1,
                            bytes_));
}

void Sbuf::check_element(int partition, uint32_t addr, int bytes) const {
  if (bytes < 1 || bytes > 4) throw Error(fmt::format("SBUF element of {} bytes (1 to 4)", bytes));
  check(partition, addr, static_cast<uint64_t>(bytes));
}

uint32_t Sbuf::read(int partition, uint32_t addr, int bytes) const {
  check_element(partition, addr, bytes);
  const uint8_t* p = data_.get() + static_cast<size_t>(partition) * bytes_ + addr;
  uint32_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

void Sbuf::write(int partition, uint32_t addr, int bytes, uint32_t value) {
  check_element(partition, addr, bytes);
  uint8_t* p = data_.get() + static_cast<size_t>(partition) * bytes_ + addr;
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(value >> (8 * i));
}

void Sbuf::read_bytes(int partition, uint32_t addr, uint8_t* out, size_t n) const {
  check(partition, addr, n);
  std::memcpy(out, data_.get() + static_cast<size_t>(partition) * bytes_ + addr, n);
}

void Sbuf::write_bytes(int partition, uint32_t addr, const uint8_t* in, size_t n) {
  check(partition, addr, n);
  std::memcpy(data_.get() + static_cast<size_t>(partition) * bytes_ + addr, in, n);
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
  if (bytes < 1 || bytes > 4 || cols < 1) {  // the element check's error, or an empty tile
    for (int r = 0; r < rows; ++r)
      for (int c = 0; c < cols; ++c) t.at(r, c) = read(first_partition + r, addr + c * stride, bytes);
    return t;
  }
  // One range check per partition, then the elements straight from memory.
  const uint64_t span = static_cast<uint64_t>(cols - 1) * stride + static_cast<uint64_t>(bytes);
  for (int r = 0; r < rows; ++r) {
    check(first_partition + r, addr, span);
    const uint8_t* p = data_.get() + static_cast<size_t>(first_partition + r) * bytes_ + addr;
    for (int c = 0; c < cols; ++c, p += stride) {
      uint32_t v = 0;
      for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
      t.at(r, c) = v;
    }
  }
  return t;
}

}  // namespace ncore::model

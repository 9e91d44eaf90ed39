#pragma once
// The state buffer (SBUF): partitions x bytes, byte-addressed within a partition. An engine
// access reads the same free offset in every active partition. Elements are little-endian.

#include <cstdint>
#include <memory>
#include <vector>

#include "model/common/tile.h"

namespace ncore::model {

class Sbuf {
 public:
  Sbuf(int partitions, uint32_t bytes_per_partition);
  Sbuf(const Sbuf& other);
  Sbuf& operator=(const Sbuf& other);
  Sbuf(Sbuf&&) = default;
  Sbuf& operator=(Sbuf&&) = default;

  int partitions() const { return partitions_; }
  uint32_t bytes_per_partition() const { return bytes_; }

  // One element of `bytes` (1, 2 or 4) bytes. Throws ncore::Error when out of range.
  uint32_t read(int partition, uint32_t addr, int bytes) const;
  void write(int partition, uint32_t addr, int bytes, uint32_t value);

  // `n` bytes from `addr` of one partition (a DMA burst, a tensor's row). Throws when out of range.
  void read_bytes(int partition, uint32_t addr, uint8_t* out, size_t n) const;
  void write_bytes(int partition, uint32_t addr, const uint8_t* in, size_t n);

  // tile row r -> partition r (+ first_partition); column c at addr + c * stride.
  void write_tile(const Tile& tile, uint32_t addr, uint32_t stride);
  Tile read_tile(DType type, int rows, int cols, uint32_t addr, uint32_t stride,
                 int first_partition = 0) const;

 private:
  void check(int partition, uint32_t addr, uint64_t bytes) const;
  void check_element(int partition, uint32_t addr, int bytes) const;

  struct Free {
    void operator()(uint8_t* p) const;
  };
  int partitions_;
  uint32_t bytes_;
  // calloc'd: the operating system hands out zero pages as they are first touched, so a core's
  // 28 MiB costs only what its program uses (an instance has 128 cores).
  std::unique_ptr<uint8_t, Free> data_;
};

}  // namespace ncore::model

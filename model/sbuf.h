#pragma once
// The state buffer (SBUF): partitions x bytes, byte-addressed within a partition. An engine
// access reads the same free offset in every active partition. Elements are little-endian.

#include <cstdint>
#include <vector>

#include "model/tensor_engine.h"

namespace ncore::model {

class Sbuf;

// Writes a logical tensor-engine operand in the SBUF layout an instruction with these modes
// reads (rtl/tensor/README.md, "Modes"): double-row [2P, F] as two replicas of [P, F];
// a sparse moving [P/4 * G, F] as G/4 replicas (partition 4g+q, replica j holds row
// g*G + 4j + q); everything else (a sparse stationary is the compressed [P, F]) as is.
// Replica j, element f of partition p lands at addr + (j * F + f) * stride.
// Partition p of the operand is SBUF partition first_partition + p (a row tile's first row).
void write_te_operand(Sbuf& sbuf, const Tile& logical, const TeModes& modes, bool stationary,
                      uint32_t addr, uint32_t stride, int first_partition = 0);
// Packs 4-bit tags [P, M] four per uint16: column m in bits [4 * (m % 4) +: 4] of the uint16
// at tag_addr + 2 * (m / 4).
void write_te_tags(Sbuf& sbuf, const Tile& tags, uint32_t tag_addr, int first_partition = 0);

class Sbuf {
 public:
  Sbuf(int partitions, uint32_t bytes_per_partition);

  int partitions() const { return partitions_; }
  uint32_t bytes_per_partition() const { return bytes_; }

  // One element of `bytes` (1, 2 or 4) bytes. Throws ncore::Error when out of range.
  uint32_t read(int partition, uint32_t addr, int bytes) const;
  void write(int partition, uint32_t addr, int bytes, uint32_t value);

  // tile row r -> partition r (+ first_partition); column c at addr + c * stride.
  void write_tile(const Tile& tile, uint32_t addr, uint32_t stride);
  Tile read_tile(DType type, int rows, int cols, uint32_t addr, uint32_t stride,
                 int first_partition = 0) const;

 private:
  void check(int partition, uint32_t addr, int bytes) const;

  int partitions_;
  uint32_t bytes_;
  std::vector<uint8_t> data_;
};

}  // namespace ncore::model

#pragma once
// Golden model of the tensor engine: LoadStationary, MultiplyMoving and PSUM.
//
// nc_matmul(stationary[K, M], moving[K, N]) -> PSUM[M partitions, N elements of one bank]
// computes stationary^T @ moving. K lies on the partition axis of both operands.
//
// Accumulation order (the contract the RTL follows bit for bit):
//   1. Each operand element is decoded exactly to FP32 (TF32 ignores its 13 container bits).
//   2. product = a * b in IEEE binary32, round-to-nearest-even, subnormals kept. For every
//      narrow pair the product's significand fits in 24 bits, so it rounds only when it leaves
//      FP32's exponent range; FP32 x FP32 is the correctly rounded binary32 product.
//   3. tile[m][n] starts at +0 and adds the products for k = 0, 1, ..., K-1 in that order
//      (PE-row order), one binary32 RNE rounding per add.
//   4. Overwrite writes tile to PSUM; accumulate writes psum + tile (one more rounding).
//   5. Any NaN written to PSUM is the canonical NaN 0x7FC00000.
//
// Modes (set by the LoadStationary, used by every MultiplyMoving of that stationary):
//   double_row (FP8): the stationary is [2P, M] and the moving [2P, N]; PE row p holds K rows
//     p and P + p. Each PE adds its two products first (one rounding), then adds that pair sum
//     to the partial sum from above (one rounding):
//         pair = x[p]*w[p] + x[P+p]*w[P+p];   sum = sum + pair,   p = 0, 1, ..., P-1.
//     FP8 x FP8 products are exact in FP32, so only the two adds round.
//   sparsity 4:G (G = 8, 12, 16): the stationary is compressed to [P, M] (P a multiple of 4)
//     with a tag per element; compressed row r lies in group g = r / 4 and stands for dense
//     row g*G + tag. The moving tile is dense: [P/4 * G, N]. The sum adds, for r = 0..P-1
//     in order, w[r][m] * moving[g*G + tag[r][m]][n]. A tag >= G is out of range: that element
//     adds nothing (the partial sum passes unchanged). Duplicate tags are legal: both elements
//     multiply the same moving row.
//   transpose: no arithmetic. PSUM[m][n] = the stationary's bits at [k*][m], where k* is the
//     last k with moving[k][n] nonzero (any value but +-0; NaN counts), or 0 if there is none.
//     With an identity moving tile this is the stationary transposed, NaN payloads, Inf and -0
//     kept. FP32/TF32 give 32-bit PSUM elements; BF16/FP16 16-bit elements; FP8 16-bit elements
//     with the upper byte zero. 16-bit element e of a bank is bits [16*(e%2) +: 16] of word e/2.

#include <cstdint>
#include <map>
#include <vector>

#include "model/common/numerics.h"
#include "model/common/tile.h"
#include "model/tensor/tensor_isa.h"

namespace ncore::model {

struct TensorEngineConfig {
  int rows = 128;            // PE rows: the largest K
  int cols = 128;            // PE columns: the largest M, and PSUM's partitions
  int psum_banks = 8;
  int bank_elements = 512;   // FP32 elements per partition per bank: the largest N
  uint32_t sbuf_bytes = 229376;  // bytes per SBUF partition (224 KiB), for ISA-level checks
};

class Sbuf;

struct TeModes {
  bool double_row = false;
  bool transpose = false;
  TeSparsity sparsity = TeSparsity::kDense;
  bool operator==(const TeModes& o) const {
    return double_row == o.double_row && transpose == o.transpose && sparsity == o.sparsity;
  }
};
TeModes modes_of(const TeInstruction& i);

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

struct MultiplyMoving {
  MultiplyMoving(int bank = 0, int offset = 0, bool accumulate_ = false, TeTiling tiling_ = {})
      : psum_bank(bank), psum_offset(offset), accumulate(accumulate_), tiling(tiling_) {}
  int psum_bank;
  int psum_offset;           // first element inside the bank
  bool accumulate;           // false: overwrite (opens an accumulation group)
  TeTiling tiling;           // the tile whose stationary it streams through
};

class TensorEngine {
 public:
  explicit TensorEngine(const TensorEngineConfig& config = {});

  const TensorEngineConfig& config() const { return config_; }

  // Caches stationary[K, M]. Throws ncore::Error naming the field, value and limit.
  // In double_row mode the tile is [2P, M]; in sparse mode it is the compressed [P, M] and
  // `tags` (same shape, values 0..15) gives each element's place in its group.
  // With tiling, the stationary occupies one tile of PE rows and columns: MMs of that tiling
  // use it, and it stays until a later LS overlaps its tile.
  void load_stationary(const Tile& stationary, const TeModes& modes = {},
                       const Tile* tags = nullptr, const TeTiling& tiling = {});
  // The stationary an MM of this tiling would use (every segment of its tile holds the same
  // LS, of this tiling), and its properties.
  bool has_stationary(const TeTiling& t = {}) const;
  const TeModes& modes(const TeTiling& t = {}) const;
  int stationary_k(const TeTiling& t = {}) const;
  int stationary_m(const TeTiling& t = {}) const;
  DType stationary_type(const TeTiling& t = {}) const;
  // The tile's PE rows (operand partitions) and columns (output PSUM partitions).
  bool tiling_fits(const TeTiling& t) const;
  int tile_rows(const TeTiling& t) const;
  int tile_cols(const TeTiling& t) const;
  int tile_row0(const TeTiling& t) const;
  int tile_col0(const TeTiling& t) const;

  // Streams moving[K, N] through the cached stationary and writes PSUM[0..M), bank, offset..
  // (K: 2P in double_row mode, P/4 * G in sparse mode.)
  void multiply_moving(const Tile& moving, const MultiplyMoving& mm);

  // Whether a transpose of the tile's stationary writes 16-bit PSUM elements.
  bool transpose_is_narrow(const TeTiling& t = {}) const;

  // ISA level, as the RTL executes it: the error an instruction would raise (checked in the
  // RTL's order), and execution with operands read from SBUF. A rejected instruction
  // changes nothing.
  TeError check(const TeInstruction& instr) const;
  TeError execute(const TeInstruction& instr, const Sbuf& sbuf);
  // execute() without operands (the golden core's timing-only runs): the same errors, the
  // stationary each tile holds, the accumulation groups and the MAC count; PSUM is untouched.
  TeError track(const TeInstruction& instr);

  uint32_t psum(int partition, int bank, int element) const;
  // A word written by another engine (the vector engine's PSUM writes in the core).
  void set_psum(int partition, int bank, int element, uint32_t bits);
  // 16-bit element e of a bank (transpose output): half e % 2 of word e / 2.
  uint32_t psum16(int partition, int bank, int element) const;
  // MMs since the bank's last overwrite, counting that overwrite (0: never written).
  int group_length(int bank) const { return group_length_[bank]; }
  uint64_t macs() const { return macs_; }
  void reset_psum();
  // The PSUM bytes the last MultiplyMoving wrote: in bank `bank` of partitions [partition,
  // partition + partitions), bytes [byte_begin, byte_end) of the bank (16-bit elements for a
  // narrow transpose, words otherwise). For the core's lockstep record of each instruction.
  struct PsumRegion {
    int partition = 0, partitions = 0, bank = 0;
    uint32_t byte_begin = 0, byte_end = 0;
  };
  const PsumRegion& last_psum_region() const { return last_region_; }

 private:
  size_t psum_index(int partition, int bank, int element) const;
  void multiply_double_row(const Tile& moving, const MultiplyMoving& mm);
  void multiply_sparse(const Tile& moving, const MultiplyMoving& mm);
  void multiply_transpose(const Tile& moving, const MultiplyMoving& mm);
  void write_psum(int partition, const MultiplyMoving& mm, int n, uint32_t tile_bits);

  struct Stationary {
    DType type = DType::kBf16;
    int k = 0, m = 0;
    TeModes modes;
    TeTiling tiling;
    std::vector<float> panels;     // decoded, in the kernel's panel layout
    std::vector<float> panels_hi;  // double_row: rows P..2P-1, same layout
    Tile raw;                      // transpose: the bits; sparse: decoded values as FP32 bits
    Tile tags;                     // sparse
    // The moving operand's K: 2P in double_row mode, P/4 * G in sparse mode, else P.
    int k_logical() const;
  };
  Stationary& claim(const TeTiling& t);                 // a new stationary holding tile t
  const Stationary* top_left(const TeTiling& t) const;  // in the tile's first segment
  const Stationary* find(const TeTiling& t) const;      // what an MM of this tiling uses

  TensorEngineConfig config_;
  // The array as a 4 x 4 grid of segments (tiles are whole segments): the LS each holds.
  std::map<int, Stationary> stationaries_;
  int segment_[4][4] = {};
  int next_id_ = 1;
  const Stationary* cur_ = nullptr;  // the stationary of the MM being executed
  int out0_ = 0;                     // its tile's first PSUM partition
  std::vector<float> moving_hi_scratch_;
  std::vector<float> moving_scratch_;  // reused by every MultiplyMoving
  std::vector<float> psum_;        // [bank][partition][element], canonical NaNs only
  std::vector<int> group_length_;
  uint64_t macs_ = 0;
  PsumRegion last_region_;
};

}  // namespace ncore::model

#pragma once
// The vector engine's instructions and their golden semantics; rtl/vector/README.md documents
// the arithmetic.
//
// Each of Lanes lanes streams one partition. A value read from SBUF or PSUM is decoded to
// FP32 (float class) or sign-extended to int32 (integer class: an instruction that uses a
// bitwise or shift operation); the ALUs work on those 32-bit values; the result is cast to
// the output type once, with the instruction's rounding and saturation.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/vector/activation.h"
#include "model/common/numerics.h"
#include "model/common/sbuf.h"

namespace ncore::model {

// Opcodes, ALU operations, memories and refusal codes are the ISA's (model/isa/ncore.isa).
using isa::AluOp;
using isa::Opcode;
using isa::MemSpace;
using isa::VeError;
bool is_bitwise(AluOp op);
std::string_view alu_op_name(AluOp op);
AluOp parse_alu_op(std::string_view name);
// The ISA's name of an opcode, and the vector- or scalar-engine opcode of a name.
std::string_view ve_opcode_name(isa::Opcode op);
isa::Opcode parse_ve_opcode(std::string_view name);

std::string_view ve_error_name(VeError e);

inline constexpr int kVeDims = 4;
// Free-axis access pattern (isa::Access): element i0 + c0*(i1 + c1*(i2 + c2*i3)) (dim 0
// innermost) lies at byte addr + elem_bytes * (s0*i0 + s1*i1 + s2*i2 + s3*i3) of each active
// partition.
using VeAccess = isa::Access;
uint32_t elements(const VeAccess& a);

// The instruction: the ISA's ve format as it is (isa::VeInstruction). s0/s1 of tensor_scalar
// and the scan's initial value are an immediate (FP32 bits, or int32 in the integer class) or,
// with s0_per_partition, the 32-bit word of each partition at SBUF byte address s0. Activation
// (scalar engine): out = act_func(in0 * s0 + s1), and with acc_enable the FP32 sum of the
// results along the whole free pattern, written per partition at SBUF byte address acc_addr
// after the last element (activation_reduce).
using isa::VeInstruction;
// How the result is cast: the instruction's stochastic and saturate bits.
inline CastMode cast_mode(const VeInstruction& in) {
  return {in.stochastic ? Rounding::kStochastic : Rounding::kNearestEven, in.saturate};
}

// One configuration serves both engines built on the same streaming shell: the vector engine
// (every opcode but activation) and the scalar engine (activation only).
struct VeConfig {
  int lanes = 128;
  uint32_t sbuf_bytes = 229376;  // per partition (224 KiB)
  uint32_t psum_bytes = 16384;   // per partition (16 KiB)
  static constexpr uint32_t kMaxSbufFree = 65536;
  static constexpr uint32_t kMaxPsumFree = 4096;
  bool scalar_engine = false;
  bool performance_mode = true;  // NeuronCore-v3's (ve_perf_mode); the trn1 preset has none
  int quadrant() const { return lanes / 4; }
};

// Performance mode: tensor_copy and tensor_scalar from BF16/FP16 to BF16/FP16, SBUF to SBUF,
// unit innermost stride, even rows on 4-byte boundaries: two elements per lane per cycle, one
// 4-byte read and one 4-byte write per pair (rtl/vector/README.md, "Timing").
bool ve_perf_mode(const VeInstruction& in);
// Whether the instruction reads its first operand (src0: all but memset and iota) and its
// second (src1).
bool ve_reads_src0(Opcode op);
bool ve_uses_src1(Opcode op);
// Whether the instruction reads PSUM (an operand it reads lies there) and whether it writes it.
bool ve_reads_psum(const VeInstruction& in);
bool ve_writes_psum(const VeInstruction& in);
// Elements the instruction streams (src0's, or dst's for memset and iota) and writes to dst.
uint32_t ve_source_elements(const VeInstruction& in);
uint32_t ve_dst_elements(const VeInstruction& in);
// bn_stats writes (count, mean, M2) for the even and for the odd elements of at most 512
// (NKI's bn_stats_fmax); bn_aggr writes (mean, variance). rtl/vector/README.md, "Statistics".
inline constexpr uint32_t kBnStatsMaxElements = 512;
inline constexpr uint32_t kBnStatsOutputs = 6;
inline constexpr uint32_t kBnAggrOutputs = 2;
// Whether the instruction's values are int32 (a bitwise op in use) rather than FP32.
bool ve_integer_class(const VeInstruction& in);
// The refusal code the RTL gives, or kNone. `detail` (optional) says which field and why.
VeError ve_check(const VeInstruction& in, const VeConfig& cfg, std::string* detail = nullptr);

// One write the engine makes: the same byte address in partitions [first, first + count),
// one element (1, 2 or 4 bytes, in data[lane]) each. lanes outside the range hold 0.
struct VeWrite {
  MemSpace space = MemSpace::kSbuf;
  uint32_t addr = 0;
  int bytes = 4;
  std::vector<uint32_t> data;  // Lanes entries
};

// The engine's memories as it sees them: SBUF and PSUM, each Lanes partitions of bytes.
struct VeMemory {
  explicit VeMemory(const VeConfig& cfg)
      : sbuf(cfg.lanes, cfg.sbuf_bytes), psum(cfg.lanes, cfg.psum_bytes) {}
  Sbuf& space(MemSpace s) { return s == MemSpace::kSbuf ? sbuf : psum; }
  const Sbuf& space(MemSpace s) const { return s == MemSpace::kSbuf ? sbuf : psum; }
  Sbuf sbuf, psum;
};

// The golden vector engine: an accepted instruction's writes, in the order the RTL makes
// them, computed from the memory as it was when the instruction started; execute() applies
// them. Throws ncore::Error for an instruction ve_check() refuses.
// What an instruction reads and writes, for the core's hazard check between the instructions
// in an engine's pipeline (model/core/core_timing.h, EngineCosts): byte ranges [lo, hi) in a
// partition, each access pattern's whole span, over partitions [first, first + count).
struct VeSpan {
  MemSpace space = MemSpace::kSbuf;
  int64_t lo = 0, hi = 0;
};
struct VeFootprint {
  std::vector<VeSpan> reads, writes;
  int first = 0, count = 0;
  // Whether `later` must wait for this one's results: it reads or overwrites what this writes.
  bool blocks(const VeFootprint& later) const;
};
VeFootprint ve_footprint(const VeInstruction& in);
// Whether the instruction also writes a per-partition reduction (activation, tensor_scalar_reduce).
bool ve_writes_reduction(const VeInstruction& in);

std::vector<VeWrite> ve_writes(const VeInstruction& in, const VeConfig& cfg, const VeMemory& mem);
void ve_apply(const std::vector<VeWrite>& writes, const VeInstruction& in, VeMemory& mem);

// The ALU both engines use (exposed for unit tests): FP32 bits, or int32 in the integer class.
uint32_t ve_alu(AluOp op, uint32_t a, uint32_t b, bool integer_class);
// The stochastic-rounding bits of one lane: a 32-bit xorshift per lane, started from a hash
// of the instruction's seed and the lane number, stepped once per element written.
uint32_t ve_sr_init(uint32_t seed, int lane);
uint32_t ve_sr_next(uint32_t state);

// The engine's timing in cycles from acceptance to completion with single-cycle memory and no
// back-pressure (rtl/vector/README.md, "Timing"): one cycle per read request, plus the write-out
// of each transposed block, plus a fixed pipeline latency (accept, check, read, response
// buffer, write buffer, write).
inline constexpr uint64_t kVeFixedCycles = 6;
// Cycles of one division in bn_stats / bn_aggr (the RTL's DivCycles: a multicycle path).
inline constexpr uint64_t kVeDivCycles = 8;
// iota and affine_select cost what NKI gives for GpSimd, 150 + N: ncore runs them on the
// vector engine, which waits out GpSimd's start-up (rtl/vector/README.md, "GpSimd").
inline constexpr uint64_t kVeAffineFixedCycles = 150;
uint64_t ve_cost_cycles(const VeInstruction& in, const VeConfig& cfg);

}  // namespace ncore::model

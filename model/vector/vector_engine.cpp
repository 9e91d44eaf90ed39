#include "model/vector/vector_engine.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/common/error.h"
#include "model/common/name_table.h"

namespace ncore::model {

bool ve_uses_src1(Opcode op) {
  return op == Opcode::kTensorTensor || op == Opcode::kTensorTensorScan ||
         op == Opcode::kScalarTensorTensor;
}
bool ve_reads_src0(Opcode op) { return op != Opcode::kMemset && op != Opcode::kIota; }
bool ve_reads_psum(const VeInstruction& in) {
  return (ve_reads_src0(in.opcode) && in.src0.space == MemSpace::kPsum) ||
         (ve_uses_src1(in.opcode) && in.src1.space == MemSpace::kPsum);
}
bool ve_writes_psum(const VeInstruction& in) { return in.dst.space == MemSpace::kPsum; }

namespace {
bool uses_src1(Opcode op) { return ve_uses_src1(op); }

bool is_ve_opcode(Opcode op) { return isa::format_of(op) == isa::Format::kVe; }
bool uses_op0(Opcode op) {
  return op == Opcode::kTensorTensor || op == Opcode::kTensorScalar ||
         op == Opcode::kTensorReduce || op == Opcode::kTensorTensorScan ||
         op == Opcode::kScalarTensorTensor || op == Opcode::kTensorScalarReduce;
}
bool is_activation(Opcode op) { return op == Opcode::kActivation; }
bool uses_op1(Opcode op) {
  return op == Opcode::kTensorScalar || op == Opcode::kTensorTensorScan ||
         op == Opcode::kScalarTensorTensor || op == Opcode::kTensorScalarReduce;
}
// The opcodes whose operations may be bitwise (the integer class); the others are float only.
bool allows_integer(Opcode op) {
  return op == Opcode::kTensorTensor || op == Opcode::kTensorScalar ||
         op == Opcode::kTensorReduce || op == Opcode::kTensorTensorScan;
}
bool moves_bits(Opcode op) { return op == Opcode::kTranspose || op == Opcode::kShuffle; }
// Which scalar operands an opcode reads (an immediate, or one word per partition).
bool uses_s0(Opcode op) {
  return op == Opcode::kTensorScalar || op == Opcode::kActivation ||
         op == Opcode::kTensorTensorScan || op == Opcode::kScalarTensorTensor ||
         op == Opcode::kTensorScalarReduce;
}
bool uses_s1(Opcode op) { return op == Opcode::kTensorScalar || op == Opcode::kActivation; }
// Whether the instruction writes a per-partition FP32 reduction at acc_addr after its elements.
bool writes_acc(const VeInstruction& in) {
  return (in.opcode == Opcode::kActivation || in.opcode == Opcode::kTensorScalarReduce) &&
         in.acc_enable;
}

bool is_nan32(uint32_t b) { return (b & 0x7FFFFFFFu) > 0x7F800000u; }
// Sign-magnitude FP32 bits to an unsigned key whose order is the numeric order (-0 < +0).
uint32_t order_key(uint32_t b) { return (b & 0x80000000u) ? ~b : (b | 0x80000000u); }

int32_t sign_extend_to_int32(DType t, uint32_t bits) {
  const int n = storage_bits(t);
  const uint32_t masked = bits & storage_mask(t);
  const uint32_t sign_bit = 1u << (n - 1);
  return static_cast<int32_t>((masked ^ sign_bit) - sign_bit);
}

uint32_t clamp_int32(DType t, int32_t v) {
  const int n = storage_bits(t);
  const int64_t lo = -(int64_t{1} << (n - 1)), hi = (int64_t{1} << (n - 1)) - 1;
  return static_cast<uint32_t>(std::clamp<int64_t>(v, lo, hi)) & storage_mask(t);
}

int dtype_bytes(DType t) { return storage_bits(t) / 8; }

uint32_t space_bytes(const VeConfig& cfg, MemSpace s) {
  return s == MemSpace::kSbuf ? cfg.sbuf_bytes : cfg.psum_bytes;
}

// Offset in elements of element e of the pattern.
int64_t element_offset(const VeAccess& a, uint32_t e) {
  int64_t off = 0;
  for (int d = 0; d < kVeDims; ++d) {
    off += static_cast<int64_t>(a.stride[d]) * (e % a.count[d]);
    e /= a.count[d];
  }
  return off;
}
uint32_t element_addr(const VeAccess& a, int bytes, uint32_t e) {
  return static_cast<uint32_t>(a.addr + bytes * element_offset(a, e));
}

bool access_in_range(const VeAccess& a, int bytes, uint32_t limit) {
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < kVeDims; ++d) {
    const int64_t span = static_cast<int64_t>(a.stride[d]) * (a.count[d] - 1);
    (span < 0 ? lo : hi) += span;
  }
  return a.addr % bytes == 0 && static_cast<int64_t>(a.addr) + bytes * lo >= 0 &&
         static_cast<int64_t>(a.addr) + bytes * (hi + 1) <= limit;
}

bool shape_ok(const VeAccess& a) {
  for (uint16_t c : a.count) {
    if (c == 0) return false;
  }
  const uint32_t limit =
      a.space == MemSpace::kSbuf ? VeConfig::kMaxSbufFree : VeConfig::kMaxPsumFree;
  return elements(a) <= limit;
}

// One tensor_scalar stage: bypass passes the tensor-side value x whatever `reverse` says.
uint32_t scalar_stage(AluOp op, bool reverse, uint32_t x, uint32_t s, bool integer) {
  if (op == AluOp::kBypass) return x;
  return reverse ? ve_alu(op, s, x, integer) : ve_alu(op, x, s, integer);
}

// iota and affine_select: offset + sum(step[d] * i[d]) for element e of dst's pattern, in
// int32 arithmetic that wraps (the partition's term is added per lane).
uint32_t affine_base(const VeInstruction& in, uint32_t e) {
  uint32_t v = static_cast<uint32_t>(in.offset);
  for (int d = 0; d < kVeDims; ++d) {
    v += static_cast<uint32_t>(in.step[d]) * (e % in.dst.count[d]);
    e /= in.dst.count[d];
  }
  return v;
}

bool compare_with_zero(isa::CmpOp op, int32_t v) {
  switch (op) {
    case isa::CmpOp::kEqual: return v == 0;
    case isa::CmpOp::kNotEqual: return v != 0;
    case isa::CmpOp::kGreater: return v > 0;
    case isa::CmpOp::kGreaterEqual: return v >= 0;
    case isa::CmpOp::kLess: return v < 0;
    default: return v <= 0;
  }
}

uint32_t fp32_of_count(uint32_t n) { return to_fp32_bits(DType::kInt32, n); }

// bn_stats of one partition's FP32 values (rtl/vector/README.md, "Statistics"): for the even
// and then the odd elements, shifted sums about the first of them, then one division.
std::vector<uint32_t> bn_stats(const std::vector<uint32_t>& x) {
  std::vector<uint32_t> out;
  for (size_t parity = 0; parity < 2; ++parity) {
    const uint32_t count = static_cast<uint32_t>((x.size() + 1 - parity) / 2);
    if (count == 0) {
      out.insert(out.end(), {0u, 0u, 0u});
      continue;
    }
    const uint32_t shift = x[parity];
    uint32_t sum = 0, sum_sq = 0;
    for (size_t j = parity; j < x.size(); j += 2) {
      const uint32_t d = fp32_sub(x[j], shift);
      sum = fp32_add(sum, d);
      sum_sq = fp32_add(sum_sq, fp32_mul(d, d));
    }
    const uint32_t q = fp32_div(sum, fp32_of_count(count));
    out.insert(out.end(), {fp32_of_count(count), fp32_add(shift, q), fp32_sub(sum_sq, fp32_mul(sum, q))});
  }
  return out;
}

// bn_aggr of one partition's (count, mean, M2) triples: mean and variance (M2 / count).
std::vector<uint32_t> bn_aggr(const std::vector<uint32_t>& x) {
  const uint32_t shift = x[1];
  uint32_t count = 0, a = 0, b = 0, m2 = 0;
  for (size_t i = 0; i + 2 < x.size(); i += 3) {
    const uint32_t d = fp32_sub(x[i + 1], shift);
    const uint32_t cd = fp32_mul(x[i], d);
    count = fp32_add(count, x[i]);
    a = fp32_add(a, cd);
    b = fp32_add(b, fp32_mul(cd, d));
    m2 = fp32_add(m2, x[i + 2]);
  }
  const uint32_t q = fp32_div(a, count);
  const uint32_t total_m2 = fp32_add(m2, fp32_sub(b, fp32_mul(a, q)));
  return {fp32_add(shift, q), fp32_div(total_m2, count)};
}

}  // namespace

uint32_t elements(const VeAccess& a) {
  uint64_t n = 1;
  for (int c : a.count) n *= static_cast<uint64_t>(c);
  return static_cast<uint32_t>(std::min<uint64_t>(n, 0xFFFFFFFFu));
}

bool is_bitwise(AluOp op) { return static_cast<int>(op) >= static_cast<int>(AluOp::kAnd); }
std::string_view alu_op_name(AluOp op) { return name_of(isa::kAluOpNames, op); }
std::string_view ve_opcode_name(isa::Opcode op) {
  const isa::OpcodeInfo* info = isa::opcode_info(op);
  return info ? info->name : "?";
}
std::string_view ve_error_name(VeError e) { return name_of(isa::kVeErrorNames, e); }
AluOp parse_alu_op(std::string_view name) {
  return value_of<AluOp>(isa::kAluOpNames, name, "ALU operation");
}
isa::Opcode parse_ve_opcode(std::string_view name) {
  std::string names;
  for (const auto& o : isa::kOpcodes) {
    if (o.format != isa::Format::kVe) continue;
    if (name == o.name) return o.opcode;
    names += (names.empty() ? "" : ", ") + std::string(o.name);
  }
  throw Error(fmt::format("unknown vector-engine operation '{}': expected one of {}", name, names));
}

bool ve_perf_mode(const VeInstruction& in) {
  auto half = [](DType t) { return t == DType::kBf16 || t == DType::kFp16; };
  auto paired = [](const VeAccess& a) {
    bool even = a.space == MemSpace::kSbuf && a.stride[0] == 1 && a.count[0] % 2 == 0 &&
                a.addr % 4 == 0;
    for (int d = 1; d < kVeDims; ++d) even = even && a.stride[d] % 2 == 0;
    return even;
  };
  return (in.opcode == Opcode::kTensorCopy || in.opcode == Opcode::kTensorScalar) &&
         half(in.in0) && half(in.out) && paired(in.src0) && paired(in.dst) &&
         in.src0.count[0] == in.dst.count[0];
}

bool ve_integer_class(const VeInstruction& in) {
  if (!allows_integer(in.opcode)) return false;
  return (uses_op0(in.opcode) && is_bitwise(in.op0)) ||
         (uses_op1(in.opcode) && is_bitwise(in.op1));
}

uint32_t ve_source_elements(const VeInstruction& in) {
  return ve_reads_src0(in.opcode) ? elements(in.src0) : elements(in.dst);
}

uint32_t ve_dst_elements(const VeInstruction& in) {
  const uint32_t n = ve_source_elements(in);
  switch (in.opcode) {
    case Opcode::kTensorReduce: return n / in.src0.count[0];
    case Opcode::kBnStats: return kBnStatsOutputs;
    case Opcode::kBnAggr: return kBnAggrOutputs;
    default: return n;
  }
}

VeError ve_check(const VeInstruction& in, const VeConfig& cfg, std::string* detail) {
  auto fail = [&](VeError e, std::string why) {
    if (detail) *detail = std::move(why);
    return e;
  };
  if (!is_ve_opcode(in.opcode))
    return fail(VeError::kOpcode, fmt::format("opcode 0x{:02x}", static_cast<int>(in.opcode)));
  if (is_activation(in.opcode) != cfg.scalar_engine)
    return fail(VeError::kOpcode, fmt::format("{} is not an instruction of the {} engine",
                                              ve_opcode_name(in.opcode),
                                              cfg.scalar_engine ? "scalar" : "vector"));
  const bool src0 = ve_reads_src0(in.opcode), src1 = uses_src1(in.opcode);
  for (DType t : {in.in0, in.in1, in.out}) {
    if (static_cast<int>(t) >= isa::kNumDType)
      return fail(VeError::kDtype, fmt::format("dtype code {}", static_cast<int>(t)));
  }
  if (moves_bits(in.opcode) && in.in0 != in.out)
    return fail(VeError::kDtype, "transpose/shuffle move bits: dtype_out must equal dtype_in0");
  const bool integer = ve_integer_class(in);
  if (integer && (is_float(in.in0) || is_float(in.out) || (src1 && is_float(in.in1))))
    return fail(VeError::kDtype, "a bitwise/shift operation needs integer types throughout");
  if (in.opcode == Opcode::kAffineSelect && (in.in0 == DType::kInt32 || in.out == DType::kInt32))
    return fail(VeError::kDtype, "affine_select takes float, int8 and int16 tiles (NKI), not int32");
  if ((in.opcode == Opcode::kBnStats || in.opcode == Opcode::kBnAggr) && !is_float(in.out))
    return fail(VeError::kDtype, "statistics are written as a float type");

  auto op_ok = [&](AluOp op) {
    if (static_cast<int>(op) >= isa::kNumAluOp) return false;
    if (!allows_integer(in.opcode)) return !is_bitwise(op);
    return !integer || op == AluOp::kBypass || is_bitwise(op);
  };
  if (uses_op0(in.opcode) && !op_ok(in.op0))
    return fail(VeError::kAluOp, fmt::format("op0 {} ({} takes {})", static_cast<int>(in.op0),
                                             ve_opcode_name(in.opcode),
                                             allows_integer(in.opcode) ? "one class of operation" : "arithmetic operations only"));
  if (uses_op1(in.opcode) && !op_ok(in.op1))
    return fail(VeError::kAluOp, fmt::format("op1 {} ({} takes {})", static_cast<int>(in.op1),
                                             ve_opcode_name(in.opcode),
                                             allows_integer(in.opcode) ? "one class of operation" : "arithmetic operations only"));
  if (is_activation(in.opcode) && static_cast<int>(in.act_func) >= isa::kNumActFunc)
    return fail(VeError::kAluOp, fmt::format("activation function {}", static_cast<int>(in.act_func)));
  if (in.opcode == Opcode::kTensorTensor && in.op0 == AluOp::kBypass)
    return fail(VeError::kAluOp, "tensor_tensor needs an operation");
  if (in.opcode == Opcode::kScalarTensorTensor && in.op1 == AluOp::kBypass)
    return fail(VeError::kAluOp, "scalar_tensor_tensor needs op1 (the tensor-tensor operation)");
  if (in.opcode == Opcode::kTensorReduce) {
    const AluOp op = in.op0;
    const bool ok = integer ? (op == AluOp::kAnd || op == AluOp::kOr || op == AluOp::kXor)
                            : (op == AluOp::kAdd || op == AluOp::kMax || op == AluOp::kMin);
    if (!ok) return fail(VeError::kAluOp, "tensor_reduce takes add/max/min (and/or/xor on ints)");
  }
  if (in.opcode == Opcode::kTensorScalarReduce && in.op1 == AluOp::kBypass)
    return fail(VeError::kAluOp, "tensor_scalar_reduce: op1 (the reduction) is add, subtract, multiply, max or min");
  if (in.opcode == Opcode::kAffineSelect && static_cast<int>(in.cmp_op) >= isa::kNumCmpOp)
    return fail(VeError::kAluOp, fmt::format("cmp_op {}", static_cast<int>(in.cmp_op)));

  const int q = cfg.quadrant();
  const int p = in.partitions, s = in.start_partition;
  if (p < 1 || p > cfg.lanes || s < 0 || s + p > cfg.lanes)
    return fail(VeError::kPartitions, fmt::format("partitions [{}, {}) of {}", s, s + p, cfg.lanes));
  const bool start_ok = p > 2 * q ? s == 0 : p > q ? (s == 0 || s == 2 * q) : s % q == 0;
  if (!start_ok)
    return fail(VeError::kPartitions, fmt::format("{} partitions cannot start at {}", p, s));
  if (moves_bits(in.opcode) && p % q != 0)
    return fail(VeError::kPartitions, fmt::format("transpose/shuffle: whole quadrants of {}", q));
  if (in.opcode == Opcode::kShuffle) {
    for (int i = 0; i < q; ++i) {
      if (in.shuffle[i] >= q)
        return fail(VeError::kPartitions, fmt::format("shuffle[{}] = {} >= {}", i, in.shuffle[i], q));
    }
  }

  if ((src0 && !shape_ok(in.src0)) || (src1 && !shape_ok(in.src1)) || !shape_ok(in.dst))
    return fail(VeError::kShape, "a zero count, or a free size over 64K (SBUF) / 4K (PSUM)");
  const uint32_t n = ve_source_elements(in);
  if (src1 && elements(in.src1) != n)
    return fail(VeError::kShape, fmt::format("src1 has {} elements, src0 {}", elements(in.src1), n));
  if (in.opcode == Opcode::kBnStats && n > kBnStatsMaxElements)
    return fail(VeError::kShape, fmt::format("bn_stats reads {} elements, at most {} (NKI's bn_stats_fmax)",
                                             n, kBnStatsMaxElements));
  if (in.opcode == Opcode::kBnAggr && n % 3 != 0)
    return fail(VeError::kShape, fmt::format("bn_aggr reads (count, mean, M2) triples: {} elements", n));
  const uint32_t expect = ve_dst_elements(in);
  if (elements(in.dst) != expect)
    return fail(VeError::kShape, fmt::format("dst has {} elements, expected {}", elements(in.dst), expect));
  if (in.opcode == Opcode::kTranspose && n % q != 0)
    return fail(VeError::kShape, fmt::format("transpose: {} elements, not a multiple of {}", n, q));

  if (src0 && !access_in_range(in.src0, dtype_bytes(in.in0), space_bytes(cfg, in.src0.space)))
    return fail(VeError::kAddress, "src0 misaligned or out of range");
  if (src1 && !access_in_range(in.src1, dtype_bytes(in.in1), space_bytes(cfg, in.src1.space)))
    return fail(VeError::kAddress, "src1 misaligned or out of range");
  if (!access_in_range(in.dst, dtype_bytes(in.out), space_bytes(cfg, in.dst.space)))
    return fail(VeError::kAddress, "dst misaligned or out of range");
  for (int k = 0; k < 2; ++k) {
    const bool per_partition = k ? in.s1_per_partition : in.s0_per_partition;
    const uint32_t addr = k ? in.s1 : in.s0;
    const bool used = k ? uses_s1(in.opcode) : uses_s0(in.opcode);
    if (used && per_partition && (addr % 4 != 0 || uint64_t{addr} + 4 > cfg.sbuf_bytes))
      return fail(VeError::kAddress, "per-partition scalar misaligned or out of range");
  }
  if (writes_acc(in) && (in.acc_addr % 4 != 0 || static_cast<uint64_t>(in.acc_addr) + 4 > cfg.sbuf_bytes))
    return fail(VeError::kAddress, "accumulator address misaligned or out of range");
  if (in.opcode == Opcode::kScalarTensorTensor && in.src0.space == MemSpace::kPsum &&
      in.src1.space == MemSpace::kPsum)
    return fail(VeError::kAddress, "scalar_tensor_tensor: src0 and src1 cannot both be in PSUM (NKI)");
  if (in.opcode == Opcode::kMemset && (in.value & ~storage_mask(in.out)) != 0)
    return fail(VeError::kValue, fmt::format("memset value 0x{:x} is wider than {}", in.value,
                                             dtype_name(in.out)));
  return VeError::kNone;
}

uint32_t ve_alu(AluOp op, uint32_t a, uint32_t b, bool integer_class) {
  if (integer_class) {
    const uint32_t sh = b & 31u;
    switch (op) {
      case AluOp::kAnd: return a & b;
      case AluOp::kOr: return a | b;
      case AluOp::kXor: return a ^ b;
      case AluOp::kShl: return a << sh;
      case AluOp::kLshr: return a >> sh;
      case AluOp::kAshr: return static_cast<uint32_t>(static_cast<int32_t>(a) >> sh);
      default: return a;
    }
  }
  switch (op) {
    case AluOp::kAdd: return fp32_add(a, b);
    case AluOp::kSubtract: return fp32_add(a, b ^ 0x80000000u);
    case AluOp::kMultiply: return fp32_mul(a, b);
    case AluOp::kMax:
    case AluOp::kMin: {
      if (is_nan32(a) || is_nan32(b)) return kFp32CanonicalNan;
      const bool a_wins = (order_key(a) >= order_key(b)) == (op == AluOp::kMax);
      return a_wins ? a : b;
    }
    default: return a;
  }
}

uint32_t ve_sr_init(uint32_t seed, int lane) {
  // MurmurHash3's 32-bit finaliser over seed and lane: neighbouring seeds and lanes start from
  // unrelated states (xorshift alone would keep a one-bit difference for many steps).
  uint32_t h = seed ^ (static_cast<uint32_t>(lane + 1) * 0x9E3779B9u);
  h ^= h >> 16;
  h *= 0x85EBCA6Bu;
  h ^= h >> 13;
  h *= 0xC2B2AE35u;
  h ^= h >> 16;
  return h == 0 ? 1u : h;
}
uint32_t ve_sr_next(uint32_t x) {
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  return x;
}

std::vector<VeWrite> ve_writes(const VeInstruction& in, const VeConfig& cfg, const VeMemory& mem) {
  std::string why;
  if (const VeError e = ve_check(in, cfg, &why); e != VeError::kNone)
    throw Error(fmt::format("vector instruction refused ({}): {}", ve_error_name(e), why));
  const int lanes = cfg.lanes, first = in.start_partition, last = first + in.partitions;
  const bool integer = ve_integer_class(in);
  const int b0 = dtype_bytes(in.in0), b1 = dtype_bytes(in.in1), bo = dtype_bytes(in.out);
  const uint32_t n = ve_source_elements(in);

  auto raw = [&](const VeAccess& a, int bytes, uint32_t e, int lane) {
    return mem.space(a.space).read(lane, element_addr(a, bytes, e), bytes);
  };
  auto value = [&](DType t, uint32_t bits) {
    return integer ? static_cast<uint32_t>(sign_extend_to_int32(t, bits)) : to_fp32_bits(t, bits);
  };
  // s0 or s1 (k) of a lane: the immediate, or the lane's word at that SBUF address.
  auto scalar = [&](int k, int lane) {
    const bool per_partition = k ? in.s1_per_partition : in.s0_per_partition;
    const uint32_t value = k ? in.s1 : in.s0;
    return per_partition ? mem.sbuf.read(lane, value, 4) : value;
  };

  std::vector<uint32_t> sr(lanes);
  for (int l = 0; l < lanes; ++l) sr[l] = ve_sr_init(in.seed, l);
  std::vector<VeWrite> writes;
  // Emits the element-e write of dst from per-lane results: FP32 (or int32 in the integer
  // class) to cast, raw bits to move, or int32 to clamp (iota into an integer type).
  enum class Out { kCast, kBits, kClampInt };
  auto emit = [&](uint32_t e, const std::vector<uint32_t>& result, Out kind) {
    VeWrite w{in.dst.space, element_addr(in.dst, bo, e), bo, std::vector<uint32_t>(lanes, 0)};
    for (int l = 0; l < lanes; ++l) {
      sr[l] = ve_sr_next(sr[l]);
      if (l < first || l >= last) continue;
      if (kind == Out::kBits) {
        w.data[l] = result[l] & storage_mask(in.out);
      } else if (integer || kind == Out::kClampInt) {
        w.data[l] = clamp_int32(in.out, static_cast<int32_t>(result[l]));
      } else {
        w.data[l] = from_fp32(result[l], in.out, cast_mode(in), sr[l]);
      }
    }
    writes.push_back(std::move(w));
  };
  // The per-partition FP32 reduction at acc_addr, after the elements (activation's sum,
  // tensor_scalar_reduce's fold).
  auto emit_acc = [&](const std::vector<uint32_t>& acc) {
    VeWrite w{MemSpace::kSbuf, static_cast<uint32_t>(in.acc_addr), 4, std::vector<uint32_t>(lanes, 0)};
    for (int l = first; l < last; ++l) w.data[l] = acc[l];
    writes.push_back(std::move(w));
  };

  std::vector<uint32_t> result(lanes, 0), acc(lanes, 0);
  const int q = cfg.quadrant();
  switch (in.opcode) {
    case Opcode::kTensorTensor:
    case Opcode::kTensorScalar:
    case Opcode::kTensorCopy:
      for (uint32_t e = 0; e < n; ++e) {
        for (int l = first; l < last; ++l) {
          const uint32_t x = value(in.in0, raw(in.src0, b0, e, l));
          if (in.opcode == Opcode::kTensorCopy) {
            result[l] = x;
          } else if (in.opcode == Opcode::kTensorTensor) {
            result[l] = ve_alu(in.op0, x, value(in.in1, raw(in.src1, b1, e, l)), integer);
          } else {
            const uint32_t s0 = scalar(0, l), s1 = scalar(1, l);
            const uint32_t y = scalar_stage(in.op0, in.reverse0, x, s0, integer);
            result[l] = scalar_stage(in.op1, in.reverse1, y, s1, integer);
          }
        }
        emit(e, result, Out::kCast);
      }
      break;
    case Opcode::kTensorReduce: {
      const uint32_t row = in.src0.count[0];
      for (uint32_t r = 0; r < n / row; ++r) {
        for (int l = first; l < last; ++l) {
          acc[l] = value(in.in0, raw(in.src0, b0, r * row, l));
          for (uint32_t i = 1; i < row; ++i)
            acc[l] = ve_alu(in.op0, acc[l], value(in.in0, raw(in.src0, b0, r * row + i, l)), integer);
        }
        emit(r, acc, Out::kCast);
      }
      break;
    }
    case Opcode::kTensorTensorScan: {
      const uint32_t row = in.src0.count[0];
      for (uint32_t e = 0; e < n; ++e) {
        for (int l = first; l < last; ++l) {
          if (e % row == 0) acc[l] = scalar(0, l);
          const uint32_t y = ve_alu(in.op0, acc[l], value(in.in0, raw(in.src0, b0, e, l)), integer);
          acc[l] = ve_alu(in.op1, y, value(in.in1, raw(in.src1, b1, e, l)), integer);
        }
        emit(e, acc, Out::kCast);
      }
      break;
    }
    case Opcode::kTranspose:
      for (uint32_t block = 0; block < n / q; ++block) {
        for (int j = 0; j < q; ++j) {
          for (int l = first; l < last; ++l) {
            const int base = l - l % q, p = l % q;
            result[l] = raw(in.src0, b0, block * q + p, base + j);
          }
          emit(block * q + j, result, Out::kBits);
        }
      }
      break;
    case Opcode::kShuffle:
      for (uint32_t e = 0; e < n; ++e) {
        for (int l = first; l < last; ++l) {
          result[l] = raw(in.src0, b0, e, l - l % q + in.shuffle[l % q]);
        }
        emit(e, result, Out::kBits);
      }
      break;
    case Opcode::kActivation: {
      for (uint32_t e = 0; e < n; ++e) {
        for (int l = first; l < last; ++l) {
          const uint32_t t = fp32_add(fp32_mul(value(in.in0, raw(in.src0, b0, e, l)),
                                               scalar(0, l)),
                                      scalar(1, l));
          result[l] = act_eval(in.act_func, t);
          acc[l] = e == 0 ? result[l] : fp32_add(acc[l], result[l]);
        }
        emit(e, result, Out::kCast);
      }
      if (in.acc_enable) emit_acc(acc);
      break;
    }
    case Opcode::kScalarTensorTensor:
      for (uint32_t e = 0; e < n; ++e) {
        for (int l = first; l < last; ++l) {
          const uint32_t x = value(in.in0, raw(in.src0, b0, e, l));
          const uint32_t y = value(in.in1, raw(in.src1, b1, e, l));
          const uint32_t t = scalar_stage(in.op0, in.reverse0, x, scalar(0, l), false);
          result[l] = in.reverse1 ? ve_alu(in.op1, y, t, false) : ve_alu(in.op1, t, y, false);
        }
        emit(e, result, Out::kCast);
      }
      break;
    case Opcode::kTensorScalarReduce:
      for (uint32_t e = 0; e < n; ++e) {
        for (int l = first; l < last; ++l) {
          const uint32_t x = value(in.in0, raw(in.src0, b0, e, l));
          result[l] = scalar_stage(in.op0, in.reverse0, x, scalar(0, l), false);
          acc[l] = e == 0 ? result[l] : ve_alu(in.op1, acc[l], result[l], false);
        }
        emit(e, result, Out::kCast);
      }
      if (in.acc_enable) emit_acc(acc);
      break;
    case Opcode::kMemset:
      for (uint32_t e = 0; e < n; ++e) {
        for (int l = first; l < last; ++l) result[l] = in.value;
        emit(e, result, Out::kBits);
      }
      break;
    case Opcode::kIota:
    case Opcode::kAffineSelect:
      for (uint32_t e = 0; e < n; ++e) {
        const uint32_t base = affine_base(in, e);
        for (int l = first; l < last; ++l) {
          const int32_t v = static_cast<int32_t>(
              base + static_cast<uint32_t>(l - first) * static_cast<uint32_t>(in.channel_multiplier));
          if (in.opcode == Opcode::kIota) {
            result[l] = is_float(in.out) ? to_fp32_bits(DType::kInt32, static_cast<uint32_t>(v))
                                         : static_cast<uint32_t>(v);
          } else {
            result[l] = compare_with_zero(in.cmp_op, v) ? value(in.in0, raw(in.src0, b0, e, l)) : in.value;
          }
        }
        emit(e, result, in.opcode == Opcode::kIota && !is_float(in.out) ? Out::kClampInt : Out::kCast);
      }
      break;
    case Opcode::kBnStats:
    case Opcode::kBnAggr: {
      std::vector<std::vector<uint32_t>> stats(lanes);
      for (int l = first; l < last; ++l) {
        std::vector<uint32_t> x(n);
        for (uint32_t e = 0; e < n; ++e) x[e] = value(in.in0, raw(in.src0, b0, e, l));
        stats[l] = in.opcode == Opcode::kBnStats ? bn_stats(x) : bn_aggr(x);
      }
      for (uint32_t k = 0; k < ve_dst_elements(in); ++k) {
        for (int l = first; l < last; ++l) result[l] = stats[l][k];
        emit(k, result, Out::kCast);
      }
      break;
    }
    default: break;  // not a vector-engine opcode: ve_check refused it above
  }
  if (ve_perf_mode(in)) {
    // One 4-byte write per pair of elements: the even one in the low half.
    std::vector<VeWrite> pairs;
    for (size_t i = 0; i + 1 < writes.size(); i += 2) {
      VeWrite w = writes[i];
      w.bytes = 4;
      for (int l = 0; l < lanes; ++l) w.data[l] |= writes[i + 1].data[l] << 16;
      pairs.push_back(std::move(w));
    }
    return pairs;
  }
  return writes;
}

void ve_apply(const std::vector<VeWrite>& writes, const VeInstruction& in, VeMemory& mem) {
  for (const VeWrite& w : writes) {
    for (int l = in.start_partition; l < in.start_partition + in.partitions; ++l)
      mem.space(w.space).write(l, w.addr, w.bytes, w.data[l]);
  }
}

bool ve_writes_reduction(const VeInstruction& in) { return writes_acc(in); }

namespace {

VeSpan span_of(const VeAccess& a, DType t) {
  const int64_t esz = std::max(1, storage_bits(t) / 8);
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < kVeDims; ++d) {
    const int64_t reach = static_cast<int64_t>(a.count[d] - 1) * a.stride[d] * esz;
    (reach < 0 ? lo : hi) += reach;
  }
  return {a.space, a.addr + lo, a.addr + hi + esz};
}

}  // namespace

VeFootprint ve_footprint(const VeInstruction& in) {
  VeFootprint f;
  f.first = in.start_partition;
  f.count = in.partitions;
  // transpose and shuffle move data between the partitions of a 32-partition quadrant.
  if (moves_bits(in.opcode)) {
    f.first = in.start_partition / 32 * 32;
    f.count = (in.start_partition + in.partitions + 31) / 32 * 32 - f.first;
  }
  if (ve_reads_src0(in.opcode)) f.reads.push_back(span_of(in.src0, in.in0));
  if (ve_uses_src1(in.opcode)) f.reads.push_back(span_of(in.src1, in.in1));
  if (uses_s0(in.opcode) && in.s0_per_partition) f.reads.push_back({MemSpace::kSbuf, in.s0, int64_t{in.s0} + 4});
  if (uses_s1(in.opcode) && in.s1_per_partition) f.reads.push_back({MemSpace::kSbuf, in.s1, int64_t{in.s1} + 4});
  f.writes.push_back(span_of(in.dst, in.out));
  if (writes_acc(in)) f.writes.push_back({MemSpace::kSbuf, in.acc_addr, int64_t{in.acc_addr} + 4});
  return f;
}

bool VeFootprint::blocks(const VeFootprint& later) const {
  if (first >= later.first + later.count || later.first >= first + count) return false;
  const auto meets = [](const VeSpan& a, const VeSpan& b) { return a.space == b.space && a.lo < b.hi && b.lo < a.hi; };
  for (const VeSpan& w : writes) {
    for (const VeSpan& r : later.reads)
      if (meets(w, r)) return true;
    for (const VeSpan& w2 : later.writes)
      if (meets(w, w2)) return true;
  }
  return false;
}

uint64_t ve_cost_cycles(const VeInstruction& in, const VeConfig& cfg) {
  const uint64_t n = ve_source_elements(in);
  // iota and affine_select: GpSimd's cost, 150 + N (the engine waits out the difference).
  if (in.opcode == Opcode::kIota || in.opcode == Opcode::kAffineSelect) return kVeAffineFixedCycles + n;
  // memset: no read, so no read or response-buffer stage.
  if (in.opcode == Opcode::kMemset) return kVeFixedCycles - 2 + n;
  uint64_t reads = uses_src1(in.opcode) ? 2 * n : cfg.performance_mode && ve_perf_mode(in) ? n / 2 : n;
  reads += (uses_s0(in.opcode) && in.s0_per_partition ? 1 : 0) +
           (uses_s1(in.opcode) && in.s1_per_partition ? 1 : 0);
  if (writes_acc(in)) ++reads;  // the reduction's write, one cycle more
  const uint64_t writes_stalled = in.opcode == Opcode::kTranspose ? n : 0;
  // Statistics: two divisions after the last element, then the outputs, one per cycle.
  const uint64_t stats = in.opcode == Opcode::kBnStats || in.opcode == Opcode::kBnAggr
                             ? 2 * kVeDivCycles + ve_dst_elements(in) + 1 : 0;
  return kVeFixedCycles + reads + writes_stalled + stats;
}

}  // namespace ncore::model

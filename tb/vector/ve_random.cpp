#include "tb/vector/ve_random.h"

#include <algorithm>

namespace ncore::tb {
namespace {

using model::AluOp;
using model::DType;
using model::MemSpace;
using model::VeAccess;
using model::VeInstruction;
using isa::Opcode;

constexpr DType kTypes[] = {DType::kFp32, DType::kTf32, DType::kBf16, DType::kFp16, DType::kE4m3,
                            DType::kE5m2, DType::kInt8, DType::kInt16, DType::kInt32};
constexpr DType kIntTypes[] = {DType::kInt8, DType::kInt16, DType::kInt32};
constexpr AluOp kFloatOps[] = {AluOp::kAdd, AluOp::kSubtract, AluOp::kMultiply, AluOp::kMax,
                               AluOp::kMin};
// The vector engine's opcodes (activation is the scalar engine's).
constexpr Opcode kVectorOpcodes[] = {
    Opcode::kTensorTensor, Opcode::kTensorScalar, Opcode::kTensorReduce, Opcode::kTensorCopy,
    Opcode::kTensorTensorScan, Opcode::kTranspose, Opcode::kShuffle, Opcode::kMemset,
    Opcode::kIota, Opcode::kAffineSelect, Opcode::kBnStats, Opcode::kBnAggr,
    Opcode::kScalarTensorTensor, Opcode::kTensorScalarReduce};
constexpr DType kFloatTypes[] = {DType::kFp32, DType::kTf32, DType::kBf16, DType::kFp16,
                                 DType::kE4m3, DType::kE5m2};
constexpr AluOp kBitOps[] = {AluOp::kAnd, AluOp::kOr, AluOp::kXor, AluOp::kShl,
                             AluOp::kLshr, AluOp::kAshr};

int bytes_of(DType t) { return model::storage_bits(t) / 8; }

template <class T, size_t N>
T pick(model::SplitMix64& rng, const T (&a)[N]) {
  return a[rng.below(N)];
}

// Where operands go: a bump allocator per space that wraps around (a wrapped area holds older
// results, which is fine: both engines see the same memory).
struct Arena {
  uint32_t base, size, next;
  uint32_t take(uint32_t bytes) {
    bytes = (bytes + 63) / 64 * 64;
    if (next + bytes > base + size) next = base;
    const uint32_t a = next;
    next += bytes;
    return a;
  }
};

// Counts with product n (n's factors spread over up to 4 dimensions, innermost first).
std::array<uint16_t, 4> split_counts(uint32_t n, model::SplitMix64& rng) {
  std::array<uint16_t, 4> c{1, 1, 1, 1};
  int d = 0;
  for (uint32_t f = 2; n > 1 && d < 3;) {
    if (n % f == 0 && rng.below(2)) {
      c[d + 1] = static_cast<uint16_t>(c[d + 1] * f);
      n /= f;
      if (rng.below(2)) ++d;
    } else {
      ++f;
      if (f > n) break;
    }
  }
  c[0] = static_cast<uint16_t>(n);
  return c;
}

// A pattern with these counts and random strides (some negative, some zero in outer
// dimensions: re-reading is legal for sources), placed in the arena.
// `paired`: the performance-mode layout (unit innermost stride, even outer strides).
VeAccess place(const std::array<uint16_t, 4>& counts, DType t, MemSpace space, Arena& arena,
               bool allow_zero_stride, model::SplitMix64& rng, bool paired = false) {
  VeAccess a;
  a.space = space;
  for (int d = 0; d < 4; ++d) a.count[d] = counts[d];
  int64_t span = 1;  // elements spanned so far, so outer strides can avoid overlap
  int64_t lo = 0, hi = 0;
  for (int d = 0; d < 4; ++d) {
    int64_t s;
    if (counts[d] == 1) {
      s = static_cast<int64_t>(rng.below(5)) - 2;
    } else if (allow_zero_stride && d > 0 && rng.below(6) == 0) {
      s = 0;
    } else {
      s = span + rng.below(3);
      if (rng.below(4) == 0) s = -s;
    }
    if (paired) s = d == 0 ? 1 : (s + (s & 1));
    a.stride[d] = static_cast<int16_t>(s);
    const int64_t extent = s * (counts[d] - 1);
    (extent < 0 ? lo : hi) += extent;
    span = std::max<int64_t>(span, (hi - lo) + 1);
  }
  const int b = bytes_of(t);
  const uint32_t bytes = static_cast<uint32_t>((hi - lo + 1) * b);
  a.addr = arena.take(bytes + 8) + static_cast<uint32_t>(-lo * b);
  return a;
}

// Element e of pattern a as a byte address.
uint32_t element_address(const VeAccess& a, DType t, uint32_t e) {
  int64_t off = 0;
  for (int d = 0; d < 4; ++d) {
    off += static_cast<int64_t>(a.stride[d]) * (e % a.count[d]);
    e /= a.count[d];
  }
  return static_cast<uint32_t>(a.addr + off * bytes_of(t));
}

// bn_aggr's input as bn_stats writes it: (count, mean, M2) triples with counts 0..512, moderate
// means and non-negative M2, cast to the input type.
void fill_stats_triples(model::VeMemory& mem, const VeAccess& a, DType t, int lanes, model::SplitMix64& rng) {
  const model::CastMode rne{model::Rounding::kNearestEven, true};
  for (uint32_t e = 0; e < model::elements(a); ++e) {
    for (int l = 0; l < lanes; ++l) {
      float v = static_cast<float>(rng.below(513));                                      // count
      if (e % 3 == 1) v = static_cast<float>(static_cast<int>(rng.below(2001)) - 1000) / 64.0f;  // mean
      if (e % 3 == 2) v = v * static_cast<float>(rng.below(1000)) / 100.0f;             // M2
      mem.space(a.space).write(l, element_address(a, t, e), bytes_of(t),
                               model::from_fp32(model::float_to_bits(v), t, rne));
    }
  }
}

void fill(model::VeMemory& mem, const VeAccess& a, DType t, int lanes, model::SplitMix64& rng) {
  for (uint32_t e = 0; e < model::elements(a); ++e) {
    const uint32_t addr = element_address(a, t, e);
    for (int l = 0; l < lanes; ++l)
      mem.space(a.space).write(l, addr, bytes_of(t), model::random_value(t, rng));
  }
}

// An illegal field only some opcodes have (memset's value, affine_select's comparison, the
// statistics' shapes and types, the float-only operations); false when the opcode has none.
bool break_opcode_field(VeInstruction& in, model::SplitMix64& rng) {
  switch (in.opcode) {
    case Opcode::kMemset:
      if (model::storage_bits(in.out) == 32) return false;
      in.value |= 1u << (model::storage_bits(in.out) + rng.below(32 - model::storage_bits(in.out)));
      return true;
    case Opcode::kAffineSelect:
      if (rng.below(2)) in.cmp_op = static_cast<isa::CmpOp>(6 + rng.below(2));
      else in.in0 = DType::kInt32;
      return true;
    case Opcode::kBnStats:
    case Opcode::kBnAggr:
      if (rng.below(2)) in.out = pick(rng, kIntTypes);
      else in.src0.count[0] = static_cast<uint16_t>(in.src0.count[0] + (in.opcode == Opcode::kBnAggr ? 1 : 513));
      return true;
    case Opcode::kScalarTensorTensor:
      if (rng.below(2)) in.op1 = AluOp::kBypass;
      else in.src0.space = in.src1.space = MemSpace::kPsum;
      return true;
    case Opcode::kTensorScalarReduce:
      if (rng.below(2)) in.op1 = AluOp::kBypass;
      else in.op0 = pick(rng, kBitOps);
      return true;
    default: return false;
  }
}

// One illegal field, chosen at random (the refusal-code tests see every code this way).
void break_one_field(VeInstruction& in, const model::VeConfig& cfg, model::SplitMix64& rng) {
  if (rng.below(3) == 0 && break_opcode_field(in, rng)) return;
  switch (rng.below(8)) {
    case 0: {  // not in the table
      constexpr int kNotVector[] = {0x2F, 0x1F, 0x3F, 0x7E};
      in.opcode = static_cast<Opcode>(pick(rng, kNotVector));
      break;
    }
    case 1: in.out = static_cast<DType>(9 + rng.below(7)); break;
    case 2: in.op0 = static_cast<AluOp>(12 + rng.below(4));
            in.opcode = Opcode::kTensorTensor; break;
    case 3:
      if (in.opcode == Opcode::kActivation && rng.below(2)) {
        in.act_func = static_cast<model::ActFunc>(10 + rng.below(6));
      } else {
        in.partitions = 0;
      }
      break;
    case 4: in.start_partition = 1; in.partitions = cfg.lanes - 1; break;
    case 5: in.src0.count[1 + rng.below(3)] = 0; break;
    case 6: in.dst.count[0] = static_cast<uint16_t>(in.dst.count[0] + 1); break;
    default: in.src0.addr = cfg.sbuf_bytes - 2; in.src0.space = MemSpace::kSbuf; break;
  }
}

}  // namespace

void random_ve_program(const model::VeConfig& cfg, model::VeMemory& mem, model::SplitMix64& rng,
                       int count, const VeGenOptions& gen, std::vector<VeInstruction>& program) {
  Arena sbuf_src{0, cfg.sbuf_bytes / 2, 0}, sbuf_dst{cfg.sbuf_bytes / 2, cfg.sbuf_bytes / 2 - 4096,
                                                     cfg.sbuf_bytes / 2};
  Arena psum_src{0, cfg.psum_bytes / 2, 0}, psum_dst{cfg.psum_bytes / 2, cfg.psum_bytes / 2,
                                                     cfg.psum_bytes / 2};
  const uint32_t scalar_area = cfg.sbuf_bytes - 4096;
  const int q = cfg.quadrant();
  for (int k = 0; k < count; ++k) {
    VeInstruction in;
    in.tag = static_cast<uint8_t>(program.size());
    in.opcode = cfg.scalar_engine ? Opcode::kActivation
                : gen.opcode ? *gen.opcode
                             : pick(rng, kVectorOpcodes);
    const bool act = in.opcode == Opcode::kActivation;
    const bool moves = in.opcode == Opcode::kTranspose || in.opcode == Opcode::kShuffle;
    const bool stats = in.opcode == Opcode::kBnStats || in.opcode == Opcode::kBnAggr;
    const bool integer_allowed = in.opcode == Opcode::kTensorTensor || in.opcode == Opcode::kTensorScalar ||
                                 in.opcode == Opcode::kTensorReduce || in.opcode == Opcode::kTensorTensorScan;
    const bool integer = integer_allowed && !gen.in_type && rng.below(5) == 0;
    const DType any_in = gen.in_type ? *gen.in_type : pick(rng, kTypes);
    in.in0 = integer ? pick(rng, kIntTypes) : any_in;
    in.in1 = integer ? pick(rng, kIntTypes) : gen.in_type ? *gen.in_type : pick(rng, kTypes);
    in.out = moves ? in.in0 : integer ? pick(rng, kIntTypes) : gen.out_type ? *gen.out_type
                                                                           : pick(rng, kTypes);
    if (stats && !model::is_float(in.out)) in.out = pick(rng, kFloatTypes);
    if (in.opcode == Opcode::kAffineSelect) {
      if (in.in0 == DType::kInt32) in.in0 = DType::kInt16;
      if (in.out == DType::kInt32) in.out = DType::kInt16;
    }
    auto op = [&](bool allow_bypass) {
      if (allow_bypass && rng.below(6) == 0) return AluOp::kBypass;
      return integer ? pick(rng, kBitOps) : pick(rng, kFloatOps);
    };
    in.op0 = op(in.opcode == Opcode::kTensorScalar || in.opcode == Opcode::kTensorTensorScan ||
                in.opcode == Opcode::kScalarTensorTensor || in.opcode == Opcode::kTensorScalarReduce);
    in.op1 = op(in.opcode != Opcode::kScalarTensorTensor && in.opcode != Opcode::kTensorScalarReduce);
    if (integer && !model::is_bitwise(in.op0) && !model::is_bitwise(in.op1)) in.op0 = pick(rng, kBitOps);
    if (in.opcode == Opcode::kTensorReduce) {
      const AluOp float_reduce[] = {AluOp::kAdd, AluOp::kMax, AluOp::kMin};
      const AluOp int_reduce[] = {AluOp::kAnd, AluOp::kOr, AluOp::kXor};
      in.op0 = integer ? pick(rng, int_reduce) : pick(rng, float_reduce);
    }
    in.reverse0 = rng.below(2);
    in.reverse1 = rng.below(2);
    auto scalar = [&](bool& per_partition, uint32_t& value) {
      if (rng.below(3) == 0) {
        per_partition = true;
        value = scalar_area + 4 * rng.below(1000);
        for (int l = 0; l < cfg.lanes; ++l)
          mem.sbuf.write(l, value, 4, integer ? rng.next32()
                                              : model::random_value(DType::kFp32, rng));
      } else {
        value = integer ? rng.below(40) : model::random_value(DType::kFp32, rng);
      }
    };
    scalar(in.s0_per_partition, in.s0);
    scalar(in.s1_per_partition, in.s1);
    // iota and affine_select: small affine terms (so that the predicate changes inside a tile)
    // or, now and then, any int32.
    const bool wide = rng.below(5) == 0;
    in.offset = wide ? static_cast<int32_t>(rng.next32()) : static_cast<int32_t>(rng.below(65)) - 32;
    in.channel_multiplier = wide ? static_cast<int32_t>(rng.next32()) : static_cast<int32_t>(rng.below(9)) - 4;
    for (int& st : in.step) st = wide ? static_cast<int16_t>(rng.next32()) : static_cast<int>(rng.below(9)) - 4;
    in.cmp_op = static_cast<isa::CmpOp>(rng.below(isa::kNumCmpOp));
    in.value = in.opcode == Opcode::kMemset ? model::random_value(in.out, rng)
                                            : model::random_value(DType::kFp32, rng);
    if (in.opcode == Opcode::kTensorScalarReduce) {
      in.acc_enable = rng.below(4) != 0;
      in.acc_addr = scalar_area + 4 * rng.below(1000);
    }
    if (act) {
      in.act_func = static_cast<model::ActFunc>(rng.below(ncore::isa::kNumActFunc));
      // Scale and bias mostly moderate (so the functions' interesting ranges are reached),
      // sometimes any value class.
      auto moderate = [&](bool per_partition, uint32_t& value) {
        if (!per_partition && rng.below(4) != 0)
          value = model::float_to_bits(static_cast<float>(rng.below(2001)) / 250.0f - 4.0f);
      };
      moderate(in.s0_per_partition, in.s0);
      moderate(in.s1_per_partition, in.s1);
      in.acc_enable = rng.below(2);
      in.acc_addr = scalar_area + 4 * rng.below(1000);
    }
    in.stochastic = rng.below(2);
    in.saturate = rng.below(2);
    in.seed = rng.next32();
    // Partitions: all, half, a quadrant, or fewer, at a legal start.
    switch (rng.below(moves ? 3 : 4)) {
      case 0: in.partitions = cfg.lanes - static_cast<int>(moves ? 0 : rng.below(q)); break;
      case 1: in.partitions = 2 * q; in.start_partition = rng.below(2) * 2 * q; break;
      case 2: in.partitions = q; in.start_partition = static_cast<int>(rng.below(4)) * q; break;
      default:
        in.partitions = 1 + static_cast<int>(rng.below(q));
        in.start_partition = static_cast<int>(rng.below(4)) * q;
    }
    if (gen.partitions) {
      in.partitions = *gen.partitions;
      in.start_partition = in.partitions > q ? 0 : static_cast<int>(rng.below(4)) * q;
    }
    for (int p = 0; p < 32; ++p) in.shuffle[p] = static_cast<uint8_t>(rng.below(q));
    // Shapes.
    uint32_t n = 1 + rng.below(gen.max_elements);
    if (in.opcode == Opcode::kTranspose) n = q * (1 + rng.below(std::max(1, gen.max_elements / q)));
    if (in.opcode == Opcode::kBnAggr) n = 3 * (1 + rng.below(std::max(1, gen.max_elements / 3)));
    if (in.opcode == Opcode::kBnStats) n = std::min<uint32_t>(n, model::kBnStatsMaxElements);
    // Half the 16-bit copies and tensor_scalars take the performance-mode layout.
    const auto half = [](DType t) { return t == DType::kBf16 || t == DType::kFp16; };
    const bool paired = (in.opcode == Opcode::kTensorCopy || in.opcode == Opcode::kTensorScalar) &&
                        half(in.in0) && half(in.out) && rng.below(2);
    auto counts = split_counts(paired ? std::max<uint32_t>(1, n / 2) : n, rng);
    if (paired) counts[0] = static_cast<uint16_t>(counts[0] * 2);
    if (paired) n = counts[0] * counts[1] * counts[2] * counts[3];
    auto space = [&]() { return rng.next() % 1000 < gen.psum_share * 1000 ? MemSpace::kPsum : MemSpace::kSbuf; };
    auto src_arena = [&](MemSpace s) -> Arena& { return s == MemSpace::kSbuf ? sbuf_src : psum_src; };
    auto dst_arena = [&](MemSpace s) -> Arena& { return s == MemSpace::kSbuf ? sbuf_dst : psum_dst; };
    MemSpace s0 = space(), s1 = space(), sd = space();
    if (paired) s0 = sd = MemSpace::kSbuf;
    if (in.opcode == Opcode::kScalarTensorTensor && s0 == MemSpace::kPsum) s1 = MemSpace::kSbuf;
    in.src0 = place(counts, in.in0, s0, src_arena(s0), true, rng, paired);
    if (in.opcode == Opcode::kBnAggr && rng.below(2)) fill_stats_triples(mem, in.src0, in.in0, cfg.lanes, rng);
    else if (model::ve_reads_src0(in.opcode)) fill(mem, in.src0, in.in0, cfg.lanes, rng);
    if (model::ve_uses_src1(in.opcode)) {
      in.src1 = place(split_counts(n, rng), in.in1, s1, src_arena(s1), true, rng);
      fill(mem, in.src1, in.in1, cfg.lanes, rng);
    }
    std::array<uint16_t, 4> dcounts = counts;
    if (in.opcode == Opcode::kTensorReduce) dcounts = {counts[1], counts[2], counts[3], 1};
    if (stats) dcounts = split_counts(in.opcode == Opcode::kBnStats ? model::kBnStatsOutputs
                                                                   : model::kBnAggrOutputs, rng);
    in.dst = place(dcounts, in.out, sd, dst_arena(sd), false, rng, paired);
    if (gen.illegal > 0 && rng.next() % 1000 < gen.illegal * 1000) break_one_field(in, cfg, rng);
    program.push_back(in);
  }
}

VeInstruction simple_ve_instruction(const model::VeConfig& cfg, Opcode op, DType in, DType out,
                                    uint32_t elements) {
  VeInstruction i;
  i.opcode = op;
  i.in0 = i.in1 = in;
  i.out = (op == Opcode::kTranspose || op == Opcode::kShuffle) ? in : out;
  const bool integer = !model::is_float(in) && !model::is_float(i.out);
  i.op0 = op == Opcode::kTensorReduce ? AluOp::kAdd : AluOp::kMultiply;
  i.op1 = AluOp::kAdd;
  if (integer && op != Opcode::kTensorReduce) i.op0 = AluOp::kXor;
  if (integer && op == Opcode::kTensorReduce) i.op0 = AluOp::kXor;
  i.s0 = integer ? 3 : model::float_to_bits(1.5f);
  i.s1 = integer ? 1 : model::float_to_bits(-0.25f);
  i.partitions = cfg.lanes;
  const uint32_t region = 65536;
  auto contiguous = [&](uint32_t addr, uint32_t n) {
    model::VeAccess a;
    a.addr = addr;
    uint32_t c0 = n, c1 = 1;
    while (c0 > 65535) { c0 /= 2; c1 *= 2; }
    a.count = {static_cast<uint16_t>(c0), static_cast<uint16_t>(c1), 1, 1};
    a.stride = {1, static_cast<int16_t>(std::min<uint32_t>(c0, 32767)), 0, 0};
    return a;
  };
  i.src0 = contiguous(0, elements);
  i.src1 = contiguous(region, elements);
  switch (op) {
    case Opcode::kMemset:
      i.value = model::from_fp32(model::float_to_bits(1.0f), i.out, {});
      break;
    case Opcode::kIota:
      i.channel_multiplier = 1;
      i.step = {1, 0, 0, 0};
      break;
    case Opcode::kAffineSelect:  // a causal mask: keep element f of partition p where p - f >= 0
      i.channel_multiplier = 1;
      i.step = {-1, 0, 0, 0};
      i.cmp_op = isa::CmpOp::kGreaterEqual;
      i.value = model::float_to_bits(-30000.0f);
      break;
    case Opcode::kTensorScalarReduce:
      i.acc_enable = true;
      i.acc_addr = 3 * region;
      break;
    default: break;
  }
  if (op == Opcode::kBnStats || op == Opcode::kBnAggr) {
    const uint32_t n = op == Opcode::kBnStats ? std::min(elements, model::kBnStatsMaxElements)
                                              : std::max<uint32_t>(3, elements / 3 * 3);
    i.src0 = contiguous(0, n);
    i.dst = contiguous(2 * region, op == Opcode::kBnStats ? model::kBnStatsOutputs : model::kBnAggrOutputs);
  } else if (op == Opcode::kTensorReduce) {
    // Rows of at most 512 elements, one result each.
    const uint32_t row = std::min<uint32_t>(elements, 512);
    i.src0.count = {static_cast<uint16_t>(row), static_cast<uint16_t>(elements / row), 1, 1};
    i.src0.stride = {1, static_cast<int16_t>(row), 0, 0};
    i.dst = contiguous(2 * region, elements / row);
  } else {
    i.dst = contiguous(2 * region, elements);
  }
  return i;
}

}  // namespace ncore::tb

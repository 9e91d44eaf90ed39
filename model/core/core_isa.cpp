#include "model/core/core_isa.h"

#include <fmt/format.h>

#include "model/common/error.h"

namespace ncore::model {

std::string SourceLoc::str() const {
  if (file.empty()) return "(built)";
  std::string s = fmt::format("{}:{}:{}", file, line, col);
  if (!label.empty()) s += label_offset ? fmt::format(" ({}+{})", label, label_offset)
                                        : fmt::format(" ({})", label);
  return s;
}

const isa::OpcodeInfo* opcode_info(isa::Opcode op) {
  for (const auto& o : isa::kOpcodes)
    if (o.opcode == op) return &o;
  return nullptr;
}

const isa::OpcodeInfo* opcode_info(std::string_view name) {
  for (const auto& o : isa::kOpcodes)
    if (name == o.name) return &o;
  return nullptr;
}

isa::Format format_of(isa::Opcode op) {
  const auto* info = opcode_info(op);
  return info ? info->format : isa::Format::kNone;
}

bool queue_allows(isa::Queue q, isa::Opcode op) {
  const auto* info = opcode_info(op);
  return info && (info->queue_mask >> static_cast<int>(q) & 1);
}

std::string_view queue_name(isa::Queue q) { return isa::kQueueNames[static_cast<int>(q)]; }

std::string_view decode_error_name(DecodeError e) {
  const auto i = static_cast<size_t>(e);
  return i < isa::kDecodeErrorNames.size() ? isa::kDecodeErrorNames[i] : "?";
}

namespace {

// Checks that value fits `width` bits (signed: two's complement) before it is packed.
uint64_t fit(const char* field, int64_t value, int width, bool is_signed = false) {
  const bool ok = is_signed ? value >= -(int64_t{1} << (width - 1)) && value < (int64_t{1} << (width - 1))
                            : value >= 0 && (width >= 63 || value < (int64_t{1} << width));
  if (!ok)
    throw Error(fmt::format("field {}: {} does not fit in {} {}bits", field, value, width,
                            is_signed ? "signed " : ""));
  return static_cast<uint64_t>(value);
}

isa::TeFields te_fields(const TeInstruction& t) {
  isa::TeFields f;
  f.dtype = fit("dtype", static_cast<int>(t.dtype), 4);
  f.k = fit("k", t.k, 9);
  f.m = fit("m", t.m, 9);
  f.n = fit("n", t.n, 10);
  f.sbuf_addr = fit("sbuf_addr", t.sbuf_addr, 18);
  f.sbuf_stride = fit("sbuf_stride", t.sbuf_stride, 16);
  f.psum_bank = fit("psum_bank", t.psum_bank, 4);
  f.psum_offset = fit("psum_offset", t.psum_offset, 10);
  f.accumulate = t.accumulate;
  f.double_row = t.double_row;
  f.transpose = t.transpose;
  f.sparsity = static_cast<uint64_t>(t.sparsity);
  f.tag_addr = fit("tag_addr", t.tag_addr, 18);
  f.row_split = fit("row_split", t.tiling.row_split, 2);
  f.row_tile = fit("row_tile", t.tiling.row_tile, 2);
  f.col_split = fit("col_split", t.tiling.col_split, 2);
  f.col_tile = fit("col_tile", t.tiling.col_tile, 2);
  return f;
}

TeInstruction te_instr(const isa::TeFields& f, isa::Opcode op, uint8_t tag) {
  TeInstruction t;
  t.opcode = op == isa::Opcode::kLoadStationary ? TeOpcode::kLoadStationary
                                                : TeOpcode::kMultiplyMoving;
  t.dtype = static_cast<DType>(f.dtype);  // codes > 8 reach the engine, which refuses them
  t.k = static_cast<int>(f.k);
  t.m = static_cast<int>(f.m);
  t.n = static_cast<int>(f.n);
  t.sbuf_addr = static_cast<uint32_t>(f.sbuf_addr);
  t.sbuf_stride = static_cast<uint32_t>(f.sbuf_stride);
  t.psum_bank = static_cast<int>(f.psum_bank);
  t.psum_offset = static_cast<int>(f.psum_offset);
  t.accumulate = f.accumulate;
  t.tag = tag;
  t.double_row = f.double_row;
  t.transpose = f.transpose;
  t.sparsity = static_cast<TeSparsity>(f.sparsity);
  t.tag_addr = static_cast<uint32_t>(f.tag_addr);
  t.tiling = {static_cast<int>(f.row_split), static_cast<int>(f.row_tile),
              static_cast<int>(f.col_split), static_cast<int>(f.col_tile)};
  return t;
}

void access_fields(const VeAccess& a, uint64_t& space, uint64_t& addr,
                   std::array<uint64_t, 4>& count, std::array<int64_t, 4>& stride) {
  space = static_cast<uint64_t>(a.space);
  addr = fit("addr", a.addr, 18);
  for (int d = 0; d < kVeDims; ++d) {
    count[d] = a.count[d];
    stride[d] = a.stride[d];
  }
}

VeAccess access_of(uint64_t space, uint64_t addr, const std::array<uint64_t, 4>& count,
                   const std::array<int64_t, 4>& stride) {
  VeAccess a;
  a.space = static_cast<MemSpace>(space);
  a.addr = static_cast<uint32_t>(addr);
  for (int d = 0; d < kVeDims; ++d) {
    a.count[d] = static_cast<uint16_t>(count[d]);
    a.stride[d] = static_cast<int16_t>(stride[d]);
  }
  return a;
}

isa::VeFields ve_fields(const VeInstruction& v) {
  isa::VeFields f;
  f.in0 = static_cast<uint64_t>(v.in0);
  f.in1 = static_cast<uint64_t>(v.in1);
  f.out = static_cast<uint64_t>(v.out);
  f.op0 = static_cast<uint64_t>(v.op0);
  f.op1 = static_cast<uint64_t>(v.op1);
  f.reverse0 = v.reverse0;
  f.reverse1 = v.reverse1;
  f.s0_per_partition = v.scalar0.per_partition;
  f.s0 = v.scalar0.value;
  f.s1_per_partition = v.scalar1.per_partition;
  f.s1 = v.scalar1.value;
  f.stochastic = v.cast.rounding == Rounding::kStochastic;
  f.saturate = v.cast.saturate;
  f.seed = v.seed;
  f.start_partition = fit("start_partition", v.start_partition, 7);
  f.partitions = fit("partitions", v.partitions, 8);
  access_fields(v.src0, f.src0_space, f.src0_addr, f.src0_count, f.src0_stride);
  access_fields(v.src1, f.src1_space, f.src1_addr, f.src1_count, f.src1_stride);
  access_fields(v.dst, f.dst_space, f.dst_addr, f.dst_count, f.dst_stride);
  for (int p = 0; p < 32; ++p) f.shuffle[p] = fit("shuffle", v.shuffle[p], 5);
  f.act_func = static_cast<uint64_t>(v.act_func);
  f.acc_enable = v.acc_enable;
  f.acc_addr = fit("acc_addr", v.acc_addr, 18);
  return f;
}

VeInstruction ve_instr(const isa::VeFields& f, isa::Opcode op, uint8_t tag) {
  VeInstruction v;
  v.opcode = static_cast<VeOpcode>(static_cast<int>(op) & 0x7);
  v.in0 = static_cast<DType>(f.in0);
  v.in1 = static_cast<DType>(f.in1);
  v.out = static_cast<DType>(f.out);
  v.op0 = static_cast<AluOp>(f.op0);
  v.op1 = static_cast<AluOp>(f.op1);
  v.reverse0 = f.reverse0;
  v.reverse1 = f.reverse1;
  v.scalar0 = {f.s0_per_partition != 0, static_cast<uint32_t>(f.s0)};
  v.scalar1 = {f.s1_per_partition != 0, static_cast<uint32_t>(f.s1)};
  v.cast.rounding = f.stochastic ? Rounding::kStochastic : Rounding::kNearestEven;
  v.cast.saturate = f.saturate;
  v.seed = static_cast<uint32_t>(f.seed);
  v.start_partition = static_cast<int>(f.start_partition);
  v.partitions = static_cast<int>(f.partitions);
  v.src0 = access_of(f.src0_space, f.src0_addr, f.src0_count, f.src0_stride);
  v.src1 = access_of(f.src1_space, f.src1_addr, f.src1_count, f.src1_stride);
  v.dst = access_of(f.dst_space, f.dst_addr, f.dst_count, f.dst_stride);
  for (int p = 0; p < 32; ++p) v.shuffle[p] = static_cast<uint8_t>(f.shuffle[p]);
  v.act_func = static_cast<ActFunc>(f.act_func);
  v.acc_enable = f.acc_enable;
  v.acc_addr = static_cast<uint32_t>(f.acc_addr);
  v.tag = tag;
  return v;
}

isa::DmaFields dma_fields(const DmaDescriptor& d, int queue) {
  isa::DmaFields f;
  f.engine = fit("engine", queue, 4);
  f.to_hbm = d.to_hbm;
  f.last = d.last;
  f.hbm_addr = fit("hbm_addr", static_cast<int64_t>(d.hbm_addr), 32);
  f.sbuf_addr = fit("sbuf_addr", static_cast<int64_t>(d.sbuf_addr), 25);
  f.bytes = fit("bytes", static_cast<int64_t>(d.bytes), 17);
  f.count1 = fit("count1", static_cast<int64_t>(d.count1), 12);
  f.count2 = fit("count2", static_cast<int64_t>(d.count2), 12);
  f.hbm_stride1 = fit("hbm_stride1", static_cast<int64_t>(d.hbm_stride1), 32);
  f.hbm_stride2 = fit("hbm_stride2", static_cast<int64_t>(d.hbm_stride2), 32);
  f.sbuf_stride1 = fit("sbuf_stride1", static_cast<int64_t>(d.sbuf_stride1), 25);
  f.sbuf_stride2 = fit("sbuf_stride2", static_cast<int64_t>(d.sbuf_stride2), 25);
  return f;
}

DmaDescriptor dma_desc(const isa::DmaFields& f) {
  DmaDescriptor d;
  d.to_hbm = f.to_hbm;
  d.last = f.last;
  d.hbm_addr = f.hbm_addr;
  d.sbuf_addr = f.sbuf_addr;
  d.bytes = f.bytes;
  d.count1 = f.count1;
  d.count2 = f.count2;
  d.hbm_stride1 = f.hbm_stride1;
  d.hbm_stride2 = f.hbm_stride2;
  d.sbuf_stride1 = f.sbuf_stride1;
  d.sbuf_stride2 = f.sbuf_stride2;
  return d;
}

const isa::FormatInfo& format_info(isa::Format f) {
  return isa::kFormats[static_cast<int>(f)];
}

}  // namespace

isa::Word encode(const CoreInstr& in) {
  const auto* info = opcode_info(in.opcode);
  if (!info) throw Error(fmt::format("opcode: 0x{:02x} is not an opcode", int(in.opcode)));
  isa::Word w{};
  isa::HeaderFields h;
  h.opcode = static_cast<uint64_t>(in.opcode);
  h.wait_en = in.wait_en;
  h.wait_sem = fit("wait_sem", in.wait_sem, 5);
  h.wait_value = fit("wait_value", in.wait_value, 16);
  h.sig_op = static_cast<uint64_t>(in.sig_op);
  h.sig_sem = fit("sig_sem", in.sig_sem, 5);
  h.sig_value = fit("sig_value", in.sig_value, 16);
  h.tag = in.tag;
  isa::pack(w, h);
  switch (info->format) {
    case isa::Format::kTe: isa::pack(w, te_fields(in.te)); break;
    case isa::Format::kVe: isa::pack(w, ve_fields(in.ve)); break;
    case isa::Format::kDma: isa::pack(w, dma_fields(in.dma, in.dma_queue)); break;
    default: break;
  }
  return w;
}

DecodeError decode(const isa::Word& w, isa::Queue q, CoreInstr* out, std::string* detail) {
  const auto h = isa::unpack_header(w);
  const auto op = static_cast<isa::Opcode>(h.opcode);
  const auto* info = opcode_info(op);
  auto fail = [&](DecodeError e, std::string why) {
    if (detail) *detail = std::move(why);
    return e;
  };
  if (!info) return fail(DecodeError::kIllegalOpcode, fmt::format("opcode 0x{:02x} is not in the table", h.opcode));
  if (!queue_allows(q, op))
    return fail(DecodeError::kWrongQueue, fmt::format("{} may not sit in the {} queue", info->name, queue_name(q)));
  const auto& hdr = format_info(isa::Format::kHeader);
  const auto& fmt_info = format_info(info->format);
  for (int b = 0; b < isa::kWordBits; ++b) {
    const bool used = b < hdr.bits || (b >= fmt_info.lsb && b < fmt_info.lsb + fmt_info.bits);
    if (!used && (w[b / 64] >> (b % 64) & 1))
      return fail(DecodeError::kIllegalReserved,
                  fmt::format("bit {} is set: {} uses bits [0, {}) and [{}, {})", b, info->name,
                              hdr.bits, fmt_info.lsb, fmt_info.lsb + fmt_info.bits));
  }
  // The wait and signal fields mean nothing without their enable; set, they would be bits the
  // core ignores (and no assembler line could make them), so they count as reserved.
  if (!h.wait_en && (h.wait_sem || h.wait_value))
    return fail(DecodeError::kIllegalReserved, fmt::format("wait_en is 0 but wait_sem {} wait_value {}", h.wait_sem, h.wait_value));
  if (h.sig_op == 0 && (h.sig_sem || h.sig_value))
    return fail(DecodeError::kIllegalReserved, fmt::format("sig_op is none but sig_sem {} sig_value {}", h.sig_sem, h.sig_value));
  if (h.sig_op >= isa::kNumSigOp) return fail(DecodeError::kIllegalSigOp, fmt::format("sig_op {}", h.sig_op));
  if (!out) return DecodeError::kNone;
  CoreInstr& in = *out;
  in = CoreInstr{};
  in.opcode = op;
  in.wait_en = h.wait_en;
  in.wait_sem = static_cast<int>(h.wait_sem);
  in.wait_value = static_cast<uint32_t>(h.wait_value);
  in.sig_op = static_cast<isa::SigOp>(h.sig_op);
  in.sig_sem = static_cast<int>(h.sig_sem);
  in.sig_value = static_cast<uint32_t>(h.sig_value);
  in.tag = static_cast<uint8_t>(h.tag);
  switch (info->format) {
    case isa::Format::kTe: in.te = te_instr(isa::unpack_te(w), op, in.tag); break;
    case isa::Format::kVe: in.ve = ve_instr(isa::unpack_ve(w), op, in.tag); break;
    case isa::Format::kDma: {
      const auto f = isa::unpack_dma(w);
      in.dma = dma_desc(f);
      in.dma_queue = static_cast<int>(f.engine);
      break;
    }
    default: break;
  }
  return DecodeError::kNone;
}

CoreInstr default_instr(isa::Opcode op) {
  CoreInstr in;
  in.opcode = op;
  if (format_of(op) == isa::Format::kVe) in.ve.opcode = static_cast<VeOpcode>(static_cast<int>(op) & 7);
  if (op == isa::Opcode::kActivation) in.ve.scalar0.value = 0x3F800000u;  // scale 1.0
  return in;
}

std::string disassemble(const CoreInstr& in) {
  const auto* info = opcode_info(in.opcode);
  if (!info) return fmt::format("# illegal opcode 0x{:02x}", int(in.opcode));
  std::string s = info->name;
  const isa::Word w = encode(in);
  // Fields are printed where they differ from the assembler's defaults (an instruction of the
  // opcode built from default-constructed engine instructions).
  const isa::Word def = encode(default_instr(in.opcode));
  const auto& f = format_info(info->format);
  for (int i = 0; i < f.field_count; ++i) {
    const auto& field = f.fields[i];
    const uint64_t v = isa::get_bits(w, field.lsb, field.width);
    if (v == isa::get_bits(def, field.lsb, field.width)) continue;
    const std::string_view name = field.name;
    if (name == "s0" || name == "s1")
      s += fmt::format(" {}=bits:{:#x}", name, v);  // raw bits, not a number to convert
    else if (field.is_signed)
      s += fmt::format(" {}={}", field.name, isa::sign_extend(v, field.width));
    else
      s += fmt::format(" {}={:#x}", field.name, v);
  }
  if (in.wait_en) s += fmt::format(" wait=s{}>={}", in.wait_sem, in.wait_value);
  if (in.sig_op == isa::SigOp::kIncrement) s += fmt::format(" signal=s{}+={}", in.sig_sem, in.sig_value);
  if (in.sig_op == isa::SigOp::kSet) s += fmt::format(" signal=s{}={}", in.sig_sem, in.sig_value);
  if (in.tag) s += fmt::format(" tag={}", in.tag);
  return s;
}

}  // namespace ncore::model

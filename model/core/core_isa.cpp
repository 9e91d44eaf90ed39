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
  if (!isa::fits_bits(value, width, is_signed))
    throw Error(fmt::format("field {}: {} does not fit in {} {}bits", field, value, width,
                            is_signed ? "signed " : ""));
  return static_cast<uint64_t>(value);
}

// Packs a payload, first checking that every field fits its bits.
template <class Fields>
void pack_checked(isa::Word& w, const Fields& f) {
  int64_t value = 0;
  if (const char* bad = isa::misfit(f, &value)) {
    for (const auto& info : isa::kFormats)
      for (int i = 0; i < info.field_count; ++i)
        if (std::string_view(info.fields[i].name) == bad)
          fit(bad, value, info.fields[i].width, info.fields[i].is_signed);  // throws
    throw Error(fmt::format("field {}: {} does not fit its bits", bad, value));
  }
  isa::pack(w, f);
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
  h.opcode = static_cast<int>(in.opcode);
  h.wait_en = in.wait_en;
  h.wait_sem = static_cast<int>(fit("wait_sem", in.wait_sem, 5));
  h.wait_value = static_cast<int>(fit("wait_value", in.wait_value, 16));
  h.sig_op = in.sig_op;
  h.sig_sem = static_cast<int>(fit("sig_sem", in.sig_sem, 5));
  h.sig_value = static_cast<int>(fit("sig_value", in.sig_value, 16));
  h.tag = in.tag;
  isa::pack(w, h);
  switch (info->format) {
    case isa::Format::kTe: pack_checked(w, static_cast<const isa::TeFields&>(in.te)); break;
    case isa::Format::kVe: pack_checked(w, static_cast<const isa::VeFields&>(in.ve)); break;
    case isa::Format::kDma: pack_checked(w, in.dma); break;
    case isa::Format::kList: pack_checked(w, in.list); break;
    case isa::Format::kCc: pack_checked(w, static_cast<const isa::CcFields&>(in.cc)); break;
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
  if (h.sig_op == isa::SigOp::kNone && (h.sig_sem || h.sig_value))
    return fail(DecodeError::kIllegalReserved, fmt::format("sig_op is none but sig_sem {} sig_value {}", h.sig_sem, h.sig_value));
  if (static_cast<int>(h.sig_op) >= isa::kNumSigOp)
    return fail(DecodeError::kIllegalSigOp, fmt::format("sig_op {}", static_cast<int>(h.sig_op)));
  if (!out) return DecodeError::kNone;
  CoreInstr& in = *out;
  in = CoreInstr{};
  in.opcode = op;
  in.wait_en = h.wait_en;
  in.wait_sem = static_cast<int>(h.wait_sem);
  in.wait_value = static_cast<uint32_t>(h.wait_value);
  in.sig_op = h.sig_op;
  in.sig_sem = static_cast<int>(h.sig_sem);
  in.sig_value = static_cast<uint32_t>(h.sig_value);
  in.tag = static_cast<uint8_t>(h.tag);
  switch (info->format) {
    case isa::Format::kTe:
      static_cast<isa::TeFields&>(in.te) = isa::unpack_te(w);
      in.te.opcode = op;
      in.te.tag = in.tag;
      break;
    case isa::Format::kVe:
      static_cast<isa::VeFields&>(in.ve) = isa::unpack_ve(w);
      in.ve.opcode = op;
      in.ve.tag = in.tag;
      break;
    case isa::Format::kDma: in.dma = isa::unpack_dma(w); break;
    case isa::Format::kList: in.list = isa::unpack_list(w); break;
    case isa::Format::kCc:
      static_cast<isa::CcFields&>(in.cc) = isa::unpack_cc(w);
      in.cc.opcode = op;
      in.cc.tag = in.tag;
      break;
    default: break;
  }
  return DecodeError::kNone;
}

CoreInstr default_instr(isa::Opcode op) {
  CoreInstr in;
  in.opcode = op;
  if (format_of(op) == isa::Format::kVe) in.ve.opcode = op;
  if (format_of(op) == isa::Format::kTe) in.te.opcode = op;
  if (format_of(op) == isa::Format::kCc) in.cc.opcode = op;
  if (op == isa::Opcode::kActivation) in.ve.s0 = 0x3F800000u;  // scale 1.0
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
    if (name == "s0" || name == "s1" || name == "value")
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

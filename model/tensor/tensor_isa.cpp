#include "model/tensor/tensor_isa.h"

#include <array>

#include <fmt/format.h>

namespace ncore::model {

std::string_view te_error_name(TeError e) {
  const auto i = static_cast<size_t>(e);
  return i < isa::kTeErrorDocs.size() ? isa::kTeErrorDocs[i] : "unknown error";
}

int te_replicas(const TeInstruction& i) {
  if (i.double_row) return 2;
  // A sparse stationary is the compressed tile; its moving tile holds G / 4 rows a partition.
  return i.opcode == Opcode::kMultiplyMoving ? sparsity_group(i.sparsity) / 4 : 1;
}

namespace {
std::string describe_modes(const TeInstruction& i) {
  std::string s;
  if (i.double_row) s += " double-row";
  if (i.transpose) s += " transpose";
  if (i.sparsity != TeSparsity::kDense) {
    s += fmt::format(" sparse-4:{}", sparsity_group(i.sparsity));
    if (i.opcode == Opcode::kLoadStationary) s += fmt::format(" tags=0x{:x}", i.tag_addr);
  }
  if (i.row_split != 0 || i.col_split != 0)
    s += fmt::format(" tile rows {}/{} cols {}/{}", i.row_tile, 1 << i.row_split,
                     i.col_tile, 1 << i.col_split);
  return s;
}
}  // namespace

std::string describe(const TeInstruction& i) {
  switch (i.opcode) {
    case Opcode::kLoadStationary:
      return fmt::format("LS tag={} {} K={} M={} sbuf=0x{:x}+{}*j{}", i.tag, dtype_name(i.dtype),
                         i.k, i.m, i.sbuf_addr, i.sbuf_stride, describe_modes(i));
    case Opcode::kMultiplyMoving:
      return fmt::format("MM tag={} {} K={} N={} sbuf=0x{:x}+{}*n psum bank {} offset {} {}{}",
                         i.tag, dtype_name(i.dtype), i.k, i.n, i.sbuf_addr, i.sbuf_stride,
                         i.psum_bank, i.psum_offset, i.accumulate ? "accumulate" : "overwrite",
                         describe_modes(i));
    default:
      return fmt::format("opcode {} tag={}", static_cast<int>(i.opcode), i.tag);
  }
}

TeInstruction load_stationary(DType t, int k, int m, uint32_t addr, uint32_t stride,
                              uint8_t tag) {
  TeInstruction i;
  i.opcode = Opcode::kLoadStationary;
  i.dtype = t;
  i.k = k;
  i.m = m;
  i.sbuf_addr = addr;
  i.sbuf_stride = stride;
  i.tag = tag;
  return i;
}

TeInstruction multiply_moving(DType t, int k, int n, uint32_t addr, uint32_t stride, int bank,
                              int offset, bool accumulate, uint8_t tag) {
  TeInstruction i;
  i.opcode = Opcode::kMultiplyMoving;
  i.dtype = t;
  i.k = k;
  i.n = n;
  i.sbuf_addr = addr;
  i.sbuf_stride = stride;
  i.psum_bank = bank;
  i.psum_offset = offset;
  i.accumulate = accumulate;
  i.tag = tag;
  return i;
}

}  // namespace ncore::model

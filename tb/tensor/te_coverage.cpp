#include "tb/tensor/te_coverage.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <unistd.h>

#include <fmt/format.h>

#include "model/common/numerics.h"

namespace ncore::tb {

using isa::Opcode;
using model::TeInstruction;

TeCoverage::TeCoverage(int rows, int cols, const TeSimOptions& options)
    : rows_(rows),
      cols_(cols),
      stall_(options.cmd_stall > 0 && options.sbuf_stall > 0 ? "cmd+sbuf"
             : options.cmd_stall > 0                         ? "cmd"
             : options.sbuf_stall > 0                        ? "sbuf"
                                                             : "none"),
      enabled_(std::getenv("NCORE_COVERAGE_DIR") != nullptr || options.count_bins) {}

TeCoverage::~TeCoverage() {
  const char* dir = std::getenv("NCORE_COVERAGE_DIR");
  if (!dir || bins_.empty()) return;
  static std::atomic<int> count{0};
  std::filesystem::create_directories(dir);
  std::ofstream out(fmt::format("{}/tensor_{}x{}-{}-{}.bins", dir, rows_, cols_, getpid(), count++));
  for (const auto& [bin, hits] : bins_) out << bin << ' ' << hits << '\n';
}

std::string TeCoverage::value_class(const TeInstruction& i, const model::TensorEngine& golden,
                                    const model::Sbuf& sbuf) const {
  if (!model::is_float(i.dtype)) return "n/a";
  const model::FloatFormat& f = model::float_format(i.dtype);
  const int bytes = f.storage_bits / 8;
  const int count = (i.opcode == Opcode::kLoadStationary ? i.m : i.n) * model::te_replicas(i);
  const int parts = std::min(i.k, rows_);
  const int row0 = golden.tile_row0(model::tiling_of(i));  // a row tile's operands lie on its partitions
  const uint64_t sbuf_bytes = sbuf.bytes_per_partition();
  int worst = 0;
  for (int p = row0; p < std::min(row0 + parts, rows_); ++p)
    for (int e = 0; e < count; ++e) {
      const uint64_t addr = i.sbuf_addr + static_cast<uint64_t>(e) * i.sbuf_stride;
      if (addr + bytes > sbuf_bytes) continue;
      const uint32_t bits = sbuf.read(p, static_cast<uint32_t>(addr), bytes) >> f.container_shift;
      const uint32_t exp = (bits >> f.man_bits) & ((1u << f.exp_bits) - 1);
      const uint32_t man = bits & ((1u << f.man_bits) - 1);
      const bool top = exp == (1u << f.exp_bits) - 1;
      const int cls = (top && (f.has_inf || man == (1u << f.man_bits) - 1)) ? 2 : (exp == 0 && man != 0) ? 1 : 0;
      worst = std::max(worst, cls);
    }
  return worst == 2 ? "inf-nan" : worst == 1 ? "subnormal" : "normal";
}

void TeCoverage::cover(const TeInstruction& i, const model::TensorEngine& golden, const model::Sbuf& sbuf) {
  const bool ls = i.opcode == Opcode::kLoadStationary;
  if (ls) last_ls_type_ = model::dtype_name(i.dtype);
  const std::string types = ls ? std::string(model::dtype_name(i.dtype))
                               : fmt::format("{}x{}", last_ls_type_, model::dtype_name(i.dtype));
  std::string mode = i.double_row ? "double-row" : i.transpose ? "transpose"
                   : i.sparsity != model::TeSparsity::kDense ? "sparse"
                   : (i.row_split || i.col_split) ? "tiled" : "plain";
  if (!ls && i.accumulate) mode += "+acc";
  const bool full_k = i.k >= rows_;
  const bool full_free = ls ? i.m >= cols_ : i.n >= 512;
  const char* shape = full_k && full_free ? "full" : full_k ? "part-free" : full_free ? "part-k" : "part-both";
  ++bins_[fmt::format("{} {} {} {} {} {}", ls ? "ls" : "mm", types, mode, shape, stall_,
                      value_class(i, golden, sbuf))];
}

}  // namespace ncore::tb

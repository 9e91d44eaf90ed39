#include "tb/vector/ve_coverage.h"

#include <fmt/format.h>

namespace ncore::tb {

using isa::Opcode;
using model::DType;

namespace {

const char* partition_class(int partitions, const model::VeConfig& cfg) {
  const int q = cfg.quadrant();
  return partitions == cfg.lanes ? "all" : partitions > q ? "many" : partitions == q ? "quadrant" : "few";
}

}  // namespace

std::string ve_cross_bin(const model::VeInstruction& in, const model::VeConfig& cfg) {
  return fmt::format("{} {} {}", model::ve_opcode_name(in.opcode), model::dtype_name(in.out),
                     partition_class(in.partitions, cfg));
}

std::set<std::string> ve_reachable_bins(bool scalar_engine) {
  std::set<std::string> bins;
  for (const auto& o : isa::kOpcodes) {
    if (o.format != isa::Format::kVe || (o.opcode == Opcode::kActivation) != scalar_engine) continue;
    const bool moves = o.opcode == Opcode::kTranspose || o.opcode == Opcode::kShuffle;
    for (int t = 0; t < isa::kNumDType; ++t) {
      const auto out = static_cast<DType>(t);
      if ((o.opcode == Opcode::kBnStats || o.opcode == Opcode::kBnAggr) && !model::is_float(out)) continue;
      if (o.opcode == Opcode::kAffineSelect && out == DType::kInt32) continue;
      for (const char* p : {"all", "many", "quadrant", "few"}) {
        if (moves && std::string(p) == "few") continue;
        bins.insert(fmt::format("{} {} {}", o.name, model::dtype_name(out), p));
      }
    }
  }
  return bins;
}

}  // namespace ncore::tb

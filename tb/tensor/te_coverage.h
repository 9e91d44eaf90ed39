#pragma once
// The tensor-engine harness's functional coverage: one bin per accepted instruction, operation x
// type pair x mode x shape class x stall pattern x value class (of the operand it reads), e.g.
// "mm bf16xfp8 plain+acc full none normal". Counted when NCORE_COVERAGE_DIR is set (and written
// there next to the Verilator coverage; scripts/coverage merges and reports them) or when the
// options ask (count_bins). A refused instruction exercised no datapath and hits no bin.

#include <cstdint>
#include <map>
#include <string>

#include "model/common/sbuf.h"
#include "model/tensor/tensor_engine.h"
#include "tb/tensor/te_sim.h"

namespace ncore::tb {

class TeCoverage {
 public:
  TeCoverage(int rows, int cols, const TeSimOptions& options);
  // Writes the bins to NCORE_COVERAGE_DIR, when set.
  ~TeCoverage();
  TeCoverage(const TeCoverage&) = delete;
  TeCoverage& operator=(const TeCoverage&) = delete;

  bool enabled() const { return enabled_; }
  // An instruction the engine accepted, with the SBUF and golden model as it executes.
  void cover(const model::TeInstruction& i, const model::TensorEngine& golden, const model::Sbuf& sbuf);
  const std::map<std::string, uint64_t>& bins() const { return bins_; }

 private:
  // The worst class among the elements the instruction reads: zero/normal < subnormal < inf/NaN.
  std::string value_class(const model::TeInstruction& i, const model::TensorEngine& golden,
                          const model::Sbuf& sbuf) const;

  int rows_, cols_;
  std::string stall_;  // the run's stall pattern: none, cmd, sbuf, cmd+sbuf
  bool enabled_;
  std::map<std::string, uint64_t> bins_;
  std::string last_ls_type_ = "none";
};

}  // namespace ncore::tb

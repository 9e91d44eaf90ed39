#pragma once
// The chips' collective engines as the cores' cc queues see them: collectives issued by
// programs (`ncore tlm run`).
//
// Groups (model/isa/ncore.isa, enum cc_group): `chips` is the cores with the issuing core's CORE
// on every chip, ranked by CHIP; `cores` the cores of the issuing core's chip, ranked by CORE;
// `all` every core, ranked CHIP * CORES + CORE; `pair` the two cores of a logical NeuronCore at
// LNC=2 (CORE 2k and 2k + 1 of a chip), ranked by CORE % 2. A core's n-th collective of a group kind joins
// the n-th collective of its group; it starts when every member has joined.
//   - The members must have issued the same collective (op, dtype, bytes, algo): otherwise each
//     member's core stops with cc_refused (mismatch), the message naming every chip and core and
//     what each issued.
//   - Each member's collective is checked (model::cc_check: dtype fp32 or bf16, bytes a positive
//     multiple of the granule, src and dst inside HBM; the algorithm must apply to the system).
//   - A member that never joins leaves the others waiting; when nothing else can happen the run
//     ends as a deadlock, and waiting_report() names who joined and who is missing.
//
// Data: the results are computed from the members' src bytes as they are in HBM when the
// collective starts, and written to their dst when it ends. Sums are taken in FP32 in rank order
// (member 0 + member 1 + ... + member N-1, left to right) whatever the algorithm, so every
// algorithm gives the same bits; BF16 inputs are widened to FP32 and the sum rounded to BF16 once
// (round to nearest even). all_gather and all_to_all place blocks in rank order.
//
// Timing, in three phases: the engine reads every member's src through its chip's HBM
// (ChipHbm, shared with the cores' DMA), then the chips exchange the data over the NeuronLink
// fabric with the algorithm (tb/tlm/collective.h, timing only: one chip per rank, the sum of
// the chip's members' contributions travelling as one), then it writes every member's dst
// through HBM. A group inside one chip has no fabric phase.
//
// core_barrier (nki.isa.core_barrier) takes group pair only and moves nothing (bytes 0): it ends
// ChipConfig::core_barrier_ns after its second member issued it. Memory ordering is the program's:
// a core issues it after the DMA it publishes has signalled, and its partner reads after the
// barrier's signal.

#include <memory>
#include <string>
#include <vector>

#include "model/core/collective_engine.h"
#include "tb/tlm/system.h"

namespace ncore::tlmsys {

struct CollectiveRecord {
  std::string op, group, algo;
  uint64_t bytes = 0;
  int members = 0;
  double start_us = 0, end_us = 0;
  std::string error;  // "" when it ran
};

class SystemCollectives {
 public:
  SystemCollectives(System& system, const SystemConfig& config);
  ~SystemCollectives();
  // The engine the cc queue of core (chip, core) issues to; `wake` is notified when one of its
  // collectives ends. `describe(index)` names its cc instruction `index` for reports.
  model::CollectiveEngine& port(int chip, int core, sc_core::sc_event& wake,
                                std::function<std::string(size_t)> describe);
  // Collectives still waiting for members: who joined (and with what), who is missing.
  std::string waiting_report() const;
  const std::vector<CollectiveRecord>& records() const { return records_; }

 private:
  class Port;
  struct Instance;
  Instance& join(Port& port, size_t index, const isa::CcInstruction& c);
  void start(Instance& x);
  void run(Instance& x);
  void finish(Instance& x, isa::CcError error, const std::string& why);

  System& system_;
  const SystemConfig& config_;
  std::vector<std::unique_ptr<Port>> ports_;
  std::vector<std::unique_ptr<Instance>> instances_;
  std::vector<CollectiveRecord> records_;
};

}  // namespace ncore::tlmsys

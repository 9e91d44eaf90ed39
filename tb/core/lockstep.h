#pragma once
// Lockstep checking of the RTL core against the golden core, instruction by instruction.
//
// The golden core (model::CoreModel) runs the program first and leaves, per instruction it
// completed, a digest of what that instruction wrote (every SBUF, PSUM and HBM byte, as 32-byte
// lines with byte masks: model::InstrEffects). The RTL harness then feeds this checker the RTL
// core's events of every cycle, in this order:
//   - writes, each attributed to its instruction (the engines' tags, a DMA engine's descriptors
//     in order): accumulated per instruction;
//   - commits (nc_core's commit port): the instruction's accumulated writes must equal the
//     golden core's, each instruction commits once, and the vector and scalar queues' engine
//     instructions commit in program order;
//   - semaphore signals: each must be the instruction's own (op, semaphore, value), once, and on
//     a fenced queue after the instruction has committed.
// The first difference stops the check with the instruction (file:line), the cycle, what the
// RTL wrote and what the golden core wrote, and a command that reproduces it with waves.
// Memory stays bounded by the instructions in flight: the golden side keeps 16 bytes per
// instruction, and runs again only to explain a difference.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "model/core/core_model.h"
#include "model/core/program.h"

namespace ncore::tb {

// "sp instruction 4 at gemm_8.s:17: dma_copy ..." (the text is the disassembly).
std::string describe_instruction(const model::Program& p, int queue, uint64_t index);
// " (tensor NAME element E)" for the tensor holding HBM byte `addr`, or SBUF byte `addr` of
// `partition`; "" when none does.
std::string locate_tensor_byte(const model::Program& p, bool hbm, uint64_t addr, int partition = 0);

struct LockstepStats {
  uint64_t instructions = 0;     // commits whose writes were compared
  uint64_t lines = 0;            // 32-byte lines in them
  uint64_t signals = 0;          // semaphore signals checked
  uint64_t not_compared = 0;     // commits after the golden core had stopped on an error
};

class Lockstep {
 public:
  // Runs the golden core. `raw_words`: instructions whose RTL word is not the program's
  // encoding (their signals are not checked). `reproduce`: the command that reruns this case;
  // the checker adds the waves options.
  Lockstep(const model::Program& program, const model::CoreConfig& config,
           const std::map<std::pair<int, size_t>, isa::Word>& raw_words, std::string reproduce);

  const model::CoreResult& golden() const { return golden_result_; }
  model::CoreModel& golden_model() { return golden_; }

  // A write by instruction `index` of `queue` (addresses as model::InstrEffects has them).
  void write(int queue, uint64_t index, model::CoreMemory m, uint64_t addr, const uint8_t* bytes, size_t n);
  // A write by DMA engine `engine`: its descriptors' bursts are counted off in program order.
  void dma_write(int engine, model::CoreMemory m, uint64_t addr, const uint8_t* bytes, size_t n, uint64_t cycle);
  void commit(int queue, uint64_t index, uint64_t cycle);
  void signal(int queue, uint64_t index, int op, int sem, uint32_t value, uint64_t cycle);
  // Both cores ran the program to its end: everything committed and signalled once.
  void finish(uint64_t cycle);

  bool failed() const { return failed_; }
  const std::string& failure() const { return failure_; }
  uint64_t failure_cycle() const { return failure_cycle_; }
  const LockstepStats& stats() const { return stats_; }

 private:
  struct Key {
    int queue;
    uint64_t index;
    bool operator<(const Key& o) const { return queue != o.queue ? queue < o.queue : index < o.index; }
  };
  struct Golden {
    uint64_t digest = 0, cycle = 0;
  };
  struct DmaCursor {
    std::vector<std::pair<uint64_t, uint64_t>> descriptors;  // (sp index, bursts)
    size_t at = 0;
    uint64_t bursts = 0;  // of descriptors[at] so far
  };

  void fail(uint64_t cycle, int queue, uint64_t index, const std::string& what);
  std::string explain(const Key& k, const model::InstrEffects& rtl);
  std::string describe_line(model::CoreMemory m, uint64_t line) const;

  const model::Program& prog_;
  model::CoreConfig config_;
  model::CoreModel golden_;
  model::CoreResult golden_result_;
  std::map<Key, Golden> golden_effects_;
  std::map<Key, model::InstrEffects> rtl_effects_;  // instructions in flight
  std::vector<std::vector<uint8_t>> committed_, signalled_;  // per queue, per instruction
  std::vector<int64_t> last_engine_commit_;                  // per queue
  std::vector<DmaCursor> dma_;
  const std::map<std::pair<int, size_t>, isa::Word>& raw_words_;
  std::string reproduce_;
  LockstepStats stats_;
  bool failed_ = false;
  std::string failure_;
  uint64_t failure_cycle_ = 0;
};

// The digest of an instruction's writes (order-independent of how they were made).
uint64_t effects_digest(const model::InstrEffects& e);

}  // namespace ncore::tb

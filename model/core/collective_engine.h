#pragma once
// The collective engine a core's cc queue issues to: a policy behind an interface.
//
// The cc queue issues all_reduce, all_gather, reduce_scatter, all_to_all and core_barrier (a
// collective of bytes 0 that moves nothing) in order; each ends
// when the engine says so, in issue order, and its signal applies then. Who the other members
// are and how the data travels is the engine's:
//   - LoneCollectives (below): the core alone, so every group has one member (CHIPS = CORES =
//     1): each collective copies `bytes` from src to dst in the core's HBM. `ncore run` uses it.
//   - the chip's collective engine (tb/tlm/collective_engine.h): the members are cores of the
//     system, the data moves over the NeuronLink fabric and through the chips' HBM.
//
// Sizes follow NCCL: all_reduce sends and receives `bytes`; all_gather sends `bytes` and
// receives bytes x ranks; reduce_scatter sends bytes x ranks and receives `bytes`; all_to_all
// sends and receives bytes x ranks in blocks of `bytes`.

#include <cstdint>
#include <deque>
#include <string>

#include "model/core/core_isa.h"

namespace ncore::model {

class SparseMemory;

// Bytes a member sends and receives in a collective of `ranks` members.
uint64_t cc_send_bytes(const isa::CcInstruction& c, int ranks);
uint64_t cc_receive_bytes(const isa::CcInstruction& c, int ranks);
// The checks every engine makes before it starts a collective (dtype, size, HBM range);
// kNone, or the code with `*why` saying what was found.
isa::CcError cc_check(const isa::CcInstruction& c, int ranks, uint64_t granule, uint64_t hbm_bytes, std::string* why);

class CollectiveEngine {
 public:
  virtual ~CollectiveEngine() = default;
  // The core issues collective `index` of its cc queue at cycle `now`.
  virtual void issue(size_t index, const isa::CcInstruction& c, uint64_t now) = 0;
  // Whether the oldest issued collective has ended by cycle `now` (its data written, or refused).
  virtual bool done(uint64_t now) const = 0;
  // The oldest ended collective's refusal (kNone: it ran), with why.
  virtual isa::CcError error(std::string* why) const = 0;
  // The HBM range the oldest ended collective wrote at this core's chip (address, bytes).
  virtual std::pair<uint64_t, uint64_t> written() const = 0;
  // The core has retired the oldest ended collective.
  virtual void retire() = 0;
  // The next cycle after `now` at which a collective this engine times itself may end, or
  // kNoEvent (an engine driven from outside wakes the core).
  virtual uint64_t next_event(uint64_t now) const = 0;
};

// A core alone: every collective has one member and copies src to dst when it ends, after
// latency_cycles plus its bytes read and written at bytes_per_cycle.
// When a lone core's collective issued at `now` ends, the one before it ending at `previous_end`
// (0: none): latency_cycles plus its bytes read and written at bytes_per_cycle (nothing to move
// when refused). The RTL harness's engine uses it too.
uint64_t lone_collective_end(const isa::CcInstruction& c, bool refused, uint64_t now, uint64_t previous_end,
                             uint64_t latency_cycles, double bytes_per_cycle);

class LoneCollectives : public CollectiveEngine {
 public:
  // move_data false: collectives take their time and copy nothing (timing-only runs).
  LoneCollectives(SparseMemory& hbm, uint64_t hbm_bytes, uint64_t latency_cycles, double bytes_per_cycle,
                  bool move_data = true);
  void issue(size_t index, const isa::CcInstruction& c, uint64_t now) override;
  bool done(uint64_t now) const override;
  isa::CcError error(std::string* why) const override;
  std::pair<uint64_t, uint64_t> written() const override;
  void retire() override;
  uint64_t next_event(uint64_t now) const override;

 private:
  struct Pending {
    isa::CcInstruction c;
    uint64_t end = 0;
    isa::CcError error = isa::CcError::kNone;
    std::string why;
  };
  SparseMemory& hbm_;
  uint64_t hbm_bytes_, latency_;
  double rate_;
  bool move_data_;
  std::deque<Pending> pending_;
};

}  // namespace ncore::model

#pragma once
// Lockstep co-simulation of the vector-engine (or scalar-engine) RTL against the golden model.
//
// One instruction stream drives both. When the RTL accepts an instruction the golden model
// checks it (the refusal code must match the RTL's) and computes its writes from the golden
// memory; each write the RTL makes is compared, as it happens, with the next expected one
// (address, bytes, partitions and every lane's bits). The first difference stops the run with
// the instruction, the element, the partition, the cycle, both values in hex and decoded, and
// the command that reproduces it. At the end the RTL-side memories must equal the golden ones
// (no stray writes). SBUF/PSUM ports get random back-pressure and random read latency.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/vector/vector_engine.h"
#include "tb/common/bench_options.h"

namespace ncore::tb {

// A fault injected on purpose, so that a test can see an RTL assertion fire: a protocol
// violation the harness commits at a port, or (vector engine only) a register upset that the
// harness top (nc_vector_engine_tb.sv) makes once its target is live.
enum class VeFault {
  kNone,
  kCmdChangesWhileStalled,   // VeCmdStable
  kResponseWithoutRequest,   // VeRspHasRequest
  kUpsetStateIdle,           // VeNoWriteWhenIdle: the state machine idles with a write queued
  kUpsetProduced,            // VeProducedBound: more elements produced than the destination has
};

// Seed, watchdog, waves, reproduce and xprop_seed (the X-propagation build has 8 lanes):
// BenchOptions.
struct VeSimOptions : BenchOptions {
  bool check = true;            // false: RTL alone, no golden model and no comparison
  double cmd_stall = 0.0;       // chance the driver holds back the next instruction a cycle
  double rd_stall = 0.0;        // chance the read port is not ready in a cycle
  double wr_stall = 0.0;        // chance the write port is not ready in a cycle
  int rsp_extra_latency = 0;    // read responses come 1 + [0, this] cycles after the request
  VeFault fault = VeFault::kNone;
  bool count_bins = false;      // count the functional cross (ve_coverage.h) in VeSimResult::bins
};

struct VeCounters {
  uint64_t busy = 0, rd_stall = 0, wr_stall = 0, credit_stall = 0, elements = 0, executed = 0,
           refused = 0;
};

// ok, failure (the first mismatch or protocol problem), cycles (from reset to the last
// instruction done and the engine idle) and wall time: BenchResult.
struct VeSimResult : BenchResult {
  uint64_t writes_compared = 0;   // lane-writes (one element of every active partition)
  uint64_t lanes_compared = 0;    // element values compared
  uint64_t refusals_compared = 0;
  uint64_t cmd_held_off = 0;      // cycles an offered instruction waited for the engine
  std::vector<uint64_t> instr_cycles;  // cycles from acceptance to done, per instruction
  uint64_t powerup_signature = 0;  // a hash of the write port's data just after reset (it shows
                                   // the unreset write buffer: random in an X-propagation build)
  VeCounters counters;
  // Functional coverage (tb/vector/ve_coverage.h): hits per bin of the accepted instructions,
  // when options.count_bins or NCORE_COVERAGE_DIR is set.
  std::map<std::string, uint64_t> bins;
};

// Lanes the harness has a Verilated model for (vector engine, or scalar engine).
bool ve_sim_has_lanes(int lanes, bool scalar_engine = false, bool xprop = false);

class VeSim {
 public:
  // The vector engine, or with scalar_engine the scalar engine (the same harness: both take
  // the same instruction format and ports).
  VeSim(int lanes, VeSimOptions options, bool scalar_engine = false);
  const model::VeConfig& config() const { return cfg_; }
  // The memories as the program starts; both engines begin from these.
  model::VeMemory& memory() { return mem_; }
  const model::VeMemory& memory() const { return mem_; }
  // Runs the program through the RTL (and the golden model when checking). Afterwards
  // memory() holds what the RTL wrote.
  VeSimResult run(const std::vector<model::VeInstruction>& program);

 private:
  model::VeConfig cfg_;
  VeSimOptions opt_;
  model::VeMemory mem_;
};

// Writes `elements` consecutive random values of type t (every value class: zeros, subnormals,
// the largest values, Inf, NaN, ordinary) at addr of every partition of the space.
void fill_random(model::VeMemory& mem, model::MemSpace space, uint32_t addr, uint32_t elements,
                 model::DType t, model::SplitMix64& rng);

}  // namespace ncore::tb

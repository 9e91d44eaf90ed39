#pragma once
// A NeuronCore in the TLM system, with two back-ends chosen per core:
//   golden  model::CoreModel, the fast event-driven golden core;
//   rtl     the Verilated RTL core (tb/core/core_sim.h), clocked cycle by cycle inside the call.
// run() executes a program on the back-end, advances the caller's simulated time by the cycles it
// took at the core clock, and writes the program's output tensors into the chip's HBM through
// the chip bus (timed b_transport, 4 KiB at a time) at the core's HBM window.
//
// What is not modelled here: a back-end loads its input tensors from the program's init=
// declarations and times its own HBM traffic (the golden core's DMA model, or the RTL core's
// reference HBM controllers), rather than reading the chip's HbmStacks during the run.

#include <cstdint>
#include <string>
#include <vector>

#include "model/core/program.h"
#include "tb/tlm/network.h"

namespace ncore::tlmsys {

enum class CoreBackend { kGolden, kRtl };
CoreBackend parse_core_backend(const std::string& name);

struct CoreRun {
  uint64_t cycles = 0;
  double te_utilization = 0;
  std::vector<std::pair<std::string, uint64_t>> output_checksums;  // FNV-1a per output tensor
  std::vector<std::pair<std::string, std::vector<uint8_t>>> outputs;
};

// Runs `program` on a back-end, outside any simulation (the module below calls it).
// rtl_size: the RTL core's array size (8 in every build, 128 with the full-size build).
CoreRun run_core_backend(const model::Program& program, CoreBackend backend, int rtl_size);

class NeuronCore : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<NeuronCore> bus;  // to the chip bus
  NeuronCore(sc_core::sc_module_name name, int index, double clock_ghz);
  // Call from a SystemC thread. `result` may come from an earlier identical run (same program,
  // same back-end): a back-end is deterministic, so its cycles and outputs are the same.
  void run(const CoreRun& result, uint64_t hbm_window);
  int index() const { return index_; }
 private:
  int index_;
  double clock_ghz_;
};

}  // namespace ncore::tlmsys

#pragma once
// A NeuronCore in the TLM system.
//
// Running a program (load(), then the simulation): the golden core (model::CoreModel) runs as a
// SystemC process that advances from event to event at the core clock. Its HBM is the chip's
// memory (no private HBM), and each DMA transfer is a TLM transaction to the chip's HBM
// (tb/tlm/chip_hbm.h), which times it on the pseudo-channels it touches, shared with every other
// core of the chip; the core sleeps until its next own event or a transfer's end.
//
// Replaying a result (run(), for `ncore tlm dp-step` until it is rebuilt on programs): the
// back-end ran once outside the simulation; the module waits its cycles and writes its outputs
// to the chip's HBM through the chip bus.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/core/core_model.h"
#include "model/core/program.h"
#include "tb/tlm/chip_hbm.h"
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
  tlm_utils::simple_initiator_socket<NeuronCore> bus;  // to the chip bus (replayed outputs)
  tlm_utils::simple_initiator_socket<NeuronCore> hbm;  // DMA transfers to the chip's HBM
  NeuronCore(sc_core::sc_module_name name, int chip, int index, double clock_ghz);
  ~NeuronCore() override;

  // Before the simulation: the program this core runs on the golden back-end, over `memory`
  // (the chip's HBM), its cc queue issuing to `collectives` (which notifies wake() when one
  // ends). Its init= tensors are written there now.
  void load(const model::Program& program, const model::CoreConfig& config, model::SparseMemory& memory,
            model::CollectiveEngine* collectives);
  sc_core::sc_event& wake() { return wake_; }
  bool loaded() const { return core_ != nullptr; }
  bool finished() const { return finished_; }
  const model::CoreResult& result() const { return result_; }
  model::CoreModel& model() { return *core_; }
  const model::CoreConfig& config() const { return config_; }
  // The SystemC thread of a loaded core (System::spawn it): runs the program to its end.
  void run_program();
  // What the core waits for now, for a system deadlock report.
  std::string waiting() const;

  // Call from a SystemC thread. `result` may come from an earlier identical run (same program,
  // same back-end): a back-end is deterministic, so its cycles and outputs are the same.
  void run(const CoreRun& result, uint64_t hbm_window);
  int index() const { return index_; }
  int chip() const { return chip_; }
  double clock_ghz() const { return clock_ghz_; }
  // Core cycles and simulated time (ps) at this core's clock.
  Ps ps_of_cycle(uint64_t cycle) const;
  uint64_t cycle_of_ps(Ps ps) const;  // the first cycle starting at or after ps

 private:
  class ChipTransfers;
  ::tlm::tlm_sync_enum nb_transport_bw(::tlm::tlm_generic_payload& t, ::tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay);
  int chip_, index_;
  double clock_ghz_;
  model::CoreConfig config_;
  std::unique_ptr<ChipTransfers> transfers_;
  std::unique_ptr<model::CoreModel> core_;
  model::CoreResult result_;
  bool finished_ = false;
  sc_core::sc_event wake_;  // a DMA transfer or a collective has ended
};

}  // namespace ncore::tlmsys

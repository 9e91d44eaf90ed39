#pragma once
// A NeuronCore in the TLM system.
//
// Running a program (load() or load_rtl(), then the simulation), on either back-end. Its HBM is
// the chip's memory (no private HBM), timed by the chip's HBM (tb/tlm/chip_hbm.h) on the
// pseudo-channels the traffic touches, shared with every other core of the chip:
//   - golden: the golden core (model::CoreModel) runs as a SystemC process that advances from
//     event to event at the core clock; each DMA transfer is one TLM transaction, and the core
//     sleeps until its next own event or a transfer's end.
//   - RTL: the Verilated nc_core (tb/core, model::RtlCore) is clocked in slices of
//     rtl_slice_cycles cycles; each 32-byte burst on its HBM ports is one TLM transaction (a
//     write's data goes to the chip's memory when the port hands it over, a read's comes from
//     there when the chip's HBM serves it), and its collective port issues to the chip's
//     collective engine. While it can do nothing but wait for a collective (RtlCore::parked) it
//     sleeps until the collective ends and then clocks the cycles that passed, so its cycle
//     counts are those of a core clocked throughout.
//
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/core/core_model.h"
#include "model/core/program.h"
#include "tb/core/core_sim.h"
#include "tb/tlm/chip_hbm.h"
#include "tb/tlm/network.h"

namespace ncore::tlmsys {

class NeuronCore : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<NeuronCore> hbm;  // DMA transfers to the chip's HBM
  NeuronCore(sc_core::sc_module_name name, int chip, int index, double clock_ghz);
  ~NeuronCore() override;

  // Before the simulation: the program this core runs on the golden back-end, over `memory`
  // (the chip's HBM), its cc queue issuing to `collectives` (which notifies wake() when one
  // ends). Its init= tensors are written there now.
  void load(const model::Program& program, const model::CoreConfig& config, model::SparseMemory& memory,
            model::CollectiveEngine* collectives);
  // The same with the RTL core of size config.lanes (built: tb::core_rtl_sizes()): reset, its
  // program and init= tensors loaded now. hbm_bytes_log2: the HBM capacity it checks addresses
  // against (2^n bytes); waves: "" or an FST file of its whole run; pe_arith: its array's arithmetic.
  void load_rtl(const model::Program& program, const model::CoreConfig& config, model::SparseMemory& memory,
                model::CollectiveEngine* collectives, int slice_cycles, int hbm_bytes_log2, const std::string& waves,
                tb::PeArith pe_arith);
  sc_core::sc_event& wake() { return wake_; }
  bool loaded() const { return core_ != nullptr || rtl_ != nullptr; }
  bool is_rtl() const { return rtl_ != nullptr; }
  bool finished() const { return finished_; }
  // After the run: status, counters and (golden: with record_timeline; RTL: always) timeline.
  const model::CoreResult& result() const { return result_; }
  void record_timeline(bool on);
  const model::CoreConfig& config() const { return config_; }
  // A tensor's bytes in its memory (after the run: an output).
  std::vector<uint8_t> tensor_bytes(const model::TensorDecl& d);
  // The SystemC thread of a loaded core (System::spawn it): runs the program to its end.
  void run_program();
  // What the core waits for now, for a system deadlock report.
  std::string waiting() const;

  int index() const { return index_; }
  int chip() const { return chip_; }
  double clock_ghz() const { return clock_ghz_; }
  // Core cycles and simulated time (ps) at this core's clock.
  Ps ps_of_cycle(uint64_t cycle) const;
  uint64_t cycle_of_ps(Ps ps) const;  // the first cycle starting at or after ps

 private:
  class ChipTransfers;
  class RtlPorts;
  void run_golden();
  void run_rtl();
  ::tlm::tlm_sync_enum nb_transport_bw(::tlm::tlm_generic_payload& t, ::tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay);
  int chip_, index_;
  double clock_ghz_;
  model::CoreConfig config_;
  std::unique_ptr<ChipTransfers> transfers_;
  std::unique_ptr<model::CoreModel> core_;
  std::unique_ptr<RtlPorts> rtl_ports_;
  std::unique_ptr<tb::RtlCore> rtl_;
  int slice_cycles_ = 1;
  model::CoreResult result_;
  bool finished_ = false;
  sc_core::sc_event wake_;  // a DMA transfer or a collective has ended
};

}  // namespace ncore::tlmsys

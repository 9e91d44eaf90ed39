#pragma once
// The assembled system: chips (each a Router, an Endpoint for its collective engine and
// `hbm_stacks` HbmStacks behind a chip bus, and its NeuronCores) joined by Links on the torus
// the configuration gives: one chip, a Trn2 instance (4x4) or an UltraServer (4x4x4).
//
// SystemC has one simulation per process context; System::reset_kernel() starts a fresh one so
// that a test binary can build and run several systems one after another.

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>

#include "tb/tlm/chip_hbm.h"
#include "tb/tlm/network.h"
#include "tb/tlm/neuron_core.h"
#include "tb/tlm/system_config.h"
#include "tb/tlm/topology.h"

namespace ncore::tlmsys {

class System;

class Chip : public sc_core::sc_module {
 public:
  // The chip bus: any number of initiators (a host, tests) reach the stacks by local address.
  tlm_utils::multi_passthrough_target_socket<Chip, 32, ::tlm::tlm_base_protocol_types, 0,
                                             sc_core::SC_ZERO_OR_MORE_BOUND>
      bus;
  std::vector<std::unique_ptr<HbmStack>> stacks;
  Router router;
  Endpoint endpoint;
  // Sends from the chip's collective engine enter its router here.
  tlm_utils::simple_initiator_socket<Chip> to_router;
  // The chip's HBM for its cores' DMA: every pseudo-channel of every stack, cycle by cycle.
  ChipHbm hbm;
  // The contents of the chip's HBM (chip-local addresses), shared by its cores, the bus and the
  // collective engine.
  model::SparseMemory memory;
  std::vector<std::unique_ptr<NeuronCore>> cores;  // each bound to hbm
  Chip(sc_core::sc_module_name name, const SystemConfig& config, const Topology& topology, int rank);
  int rank() const { return rank_; }
  // Backdoor (transport_dbg) access to the chip's HBM.
  void write_hbm(uint64_t addr, const uint8_t* data, size_t n);
  void read_hbm(uint64_t addr, uint8_t* data, size_t n);
  // The collective engine's HBM traffic, timed by each chip's ChipHbm with its cores' DMA: each
  // transfer moves as 16 streams at a DMA engine's rate (what 16 engines would do). Call from a
  // SystemC thread; returns when every transfer has ended. Timing only (the data is the caller's).
  struct HbmTransfer {
    int chip = 0;
    bool write = false;
    uint64_t addr = 0, bytes = 0;
  };
  static void hbm_transfers(System& system, const std::vector<HbmTransfer>& transfers);
 private:
  ::tlm::tlm_sync_enum cc_hbm_bw(::tlm::tlm_generic_payload& t, ::tlm::tlm_phase& phase, sc_core::sc_time& delay);
  tlm_utils::simple_initiator_socket<Chip> cc_hbm_;  // the collective engine's port to hbm
  double core_clock_ghz_;
  double dma_bytes_per_cycle_ = 12.0;
  void bus_b_transport(int initiator, ::tlm::tlm_generic_payload& t, sc_core::sc_time& delay);
  unsigned int bus_transport_dbg(int initiator, ::tlm::tlm_generic_payload& t);
  HbmStack& stack_of(uint64_t addr, uint64_t* local);
  std::vector<std::unique_ptr<tlm_utils::simple_initiator_socket<Chip>>> to_stack_;
  int rank_;
  uint64_t capacity_;
};

class System {
 public:
  explicit System(const SystemConfig& config);
  ~System();
  const SystemConfig& config() const { return config_; }
  const Topology& topology() const { return topology_; }
  Chip& chip(int rank) { return *chips_[rank]; }
  int chips() const { return static_cast<int>(chips_.size()); }
  // The link leaving `rank` on `port` (nullptr when the topology has none).
  Link* link(int rank, int port) { return links_[rank * kNumPorts + port].get(); }
  // Drops the current SystemC simulation context and starts an empty one.
  static void reset_kernel();
  // A process whose exceptions are not lost: the first one thrown in any process spawned here
  // stops the simulation, and simulate() rethrows it as ncore::Error.
  static void spawn(std::function<void()> body, const std::string& name = "",
                    const sc_core::sc_spawn_options* options = nullptr);
  // sc_start (until `limit`, or until no event is left), then the first process failure or
  // SystemC report error, as ncore::Error.
  static void simulate(const sc_core::sc_time* limit = nullptr);
 private:
  SystemConfig config_;
  Topology topology_;
  std::vector<std::unique_ptr<Chip>> chips_;
  std::vector<std::unique_ptr<Link>> links_;
};

}  // namespace ncore::tlmsys

#pragma once
// The chip's HBM as its cores see it: `chip.hbm_stacks` stacks of
// `chip.hbm_pseudo_channels_per_stack` pseudo-channels, every pseudo-channel timed cycle by cycle
// by the HBM reference controller (model::HbmChannel: batched FR-FCFS, per-bank refresh, the
// model proven cycle-exact against rtl/hbm/nc_hbm_ctrl.sv) and shared by every core of the chip.
//
// Clock: tCK = 4 / chip.hbm_pin_gbps ns (a 32-bit pseudo-channel moves a 32-byte burst in two
// tCK), rounded to the picosecond (hbm_tck_ps). The DRAM's timing is model::HbmDramTiming's,
// as HBM3 states it: the burst and column-to-column delays in clocks, the row, recovery and
// refresh times in nanoseconds, so a slower pin rate slows the data bus in proportion and
// keeps the DRAM's own latencies.
//
// Address map (ChipHbmMap): a chip address is cut in 256-byte stripes; stripe s goes to channel
// (s mod N + h(s div N)) mod N of the N = stacks x pseudo-channels, where h hashes the stripe's
// row of N so that power-of-two strides still spread over every channel; channel g is
// pseudo-channel g div stacks of stack g mod stacks, so neighbouring stripes alternate stacks.
// Within its pseudo-channel the stripe sits at (s div N) x 256. A pseudo-channel's controller
// has 16 banks x 16,384 rows of 1 KiB (256 MiB); on a larger stack the rows above alias in the
// timing model (which rows conflict), never in the data.
//
// Traffic (TLM-2.0 base protocol, non-blocking): one transaction per DMA transfer, from a
// core's DMA engine (a descriptor's rows and planes: DmaTransferExtension). nb_transport_fw
// BEGIN_REQ is answered END_REQ at once; the chip cuts the transfer into 32-byte bursts, issues
// them at the engine's rate (one per 32 / dma_bytes_per_cycle core cycles) with at most
// kBurstsInFlight unanswered, each into the request queue of the pseudo-channel its address
// maps to, and calls nb_transport_bw BEGIN_RESP when the last one is served (a read: its data
// returned; a write: taken into the controller's write queue, which is posted and keeps
// same-address order). A pseudo-channel takes one read and one write a cycle, first come first
// served among the engines queued on it.
// The channels time; the data lives in the chip's memory (Chip::memory), which the core reads
// and writes when its transfer ends.
//
// Event-driven: the process wakes only at HBM cycles where something happens (a transfer's
// next burst leaves, or a pseudo-channel takes a request or reaches its next activity:
// model::HbmChannel::next_activity) and steps only those channels; a channel skips its quiet
// cycles (skip_to), and one that was idle first catches up the cycles it missed (its
// refreshes), so every channel issues the commands it would if clocked every cycle from time
// zero. `step_every_cycle` (chip.hbm_step_every_cycle) steps every busy channel every cycle
// instead: the reference the event-driven run is tested against.

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include <tlm_utils/multi_passthrough_target_socket.h>

#include "model/core/core_isa.h"
#include "model/hbm/channel.h"
#include "tb/tlm/network.h"

namespace ncore::tlmsys {

inline constexpr uint64_t kHbmStripeBytes = 256;
inline constexpr uint64_t kNever = ~uint64_t{0};
// Reads in flight per transfer: 2 KiB, enough to cover the controller's read latency (~40-80 ns)
// at an engine's rate (28.8 GB/s), so the engine, not this limit, sets the pace.
inline constexpr int kBurstsInFlight = 64;

class ChipHbmMap {
 public:
  ChipHbmMap(int stacks, int pseudo_channels_per_stack);
  struct Place {
    int stack = 0, pseudo_channel = 0;
    int channel = 0;      // stack + stacks * pseudo_channel
    uint64_t local = 0;   // byte address within the pseudo-channel
  };
  Place locate(uint64_t chip_addr) const;
  int channels() const { return channels_; }
  int stacks() const { return stacks_; }

 private:
  int stacks_, channels_;
};

// What a DMA transfer carries: the descriptor (its geometry) and who issued it.
struct DmaTransferExtension : ::tlm::tlm_extension<DmaTransferExtension> {
  model::DmaDescriptor descriptor;
  int core = 0, engine = 0;
  double bytes_per_cycle = 12.0;  // the engine's issue rate, at the core clock
  double core_clock_ghz = 2.4;
  ::tlm::tlm_extension_base* clone() const override { return new DmaTransferExtension(*this); }
  void copy_from(const ::tlm::tlm_extension_base& e) override {
    *this = static_cast<const DmaTransferExtension&>(e);
  }
};

struct HbmStackStats {
  uint64_t read_bytes = 0, write_bytes = 0;
  uint64_t data_cycles = 0;  // data-bus busy cycles, summed over its pseudo-channels
};

class ChipHbm : public sc_core::sc_module {
 public:
  tlm_utils::multi_passthrough_target_socket<ChipHbm, 32, ::tlm::tlm_base_protocol_types, 0,
                                             sc_core::SC_ZERO_OR_MORE_BOUND>
      socket;
  ChipHbm(sc_core::sc_module_name name, int stacks, int pseudo_channels_per_stack, double pin_gbps,
          bool step_every_cycle = false);

  const ChipHbmMap& map() const { return map_; }
  Ps tck_ps() const { return tck_; }
  // The peak of one stack in GB/s at this clock: pseudo-channels x 32 bytes / 2 tCK.
  double stack_peak_gbps() const;
  const std::vector<HbmStackStats>& stack_stats() const { return stacks_; }
  uint64_t cycles() const { return cycle_; }   // HBM cycles simulated so far
  // Bytes each stack's data bus carried (RD and WR commands), in windows of kWindowCycles HBM
  // cycles: the trace timeline, and the check that no stack beats its peak.
  static constexpr uint64_t kWindowCycles = 1024;
  const std::vector<std::vector<uint64_t>>& window_bytes() const { return windows_; }
  uint64_t transfers() const { return transfers_; }
  uint64_t channel_steps() const { return channel_steps_; }  // pseudo-channel cycles stepped

 private:
  struct Transfer {
    ::tlm::tlm_generic_payload* payload = nullptr;
    int initiator = 0;
    model::DmaDescriptor d;
    bool write = false;
    uint64_t bursts = 0, issued = 0, served = 0;
    int in_flight = 0;
    double next_issue_ps = 0, period_ps = 0;
    bool active = false;
    Ps begin_ps = 0;
    uint64_t seq = 0;  // arrival count: orders one initiator's transfers of one instant
  };
  struct Queued {
    uint32_t transfer;
    uint64_t local;
  };
  struct Channel {
    std::unique_ptr<model::HbmChannel> controller;
    std::deque<Queued> waiting[2];  // reads, writes
    bool listed = false;            // in busy_
    uint64_t wake = 0;              // listed: the next cycle it must be stepped
  };

  ::tlm::tlm_sync_enum nb_transport_fw(int initiator, ::tlm::tlm_generic_payload& t, ::tlm::tlm_phase& phase,
                                       sc_core::sc_time& delay);
  void run();
  void cycle(uint64_t k, Ps now);
  uint64_t next_cycle(uint64_t k) const;  // the first cycle from k on with work (kNever: none)
  bool must_step(const Channel& c, uint64_t k) const;
  // A channel to cycle k: its quiet cycles skipped (with step_every_cycle, stepped); a channel
  // that was idle may have refreshes to step on the way.
  void catch_up(model::HbmChannel& hbm, uint64_t k) const;
  void issue_bursts(Transfer& x, uint32_t id, Ps now);
  void served(uint32_t id);                 // one burst of transfer `id` is done
  void on_data_bus(int stack, bool write);  // a RD or WR command: its burst crosses the data bus
  uint64_t burst_address(const Transfer& x, uint64_t k) const;

  ChipHbmMap map_;
  Ps tck_;
  model::HbmConfig config_;
  std::vector<Channel> channels_;
  std::vector<int> busy_;                 // channels with queued or in-flight work
  std::vector<Transfer> slots_;           // transfers by id (reused)
  std::vector<uint32_t> free_slots_;
  // The active transfers in the order their bursts leave within a cycle: by begin time, then
  // initiator, then arrival. It never depends on the order SystemC runs processes that act at
  // one instant (slot ids do).
  std::vector<uint32_t> order_;
  uint64_t arrivals_ = 0;
  int active_transfers_ = 0;
  std::vector<HbmStackStats> stacks_;
  std::vector<std::vector<uint64_t>> windows_;  // per stack
  bool step_every_cycle_;
  uint64_t cycle_ = 0, transfers_ = 0, channel_steps_ = 0;
  uint64_t done_until_ = 0;               // cycles before this one are simulated
  sc_core::sc_event work_;
};

}  // namespace ncore::tlmsys

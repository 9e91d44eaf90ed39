#pragma once
// One HBM pseudo-channel in RTL: the Verilated nc_hbm_ctrl (through nc_hbm_ctrl_tb, queue
// depths kHbmRtlRdDepth / kHbmRtlWrDepth) with its DRAM device: a WR's data lands in the
// channel's memory at its column command, a RD's data comes back CL + BL cycles after it.
//
// With `check`, the reference controller (model::HbmChannel) runs beside it on the same
// requests and every cycle is compared: request-port ready, row and column commands (with the
// request id) and read responses (id and data); the first difference is the cycle's failure.
// Two users: the lockstep harness (hbm_sim.cpp) and the fabric behind the core harness's DMA
// ports (`ncore run --hbm rtl`, through rtl_hbm_controllers(), always checked).

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/hbm/channel.h"
#include "model/hbm/hbm.h"
#include "tb/hbm/hbm_fabric.h"

class Vnc_hbm;
class VerilatedContext;

namespace ncore::tb {

class Waves;

// The queue depths the RTL is Verilated with (nc_hbm_ctrl_tb's RdDepth, WrDepth).
inline constexpr int kHbmRtlRdDepth = 64;
inline constexpr int kHbmRtlWrDepth = 256;

// Throws ncore::Error unless the configuration is valid and has the built queue depths.
void require_hbm_rtl_shape(const model::HbmConfig& config);

class HbmRtlChannel {
 public:
  // Configured from `config` and held in reset; `index` names it (and its addresses' channel).
  // scramble_ids: the RTL sees every id multiplied by an odd constant (all id bits move).
  HbmRtlChannel(VerilatedContext* context, const model::HbmConfig& config, int index, bool check,
                bool scramble_ids = false);
  ~HbmRtlChannel();
  HbmRtlChannel(const HbmRtlChannel&) = delete;
  HbmRtlChannel& operator=(const HbmRtlChannel&) = delete;

  Vnc_hbm& top() { return *top_; }
  const Vnc_hbm& top() const { return *top_; }

  // What a cycle showed with the clock low (outputs settled, before the edge).
  struct Cycle {
    bool rd_ready = false, wr_ready = false;
    bool rd_accepted = false, wr_accepted = false;
    model::HbmCommand row, col;
    bool response = false;
    uint32_t response_id = 0;
    model::HbmData response_data{};
    std::string failure;  // check: the first difference from the reference this cycle
  };
  // One clock cycle with these requests (or none) on the ports. spurious_data drives the DRAM's
  // read-data valid without a read (a fault for the assertion tests); `waves`: dump this one.
  Cycle cycle(uint64_t now, const model::HbmRequest* rd, const model::HbmRequest* wr, Waves* waves = nullptr,
              bool spurious_data = false);

  bool ready(bool write) const;
  bool idle() const;           // the controller idle, no read data on its way (and the reference)
  int queued(bool write) const;
  // The DRAM's contents, outside time.
  void preload(uint64_t byte_addr, const model::HbmData& data);
  model::HbmData peek(uint64_t byte_addr) const;
  std::vector<uint64_t> bursts() const;  // the address of every burst the DRAM holds
  const model::HbmChannel& reference() const { return reference_; }
  // check: the RTL's command counters against the reference's ("" when they agree).
  std::string counters_mismatch() const;

 private:
  uint64_t key_of(uint64_t byte_addr) const;  // (row, bank, column) within the channel
  void compare(uint64_t now, const model::HbmRequest* rd, const model::HbmRequest* wr, Cycle& out);
  uint32_t rtl_id(uint32_t id) const;
  uint32_t model_id(uint32_t id) const;

  model::HbmConfig config_;
  int index_;
  bool check_, scramble_ids_;
  std::unique_ptr<Vnc_hbm> top_;
  model::HbmChannel reference_;
  std::unordered_map<uint64_t, model::HbmData> memory_;
  std::deque<std::pair<uint64_t, model::HbmData>> device_reads_;  // (cycle due, data)
};

// A factory for HbmFabric: every pseudo-channel a checked HbmRtlChannel, sharing one
// Verilated context. The first difference from the reference stops nothing; the fabric's
// finish() reports it with its channel and cycle.
// after_reset (tests): changes a controller's inputs once it is configured and out of reset,
// which is how a test makes an RTL controller differ from its reference.
HbmControllerFactory rtl_hbm_controllers(std::function<void(int channel, Vnc_hbm& top)> after_reset = {});

}  // namespace ncore::tb

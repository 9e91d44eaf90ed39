#pragma once
// The HBM behind a harness's DMA ports (tb/dma and tb/core): one reference controller
// (model::HbmChannel) per pseudo-channel, each watched by the independent timing checker, and an
// interconnect of P request ports.
//
// Each cycle, in the harness's order:
//   1. grant(): which ports' requests the channels take. A pseudo-channel takes one read and one
//      write a cycle; ports asking for the same channel are served round-robin, starting after
//      the port it last took (per channel and direction). A priority that rotated with the
//      cycle starved half the ports: a full read queue frees a slot every BL = 2 cycles, always
//      when the same two ports came first.
//   2. response(p): the read response waiting for port p, if any (one per port a cycle).
//   3. (clock low, evaluated) offer() what was granted; pop() the responses delivered.
//   4. step(): every channel takes its cycle; its commands go to its checker (and the stats),
//      its read responses queue up for the port that asked (the port rides in the id's bits
//      24 and up).
// At the end, finish() reports the first timing-rule violation of any channel.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/hbm/channel.h"
#include "model/hbm/hbm.h"
#include "tb/hbm/hbm_checker.h"

namespace ncore::tb {

// One pseudo-channel's controller behind the fabric: the reference (model::HbmChannel, the
// default) or the RTL (tb/hbm/hbm_rtl_channel.h, `ncore run --hbm rtl`). The two are
// cycle-exact on the same requests, so the fabric's cycles are the same over either.
class HbmController {
 public:
  virtual ~HbmController() = default;
  virtual bool ready(bool write) const = 0;           // takes a request of this direction now
  virtual void offer(const model::HbmRequest& r) = 0;  // one read and one write a cycle, when ready
  virtual model::HbmChannel::StepResult step() = 0;   // a cycle: its commands and read response
  virtual bool idle() const = 0;                      // queues empty, nothing in flight
  virtual int queued(bool write) const = 0;
  virtual uint64_t max_age() const = 0;  // the oldest age any request reached at its column command
  virtual void preload(uint64_t byte_addr, const model::HbmData& data) = 0;
  virtual model::HbmData peek(uint64_t byte_addr) const = 0;
  virtual std::vector<uint64_t> bursts() const = 0;   // the address of every burst it holds
  virtual std::string failure() const { return {}; }  // a controller checked against another: the first difference
};

// Makes pseudo-channel `channel`'s controller.
using HbmControllerFactory =
    std::function<std::unique_ptr<HbmController>(const model::HbmConfig& config, int channel)>;
HbmControllerFactory reference_hbm_controllers();

class HbmFabric {
 public:
  static constexpr int kPortShift = 24;  // a request's id carries its port from this bit up
  static constexpr uint64_t kBurst = 32;

  // controllers: the reference's when empty.
  HbmFabric(const model::HbmConfig& config, int ports, const HbmControllerFactory& controllers = {});

  const model::HbmConfig& config() const { return config_; }
  uint64_t capacity() const { return capacity_; }
  // The pseudo-channel of an address (wrapped into the capacity, burst-aligned).
  int channel_of(uint64_t addr) const;
  // A posted write has not reached its DRAM yet.
  bool writes_queued() const;
  // The address of every burst the channels hold (written, or preloaded).
  std::vector<uint64_t> bursts() const;

  // Contents, outside time: a burst written before the run, or read after it.
  void preload(uint64_t addr, const model::HbmData& data);
  model::HbmData peek(uint64_t addr) const;

  // Ports (bit p of `valid`) whose requests the channels take this cycle, with their addresses.
  uint32_t grant(bool write, uint32_t valid, const uint64_t* addrs);
  // Hands a granted request to its channel; the id gets the port in its high bits.
  void offer(int port, model::HbmRequest request);
  // The read response waiting for a port (its id without the port), and taking it.
  std::optional<model::HbmReadResponse> response(int port) const;
  void pop(int port) { responses_[static_cast<size_t>(port)].pop_front(); }

  // Every channel's cycle. Commands go to the checkers and, when given, to `stats`.
  void step(model::HbmStatsBuilder* stats = nullptr);
  // Nothing queued, in flight or waiting for a port.
  bool idle() const;
  // The run ended with the last step(): the first timing violation of any channel (refresh owed
  // past its limit included), or a controller's own failure, or "".
  std::string finish();
  uint64_t max_age() const;

 private:
  model::HbmConfig config_;
  uint64_t capacity_;
  std::vector<int> last_granted_[2];  // per direction (write = 1), per channel: a port
  std::vector<std::unique_ptr<HbmController>> channels_;
  std::vector<HbmChecker> checkers_;
  std::vector<std::deque<model::HbmReadResponse>> responses_;  // per port
  uint64_t steps_ = 0;
};

}  // namespace ncore::tb

#pragma once
// The HBM behind a harness's DMA ports (tb/dma and tb/core): one reference controller
// (model::HbmChannel) per pseudo-channel, each watched by the independent timing checker, and an
// interconnect of P request ports.
//
// Each cycle, in the harness's order:
//   1. grant(): which ports' requests the channels take. A pseudo-channel takes one read and one
//      write a cycle; ports asking for the same channel are served round-robin, the first port
//      considered rotating with the cycle.
//   2. response(p): the read response waiting for port p, if any (one per port a cycle).
//   3. (clock low, evaluated) offer() what was granted; pop() the responses delivered.
//   4. step(): every channel takes its cycle; its commands go to its checker (and the stats),
//      its read responses queue up for the port that asked (the port rides in the id's bits
//      24 and up).
// At the end, finish() reports the first timing-rule violation of any channel.

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <vector>

#include "model/hbm/channel.h"
#include "model/hbm/hbm.h"
#include "tb/hbm/hbm_checker.h"

namespace ncore::tb {

class HbmFabric {
 public:
  static constexpr int kPortShift = 24;  // a request's id carries its port from this bit up
  static constexpr uint64_t kBurst = 32;

  HbmFabric(const model::HbmConfig& config, int ports);

  const model::HbmConfig& config() const { return config_; }
  uint64_t capacity() const { return capacity_; }
  // The pseudo-channel of an address (wrapped into the capacity, burst-aligned).
  int channel_of(uint64_t addr) const;
  model::HbmChannel& channel(int c) { return channels_[static_cast<size_t>(c)]; }
  const std::vector<model::HbmChannel>& channels() const { return channels_; }

  // Contents, outside time: a burst written before the run, or read after it.
  void preload(uint64_t addr, const model::HbmData& data);
  model::HbmData peek(uint64_t addr) const;

  // Ports (bit p of `valid`) whose requests the channels take this cycle, with their addresses.
  uint32_t grant(bool write, uint32_t valid, const uint64_t* addrs, uint64_t cycle) const;
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
  // past its limit included), or "".
  std::string finish();
  uint64_t max_age() const;

 private:
  model::HbmConfig config_;
  uint64_t capacity_;
  std::vector<model::HbmChannel> channels_;
  std::vector<HbmChecker> checkers_;
  std::vector<std::deque<model::HbmReadResponse>> responses_;  // per port
  uint64_t steps_ = 0;
};

}  // namespace ncore::tb

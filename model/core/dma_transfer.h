#pragma once
// How long the golden core's DMA transfers take: a policy behind an interface.
//
// The core runs each DMA engine's descriptors in order. A descriptor reaches the front of its
// engine, waits out the fixed latency and per-row processing (CoreConfig), and then its
// *transfer* begins: the bytes move between HBM and SBUF. A DmaTransferModel decides when a
// transfer ends:
//   - HbmDmaTransfers (dma_timing.h): the core's own model, calibrated to the RTL core's DMA
//     ports and HBM controller. `ncore run` uses it.
//   - the chip's HBM (tb/tlm/chip_hbm.h): the transfer's 32-byte bursts go to the pseudo-channels
//     of the stacks that own their addresses, shared with every core of the chip, and the
//     transfer ends when its last burst is served. System runs use it.
// The data itself moves when the core retires the transfer, whatever the model.

#include <cstdint>
#include <limits>

#include "model/core/core_isa.h"

namespace ncore::model {

inline constexpr uint64_t kNoEvent = std::numeric_limits<uint64_t>::max();

class DmaTransferModel {
 public:
  virtual ~DmaTransferModel() = default;
  // Engine `engine` begins moving descriptor `d` at core cycle `now`. An engine has at most one
  // transfer at a time: the next begins only after retire(engine).
  virtual void begin(int engine, const DmaDescriptor& d, uint64_t now) = 0;
  // Whether the engine's transfer has moved its last byte.
  virtual bool done(int engine) const = 0;
  // The engine's transfer has ended and is retired: the engine may begin its next.
  virtual void retire(int engine) = 0;
  // The earliest cycle after `now` at which a transfer this model times itself may end, or
  // kNoEvent. A model driven from outside (the chip) returns kNoEvent and wakes the core when a
  // transfer ends.
  virtual uint64_t next_event(uint64_t now) const = 0;
  // Time passes from `now` to `to` (no begin or retire in between).
  virtual void advance(uint64_t now, uint64_t to) = 0;
};

}  // namespace ncore::model

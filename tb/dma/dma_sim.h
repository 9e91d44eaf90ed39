#pragma once
// The DMA engines' RTL (Verilated) driving the HBM reference controller (model::HbmChannel, one
// per pseudo-channel) and an SBUF model. Every list completion is compared with what the lists
// say (engine, error flag); at the end every byte of SBUF and every HBM burst the descriptors
// touch is compared with the descriptors applied in order, engine by engine; the HBM commands
// pass the independent timing checker. Random back-pressure on the descriptor port.

#include <cstdint>
#include <string>
#include <vector>

#include "model/dma/dma.h"
#include "model/hbm/channel.h"
#include "model/hbm/hbm.h"

namespace ncore::tb {

inline constexpr int kDmaEngines = 16;

// A scatter/gather list for one engine; the harness sets `last` on its final descriptor.
struct DmaList {
  int engine = 0;
  std::vector<model::DmaDescriptor> descriptors;
};

// A fault injected on purpose, so that a test can see an RTL assertion fire (the process stops
// with the assertion's name): a register upset the harness top (nc_dma_tb.sv) makes.
enum class DmaFault {
  kNone,
  kUpsetStageFull,  // StageNeverOverflows: the staging FIFO shown full as SBUF data arrives
};

struct DmaSimOptions {
  uint64_t seed = 1;
  double stall = 0.0;          // chance the descriptor port holds back a descriptor a cycle
  uint64_t watchdog = 200000;  // cycles without progress before the run is declared hung
  std::string waves;           // FST file; empty: none
  model::HbmConfig hbm;        // the HBM behind the engines
  DmaFault fault = DmaFault::kNone;
};

struct DmaSimResult {
  bool ok = true;
  std::string failure;
  uint64_t cycles = 0;
  uint64_t bursts = 0;               // bursts moved (RTL counter)
  uint64_t lists_done = 0;           // completions seen and matched
  uint64_t sbuf_checked = 0, hbm_checked = 0;  // bursts compared at the end
  int err_code = 0;                  // the RTL's sticky error code
  model::HbmStats hbm;               // the HBM's figures over the run
  double wall_seconds = 0;
};

DmaSimResult run_dma_rtl(const std::vector<DmaList>& lists, const DmaSimOptions& options);

}  // namespace ncore::tb

#pragma once
// The DMA engines' RTL (Verilated) driving the HBM fabric (tb/hbm/hbm_fabric.h: the reference
// controller of every pseudo-channel behind one port) and an SBUF model. Every list completion is compared with what the lists
// say (engine, error flag); at the end every byte of SBUF and every HBM burst the descriptors
// touch is compared with the descriptors applied in order, engine by engine; the HBM commands
// pass the independent timing checker. Random back-pressure on the descriptor port.

#include <cstdint>
#include <string>
#include <vector>

#include "model/dma/dma.h"
#include "model/hbm/channel.h"
#include "model/hbm/hbm.h"
#include "tb/common/bench_options.h"

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

// Seed, watchdog, waves and reproduce: BenchOptions (no X-propagation build).
struct DmaSimOptions : BenchOptions {
  DmaSimOptions() { watchdog = 200'000; }
  double stall = 0.0;          // chance the descriptor port holds back a descriptor a cycle
  model::HbmConfig hbm;        // the HBM behind the engines
  DmaFault fault = DmaFault::kNone;
};

// ok, failure, cycles (from reset to the last engine idle) and wall time: BenchResult.
struct DmaSimResult : BenchResult {
  uint64_t bursts = 0;               // bursts moved (RTL counter)
  uint64_t lists_done = 0;           // completions seen and matched
  uint64_t sbuf_checked = 0, hbm_checked = 0;  // bursts compared at the end
  int err_code = 0;                  // the RTL's sticky error code
  model::HbmStats hbm;               // the HBM's figures over the run
};

DmaSimResult run_dma_rtl(const std::vector<DmaList>& lists, const DmaSimOptions& options);

}  // namespace ncore::tb

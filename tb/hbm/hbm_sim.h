#pragma once
// Lockstep co-simulation of the HBM controller RTL (Verilated) against the reference scheduler.
//
// Each channel runs one RTL controller and one model::HbmChannel on the same request stream.
// Every cycle the harness compares, channel by channel: the request ports' ready, the row and
// column commands (type, bank, row, column, request id), and the read responses (id and data).
// The first difference stops the run with the channel, the cycle, both sides and the seed. A
// DRAM device model answers each RD with the data of its burst CL + BL cycles later, and every
// read response is also checked against a reference memory updated in trace order. Random
// back-pressure: each request port holds off a new request with the --stall chance per cycle.

#include <cstdint>
#include <string>
#include <vector>

#include "model/hbm/channel.h"
#include "model/hbm/hbm.h"
#include "tb/common/bench_options.h"
#include "tb/hbm/hbm_rtl_channel.h"

namespace ncore::tb {


// A fault injected on purpose, so that a test can see the RTL's assertion fire (the process
// stops with the assertion's name): a protocol or configuration violation the harness commits,
// or a register upset its top makes.
enum class HbmFault {
  kNone,
  kRdPayloadChangesWhileStalled,  // RdReqStable
  kDramDataWithoutRead,           // DramDataOnlyWhenExpected
  kConfigBypassesValidation,      // ConfigTurnaroundCoversReadData: tRTW 0 reaches the RTL
  // Register upsets the harness top (nc_hbm_ctrl_tb.sv) makes once their target is live:
  kUpsetInFlightFull,             // InFlightNeverOverflows: read-return FIFO shown full at a RD
  kUpsetRefreshDebt,              // RefreshDebtBounded: two refreshes owed past the limit
};

// Seed, watchdog and waves (of channel 0): BenchOptions (no X-propagation build). Cycle numbers
// are the controllers' own, from the end of reset.
struct HbmSimOptions : BenchOptions {
  HbmSimOptions() { watchdog = 200'000; }
  bool check = true;          // false: the RTL alone (still the timing and data checks)
  double stall = 0.0;         // chance a request port holds back a new request for a cycle
  uint64_t timeline_window = 0;
  HbmFault fault = HbmFault::kNone;
  // The RTL sees every request id multiplied by an odd constant (a bijection on 32 bits), so
  // that all id bits move through its queues; ids coming back are mapped to the model's.
  bool scramble_ids = false;
};

// ok, failure, cycles (the last cycle run) and wall time: BenchResult.
struct HbmSimResult : BenchResult {
  model::HbmStats stats;
  uint64_t commands_compared = 0;  // row and column commands compared with the model
  uint64_t responses_checked = 0;  // read responses compared with the model and the memory
  uint64_t cycles_compared = 0;
  uint64_t rd_port_stalls = 0;     // cycles a read request was offered and not taken
};

HbmSimResult run_hbm_rtl(const std::vector<model::HbmBurst>& bursts,
                         const model::HbmConfig& config, const HbmSimOptions& options,
                         std::vector<std::vector<model::HbmCommand>>* commands = nullptr);

// A request whose address the RTL must refuse (misaligned or out of range): returns the RTL's
// error code after offering it to an otherwise idle controller, and whether it stayed live
// (accepted the request, came back idle, and served a legal read afterwards).
struct HbmRefusal {
  int err_code = 0;
  bool live = false;
};
HbmRefusal hbm_rtl_refuse(const model::HbmConfig& config, bool write, uint64_t addr);

}  // namespace ncore::tb

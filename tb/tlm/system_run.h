#pragma once
// `ncore tlm run`: programs on the running cores of a chip, an instance or an UltraServer.
//
// Every core of every chip runs a program inside the simulation (NeuronCore::run_program) over
// its chip's memory, its DMA timed by the chip's HBM (ChipHbm), shared with the chip's other
// cores. Programs come from
//   - one assembly file, assembled once per core with CHIP, CORE, CHIPS and CORES predefined
//     (SPMD: the program picks its addresses and work from them), or
//   - a JSON manifest {"cores": [{"chip": C, "core": K, "program": "file.s"}, ...]} (paths
//     relative to the manifest); a core not listed stays idle. The same CHIP/CORE/... names are
//     predefined in each program.
// Each core runs on the golden back-end or, when chosen, on the RTL one (the Verilated nc_core
// of size chip.pe_rows, tb/tlm/neuron_core.h); both see the same memory, HBM timing and
// collectives, so outputs are the same bits. With any RTL core in the run, every core addresses
// the largest power of two of bytes within its chip's HBM (nc_core checks DMA addresses against
// 2^n), so RTL and golden cores refuse the same addresses.
// Each core's init= tensors are written to its chip's memory before time zero, in core order.
// The run ends when every core has ended; a core that ends in an error or a deadlock makes the
// run's status that, naming the chip and the core.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "model/core/core_timing.h"
#include "tb/tlm/cc_engine.h"
#include "tb/tlm/system_config.h"

namespace ncore::tlmsys {

struct SystemRunOptions {
  std::string program;      // .s (SPMD) or .json (manifest)
  std::string outputs_dir;  // "" or: write DIR/chip<C>.core<K>.NAME.npy for every output tensor
  std::string trace_json;   // "" or: a Chrome/Perfetto trace-event timeline
  bool progress = false;    // print the simulated time and the cores done to stderr as it runs
  // Cores on the RTL back-end, (chip, core); all_rtl: every core.
  std::vector<std::pair<int, int>> rtl_cores;
  bool all_rtl = false;
  // Golden cores that run timing only (model::CoreConfig::timing_only: the same cycles, no
  // data, no outputs); all_timing_only: every golden core.
  std::vector<std::pair<int, int>> timing_only_cores;
  bool all_timing_only = false;
  std::string waves_dir;    // "" or: each RTL core's waves as DIR/chip<C>.core<K>.fst
  tb::PeArith pe_arith = tb::kBuildPeArith;  // the RTL cores' PE arithmetic
  // The golden cores' clocks and fixed costs (model/core/core_timing.h; ncore tlm run --timing).
  // uniform: one clock, chip.core_clock_ghz. RTL cores take only what model::rtl_timing_refusal
  // lets through (issue 49: one clock, and of the fixed costs the engines' minimum interval).
  model::CoreTiming timing = model::timing_preset("uniform");
};

// "CHIP.CORE,CHIP.CORE,...": the cores of `config` named; an item that is not two integers or
// names no core throws ncore::Error naming the option and the item.
std::vector<std::pair<int, int>> parse_core_list(const std::string& list, const SystemConfig& config,
                                                 const std::string& option = "--rtl-cores");

struct CoreReport {
  int chip = 0, core = 0;
  std::string engine = "golden";
  bool timing_only = false;  // a golden core without data: it wrote no outputs
  std::string status;       // done, error, deadlock, watchdog
  std::string message;
  uint64_t cycles = 0;       // base-clock cycles (model/core/core_timing.h)
  double time_ns = 0;        // cycles at the base clock
  // Per queue: the cycles of the run and busy in its engine's own clock.
  std::array<uint64_t, isa::kNumQueue> engine_cycles{}, engine_busy_cycles{};
  uint64_t instructions = 0;
  double te_utilization = 0;
  uint64_t hbm_bytes = 0;   // moved by its DMA
  uint64_t fetch_bytes = 0; // instruction bytes it fetched from its image (the chip's HBM too)
  // Cycles each queue's engine was busy (pe: the array streaming; sp: any DMA engine busy; cc:
  // a collective in flight), and its instructions' waits on semaphores.
  std::array<uint64_t, isa::kNumQueue> busy_cycles{}, wait_cycles{};
  std::array<uint64_t, isa::kNumQueue> fetch_stall_cycles{};  // its next instruction not yet fetched
};

struct StackReport {
  int chip = 0, stack = 0;
  uint64_t bytes = 0;
  double gbps = 0, peak_gbps = 0, utilization = 0;  // over the run's simulated time
  double max_window_gbps = 0;  // the busiest window of ChipHbm::kWindowCycles HBM cycles
};

// A NeuronLink direction that carried traffic.
struct LinkReport {
  int from = 0, to = 0;
  std::string port;         // the port it leaves `from` on: +X, -X, +Y, -Y, +Z, -Z
  uint64_t bytes = 0, messages = 0;
  double utilization = 0;   // busy time / the run's simulated time
};

struct OutputReport {
  int chip = 0, core = 0;
  std::string name;
  uint64_t fnv1a = 0;
  std::vector<uint8_t> bytes;  // the tensor's bytes (tensor_bytes order)
};

struct SystemRunResult {
  std::string status = "done";  // done, or the first failing core's status
  std::string message;          // which chip and core, and why
  double sim_time_us = 0;
  std::vector<CoreReport> cores;  // the cores that ran a program
  std::vector<StackReport> hbm;
  std::vector<LinkReport> links;
  std::vector<OutputReport> outputs;
  std::vector<CollectiveRecord> collectives;
  double wall_seconds = 0;
  // What the simulation cost, not what it simulated: the pseudo-channel steps the chips' HBM
  // took (ChipHbm; the event-driven HBM takes far fewer than one a busy channel a cycle).
  uint64_t hbm_channel_steps = 0;
};

SystemRunResult run_system(const SystemConfig& config, const SystemRunOptions& options);
nlohmann::json to_json(const SystemRunResult& r);

}  // namespace ncore::tlmsys

#pragma once
// The RTL NeuronCore (rtl/core/nc_core.sv, Verilated) running a Program, with the HBM fabric
// (tb/hbm/hbm_fabric.h: 16 pseudo-channels, 4 GiB, the timing checker on each) behind its four
// DMA ports, and, for
// co-simulation, the golden core (model::CoreModel) run on the same program and tensors.
//
// Co-simulation runs the golden core first, then checks the RTL in lockstep as it runs
// (tb/core/lockstep.h): every instruction's SBUF, PSUM and HBM writes as it commits, and every
// semaphore signal; the first wrong instruction stops the run, named with its cycle and a
// command that reproduces it with waves. At the end it compares the end state bit for bit: the
// run status and error (code, queue, instruction), the semaphores, every SBUF byte, every PSUM
// word (through the core's PSUM debug read port), every HBM burst either side wrote; the first
// difference is reported with its place (tensor and element when it falls in one). Timing is
// not compared: the golden core's is a model, the RTL's is exact.

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/core/collective_engine.h"
#include "model/core/core_model.h"
#include "model/core/program.h"
#include "model/hbm/hbm.h"
#include "tb/common/bench_options.h"
#include "tb/hbm/hbm_fabric.h"

namespace ncore::tb {

// The array sizes (PE rows = columns = lanes = partitions) Verilated for the core.
std::vector<int> core_rtl_sizes();
std::vector<int> core_rtl_fast_sizes();  // options.pe_arith = PeArith::kHostFpu (rtl/common/README.md)

// A rule the harness breaks on purpose at run cycle 8, so that a test can see the core's
// assertion fire (the process stops naming it).
enum class CoreFault {
  kNone,
  kFetchResponseWithoutRead,   // a response on the fetch port with no fetch in flight: FetchRspMatchesARequest
  kHbmResponseWithoutRead,     // an HBM read response on port 0 with no read in flight: RspMatchesAReadInFlight
  kPsumDebugReadWhileRunning,  // a PSUM debug read while the queues run: PsumDebugReadOnlyWhenStopped
};

// Watchdog (the RTL's own: cycles without any progress), waves and reproduce: BenchOptions. The
// seed is not used (a program's data comes from its init= declarations); there is no
// X-propagation build of the core.
struct CoreSimOptions : BenchOptions {
  CoreSimOptions() { watchdog = 1'000'000; }
  int size = 128;                  // one of core_rtl_sizes()
  bool cosim = true;               // also run the golden core and compare
  uint64_t max_cycles = 200'000'000;  // the harness's own limit
  uint64_t progress_every = 0;     // call `progress` every so many cycles (0: never)
  std::function<void(uint64_t cycle, uint64_t issued, uint64_t total)> progress;
  // Test of the checker: flip bit 0 of this SBUF byte (flat address) in the RTL after the run.
  uint64_t inject_sbuf_flip = UINT64_MAX;
  // Likewise for PSUM: flip bit 0 of this word as read back from the RTL (partition, bank, word).
  std::optional<std::array<int, 3>> inject_psum_flip;
  // Words the program image holds (both cores' copies) instead of the encoding of the program's
  // instruction at (queue, index): how a fuzzer feeds the RTL words the encoder would never
  // make. The golden core still runs the program's instruction there (for an illegal word: one
  // it refuses).
  std::map<std::pair<int, size_t>, isa::Word> raw_words;
  // Test of the lockstep checker: flip bit 0 of this SBUF byte (flat address) in the RTL through
  // the debug port at this run cycle (first), as a register upset would.
  std::optional<std::pair<uint64_t, uint64_t>> upset_sbuf;
  // `reproduce`, the command that reruns this case, goes into the checkers' reports (the lockstep
  // checker adds the waves options); empty: "ncore run <program name> --engine cosim --size N".
  CoreFault fault = CoreFault::kNone;
  bool timeline = false;           // record each instruction's issue and commit (CoreSimResult)
  // The HBM controllers behind the DMA ports: the reference's when empty, or the RTL's
  // (tb::rtl_hbm_controllers(), `ncore run --hbm rtl`); each has a timing checker either way.
  HbmControllerFactory hbm_controllers;
  // Where the default image layout puts the program (model::CoreConfig::image_top and
  // image_window; 0: the top of HBM): a system run gives each core of a chip its own.
  uint64_t image_top = 0, image_window = 0;
  // The fixed costs the RTL core has so far (issue 49): the vector and scalar engines' minimum
  // interval and pipeline latency (model::CoreCosts::vector / scalar); the golden core beside it
  // takes the same. Every other cost must stay the uniform timing's (model::rtl_timing_refusal).
  model::CoreCosts costs;
  // The clock domains (issue 49; nc_core's clk_divide_i): the run's cycles are base-clock cycles,
  // and the HBM behind the DMA ports is stepped on the dma domain's edges. The golden core
  // beside it takes the same.
  model::CoreClocks clocks;
  // Test hook: the stream addresses put on queue_base_i instead of the image's (both cores).
  std::optional<std::array<uint64_t, isa::kNumQueue>> stream_bases;
};

struct CoreRtlQueue {
  uint64_t issued = 0, wait_cycles = 0, busy_cycles = 0;
  uint64_t fetch_stall_cycles = 0, fetched_bytes = 0;  // its head not yet arrived; its words read
};

// ok and failure: the co-simulation and the HBM timing checker found nothing wrong (without
// cosim, only the timing checker), or the first thing wrong. cycles: the RTL's cycle counter.
// The RTL run's own outcome (done, an error, a deadlock) is status, error and message.
struct CoreSimResult : BenchResult {
  // The RTL run.
  model::CoreStatus status = model::CoreStatus::kDone;
  model::CoreError error = model::CoreError::kNone;
  int error_queue = 0;
  uint64_t error_pc = 0;
  int error_detail = 0;
  std::string message;             // error, deadlock or watchdog report; "" when done
  std::array<CoreRtlQueue, isa::kNumQueue> queues{};
  uint64_t te_macs = 0, te_stream_cycles = 0, dma_bursts = 0;
  std::array<uint32_t, model::kNumSemaphores> semaphores{};
  // MACs / (tensor-engine cycles * size^2); cycles counts base-clock cycles
  double te_utilization(int size, const model::CoreClocks& clocks) const;
  uint64_t list_entries = 0;               // descriptor-list entries the walkers fetched
  // Co-simulation.
  bool compared = false;
  uint64_t sbuf_bytes_compared = 0, hbm_bytes_compared = 0, psum_words_compared = 0;
  // Lockstep: instructions whose writes were compared as they committed, their 32-byte lines,
  // semaphore signals checked.
  uint64_t lockstep_instructions = 0, lockstep_lines = 0, lockstep_signals = 0;
  model::CoreResult golden;
  // With CoreSimOptions::timeline: each instruction's issue and commit cycle (RTL), in commit order,
  // and the fetch stalls (cycles in which a queue's next instruction had not arrived).
  std::vector<model::InstrTiming> timeline;
  std::vector<model::FetchStall> fetch_stalls;
  std::vector<model::SemaphoreWait> sem_waits;  // stretches a queue's head waited for its semaphore
  // The output tensors' bytes (RTL), for checksums.
  std::vector<std::pair<std::string, std::vector<uint8_t>>> outputs;
};

// Runs `program` (its image and tensors loaded into HBM, from their init= declarations).
// Throws ncore::Error for a program the core cannot hold (an image that does not fit in HBM,
// a size not built).
CoreSimResult run_core_rtl(const model::Program& program, const CoreSimOptions& options);

// The golden core's configuration matching the RTL core of `size`.
model::CoreConfig core_config_for_size(int size);
// HBM ports of the RTL core: its four DMA ports, then its fetch unit's (nc_core's HbmPorts).
inline constexpr int kCoreHbmPorts = 5;

// ---- an RTL core inside something larger (a chip of a system run) -----------------------------

// What serves the RTL core's HBM ports (32-byte bursts). run_core_rtl uses its own HBM fabric
// (tb/hbm/hbm_fabric.h); a system run serves them from the chip's HBM. Each cycle, in this
// order: grant() and response() before the clock edge, offer() and pop() of what crossed, then
// step().
class CoreMemoryPorts {
 public:
  virtual ~CoreMemoryPorts() = default;
  virtual uint64_t capacity() const = 0;  // bytes the core may address
  // Contents outside time (tensors before the run, outputs after it): a 32-byte burst.
  virtual void preload(uint64_t addr, const model::HbmData& data) = 0;
  virtual model::HbmData peek(uint64_t addr) const = 0;
  // Ports (bit p of `valid`) whose requests are taken this cycle, with their addresses.
  virtual uint32_t grant(bool write, uint32_t valid, const uint64_t* addrs) = 0;
  virtual void offer(int port, const model::HbmRequest& request) = 0;
  // The read response to drive on a port this cycle, and taking it.
  virtual std::optional<model::HbmReadResponse> response(int port) const = 0;
  virtual void pop(int port) = 0;
  virtual void step() = 0;                 // a core cycle has passed
  virtual bool idle() const = 0;           // nothing queued, in flight or waiting for a port
  virtual bool writes_queued() const = 0;  // a posted write has not reached memory yet
};

// The outside world of an RTL core run step by step.
struct RtlCoreHost {
  CoreMemoryPorts* memory = nullptr;                 // behind the HBM ports
  model::CollectiveEngine* collectives = nullptr;    // behind the collective port
};

// An RTL core that something else clocks, one run cycle at a time (tb/tlm/neuron_core.h). The
// constructor resets the core and loads the program, its semaphores and its init= tensors (HBM
// ones through memory->preload); run cycle 0 is the cycle start_i is taken.
class RtlCore {
 public:
  virtual ~RtlCore() = default;
  // One run cycle. collectives_may_end = false holds the collective port's done back this
  // cycle (catching up cycles that passed while the core was parked, before the end).
  virtual void step(bool collectives_may_end) = 0;
  virtual uint64_t cycle() const = 0;     // run cycles stepped so far
  virtual bool finished() const = 0;      // done, an error, a deadlock or its watchdog
  // Nothing can change inside the core until an outstanding collective ends: every queue has
  // ended or waits on a semaphore (the cc queue on its collectives), no HBM traffic, no engine
  // busy, for the last 16 cycles. Its owner may stop clocking it until the collective ends and
  // then step the cycles that passed (with collectives_may_end = false).
  virtual bool parked() const = 0;
  // What the queues wait for (a deadlock report).
  virtual std::string waiting() const = 0;
  // After finished(): status, error, counters (as run_core_rtl reports them).
  virtual CoreSimResult result() = 0;
  // What each instruction did and when: queue, index, issue cycle, commit cycle.
  virtual const std::vector<model::InstrTiming>& timeline() const = 0;
  // The stretches in which a queue waited for its next instruction from the image.
  virtual const std::vector<model::FetchStall>& fetch_stalls() const = 0;
  // The stretches in which a queue's next instruction waited for its semaphore.
  virtual const std::vector<model::SemaphoreWait>& sem_waits() const = 0;
  virtual std::vector<uint8_t> tensor_bytes(const model::TensorDecl& d) = 0;
};

// options.size picks the Verilated model; options.cosim must be false. hbm_bytes_log2: the
// capacity nc_core checks DMA addresses against (2^n bytes). Throws ncore::Error for a size
// not built or a program the core cannot hold.
std::unique_ptr<RtlCore> make_rtl_core(const model::Program& program, const CoreSimOptions& options,
                                       const RtlCoreHost& host, int hbm_bytes_log2);

}  // namespace ncore::tb

#pragma once
// The golden NeuronCore: four instruction queues (pe, act, dve, sp), each with its own
// sequencer, 32 semaphores, the tensor, vector and scalar engines' golden models over one
// SBUF and one PSUM, and 16 DMA engines over a sparse HBM. It executes a Program with the
// engines' exact numerics and an event-driven timing model (model/README.md, "The golden core's timing").
//
// Semantics:
//   - Each queue issues in order. An instruction with a wait issues once semaphore
//     wait_sem >= wait_value (a wait does not consume). Its signal is applied when it completes.
//   - pe, act and dve complete in order: an instruction's effects (its writes, and its signal)
//     appear at its completion, after those of every earlier instruction of its queue. A nop's
//     signal therefore marks everything before it in its queue as done.
//   - sp hands each dma_copy to DMA engine `queue` (16 of them, in order each); the dma_copy's
//     signal fires when that descriptor's data has landed. A nop on sp signals at issue.
//   - The first refusal (an engine refuses its instruction, a semaphore overflows, an illegal
//     word) stops the core with an error status naming the instruction. Errors are precise per
//     queue: a refusal found at issue (an illegal word, checked before the wait; a vector or
//     scalar instruction; a DMA descriptor) stops the queue, and is raised once everything
//     issued before it on that queue has completed, so an earlier instruction's own error
//     comes first. The RTL core raises the same (rtl/core/README.md, "Status").
//   - When nothing is in flight and a queue still waits on a semaphore, the run ends as a
//     deadlock naming every waiting queue, the instruction, the semaphore and both values.

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "model/core/collective_engine.h"
#include "model/core/core_timing.h"
#include "model/core/dma_timing.h"
#include "model/core/dma_transfer.h"
#include "model/core/image.h"
#include "model/core/program.h"
#include "model/tensor/tensor_engine.h"
#include "model/vector/vector_engine.h"

namespace ncore::model {

// Instruction fetch (rtl/core/README.md, "Instruction fetch"): each queue's sequencer runs from
// a buffer that a fetch unit refills from the program image in HBM (model/core/image.h). These
// are ncore's own choices (the public record gives no NeuronCore fetch figures); the README
// explains each.
struct FetchConfig {
  // false: every instruction is in its queue's buffer from the start, no fetch traffic
  // (`ncore run --no-fetch`: what fetch costs a program; the RTL core always fetches).
  bool enabled = true;
  int buffer = 32;   // instructions a queue's buffer holds: 4 KiB
  int chunk = 8;     // instructions per fetch request (to a chunk boundary; the first: 1): 1 KiB, one DRAM row
  int streams = 4;   // requests a queue may have in flight: four banks read at once
  int engines() const { return enabled ? isa::kNumQueue * streams : 0; }
};

// Descriptor lists (rtl/core/README.md, "Descriptor lists"): each DMA engine's list walker
// fetches entries ahead through the fetch port into a buffer of its own. ncore's own choices,
// like FetchConfig's.
struct ListFetchConfig {
  int buffer = 16;   // entries a walker buffers: 512 bytes
  int chunk = 8;     // entries per request (to a chunk boundary from the list's start): 256 bytes
  int streams = 2;   // requests a walker may have in flight
};

struct CoreConfig {
  TensorEngineConfig te;            // 128 x 128, 8 PSUM banks of 512 words
  int lanes = 128;                  // vector and scalar engine lanes
  int dma_engines = 16;
  uint64_t hbm_bytes = uint64_t{1} << 32;  // the core's HBM window (sparse)
  // The clock domains (core_timing.h). Time is counted in base-clock cycles; the timing
  // figures below that say "cycles" are cycles of the domain named beside them.
  CoreClocks clocks;
  CoreCosts costs;  // fixed costs beyond what the engines' own timing gives (none: the RTL core's)
  // Timing model of the golden core, calibrated to the RTL core (model/core/dma_timing.h,
  // engine_timing.h):
  int dma_ports = 4;                         // engine e on port e % dma_ports (nc_core's DmaPorts)
  HbmDmaConfig dma_timing;                   // the DMA ports over the HBM pseudo-channels
  double dma_engine_bytes_per_cycle = 12.0;  // a system run's per-engine DMA rate (tb/tlm), dma cycles
  double hbm_bytes_per_cycle = 151.0;        // the core's share: 2.9 TB/s / 8 at 2.4 GHz (collectives), dma cycles
  uint64_t dependency_cycles = 0;            // extra engine cycles from a satisfied wait to issue (the RTL: 0)
  uint64_t cc_latency_cycles = 2400;         // a lone core's collective: 1 us to start at 2.4 GHz (ncore's choice), dma cycles
  int cc_outstanding = 8;                    // collectives the cc queue may have in flight
  uint64_t watchdog_cycles = 2'000'000'000;  // simulated base cycles before a run is called hung
  FetchConfig fetch;
  ListFetchConfig lists;
  // Transfer-model engines: the DMA engines, the instruction fetch streams, the list walkers'.
  int transfer_engines() const { return dma_engines + fetch.engines() + dma_engines * lists.streams; }
  // The default image layout's top (model/core/image.h; 0: hbm_bytes). A system run gives each
  // core of a chip its own.
  uint64_t image_top = 0;
  uint64_t image_window = 0;  // the default layout must fit in [image_top - this, image_top) (0: no limit)
  // Test hook: each queue's stream address instead of the image's (a host that got it wrong).
  // A stream not 128-byte aligned or leaving HBM stops the core at cycle 0 (fetch_refused).
  std::optional<std::array<uint64_t, isa::kNumQueue>> stream_bases;
  // Timing only (ncore run --no-data): no arithmetic and no data movement. Cycles, statistics
  // and every error a run can raise stay the same (none depends on data); memories keep what
  // they were given, tensors are not loaded and there are no effects to record.
  bool timing_only = false;
};

// The clock domain of a queue's sequencer and engine (core_timing.h): pe tensor, act scalar,
// dve vector, sp and cc dma.
ClockDomain queue_domain(int queue);

// How a run ended and the error status: model/isa/ncore.isa, enums core_status and core_error.
using isa::CoreStatus;
std::string_view core_status_name(CoreStatus s);

using isa::CoreError;
std::string_view core_error_name(CoreError e);

// Per queue; cycles are base-clock cycles (CoreClocks::div converts to the queue's engine's).
struct QueueStats {
  uint64_t instructions = 0;
  uint64_t busy_cycles = 0;   // cycles its engine worked (pe: array streaming; sp: any DMA busy)
  uint64_t wait_cycles = 0;   // cycles its head waited on a semaphore
  uint64_t fetch_stall_cycles = 0;  // cycles its next instruction had not arrived from HBM
  uint64_t fetched_bytes = 0;       // instruction bytes read from the image
};

struct InstrTiming {
  int queue = 0;
  size_t index = 0;
  uint64_t issue = 0, start = 0, complete = 0;
};

// A stretch of cycles [begin, end) in which a queue's next instruction (index) had not arrived
// from the program image.
struct FetchStall {
  int queue = 0;
  size_t index = 0;
  uint64_t begin = 0, end = 0;
};

// A stretch of cycles [begin, end) in which a queue's next instruction (index) waited at the
// head of its queue for its semaphore: the same record as a fetch stall.
using SemaphoreWait = FetchStall;

struct CoreResult {
  CoreStatus status = CoreStatus::kDone;
  CoreError error = CoreError::kNone;
  std::string message;        // error or deadlock report, "" when done
  int error_queue = 0;        // kError: the queue and index of the instruction
  size_t error_index = 0;
  uint64_t cycles = 0;        // base-clock cycles until the last completion
  std::array<QueueStats, isa::kNumQueue> queues{};
  uint64_t te_macs = 0;
  uint64_t dma_bytes = 0;     // bytes moved by DMA (each byte once)
  uint64_t dma_busy_cycles = 0;
  uint64_t fetch_bytes = 0;   // instruction bytes fetched, every queue
  uint64_t list_entries = 0;  // descriptor-list entries fetched
  // Per dma_list walked to its end: its sp index and the bursts its entries moved (the
  // lockstep checker counts the RTL's writes off against them).
  std::vector<std::pair<size_t, uint64_t>> list_bursts;
  std::array<uint32_t, kNumSemaphores> semaphores{};
  std::vector<InstrTiming> timeline;  // when CoreModel::record_timeline(true)
  std::vector<FetchStall> fetch_stalls;  // likewise
  std::vector<SemaphoreWait> sem_waits;  // likewise
  double te_utilization(const CoreConfig& c) const;  // MACs / (tensor cycles * rows * cols)
  double hbm_gbps(const CoreConfig& c) const;         // DMA bytes per simulated second / 1e9
  double microseconds(const CoreConfig& c) const { return c.clocks.ns(cycles) / 1e3; }
};

// Sparse byte-addressed memory (64 KiB pages, zero until written).
class SparseMemory {
 public:
  uint8_t read(uint64_t addr) const;
  void write(uint64_t addr, uint8_t v);
  void read_block(uint64_t addr, uint8_t* out, size_t n) const;
  void write_block(uint64_t addr, const uint8_t* in, size_t n);

 private:
  static constexpr uint64_t kPage = 65536;
  std::unordered_map<uint64_t, std::vector<uint8_t>> pages_;
};

// What one instruction did, recorded as it completed: the base of the lockstep comparison with
// the RTL core (tb/core). Writes are grouped in 32-byte lines of each memory, each byte as the
// instruction left it: SBUF at partition * kSbufPartitionStride + offset, PSUM at partition *
// (its bytes per partition) + bank * bank bytes + offset, HBM at its address.
enum class CoreMemory : uint8_t { kSbuf = 0, kPsum = 1, kHbm = 2 };
std::string_view core_memory_name(CoreMemory m);
inline constexpr int kLineBytes = 32;
struct LineWrite {
  std::array<uint8_t, kLineBytes> data{};
  uint32_t mask = 0;  // bit b: byte b written
};
struct InstrEffects {
  int queue = 0;
  size_t index = 0;
  uint64_t cycle = 0;  // completion (sp nop: issue)
  std::map<std::pair<CoreMemory, uint64_t>, LineWrite> writes;
  void write(CoreMemory m, uint64_t addr, const uint8_t* bytes, size_t n);
};

class CoreModel {
 public:
  // hbm: the memory the core's DMA reads and writes (default: its own, hbm()); transfers: how
  // long DMA transfers take (default: HbmDmaTransfers from cfg); collectives: the engine of
  // the cc queue (default: LoneCollectives, the core alone). All outlive the model.
  CoreModel(const CoreConfig& cfg, const Program& program, SparseMemory* hbm = nullptr,
            DmaTransferModel* transfers = nullptr, CollectiveEngine* collectives = nullptr);
  ~CoreModel();

  // Fills every tensor with an init= from its declaration (deterministic from its seed);
  // nothing when timing only. Writes the program image into HBM too (its words are what the
  // fetch unit reads), except when timing only.
  void load_tensors();
  const ImageLayout& image() const;
  void record_timeline(bool on) { record_ = on; }
  // Called as each instruction completes, in completion order, with what it wrote (not when
  // timing only: throws ncore::Error).
  void on_effects(std::function<void(const InstrEffects&)> f);
  // Called every `every` simulated cycles with (cycle, instructions completed, total).
  void on_progress(uint64_t every, std::function<void(uint64_t, size_t, size_t)> f);

  CoreResult run();

  // The same run, driven step by step from outside (a SystemC process, tb/tlm):
  //   while (!settle()) { next = next_event(); [if stalled(next) break;] wait; advance_to(t); }
  //   result = finish();
  // settle() completes and issues everything due now and says whether the run has ended;
  // next_event() is the next cycle something is due (kNoEvent: nothing, unless a transfer or a
  // collective an outside model times is pending: waiting_outside()); advance_to() moves time forward to a
  // cycle no later than next_event(); stalled(next) ends the run as a deadlock (next is
  // kNoEvent) or a watchdog and says whether it did.
  bool settle();
  uint64_t now() const;
  uint64_t next_event() const;
  // A DMA transfer or a collective is pending that an outside model will end.
  bool waiting_outside() const;
  void advance_to(uint64_t cycle);
  bool stalled(uint64_t next);
  CoreResult finish();
  // What each queue waits for now (the deadlock report's text).
  std::string waiting_report() const;

  // State, for checks and co-simulation.
  SparseMemory& hbm() { return external_hbm_ ? *external_hbm_ : hbm_; }
  const SparseMemory& hbm() const { return external_hbm_ ? *external_hbm_ : hbm_; }
  Sbuf& sbuf();
  // After run(), its PSUM holds the vector and scalar engines' PSUM writes too.
  const TensorEngine& tensor_engine() const;
  // The tensor's bytes: HBM in address order; SBUF partition by partition.
  std::vector<uint8_t> tensor_bytes(const TensorDecl& t);
  void write_tensor(const TensorDecl& t, const std::vector<uint8_t>& bytes);

 private:
  struct Impl;
  SparseMemory hbm_;  // before impl_, which keeps a reference to it
  std::unique_ptr<Impl> impl_;
  SparseMemory* external_hbm_ = nullptr;
  bool record_ = false;
};

// FNV-1a over bytes: the checksum `ncore run` prints per output tensor.
uint64_t fnv1a(const std::vector<uint8_t>& bytes);
// The initial bit patterns of a tensor: random finite values in [-1, 1) (floats) or small
// integers, from the seed; ramp: element i holds i converted to the type.
std::vector<uint8_t> tensor_init_bytes(const TensorDecl& t);

}  // namespace ncore::model

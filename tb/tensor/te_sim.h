#pragma once
// Lockstep co-simulation of the tensor-engine RTL (Verilated) against the golden model.
//
// One instruction stream drives both. The golden model executes each instruction when the
// RTL accepts it, and every PSUM write the RTL makes is compared, as it happens, with the
// golden model's value for that MultiplyMoving, partition and element. The first difference
// stops the run with a report: instruction, tile coordinates, cycle, expected and actual
// bits in hex and decoded, and the seed. Rejected instructions are compared code for code.
// Random back-pressure on the instruction queue and both SBUF ports comes from the seed.

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "model/common/sbuf.h"
#include "model/tensor/tensor_engine.h"
#include "model/tensor/tensor_isa.h"
#include "tb/common/bench_options.h"

namespace ncore::tb {

// Bytes per SBUF partition: the RTL top's SbufBytes (224 KiB, as in hardware).
inline constexpr uint32_t kTeSimSbufBytes = 229376;

// A fault injected on purpose, so that a test can see an RTL assertion fire (the process
// stops with the assertion's name): a protocol violation the harness commits at a port, or
// a register upset inside the engine, which the harness top (nc_tensor_engine_tb.sv) makes
// once its target is live, for the internal invariants no port can break.
enum class TeFault {
  kNone,
  kCmdPayloadChangesWhileStalled,   // CmdPayloadStable
  kStResponseWithoutRequest,        // StRspOneCycleAfterReq
  kMvResponseWithoutRequest,        // MvRspOneCycleAfterReq
  kPsumReadChangesWhileStalled,     // PsumRdReqStable
  kUpsetCmdFifoCount,               // FifoCountInRange: queue occupancy set past its depth
  kUpsetPsumPending,                // PsumWritesInFlightAreCounted: bank 0's count cleared
  kUpsetLsBank,                     // MmNeverReadsLoadingBank: the LS moved to the MM's bank
  kUpsetLsBankWhileMmStalled,       // LsWritesOnlyAFreeBank: the same, in a cycle the LS writes
                                    // and the MM's moving request is held (needs sbuf_stall)
  kSliceNeverDone,                  // the array slices' watchdog (array_threads > 0): the last
                                    // slice never counted as done
};

// Seed, watchdog, waves, reproduce, xprop_seed (the X-propagation builds: te_sim_xprop_sizes())
// and pe_arith (the fast PE builds: te_sim_fast_sizes()): BenchOptions.
struct TeSimOptions : BenchOptions {
  bool check = true;          // false: RTL alone, no golden model and no comparison
  double cmd_stall = 0.0;     // chance the driver holds back the next instruction a cycle
  double sbuf_stall = 0.0;    // chance an SBUF port is not ready in a cycle
  bool readback = true;       // at the end, read back every PSUM word written, all partitions
  double probe_reads = 0.0;   // chance a cycle starts a PSUM read during the run, mostly of a
                              // bank with writes in flight (a bank conflict: held off)
  TeFault fault = TeFault::kNone;
  // 0: the array inside the engine, one model. N > 0: the array as N column slices, one per
  // thread (tb/tensor/array_slices.h; sizes te_sim_sliced_sizes(), N at most the columns and
  // kMaxArrayThreads): the same outputs and cycles for every N.
  int array_threads = 0;
  // The engine's own evaluation counted in array columns: the engine's thread's slice has that
  // many fewer columns than each other thread's (array_slice_widths). -1: the PE arithmetic's
  // default, kArrayEngineCols. Host speed only: outputs and cycles are the same for any value.
  int array_engine_cols = -1;
  // How long the engine's thread waits for a cycle's slices before it reports them (an error,
  // not a hang); a slice's edge takes well under a second.
  double array_watchdog_seconds = 60.0;
  // Count the functional bins (te_sim.cpp, "functional coverage") even without
  // NCORE_COVERAGE_DIR, so that a test can read them with coverage_bins().
  bool count_bins = false;
};

struct TeCounters {
  uint64_t busy = 0, macs = 0, stall_sbuf_mv = 0, stall_sbuf_st = 0, stall_mm_wait_ls = 0,
           stall_ls_wait_bank = 0, stall_psum_rd = 0, mm = 0, ls = 0, rejected = 0;
};

// ok, failure (the first mismatch or hang), fail_cycle, cycles (first instruction offered to
// idle) and wall time: BenchResult.
struct TeRunResult : BenchResult {
  uint64_t psum_writes_checked = 0;
  uint64_t psum_writes_unchecked = 0;  // with check off
  uint64_t mm_checked = 0;        // MMs whose every PSUM write was seen and matched
  uint64_t completions_checked = 0;  // MM and LS completions (mm_done_*, ls_done_*) checked
  uint64_t rejections_checked = 0;
  uint64_t readback_checked = 0;  // PSUM words compared through the read port
  uint64_t probes_checked = 0;    // PSUM reads during the run, compared with the writes seen
  // Every PSUM write of the run (cycle, partition, bank, element, half, data) folded into one
  // hash: two runs with equal digests wrote the same words in the same cycles (the fast PE
  // build's proof, tests/test_rtl_fast.cpp).
  uint64_t psum_write_digest = 0xCBF29CE484222325ull;
  TeCounters counters;
};

class TeSim {
 public:
  virtual ~TeSim() = default;
  virtual int rows() const = 0;
  virtual int cols() const = 0;
  // The SBUF both engines read. Fill it before run().
  virtual model::Sbuf& sbuf() = 0;
  virtual const model::TensorEngine& golden() const = 0;
  // Runs the program to completion (or the first mismatch). Tags are assigned by the
  // harness. May be called again: state carries over, as in hardware.
  virtual TeRunResult run(const std::vector<model::TeInstruction>& program) = 0;
  virtual uint64_t cycle() const = 0;
  // The PSUM read port's data output of a partition as it is now, valid or not: before the
  // first read it shows the read register's power-up value (random in an X-propagation build).
  virtual uint32_t psum_read_port(int partition) const = 0;
  // The functional bins hit so far and how often ("mm bf16xfp8 plain+acc full none normal");
  // counted when options.count_bins is set or NCORE_COVERAGE_DIR is.
  virtual const std::map<std::string, uint64_t>& coverage_bins() const = 0;
};

// At most this many threads step a sliced array: ncore's own limit, past any machine it has run
// on, that keeps a mistyped --threads from starting thousands of threads.
inline constexpr int kMaxArrayThreads = 256;

// The engine's evaluation and the harness between clock edges, in columns of the array's work
// on a thread. ncore's own tuning, which sets host speed only: the fastest of a sweep on the
// 1024 x 256 x 1024 BF16 GEMM on 2 threads (host-FPU 0, 17, 34; logic 0, 8, 16; tests/README.md
// "Issue 52"). perf on one thread puts the engine at a fifth of a host-FPU run (34 columns),
// but a wider slice costs more per column beside another thread, so the best split is nearer
// even; the sweep's differences are within the machine's noise of about 5%.
inline constexpr int kArrayEngineColsHostFpu = 17;
inline constexpr int kArrayEngineColsLogic = 8;
inline int array_engine_cols(const TeSimOptions& options) {
  if (options.array_engine_cols >= 0) return options.array_engine_cols;
  return options.pe_arith == PeArith::kHostFpu ? kArrayEngineColsHostFpu : kArrayEngineColsLogic;
}

// The columns of each thread's slice: `threads` slices covering `cols` columns, the first (the
// engine's thread's) `engine_cols` narrower than the others where the columns allow (it may
// then be empty), the others as even as whole columns make them.
inline std::vector<int> array_slice_widths(int cols, int threads, int engine_cols) {
  std::vector<int> widths(static_cast<size_t>(threads), 0);
  if (threads == 1) {
    widths[0] = cols;
    return widths;
  }
  // Each thread's share of cols + engine_cols, rounded; the engine's thread's minus engine_cols
  // (in 64 bits: engine_cols may be any int, from TeSimOptions).
  const int64_t share = (int64_t{cols} + engine_cols + threads / 2) / threads - engine_cols;
  const int first = static_cast<int>(std::clamp<int64_t>(share, 0, cols));
  widths[0] = first;
  const int rest = cols - first, others = threads - 1;
  for (int t = 1; t < threads; ++t) widths[static_cast<size_t>(t)] = rest / others + (t <= rest % others ? 1 : 0);
  return widths;
}

// The array sizes built into this binary, and a simulator for one of them.
std::vector<std::pair<int, int>> te_sim_sizes();
std::vector<std::pair<int, int>> te_sim_xprop_sizes();
std::vector<std::pair<int, int>> te_sim_fast_sizes();  // options.pe_arith = PeArith::kHostFpu
// The sizes built as column slices (options.array_threads > 0).
std::vector<std::pair<int, int>> te_sim_sliced_sizes(PeArith arith);
std::unique_ptr<TeSim> make_te_sim(int rows, int cols, const TeSimOptions& options);

}  // namespace ncore::tb

#pragma once
// When the golden core's tensor engine takes, starts and finishes each instruction: the issue
// rules of rtl/tensor/nc_tensor_engine.sv at instruction granularity (no per-cycle state), so
// that the golden core's cycles follow the RTL core's (issue 27 calibrates them; model/README.md,
// "The golden core's timing", gives the rules and where the calibration stands).
//
// Times are core cycles. `fire` is the cycle the pe sequencer hands the instruction over;
// `commit` is the cycle the RTL reports it done (an LS with its last weight column, an MM
// when its last moving vector leaves the array).
//
//   - Instruction queue: CmdDepth (4) entries; an instruction enters the cycle after it fires
//     and leaves at dispatch, one a cycle, in order. The sequencer may fire only while the
//     queue has room, so instruction i fires no earlier than the cycle after i-4 dispatched.
//   - LS: dispatches when the LS unit is free (the previous LS's commit + 1), and its target
//     weight bank (the one the tile's first segment does not use) is free in every segment
//     of its tile: no MM of an overlapping tile holds it, and its last moving vector there
//     entered DrainCycles (Rows + Cols + 3) cycles ago. Commit = dispatch + M + 1.
//   - MM: dispatches into the one waiting register once it is empty; starts (the cycle after
//     its promotion) when the LS of its weights has committed, and no streaming MM that shares
//     a PE row or column with it (or runs another PE operation) is left: one ends in the cycle
//     it requests its last vector, or MinMmCycles (64) after it started, whichever is later.
//     It requests a vector every `passes` cycles (4 with an FP32 operand; an FP32 transpose 2)
//     and commits Rows + Cols + 1 cycles after its last request.
//   - Drained (what a signal on pe waits for): every instruction committed and every MM's
//     slot free again.
//   - Fast LoadStationary (TeCosts, 1 in the RTL's timing): an LS loads ls_columns_per_cycle
//     weight columns a cycle, so commit = dispatch + ceil(M / that) + 1.
//   - Power throttling (TeCosts, off in the RTL's timing): an MM streams at a share of the
//     full rate, the share at its start held for the whole MM (its vectors come `passes /
//     share` cycles apart).
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

#include "model/core/core_timing.h"
#include "model/tensor/tensor_engine.h"

namespace ncore::model {

// model/core/core_timing.h's TensorCosts and ThrottleConfig, in tensor cycles.
struct TeCosts {
  int ls_columns_per_cycle = 1;
  bool throttle = false;
  double start_share = 0.5;
  uint64_t ramp_cycles = 0, window_cycles = 1;
  double low_use = 0.5;
};
// The core's tensor costs and throttling (core_timing.h) in the tensor domain's cycles.
TeCosts te_costs(const CoreCosts& costs, const CoreClocks& clocks);

class TensorEngineTiming {
 public:
  explicit TensorEngineTiming(const TensorEngineConfig& c, const TeCosts& costs = {});

  struct Schedule {
    uint64_t dispatch = 0;  // left the instruction queue
    uint64_t start = 0;     // LS: dispatch; MM: its first moving vector
    uint64_t commit = 0;
    uint64_t drained = 0;        // the engine is idle of it (an MM holds its slot 64 cycles at least)
    uint64_t stream_cycles = 0;  // MM: cycles it held the stream (the busy count)
  };

  // The first cycle at or after `now` the sequencer may fire an instruction (queue room).
  uint64_t earliest_fire(uint64_t now) const;
  // Schedules an instruction the sequencer fires at `fire` (>= earliest_fire). Instructions
  // are scheduled in program order.
  Schedule schedule(const TeInstruction& in, uint64_t fire);
  // Every scheduled instruction has committed by this cycle (inclusive).
  uint64_t last_commit() const { return last_commit_; }

 private:
  static constexpr int kSegs = 4;
  static constexpr int kCmdDepth = 4;
  static constexpr uint64_t kMinMmCycles = 64;
  struct Tile {
    uint32_t rows = 0, cols = 0;  // segment masks
    bool overlaps(const Tile& o) const { return (rows & o.rows) && (cols & o.cols); }
    bool shares_rows_or_cols(const Tile& o) const { return (rows & o.rows) || (cols & o.cols); }
  };
  static Tile tile_of(const TeInstruction& in);
  struct Streaming {  // an MM that holds (or held) a slot
    Tile tile;
    int bank = 0;        // weight bank
    int pe_op = 0;
    uint64_t start = 0;  // first vector
    uint64_t frees = 0;  // the cycle its slot can be taken by the next MM (its finishing cycle)
  };

  // The share of the full rate an MM starting at `t` streams at; updates the throttle's state.
  double throttle_share(uint64_t t);

  TensorEngineConfig cfg_;
  TeCosts costs_;
  bool ramp_started_ = false;
  uint64_t ramp_from_ = 0;                              // the throttle's ramp began here
  std::deque<std::pair<uint64_t, uint64_t>> busy_;      // recent MMs' streaming [begin, end)
  std::deque<uint64_t> dispatched_;  // dispatch cycles of the last kCmdDepth instructions
  uint64_t last_fire_ = 0, last_dispatch_ = 0, last_commit_ = 0;
  bool any_ = false;
  uint64_t ls_free_ = 0;                              // the LS unit may dispatch from here
  std::array<std::array<uint64_t, kSegs * kSegs>, 2> drain_free_{};  // [bank][segment]
  // Per segment: whether an LS wrote it, the weight bank and type of the last LS that did.
  std::array<bool, kSegs * kSegs> seg_loaded_{};
  std::array<int, kSegs * kSegs> seg_bank_{};
  std::array<DType, kSegs * kSegs> seg_dtype_{};
  Tile ls_tile_;      // the last LS: its tile and bank
  int ls_bank_ = -1;
  uint64_t next_free_ = 0;    // the MM waiting register is empty from here
  std::vector<Streaming> streaming_;  // recent MMs (a slot each while streaming)
};

}  // namespace ncore::model

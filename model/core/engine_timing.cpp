#include "model/core/engine_timing.h"

#include <algorithm>
#include <cmath>

namespace ncore::model {

TeCosts te_costs(const CoreCosts& costs, const CoreClocks& clocks) {
  const ThrottleConfig& t = costs.throttle;
  const double ghz = clocks.ghz(ClockDomain::kTensor);
  return {costs.tensor.ls_columns_per_cycle, t.enabled, t.start_share, static_cast<uint64_t>(std::llround(t.ramp_ns * ghz)),
          std::max<uint64_t>(1, static_cast<uint64_t>(std::llround(t.window_ns * ghz))), t.low_use};
}

TensorEngineTiming::TensorEngineTiming(const TensorEngineConfig& c, const TeCosts& costs) : cfg_(c), costs_(costs) {}

double TensorEngineTiming::throttle_share(uint64_t t) {
  const uint64_t window = std::max<uint64_t>(costs_.window_cycles, 1);
  while (!busy_.empty() && busy_.front().second + window <= t) busy_.pop_front();
  if (!ramp_started_) {
    ramp_started_ = true;
    ramp_from_ = t;
  } else if (t >= ramp_from_ + window) {
    uint64_t used = 0;  // streaming cycles in [t - window, t)
    for (const auto& [b, e] : busy_) used += std::min(e, t) - std::min(std::max(b, t - window), std::min(e, t));
    if (static_cast<double>(used) < costs_.low_use * static_cast<double>(window)) ramp_from_ = t;
  }
  if (costs_.ramp_cycles == 0) return 1.0;
  const double ramp = std::min(1.0, static_cast<double>(t - ramp_from_) / static_cast<double>(costs_.ramp_cycles));
  return costs_.start_share + (1.0 - costs_.start_share) * ramp;
}

TensorEngineTiming::Tile TensorEngineTiming::tile_of(const TeInstruction& in) {
  const auto mask = [](int split, int tile) {
    const int span = kSegs >> std::clamp(split, 0, 2);
    const int first = std::clamp(tile, 0, kSegs - 1) * span;
    uint32_t m = 0;
    for (int s = first; s < first + span && s < kSegs; ++s) m |= 1u << s;
    return m;
  };
  return {mask(in.row_split, in.row_tile), mask(in.col_split, in.col_tile)};
}

uint64_t TensorEngineTiming::earliest_fire(uint64_t now) const {
  uint64_t at = now;
  if (any_) at = std::max(at, last_fire_ + 1);
  if (dispatched_.size() == kCmdDepth) at = std::max(at, dispatched_.front() + 1);
  return at;
}

TensorEngineTiming::Schedule TensorEngineTiming::schedule(const TeInstruction& in, uint64_t fire) {
  const uint64_t rows = static_cast<uint64_t>(cfg_.rows), cols = static_cast<uint64_t>(cfg_.cols);
  const Tile tile = tile_of(in);
  int first_seg = 0;  // the tile's first segment (row-major)
  for (int r = 0; r < kSegs; ++r)
    if (tile.rows >> r & 1) {
      for (int c = 0; c < kSegs; ++c)
        if (tile.cols >> c & 1) {
          first_seg = r * kSegs + c;
          break;
        }
      break;
    }
  const auto for_segments = [&](auto f) {
    for (int r = 0; r < kSegs; ++r)
      for (int c = 0; c < kSegs; ++c)
        if ((tile.rows >> r & 1) && (tile.cols >> c & 1)) f(r * kSegs + c);
  };
  Schedule s;
  uint64_t d = fire + 1;
  if (any_) d = std::max(d, last_dispatch_ + 1);
  // MMs whose slots were free before this dispatch constrain nothing from here on.
  streaming_.erase(std::remove_if(streaming_.begin(), streaming_.end(), [&](const Streaming& m) { return m.frees + 1 <= d; }),
                   streaming_.end());

  if (in.opcode == Opcode::kLoadStationary) {
    const int bank = seg_loaded_[first_seg] ? 1 - seg_bank_[first_seg] : 0;
    d = std::max(d, ls_free_);
    for_segments([&](int seg) { d = std::max(d, drain_free_[bank][seg]); });
    for (const Streaming& m : streaming_)  // an MM of an overlapping tile that holds the bank
      if (m.bank == bank && m.tile.overlaps(tile)) d = std::max(d, m.frees + 1);
    s.dispatch = s.start = d;
    const auto per_cycle = static_cast<uint64_t>(std::max(costs_.ls_columns_per_cycle, 1));
    const uint64_t columns = (static_cast<uint64_t>(std::max(in.m, 1)) + per_cycle - 1) / per_cycle;
    s.commit = d + columns + 1;
    s.drained = s.commit + 1;
    ls_free_ = s.commit + 1;
    ls_tile_ = tile;
    ls_bank_ = bank;
    for_segments([&](int seg) {
      seg_bank_[seg] = bank;
      seg_loaded_[seg] = true;
      seg_dtype_[seg] = in.dtype;
    });
  } else {
    d = std::max(d, next_free_);
    const int bank = seg_bank_[first_seg];
    const DType st_dtype = seg_dtype_[first_seg];
    const int pe_op = in.double_row ? 1 : in.transpose ? 2 : in.sparsity != TeSparsity::kDense ? 3 + static_cast<int>(in.sparsity) : 0;
    uint64_t promote = d + 1;
    if (ls_bank_ == bank && ls_tile_.overlaps(tile)) promote = std::max(promote, ls_free_);
    for (const Streaming& m : streaming_)
      if (m.tile.shares_rows_or_cols(tile) || m.pe_op != pe_op) promote = std::max(promote, m.frees);
    // At most kSegs MMs stream at once.
    for (;;) {
      int busy = 0;
      uint64_t first_free = UINT64_MAX;
      for (const Streaming& m : streaming_)
        if (m.frees > promote) ++busy, first_free = std::min(first_free, m.frees);
      if (busy < kSegs) break;
      promote = first_free;
    }
    const bool fp32 = in.dtype == DType::kFp32 || st_dtype == DType::kFp32;
    const uint64_t passes = in.transpose ? (st_dtype == DType::kFp32 ? 2 : 1) : in.double_row ? 1 : fp32 ? 4 : 1;
    const uint64_t n = static_cast<uint64_t>(std::max(in.n, 1));
    const uint64_t start = promote + 1;
    uint64_t stream = n * passes;
    if (costs_.throttle) {
      stream = static_cast<uint64_t>(std::ceil(static_cast<double>(stream) / throttle_share(start) - 1e-9));
      busy_.emplace_back(start, start + stream);
    }
    const uint64_t last = start + stream - passes;
    const uint64_t frees = start + std::max(stream, kMinMmCycles) - 1;
    s.dispatch = d;
    s.start = start;
    s.commit = last + rows + cols + 1;
    s.stream_cycles = frees - start + 1;
    s.drained = std::max(s.commit, frees) + 1;
    next_free_ = promote + 1;
    streaming_.push_back({tile, bank, pe_op, start, frees});
    for_segments([&](int seg) { drain_free_[bank][seg] = std::max(drain_free_[bank][seg], last + rows + cols + 4); });
  }
  dispatched_.push_back(d);
  if (dispatched_.size() > kCmdDepth) dispatched_.pop_front();
  last_fire_ = fire;
  last_dispatch_ = d;
  last_commit_ = std::max(last_commit_, s.commit);
  any_ = true;
  return s;
}

}  // namespace ncore::model

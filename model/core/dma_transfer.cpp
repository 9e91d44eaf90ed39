#include "model/core/dma_transfer.h"

#include <algorithm>
#include <cmath>

namespace ncore::model {

namespace {
constexpr double kMoved = 1e-6;  // bytes below which a transfer counts as done (float residue)
}

FluidDmaTransfers::FluidDmaTransfers(int engines, double engine_bytes_per_cycle, double hbm_bytes_per_cycle)
    : engines_(static_cast<size_t>(engines)), engine_rate_(engine_bytes_per_cycle), hbm_rate_(hbm_bytes_per_cycle) {}

void FluidDmaTransfers::begin(int engine, const DmaDescriptor& d, uint64_t) {
  Engine& e = engines_[static_cast<size_t>(engine)];
  e.active = true;
  e.remaining = static_cast<double>(d.bytes * d.count1 * d.count2);
}

bool FluidDmaTransfers::done(int engine) const {
  const Engine& e = engines_[static_cast<size_t>(engine)];
  return e.active && e.remaining <= kMoved;
}

void FluidDmaTransfers::retire(int engine) { engines_[static_cast<size_t>(engine)].active = false; }

int FluidDmaTransfers::streaming() const {
  int n = 0;
  for (const Engine& e : engines_)
    if (e.active && e.remaining > kMoved) ++n;
  return n;
}

double FluidDmaTransfers::rate(int active) const {
  return std::min(engine_rate_, hbm_rate_ / std::max(active, 1));
}

uint64_t FluidDmaTransfers::next_event(uint64_t now) const {
  const double r = rate(streaming());
  uint64_t next = kNoEvent;
  for (const Engine& e : engines_) {
    if (!e.active) continue;
    const double cycles = e.remaining / r;
    next = std::min(next, now + std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(cycles - 1e-9))));
  }
  return next;
}

void FluidDmaTransfers::advance(uint64_t now, uint64_t to) {
  const int active = streaming();
  if (!active) return;
  const double moved = rate(active) * static_cast<double>(to - now);
  for (Engine& e : engines_) {
    if (!e.active) continue;
    e.remaining = std::max(0.0, e.remaining - moved);
    if (e.remaining < kMoved) e.remaining = 0;
  }
}

}  // namespace ncore::model

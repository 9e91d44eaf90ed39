#pragma once
// Helpers of the timing tests (issue 49): random clock dividers, their description, and a
// queue's instructions in a timeline.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/common/numerics.h"
#include "model/core/core_model.h"
#include "model/core/core_timing.h"

namespace ncore::test {

// Each domain's divider drawn from 1 to 7 (the seed's test prints the seed).
inline void randomize_dividers(model::CoreClocks& c, model::SplitMix64& rng) {
  for (int& d : c.divide) d = 1 + static_cast<int>(rng.next() % 7);
}

inline std::string dividers_name(const model::CoreClocks& c) {
  return fmt::format("dividers tensor {} scalar {} vector {} dma {}", c.divide[0], c.divide[1], c.divide[2], c.divide[3]);
}

// Queue q's instructions in a timeline, by their index in the queue.
inline std::map<size_t, model::InstrTiming> queue_timeline(const std::vector<model::InstrTiming>& timeline,
                                                           isa::Queue q) {
  std::map<size_t, model::InstrTiming> at;
  for (const auto& e : timeline)
    if (e.queue == static_cast<int>(q)) at[e.index] = e;
  return at;
}

}  // namespace ncore::test

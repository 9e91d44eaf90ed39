#pragma once
// The golden core's speed for benchmarks (bench_core, bench_fetch): a program run three times
// after its tensors are loaded, the median of the simulated cycles per wall second (the cycles
// and every other figure are the same each time).

#include <algorithm>
#include <chrono>
#include <vector>

#include <fmt/format.h>

#include "model/core/core_model.h"

namespace ncore::test {

struct GoldenTimed {
  model::CoreResult result;
  double cycles_per_second = 0;
};

inline GoldenTimed time_golden(const model::Program& p, const model::CoreConfig& cfg) {
  std::vector<double> speeds;
  GoldenTimed t;
  for (int i = 0; i < 3; ++i) {
    model::CoreModel core(cfg, p);
    core.load_tensors();
    const auto t0 = std::chrono::steady_clock::now();
    t.result = core.run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (t.result.status != model::CoreStatus::kDone) throw Error(fmt::format("{}: {}", p.name, t.result.message));
    speeds.push_back(static_cast<double>(t.result.cycles) / wall);
  }
  std::sort(speeds.begin(), speeds.end());
  t.cycles_per_second = speeds[1];
  return t;
}

}  // namespace ncore::test

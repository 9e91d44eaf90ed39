#pragma once
// Shared by the tensor-engine co-simulation tests.

#include <cstdlib>
#include <vector>

#include "model/numerics.h"
#include "tb/tensor/te_sim.h"

namespace ncore::test {

inline const std::vector<model::DType> kInputTypes = {
    model::DType::kFp32, model::DType::kTf32, model::DType::kBf16,
    model::DType::kFp16, model::DType::kE4m3, model::DType::kE5m2};

// Harness options from a seed and a back-pressure probability; NCORE_WAVES (and
// NCORE_WAVES_FROM / NCORE_WAVES_TO) add an FST dump.
inline tb::TeSimOptions options(uint64_t seed, double stall) {
  tb::TeSimOptions o;
  o.seed = seed;
  o.cmd_stall = stall;
  o.sbuf_stall = stall;
  if (const char* w = std::getenv("NCORE_WAVES")) o.waves = w;
  if (const char* f = std::getenv("NCORE_WAVES_FROM")) o.wave_from = std::strtoull(f, nullptr, 0);
  if (const char* t = std::getenv("NCORE_WAVES_TO")) o.wave_to = std::strtoull(t, nullptr, 0);
  return o;
}

}  // namespace ncore::test

#pragma once
// Shared by the HBM RTL test suites: traffic patterns in miniature, the checks every clean
// co-simulation must pass, and harness options (NCORE_WAVES=f.fst adds waves).

#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "model/hbm/hbm.h"
#include "model/common/numerics.h"
#include "tb/hbm/hbm_checker.h"
#include "tb/hbm/hbm_sim.h"

namespace ncore::test {

using model::HbmConfig;
using model::HbmTraceEntry;


// Traffic patterns in miniature (scripts/hbm_traces makes the full-size ones).
inline std::vector<HbmTraceEntry> pattern(const std::string& name, model::SplitMix64& rng,
                                   const HbmConfig& c) {
  std::vector<HbmTraceEntry> t;
  const uint64_t capacity = model::hbm_capacity_bytes(c.channels);
  const auto random_addr = [&](uint64_t align) {
    return (rng.next() % capacity) / align * align;
  };
  if (name == "seq") {
    for (uint64_t a = 0; a < 48 * 1024; a += 256) t.push_back({0, false, a, 256});
  } else if (name == "dma16") {
    // 16 streams 4 MiB apart in 256-byte chunks, the last four writing.
    for (uint64_t off = 0; off < 4096; off += 256)
      for (uint64_t s = 0; s < 16; ++s)
        t.push_back({0, s >= 12, (s << 22) % capacity + off, 256});
  } else if (name == "random") {
    for (int i = 0; i < 1200; ++i) t.push_back({0, false, random_addr(64), 64});
  } else if (name == "mixed") {
    for (int i = 0; i < 1200; ++i) t.push_back({0, rng.below(3) == 0, random_addr(64), 64});
  } else if (name == "conflicts") {
    // A few hot bursts and rows: many read-after-write, write-after-read, write-after-write.
    uint64_t cycle = 0;
    for (int i = 0; i < 1500; ++i) {
      cycle += rng.below(4) == 0 ? rng.below(10) : 0;
      const uint64_t a = rng.below(2) ? rng.below(16) * 32
                                      : (rng.below(5) * 65536 + rng.below(64) * 32) % capacity;
      t.push_back({cycle, rng.below(5) < 2, a, 32 * (1 + rng.below(2))});
    }
  } else if (name == "write_flood") {
    // Four writes to a hot set of 48 bursts per scattered read: the reads keep the controller
    // in read mode while the write queue fills towards its high watermark, most writes waiting
    // behind an older write (or read) of the same burst.
    uint64_t hot[48];
    for (auto& h : hot) h = (rng.below(8) * 65536 + rng.below(16) * 32) % capacity;
    for (int i = 0; i < 1600; ++i) {
      if (i % 5 == 0)
        t.push_back({0, false, rng.below(4) == 0 ? hot[rng.below(48)] : random_addr(32), 32});
      else
        t.push_back({0, true, hot[rng.below(48)], 32});
    }
  }
  return t;
}

inline void expect_clean(const tb::HbmSimResult& r, const std::vector<model::HbmBurst>& bursts,
                  const std::vector<std::vector<model::HbmCommand>>& commands,
                  const HbmConfig& c) {
  ASSERT_TRUE(r.ok) << r.failure;
  uint64_t reads = 0;
  for (const auto& b : bursts) reads += !b.request.write;
  EXPECT_EQ(r.responses_checked, reads);
  EXPECT_GT(r.commands_compared, bursts.size()) << "the co-simulation compared too little";
  EXPECT_EQ(r.stats.reads + r.stats.writes, bursts.size());
  for (size_t ch = 0; ch < commands.size(); ++ch) {
    tb::HbmChecker k(c);
    for (const auto& x : commands[ch]) k.observe(x);
    k.finish(r.stats.cycles);
    EXPECT_TRUE(k.ok()) << "channel " << ch << ": " << k.failure();
  }
}

inline tb::HbmSimOptions sim_options(uint64_t seed, double stall) {
  tb::HbmSimOptions o;
  o.seed = seed;
  o.stall = stall;
  if (const char* w = std::getenv("NCORE_WAVES")) o.waves = w;
  return o;
}

}  // namespace ncore::test

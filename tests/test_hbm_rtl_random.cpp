// Constrained-random co-simulation of the HBM controller RTL against the reference scheduler:
// random configurations (policy, refresh, channels, watermarks, age cap, postponement, timing
// scaled between 0.5x and 1.5x, frequent refresh) and random mixes of traffic patterns with random
// back-pressure, 60 seeds in four shards. NCORE_SEED=S reruns one seed alone; NCORE_WAVES=f.fst
// adds waves.

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "tests/hbm_test_util.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::HbmConfig;
using model::HbmTraceEntry;
using test::expect_clean;
using test::pattern;
using test::sim_options;

// A random configuration: policy, watermarks, age cap, refresh, a tighter or looser part.
HbmConfig random_config(model::SplitMix64& rng) {
  HbmConfig c;
  c.sched = rng.below(4) == 0 ? model::HbmSched::kFcfs : model::HbmSched::kReorder;
  c.refresh = rng.below(3) == 0 ? model::HbmRefresh::kAllBank : model::HbmRefresh::kPerBank;
  c.channels = 1 << rng.below(3);
  c.xor_hash = rng.below(5) != 0;
  c.wr_high = 2 + static_cast<int>(rng.below(static_cast<uint32_t>(c.wr_depth) - 1));
  c.wr_low = static_cast<int>(rng.below(static_cast<uint32_t>(c.wr_high)));
  c.rd_batch = rng.below(3) == 0 ? 0 : static_cast<int>(rng.below(600));
  c.age_cap = 50 + static_cast<int>(rng.below(2000));
  c.max_postpone = 1 + static_cast<int>(rng.below(8));
  c.max_pull_in = static_cast<int>(rng.below(9));
  auto& t = c.timing;
  const auto scale = [&](int& v) { v = std::max(1, v * (50 + static_cast<int>(rng.below(100))) / 100); };
  for (int* v : {&t.rcd_rd, &t.rcd_wr, &t.rp, &t.ras, &t.rtp, &t.wr, &t.wtr_s, &t.wtr_l,
                 &t.rrd_s, &t.rrd_l, &t.faw, &t.rfcpb, &t.rfc, &t.rrefd, &t.cl, &t.cwl})
    scale(*v);
  t.rc = std::max(t.rc, t.ras + t.rp);
  t.ccd_l = std::max(t.ccd_s, t.ccd_l);
  t.rtw = std::max(t.rtw, t.cl + t.bl - t.cwl);
  // Refresh often, to exercise it: the shortest interval the configuration allows (or so).
  const int forced = t.ras + t.cwl + t.bl + t.wr + t.rp + t.rc + 16;
  const int per = forced + static_cast<int>(rng.below(400));
  t.refi = c.refresh == model::HbmRefresh::kPerBank ? per * model::kHbmBanks : per + t.rfc;
  c.validate();
  return c;
}

// Seeds 40000-40059 in four shards of 15, which CTest runs side by side (the 60 in one test were
// the longest test of the suite). NCORE_SEED=S runs seed S alone, in shard 0.
constexpr int kShards = 4;
constexpr int kSeedsPerShard = 15;

class HbmRtlRandomShard : public ::testing::TestWithParam<int> {};

TEST_P(HbmRtlRandomShard, RandomTrafficAndConfigurationsFromASeed) {
  const bool one = std::getenv("NCORE_SEED") != nullptr;
  if (one && GetParam() != 0) GTEST_SKIP() << "NCORE_SEED runs in shard 0 alone";
  uint64_t base = 40000 + static_cast<uint64_t>(GetParam() * kSeedsPerShard);
  if (one) {
    base = test::test_seed(base);
  } else {
    std::printf("[ seed     ] seeds %llu-%llu (reproduce one: NCORE_SEED=S "
                "--gtest_filter=Shards/HbmRtlRandomShard.*/0)\n",
                static_cast<unsigned long long>(base),
                static_cast<unsigned long long>(base + kSeedsPerShard - 1));
    RecordProperty("seed", std::to_string(base));
  }
  const int seeds = one ? 1 : kSeedsPerShard;
  for (int i = 0; i < seeds; ++i) {
    const uint64_t seed = base + static_cast<uint64_t>(i);
    model::SplitMix64 rng(seed);
    const HbmConfig c = random_config(rng);
    static const char* kPatterns[] = {"seq", "dma16", "random", "mixed", "conflicts", "write_flood"};
    std::vector<HbmTraceEntry> trace;
    for (int k = 0; k < 2; ++k) {
      auto part = pattern(kPatterns[rng.below(6)], rng, c);
      const uint64_t start = trace.empty() ? 0 : trace.back().cycle;
      for (auto& e : part) e.cycle += start;
      trace.insert(trace.end(), part.begin(), part.end());
    }
    const auto bursts = model::hbm_bursts(trace, c, seed);
    const double stall = rng.below(3) * 0.25;
    std::vector<std::vector<model::HbmCommand>> commands;
    auto opts = sim_options(seed, stall);
    opts.scramble_ids = true;
    const auto r = tb::run_hbm_rtl(bursts, c, opts, &commands);
    SCOPED_TRACE(fmt::format("seed {} (reproduce: NCORE_SEED={} "
                             "--gtest_filter=Shards/HbmRtlRandomShard.*/0)", seed, seed));
    expect_clean(r, bursts, commands, c);
    if (HasFailure()) break;
  }
}

INSTANTIATE_TEST_SUITE_P(Shards, HbmRtlRandomShard, ::testing::Range(0, kShards));

// Every timing parameter in the top quarter of its 12-bit field (a part thousands of times
// slower than HBM3, but a legal configuration): the countdowns load their largest values, and
// the sums of them (write-to-read, write-to-precharge) carry into bits 12 and 13. A short mixed
// trace over a few rows of every bank group; all-bank refresh, the only kind a forced refresh
// of this length fits.
HbmConfig slow_config(model::SplitMix64& rng) {
  HbmConfig c;
  c.sched = rng.below(2) ? model::HbmSched::kFcfs : model::HbmSched::kReorder;
  c.refresh = model::HbmRefresh::kAllBank;
  c.channels = 1;
  auto& t = c.timing;
  const auto top = [&] { return 3072 + static_cast<int>(rng.below(1024)); };
  for (int* v : {&t.cl, &t.cwl, &t.rcd_rd, &t.rcd_wr, &t.rp, &t.ras, &t.rc, &t.ccd_s, &t.ccd_l,
                 &t.rrd_s, &t.rrd_l, &t.faw, &t.wr, &t.rtp, &t.wtr_s, &t.wtr_l, &t.rtw, &t.rfc,
                 &t.rfcpb, &t.rrefd})
    *v = top();
  t.bl = 1024 + static_cast<int>(rng.below(1024));  // rtw >= cl + bl - cwl holds: rtw >= 3072
  const int forced = t.ras + t.cwl + t.bl + t.wr + t.rp + t.rc + 16;
  t.refi = forced + static_cast<int>(rng.below(static_cast<uint32_t>(65536 - forced)));
  c.validate();
  return c;
}

TEST(HbmRtlRandom, TimingsAtTheTopOfTheirFieldsFromASeed) {
  const uint64_t base = test::test_seed(41000);
  const int seeds = std::getenv("NCORE_SEED") != nullptr ? 1 : 2;
  for (int i = 0; i < seeds; ++i) {
    const uint64_t seed = base + static_cast<uint64_t>(i);
    model::SplitMix64 rng(seed);
    const HbmConfig c = slow_config(rng);
    std::vector<HbmTraceEntry> trace;
    for (int k = 0; k < 40; ++k) {
      const uint64_t addr = (rng.below(4) * 65536 + rng.below(16) * 1024 + rng.below(2) * 32) %
                            model::hbm_capacity_bytes(c.channels);
      trace.push_back({0, rng.below(3) == 0, addr, 32});
    }
    const auto bursts = model::hbm_bursts(trace, c, seed);
    std::vector<std::vector<model::HbmCommand>> commands;
    auto opts = sim_options(seed, 0.25);
    opts.watchdog = 1'000'000;  // a refresh alone takes up to 4,095 cycles
    const auto r = tb::run_hbm_rtl(bursts, c, opts, &commands);
    SCOPED_TRACE(fmt::format("seed {} (reproduce: NCORE_SEED={} "
                             "--gtest_filter=HbmRtlRandom.TimingsAtTheTop*)", seed, seed));
    expect_clean(r, bursts, commands, c);
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace ncore

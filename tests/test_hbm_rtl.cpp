// The HBM controller RTL in lockstep with the reference scheduler: the same command trace cycle
// for cycle, the same read responses, every read the latest earlier write, every command through
// the independent timing checker. Directed patterns under every policy, and refused addresses.
// (test_hbm_rtl_random: random traffic and configurations; test_hbm_sva: assertions firing.)

#include <cstdlib>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/common/error.h"
#include "model/hbm/hbm.h"
#include "model/common/numerics.h"
#include "tb/hbm/hbm_checker.h"
#include "tb/hbm/hbm_fabric.h"
#include "tb/hbm/hbm_rtl_channel.h"
#include "Vnc_hbm.h"
#include "tb/hbm/hbm_sim.h"
#include "tests/hbm_test_util.h"

namespace ncore {
namespace {

using model::HbmConfig;
using model::HbmTraceEntry;
using test::expect_clean;
using test::pattern;
using test::sim_options;

struct Policy {
  model::HbmSched sched;
  model::HbmRefresh refresh;
  int channels;
};

class HbmCosim : public ::testing::TestWithParam<std::string> {};

TEST_P(HbmCosim, MatchesTheReferenceUnderEveryPolicy) {
  const Policy policies[] = {
      {model::HbmSched::kReorder, model::HbmRefresh::kPerBank, 1},
      {model::HbmSched::kReorder, model::HbmRefresh::kAllBank, 1},
      {model::HbmSched::kFcfs, model::HbmRefresh::kPerBank, 1},
      {model::HbmSched::kFcfs, model::HbmRefresh::kAllBank, 2},
      {model::HbmSched::kReorder, model::HbmRefresh::kPerBank, 4},
  };
  for (const auto& p : policies) {
    HbmConfig c;
    c.sched = p.sched;
    c.refresh = p.refresh;
    c.channels = p.channels;
    c.age_cap = 400;
    model::SplitMix64 rng(7);
    const auto bursts = model::hbm_bursts(pattern(GetParam(), rng, c), c, 7);
    std::vector<std::vector<model::HbmCommand>> commands;
    const auto r = tb::run_hbm_rtl(bursts, c, sim_options(7, 0.2), &commands);
    SCOPED_TRACE(fmt::format("{} sched {} refresh {} channels {}", GetParam(),
                             static_cast<int>(p.sched), static_cast<int>(p.refresh), p.channels));
    expect_clean(r, bursts, commands, c);
  }
}

INSTANTIATE_TEST_SUITE_P(Patterns, HbmCosim,
                         ::testing::Values("seq", "dma16", "random", "mixed", "conflicts"));

// The RTL alone (no reference) gives the same statistics as the reference model alone, on
// traffic with reads and writes to the same addresses arriving together.
TEST(HbmRtl, AloneMatchesTheGoldenModelsFigures) {
  for (const char* name : {"dma16", "conflicts", "mixed"}) {
    HbmConfig c;
    model::SplitMix64 rng(3);
    const auto bursts = model::hbm_bursts(pattern(name, rng, c), c, 3);
    auto o = sim_options(3, 0.0);
    o.check = false;
    const auto r = tb::run_hbm_rtl(bursts, c, o);
    ASSERT_TRUE(r.ok) << r.failure;
    const auto g = model::run_hbm_golden(bursts, c);
    EXPECT_EQ(r.stats.cycles, g.cycles) << name;
    EXPECT_EQ(r.stats.acts, g.acts) << name;
    EXPECT_EQ(r.stats.refreshes, g.refreshes) << name;
    EXPECT_EQ(r.commands_compared, 0u);
  }
}

TEST(HbmRtl, RefusesBadAddressesWithACodeAndStaysLive) {
  HbmConfig c;
  auto r = tb::hbm_rtl_refuse(c, false, 16);
  EXPECT_EQ(r.err_code, static_cast<int>(ncore::isa::HbmError::kAlign)) << "misaligned read";
  EXPECT_TRUE(r.live);
  r = tb::hbm_rtl_refuse(c, true, model::hbm_capacity_bytes(1));
  EXPECT_EQ(r.err_code, static_cast<int>(ncore::isa::HbmError::kRange)) << "write past the capacity of one channel";
  EXPECT_TRUE(r.live);
  c.channels = 2;
  r = tb::hbm_rtl_refuse(c, false, model::hbm_capacity_bytes(1));
  EXPECT_EQ(r.err_code, static_cast<int>(ncore::isa::HbmError::kNone)) << "in range with two channels";
  EXPECT_TRUE(r.live);
}

// Edges of the address space: the last bursts of HBM (and the first), written and read back
// in lockstep with the reference, and the last burst accepted where one past it is refused.
TEST(HbmRtl, TheLastBurstsOfHbmWorkInLockstep) {
  for (int channels : {1, 2}) {
    HbmConfig c;
    c.channels = channels;
    const uint64_t end = model::hbm_capacity_bytes(channels);
    const std::vector<HbmTraceEntry> trace = {
        {0, true, end - 128, 128}, {0, true, 0, 64}, {4, false, end - 128, 128},
        {8, false, end - 32, 32},  {8, false, 0, 64}, {12, true, end - 32, 32}, {20, false, end - 32, 32}};
    const auto bursts = model::hbm_bursts(trace, c, 9);
    std::vector<std::vector<model::HbmCommand>> commands;
    const auto r = tb::run_hbm_rtl(bursts, c, sim_options(9, 0.2), &commands);
    SCOPED_TRACE(fmt::format("{} channels", channels));
    expect_clean(r, bursts, commands, c);
    EXPECT_EQ(tb::hbm_rtl_refuse(c, false, end - 32).err_code, 0) << "the last burst";
    EXPECT_EQ(tb::hbm_rtl_refuse(c, false, end).err_code, 2) << "one past the end";
  }
}

// The fabric over RTL controllers (the core harness's --hbm rtl): each is checked against the
// reference in lockstep, so a controller that schedules differently is named with the channel
// and cycle. Here channel 0's RTL is switched to FCFS while its reference reorders: a row hit
// queued behind a row miss goes first in one and second in the other.
TEST(HbmRtlFabric, AnRtlControllerThatDiffersFromTheReferenceIsNamed) {
  for (bool differ : {false, true}) {
    HbmConfig c;
    c.channels = 1;
    tb::HbmFabric fabric(c, 1, tb::rtl_hbm_controllers([differ](int, Vnc_hbm& top) { top.cfg_fcfs_i = differ; }));
    // Same bank, rows 0, 1, 0: the third is a hit on the row the first opens.
    const uint64_t row_bytes = 32ull * model::kHbmColumns * model::kHbmBanks;
    const uint64_t addrs[3] = {0, row_bytes, 64};
    size_t next = 0;
    for (uint64_t cycle = 0; cycle < 2000; ++cycle) {
      if (next < 3) {
        const uint64_t addr = addrs[next];
        if (fabric.grant(false, 1, &addr)) {
          model::HbmRequest q;
          q.addr = addr;
          q.id = static_cast<uint32_t>(next);
          fabric.offer(0, q);
          ++next;
        }
      }
      if (fabric.response(0)) fabric.pop(0);
      fabric.step();
    }
    EXPECT_TRUE(fabric.idle());
    const std::string failure = fabric.finish();
    if (differ)
      EXPECT_NE(failure.find("HBM channel 0, cycle"), std::string::npos) << failure;
    else
      EXPECT_EQ(failure, "");
  }
}

TEST(HbmRtl, QueueDepthsOtherThanTheBuiltOnesAreRefused) {
  HbmConfig c;
  c.rd_depth = 32;
  EXPECT_THROW(tb::run_hbm_rtl({}, c, {}), Error);
}

}  // namespace
}  // namespace ncore

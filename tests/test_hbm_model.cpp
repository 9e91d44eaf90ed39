// The HBM reference controller, the address map, the trace reader and the independent timing
// checker: each checker rule made to fire, and random traffic with many same-address conflicts
// whose every read must return the latest earlier write.

#include <algorithm>
#include <array>
#include <memory>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/common/error.h"
#include "model/hbm/hbm.h"
#include "model/common/numerics.h"
#include "tb/hbm/hbm_checker.h"
#include "tb/hbm/hbm_fabric.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::HbmCmd;
using model::HbmCommand;
using model::HbmConfig;

TEST(HbmAddressMap, IsABijectionForEveryChannelCountAndHash) {
  model::SplitMix64 rng(test::test_seed(11));
  for (int channels : {1, 2, 4, 8, 16})
    for (bool xor_hash : {false, true})
      for (int i = 0; i < 20000; ++i) {
        const uint64_t addr = rng.next() % model::hbm_capacity_bytes(channels) / 32 * 32;
        const auto a = model::hbm_map(addr, channels, xor_hash);
        ASSERT_LT(a.bank, model::kHbmBanks);
        ASSERT_LT(a.channel, channels);
        ASSERT_LT(a.row, 1 << model::kHbmRowBits);
        ASSERT_EQ(model::hbm_unmap(a, channels, xor_hash), addr) << channels << " " << xor_hash;
      }
}

TEST(HbmAddressMap, ConsecutiveKibRotateBankGroups) {
  for (uint64_t k = 0; k < 16; ++k)
    EXPECT_EQ(model::hbm_map(k * 1024, 1, false).bank_group(), static_cast<int>(k % 4));
}

// Streams aligned to any power of two at or above the row bits start in 16 different banks
// (and spread over every channel) with the hash; without it they all start in one.
TEST(HbmAddressMap, XorHashSpreadsAlignedStreams) {
  for (int channels : {1, 4}) {
    for (int shift = 14 + (channels == 4 ? 2 : 0); shift <= 26; ++shift) {
      std::set<int> banks, plain_banks, chans;
      for (uint64_t s = 0; s < 16; ++s) {
        const uint64_t addr = s << shift;
        if (addr >= model::hbm_capacity_bytes(channels)) continue;
        const auto a = model::hbm_map(addr, channels, true);
        banks.insert(a.bank);
        chans.insert(a.channel);
        plain_banks.insert(model::hbm_map(addr, channels, false).bank);
      }
      if (shift <= 24) {
        EXPECT_EQ(banks.size(), 16u) << "streams 2^" << shift << " apart, " << channels << " ch";
        EXPECT_EQ(plain_banks.size(), 1u);
      }
      if (channels == 4 && shift <= 24) {
        EXPECT_EQ(chans.size(), 4u) << shift;
      }
    }
  }
}

TEST(HbmAddressMap, RejectsMisalignedAndOutOfRangeAddresses) {
  EXPECT_THROW(model::hbm_map(16, 1, true), Error);
  EXPECT_THROW(model::hbm_map(model::hbm_capacity_bytes(1), 1, true), Error);
  EXPECT_NO_THROW(model::hbm_map(model::hbm_capacity_bytes(1) - 32, 1, true));
}

TEST(HbmConfig, BadFieldsNameTheFieldAndTheRange) {
  const auto message = [](auto change) {
    HbmConfig c;
    change(c);
    try {
      c.validate();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(message([](HbmConfig& c) { c.channels = 3; }).find("channels is 3"), std::string::npos);
  EXPECT_NE(message([](HbmConfig& c) { c.wr_low = 230; }).find("wr_low is 230"), std::string::npos);
  EXPECT_NE(message([](HbmConfig& c) { c.timing.rp = 0; }).find("rp is 0, expected 1 to 4095"),
            std::string::npos);
  EXPECT_NE(message([](HbmConfig& c) { c.timing.ccd_s = 1; }).find("ccd_s"), std::string::npos);
  EXPECT_NE(message([](HbmConfig& c) { c.timing.refi = 1000; }).find("refi is 1000"),
            std::string::npos);
  EXPECT_EQ(message([](HbmConfig&) {}), "");
}

// The DRAM's timing in nanoseconds (issue 50): at the default clock it is the default cycles;
// at an eightfold slower clock the clock-stated times keep their clocks and every other one
// keeps its nanoseconds, to within one clock, and the controller takes it.
TEST(HbmModel, DramTimingAtTheDefaultClockIsTheDefaultCycles) {
  const model::HbmDramTiming dram;
  const model::HbmTiming a = dram.at(0.625), d;
  const auto fields = [](const model::HbmTiming& t) {
    return std::vector<int>{t.bl,  t.cl,    t.cwl,   t.rcd_rd, t.rcd_wr, t.rp,  t.ras,  t.rc,  t.ccd_s, t.ccd_l, t.rrd_s,
                            t.rrd_l, t.faw, t.wr,    t.rtp,    t.wtr_s,  t.wtr_l, t.rtw, t.refi, t.rfc,  t.rfcpb, t.rrefd};
  };
  EXPECT_EQ(fields(a), fields(d));
  EXPECT_EQ(a.tck_ns, d.tck_ns);

  const double slow = 8 * 0.625;
  const model::HbmTiming s = dram.at(slow);
  EXPECT_EQ(s.bl, d.bl);
  EXPECT_EQ(s.ccd_s, d.ccd_s);
  EXPECT_EQ(s.ccd_l, d.ccd_l);
  const std::vector<std::pair<int, double>> kept = {
      {s.cl, dram.cl_ns},       {s.cwl, dram.cwl_ns},     {s.rcd_rd, dram.rcd_rd_ns}, {s.rcd_wr, dram.rcd_wr_ns},
      {s.rp, dram.rp_ns},       {s.ras, dram.ras_ns},     {s.rc, dram.rc_ns},         {s.rrd_s, dram.rrd_s_ns},
      {s.rrd_l, dram.rrd_l_ns}, {s.faw, dram.faw_ns},     {s.wr, dram.wr_ns},         {s.rtp, dram.rtp_ns},
      {s.wtr_s, dram.wtr_s_ns}, {s.wtr_l, dram.wtr_l_ns}, {s.refi, dram.refi_ns},     {s.rfc, dram.rfc_ns},
      {s.rfcpb, dram.rfcpb_ns}, {s.rrefd, dram.rrefd_ns}};
  for (const auto& [clocks, ns] : kept) {
    EXPECT_GE(clocks * slow, ns - 1e-9);
    EXPECT_LT(clocks * slow, ns + slow);
  }
  EXPECT_EQ(s.rtw, s.cl + s.bl + 2 - s.cwl);
  model::HbmConfig c;
  c.timing = s;
  EXPECT_NO_THROW(c.validate());
  EXPECT_THROW(dram.at(0), Error);
}

std::string trace_error(const std::string& text) {
  std::istringstream in(text);
  try {
    model::parse_hbm_trace(in, "t.trace");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(HbmTrace, ParsesCommentsBlankLinesAndBothDirections) {
  std::istringstream in("# header\n\n0 R 0 64\n5 W 0x40 32  # tail\n5 w 1000 1024\n");
  const auto t = model::parse_hbm_trace(in, "t");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_FALSE(t[0].write);
  EXPECT_TRUE(t[1].write);
  EXPECT_EQ(t[1].addr, 0x40u);
  EXPECT_EQ(t[2].addr, 0x1000u);
  EXPECT_EQ(t[2].bytes, 1024u);
}

TEST(HbmTrace, BadLinesNameTheLineAndWhatIsWrong) {
  EXPECT_EQ(trace_error("0 R 0 64\n1 X 0 64\n"),
            "t.trace:2: direction: expected R or W, found 'X'");
  EXPECT_EQ(trace_error("0 R 10 64\n"), "t.trace:1: address: expected a multiple of 32 bytes, "
                                        "found 0x10");
  EXPECT_EQ(trace_error("0 R 0 48\n"),
            "t.trace:1: bytes: expected a positive multiple of 32, found 48");
  EXPECT_EQ(trace_error("0 R zz 64\n"),
            "t.trace:1: address: expected a hex byte address, found 'zz'");
  EXPECT_EQ(trace_error("5 R 0 64\n4 R 0 64\n"),
            "t.trace:2: issue cycle: expected cycles in order (at least 5), found 4");
  EXPECT_EQ(trace_error("0 R 0\n"), "t.trace:1: expected '<issue_cycle> <R|W> <hex byte "
                                    "address> <bytes>', found too few fields");
  EXPECT_EQ(trace_error("0 R 0 64 9\n"), "t.trace:1: expected 4 fields, found more ('9')");
  EXPECT_EQ(trace_error("-1 R 0 64\n"),
            "t.trace:1: issue cycle: expected a decimal number, found '-1'");
}

// ---------------------------------------------------------------------------------------------
// The timing checker: each rule fires on a sequence that breaks it, and stays quiet on the same
// sequence with the gap respected.

HbmCommand cmd(uint64_t cycle, HbmCmd c, int bank, int row = 0, int col = 0) {
  HbmCommand x;
  x.cycle = cycle;
  x.cmd = c;
  x.bank = bank;
  x.row = row;
  x.col = col;
  return x;
}

std::string check(const std::vector<HbmCommand>& seq) {
  tb::HbmChecker k{HbmConfig{}};
  for (const auto& c : seq) k.observe(c);
  return k.failure();
}

struct RuleCase {
  const char* rule;
  std::vector<HbmCommand> bad, good;
};

TEST(HbmChecker, EveryRuleFiresAndRespectedGapsPass) {
  const model::HbmTiming t;
  using C = HbmCmd;
  const int wr_end = t.cwl + t.bl;
  const std::vector<RuleCase> cases = {
      {"tRCD_RD", {cmd(0, C::kAct, 0, 5), cmd(t.rcd_rd - 1, C::kRd, 0, 5)},
       {cmd(0, C::kAct, 0, 5), cmd(t.rcd_rd, C::kRd, 0, 5)}},
      {"tRCD_WR", {cmd(0, C::kAct, 0, 5), cmd(t.rcd_wr - 1, C::kWr, 0, 5)},
       {cmd(0, C::kAct, 0, 5), cmd(t.rcd_wr, C::kWr, 0, 5)}},
      {"tRAS", {cmd(0, C::kAct, 0, 5), cmd(t.ras - 1, C::kPre, 0)},
       {cmd(0, C::kAct, 0, 5), cmd(t.ras, C::kPre, 0)}},
      {"tRP", {cmd(0, C::kAct, 0, 5), cmd(t.ras, C::kPre, 0), cmd(t.ras + t.rp - 1, C::kAct, 0, 6)},
       {cmd(0, C::kAct, 0, 5), cmd(t.ras, C::kPre, 0), cmd(t.rc, C::kAct, 0, 6)}},
      {"tRC", {cmd(0, C::kAct, 0, 5), cmd(t.ras, C::kPre, 0), cmd(t.rc - 1, C::kAct, 0, 6)},
       {cmd(0, C::kAct, 0, 5), cmd(t.ras, C::kPre, 0), cmd(t.rc, C::kAct, 0, 6)}},
      {"tRRD_S", {cmd(0, C::kAct, 0, 5), cmd(t.rrd_s - 1, C::kAct, 1, 5)},
       {cmd(0, C::kAct, 0, 5), cmd(t.rrd_s, C::kAct, 1, 5)}},
      {"tRRD_L", {cmd(0, C::kAct, 0, 5), cmd(t.rrd_l - 1, C::kAct, 4, 5)},
       {cmd(0, C::kAct, 0, 5), cmd(t.rrd_l, C::kAct, 4, 5)}},
      {"tFAW",
       {cmd(0, C::kAct, 0), cmd(5, C::kAct, 1), cmd(10, C::kAct, 2), cmd(15, C::kAct, 3),
        cmd(t.faw - 1, C::kAct, 5)},
       {cmd(0, C::kAct, 0), cmd(5, C::kAct, 1), cmd(10, C::kAct, 2), cmd(15, C::kAct, 3),
        cmd(t.faw, C::kAct, 5)}},
      {"tCCD_L",
       {cmd(0, C::kAct, 0, 1), cmd(40, C::kRd, 0, 1), cmd(40 + t.ccd_l - 1, C::kRd, 0, 1)},
       {cmd(0, C::kAct, 0, 1), cmd(40, C::kRd, 0, 1), cmd(40 + t.ccd_l, C::kRd, 0, 1)}},
      {"tCCD_S",
       {cmd(0, C::kAct, 0, 1), cmd(5, C::kAct, 1, 1), cmd(40, C::kRd, 0, 1),
        cmd(40 + t.ccd_s - 1, C::kRd, 1, 1)},
       {cmd(0, C::kAct, 0, 1), cmd(5, C::kAct, 1, 1), cmd(40, C::kRd, 0, 1),
        cmd(40 + t.ccd_s, C::kRd, 1, 1)}},
      {"tWTR_S",
       {cmd(0, C::kAct, 0, 1), cmd(5, C::kAct, 1, 1), cmd(40, C::kWr, 0, 1),
        cmd(40 + wr_end + t.wtr_s - 1, C::kRd, 1, 1)},
       {cmd(0, C::kAct, 0, 1), cmd(5, C::kAct, 1, 1), cmd(40, C::kWr, 0, 1),
        cmd(40 + wr_end + t.wtr_s, C::kRd, 1, 1)}},
      {"tWTR_L",
       {cmd(0, C::kAct, 0, 1), cmd(40, C::kWr, 0, 1), cmd(40 + wr_end + t.wtr_l - 1, C::kRd, 0, 1)},
       {cmd(0, C::kAct, 0, 1), cmd(40, C::kWr, 0, 1), cmd(40 + wr_end + t.wtr_l, C::kRd, 0, 1)}},
      {"tRTW",
       {cmd(0, C::kAct, 0, 1), cmd(40, C::kRd, 0, 1), cmd(40 + t.rtw - 1, C::kWr, 0, 1)},
       {cmd(0, C::kAct, 0, 1), cmd(40, C::kRd, 0, 1), cmd(40 + t.rtw, C::kWr, 0, 1)}},
      {"tRTP",
       {cmd(0, C::kAct, 0, 1), cmd(40, C::kRd, 0, 1), cmd(40 + t.rtp - 1, C::kPre, 0)},
       {cmd(0, C::kAct, 0, 1), cmd(40, C::kRd, 0, 1), cmd(40 + t.rtp, C::kPre, 0)}},
      {"tWR",
       {cmd(0, C::kAct, 0, 1), cmd(40, C::kWr, 0, 1), cmd(40 + wr_end + t.wr - 1, C::kPre, 0)},
       {cmd(0, C::kAct, 0, 1), cmd(40, C::kWr, 0, 1), cmd(40 + wr_end + t.wr, C::kPre, 0)}},
      {"tRFCpb", {cmd(0, C::kRefPb, 3), cmd(t.rfcpb - 1, C::kAct, 3, 1)},
       {cmd(0, C::kRefPb, 3), cmd(t.rfcpb, C::kAct, 3, 1)}},
      {"tRREFD", {cmd(0, C::kRefPb, 3), cmd(t.rrefd - 1, C::kRefPb, 4)},
       {cmd(0, C::kRefPb, 3), cmd(t.rrefd, C::kRefPb, 4)}},
      {"the bank is open", {cmd(0, C::kAct, 3, 1), cmd(50, C::kRefPb, 3)},
       {cmd(0, C::kAct, 3, 1), cmd(50, C::kPre, 3), cmd(50 + t.rp, C::kRefPb, 3)}},
      {"already refreshed in this round", {cmd(0, C::kRefPb, 3), cmd(300, C::kRefPb, 3)},
       {cmd(0, C::kRefPb, 3), cmd(300, C::kRefPb, 4)}},
      {"row 1 is open, not row 2", {cmd(0, C::kAct, 0, 1), cmd(40, C::kRd, 0, 2)},
       {cmd(0, C::kAct, 0, 1), cmd(40, C::kRd, 0, 1)}},
      {"the bank is not open", {cmd(40, C::kRd, 0, 1)}, {cmd(0, C::kAct, 0, 1), cmd(40, C::kRd, 0, 1)}},
      {"two row commands in one cycle", {cmd(0, C::kAct, 0, 1), cmd(0, C::kAct, 1, 1)},
       {cmd(0, C::kAct, 0, 1), cmd(t.rrd_s, C::kAct, 1, 1)}},
  };
  for (const auto& c : cases) {
    const std::string bad = check(c.bad);
    EXPECT_NE(bad.find(c.rule), std::string::npos) << c.rule << ": got '" << bad << "'";
    EXPECT_EQ(check(c.good), "") << c.rule;
  }
}

TEST(HbmChecker, RefreshPostponedPastTheLimitFires) {
  HbmConfig config;
  tb::HbmChecker k(config);
  const uint64_t interval = static_cast<uint64_t>(config.timing.refi / model::kHbmBanks);
  k.finish(interval * (config.max_postpone + 1));
  EXPECT_TRUE(k.ok()) << k.failure();
  tb::HbmChecker late(config);
  late.finish(interval * (config.max_postpone + 2));
  EXPECT_NE(late.failure().find("refresh postponed too long"), std::string::npos);
  tb::HbmChecker early(config);
  for (int b = 0; b <= config.max_pull_in; ++b)
    early.observe(cmd(static_cast<uint64_t>(b) * 10, HbmCmd::kRefPb, b));
  EXPECT_NE(early.failure().find("refresh pulled in too far"), std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// The reference controller on random traffic.

// Random bursts over a few hot addresses (many RAW, WAR and WAW pairs) and a few rows.
std::vector<model::HbmBurst> conflict_traffic(uint64_t seed, int n, const HbmConfig& config) {
  model::SplitMix64 rng(seed);
  std::vector<model::HbmTraceEntry> trace;
  uint64_t cycle = 0;
  for (int i = 0; i < n; ++i) {
    model::HbmTraceEntry e;
    cycle += rng.below(3) == 0 ? rng.below(8) : 0;
    e.cycle = cycle;
    e.write = rng.below(3) == 0;
    const uint64_t hot = rng.below(24) * 32;                        // one page, 24 bursts
    const uint64_t row = rng.below(6) * (64 * 1024);                // a few rows
    e.addr = rng.below(2) ? hot : (row + rng.below(4) * 1024 + rng.below(32) * 32) %
                                      model::hbm_capacity_bytes(config.channels);
    e.bytes = 32 * (1 + rng.below(2));
    trace.push_back(e);
  }
  return model::hbm_bursts(trace, config, seed);
}

TEST(HbmGolden, EveryReadReturnsTheLatestEarlierWriteUnderEveryPolicy) {
  const uint64_t seed = test::test_seed(5);
  for (auto sched : {model::HbmSched::kReorder, model::HbmSched::kFcfs})
    for (auto refresh : {model::HbmRefresh::kPerBank, model::HbmRefresh::kAllBank})
      for (int channels : {1, 2}) {
        HbmConfig c;
        c.sched = sched;
        c.refresh = refresh;
        c.channels = channels;
        c.wr_high = 12;
        c.wr_low = 3;
        c.age_cap = 300;
        const auto bursts = conflict_traffic(seed + channels, 3000, c);
        std::vector<std::vector<HbmCommand>> commands;
        model::HbmStats s;
        // run_hbm_golden throws on a wrong, missing or duplicated read.
        ASSERT_NO_THROW(s = model::run_hbm_golden(bursts, c, 0, &commands));
        uint64_t writes = 0;
        for (const auto& b : bursts) writes += b.request.write;
        EXPECT_EQ(s.writes, writes);
        EXPECT_EQ(s.reads + s.writes, bursts.size());
        for (size_t ch = 0; ch < commands.size(); ++ch) {
          tb::HbmChecker k(c);
          for (const auto& x : commands[ch]) k.observe(x);
          k.finish(s.cycles);
          EXPECT_TRUE(k.ok()) << k.failure();
        }
      }
}

// With refresh owed at a steady rate, the controller keeps within the postponement limit and
// issues about one refresh per interval, even when the traffic never leaves a bank idle.
TEST(HbmGolden, RefreshKeepsPaceUnderSaturatingTraffic) {
  HbmConfig c;
  std::vector<model::HbmTraceEntry> trace;
  model::SplitMix64 rng(test::test_seed(9));
  for (int i = 0; i < 12000; ++i)
    trace.push_back({0, false, rng.below(model::hbm_capacity_bytes(1) / 64) * 64, 64});
  const auto s = model::run_hbm_golden(model::hbm_bursts(trace, c, 1), c);
  const double interval = c.timing.refi / model::kHbmBanks;
  EXPECT_GE(static_cast<double>(s.refreshes), s.cycles / interval - c.max_postpone - 1);
  EXPECT_LE(static_cast<double>(s.refreshes), s.cycles / interval + c.max_pull_in + 1);
}

// An urgent request (the oldest, past the age cap) is served within the time one bank needs to
// finish what it does, close, refresh and reopen: the age cap bounds waiting behind younger
// row hits.
TEST(HbmGolden, UrgentRequestsAreServedWithinABound) {
  HbmConfig c;
  c.age_cap = 256;
  const auto& t = c.timing;
  const uint64_t bound = static_cast<uint64_t>(t.cwl + t.bl + t.wr + t.rp + t.rfc + t.rc +
                                               t.rcd_rd + t.rtw + 2 * t.wtr_l + 64);
  const uint64_t seed = test::test_seed(21);
  for (auto refresh : {model::HbmRefresh::kPerBank, model::HbmRefresh::kAllBank}) {
    c.refresh = refresh;
    const auto bursts = conflict_traffic(seed, 6000, c);
    const auto s = model::run_hbm_golden(bursts, c);
    EXPECT_LE(s.max_urgent_wait_cycles, bound);
    EXPECT_GT(s.max_age_cycles, static_cast<uint64_t>(c.age_cap)) << "the cap was never reached";
  }
}

// Reads and writes both always waiting (a 3:1 mix, all offered at cycle 0): every read phase
// but the last serves at least rd_batch reads before the high watermark starts a write batch.
// Without it (rd_batch 0) the writes refilling to the watermark cut the read phases short.
std::vector<int> read_phase_lengths(int rd_batch) {
  HbmConfig c;
  c.rd_batch = rd_batch;
  std::vector<model::HbmTraceEntry> trace;
  for (uint64_t i = 0; i < 6000; ++i)
    trace.push_back({0, i % 4 == 3, (i % 4 == 3 ? 64 << 20 : 0) + i * 256, 256});
  std::vector<std::vector<HbmCommand>> commands;
  model::run_hbm_golden(model::hbm_bursts(trace, c, 1), c, 0, &commands);
  std::vector<int> phases{0};
  for (const HbmCommand& cmd : commands.at(0)) {
    if (cmd.cmd == model::HbmCmd::kRd) ++phases.back();
    if (cmd.cmd == model::HbmCmd::kWr && phases.back() > 0) phases.push_back(0);
  }
  phases.pop_back();  // the last phase ends when the reads run out
  return phases;
}

TEST(HbmGolden, ReadPhasesServeTheReadBatchBeforeAWriteBatch) {
  const auto with_batch = read_phase_lengths(512);
  ASSERT_GE(with_batch.size(), 3u) << "too few read/write alternations to check";
  for (size_t i = 0; i < with_batch.size(); ++i)
    EXPECT_GE(with_batch[i], 512) << "read phase " << i;
  const auto without = read_phase_lengths(0);
  EXPECT_LT(*std::min_element(without.begin(), without.end()), 512)
      << "the write high watermark alone should end read phases early on this traffic";
}

TEST(HbmGolden, ActivationBoundOfRandomAccesses) {
  model::HbmTiming t;
  // tFAW / 4 = 6 cycles per ACT, 2 bursts of 2 cycles: 4 / 6.
  EXPECT_DOUBLE_EQ(model::hbm_activation_bound(t, 2), 4.0 / 6.0);
  t.faw = 8;  // then tRC / 16 = 4.5 binds
  EXPECT_DOUBLE_EQ(model::hbm_activation_bound(t, 2), 4.0 / 4.5);
}

// The event-driven channel (HbmChannel::next_activity, skip_to): one channel stepped every
// cycle and one stepped only when offered a request or at its next activity, on the same
// random traffic (hot addresses, bursts of requests and idle stretches long enough for refresh
// to pull in and fall due), under every policy, give the same commands and read responses,
// cycle for cycle; the second takes far fewer steps.
std::vector<model::HbmBurst> bursty_traffic(uint64_t seed, int n, const HbmConfig& config) {
  model::SplitMix64 rng(seed);
  std::vector<model::HbmTraceEntry> trace;
  uint64_t cycle = 0;
  for (int i = 0; i < n; ++i) {
    const uint64_t pick = rng.below(16);
    cycle += pick == 0 ? 500 + rng.below(3000) : pick < 4 ? rng.below(40) : 0;
    const uint64_t addr = rng.below(2) ? rng.below(24) * 32 : (rng.below(8) * 64 * 1024 + rng.below(64) * 32);
    trace.push_back({cycle, rng.below(3) == 0, addr % model::hbm_capacity_bytes(config.channels),
                     32 * (1 + rng.below(4))});
  }
  return model::hbm_bursts(trace, config, seed);
}

TEST(HbmModel, SkippingQuietCyclesKeepsEveryCommand) {
  const uint64_t seed = test::test_seed(33);
  for (auto sched : {model::HbmSched::kReorder, model::HbmSched::kFcfs})
    for (auto refresh : {model::HbmRefresh::kPerBank, model::HbmRefresh::kAllBank})
      for (double tck_ns : {0.625, 0.706}) {  // the default clock and the chip's (tb/tlm)
        SCOPED_TRACE(testing::Message() << "sched " << static_cast<int>(sched) << " refresh "
                                        << static_cast<int>(refresh) << " tCK " << tck_ns << " seed " << seed);
        HbmConfig c;
        c.sched = sched;
        c.refresh = refresh;
        c.timing = model::HbmDramTiming{}.at(tck_ns);
        if (tck_ns == 0.625) {  // small watermarks and age cap: many write batches and urgent requests
          c.wr_high = 12;
          c.wr_low = 3;
          c.age_cap = 300;
        }
        const auto bursts = bursty_traffic(seed, 4000, c);
        model::HbmChannel every(c), events(c);
        model::HbmPlayer player(bursts, 0);
        std::vector<std::string> trace[2];
        const auto record = [&](int k, const model::HbmChannel::StepResult& r) {
          for (const HbmCommand* x : {&r.row, &r.col})
            if (x->cmd != HbmCmd::kNone) trace[k].push_back(fmt::format("{} {}", x->cycle, model::describe(*x)));
          if (r.has_response) trace[k].push_back(fmt::format("{} response {}", r.response.cycle, r.response.id));
        };
        // The event-driven channel as the chip drives it (tb/tlm/chip_hbm.cpp): stepped when
        // offered a request or at its next activity while it has work; once idle, left alone
        // and caught up (skipping to each activity, stepping there) when work comes.
        uint64_t wake = 0, event_steps = 0, cycle = 0;
        bool listed = false;
        const auto catch_up = [&](uint64_t to) {
          while (events.cycle() < to) {
            const uint64_t next = events.next_activity();
            if (next > events.cycle()) {
              events.skip_to(std::min(next, to));
            } else {
              record(1, events.step());
              ++event_steps;
            }
          }
        };
        for (; !(player.done() && every.idle()) && cycle < 10000000; ++cycle) {
          const std::array<const model::HbmBurst*, 2> heads{player.head(false, cycle), player.head(true, cycle)};
          bool offered = false;
          for (bool w : {false, true}) {
            if (heads[w] == nullptr || !every.ready(w)) continue;
            ASSERT_EQ(events.ready(w), every.ready(w)) << "cycle " << cycle;
            if (!offered) catch_up(cycle);
            every.offer(heads[w]->request);
            events.offer(heads[w]->request);
            player.accept(w);
            offered = true;
          }
          record(0, every.step());
          if (offered || (listed && wake <= cycle)) {
            catch_up(cycle);
            record(1, events.step());
            ++event_steps;
            listed = !events.idle();
            wake = events.next_activity();
          }
        }
        ASSERT_LT(cycle, 10000000u) << "the traffic never drained";
        catch_up(cycle);
        EXPECT_EQ(every.counters().rd + every.counters().wr, bursts.size());
        EXPECT_GT(every.counters().refpb + every.counters().refab, 10u) << "no refresh to check";
        ASSERT_EQ(trace[0].size(), trace[1].size());
        for (size_t i = 0; i < trace[0].size(); ++i) ASSERT_EQ(trace[0][i], trace[1][i]) << "event " << i;
        EXPECT_LT(event_steps * 3, cycle) << "the event-driven channel stepped almost every cycle";
      }
}

// The fabric's arbitration (tb/hbm/hbm_fabric.h): a channel whose read queue is full takes one
// request every BL = 2 cycles. Four ports asking for it all the time must each get a quarter of
// the slots; a priority that rotated with the cycle gave them all to ports 0 and 2.
class EveryOtherCycle : public tb::HbmController {
 public:
  bool ready(bool) const override { return cycle_ % 2 == 0; }
  void offer(const model::HbmRequest&) override {}
  model::HbmChannel::StepResult step() override {
    ++cycle_;
    return {};
  }
  bool idle() const override { return true; }
  int queued(bool) const override { return 0; }
  uint64_t max_age() const override { return 0; }
  void preload(uint64_t, const model::HbmData&) override {}
  model::HbmData peek(uint64_t) const override { return {}; }
  std::vector<uint64_t> bursts() const override { return {}; }

 private:
  uint64_t cycle_ = 0;
};

TEST(HbmFabric, PortsAskingForOneChannelShareItsSlotsRoundRobin) {
  HbmConfig c;
  c.channels = 1;
  constexpr int kPorts = 4;
  tb::HbmFabric fabric(c, kPorts, [](const HbmConfig&, int) { return std::make_unique<EveryOtherCycle>(); });
  const std::array<uint64_t, kPorts> addrs{0, 32, 64, 96};
  std::array<int, kPorts> granted{};
  for (int cycle = 0; cycle < 400; ++cycle) {
    const uint32_t ready = fabric.grant(false, (1u << kPorts) - 1, addrs.data());
    EXPECT_LE(__builtin_popcount(ready), 1) << "cycle " << cycle << ": one request a cycle per channel";
    for (int p = 0; p < kPorts; ++p) granted[static_cast<size_t>(p)] += ready >> p & 1;
    fabric.step();
  }
  for (int p = 0; p < kPorts; ++p) EXPECT_EQ(granted[static_cast<size_t>(p)], 50) << "port " << p;
}

}  // namespace
}  // namespace ncore

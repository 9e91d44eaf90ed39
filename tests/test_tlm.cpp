// The SystemC TLM-2.0 system: derived peak figures against hardware.md, configuration errors,
// torus and ring wiring, routing and its deadlock freedom, link latency/bandwidth/contention,
// and every collective with real data checked bit for bit and timed against its closed form.

#include <cmath>
#include <set>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/common/error.h"
#include "tb/tlm/collective.h"
#include "tb/tlm/system.h"
#include "tb/tlm/system_config.h"
#include "tb/tlm/topology.h"
#include "tests/seed.h"

namespace ncore::tlmsys {
namespace {

void expect_within(double value, double published, double tolerance, const std::string& what) {
  EXPECT_LE(std::abs(value / published - 1.0), tolerance) << what << ": " << value << " vs published " << published;
}

TEST(TlmConfig, DefaultPeaksMatchHardwareWithinOnePercent) {
  const auto instance = derive_peaks(default_system("trn2"));
  ASSERT_EQ(instance.size(), 3u);
  const PeakFigures& core = instance[0];
  const PeakFigures& chip = instance[1];
  const PeakFigures& trn2 = instance[2];
  expect_within(core.tflops_fp8, 158, 0.01, "core FP8");
  expect_within(core.tflops_bf16, 79, 0.01, "core BF16");
  expect_within(core.tflops_fp32, 20, 0.02, "core FP32");  // published rounded to 20: 19.66
  expect_within(chip.tflops_fp8, 1299, 0.01, "chip FP8");
  expect_within(chip.tflops_bf16, 667, 0.01, "chip BF16");
  expect_within(chip.tflops_fp32, 181, 0.01, "chip FP32");
  expect_within(chip.hbm_gib, 96, 0.01, "chip HBM GiB");
  expect_within(chip.hbm_tbps, 2.9, 0.01, "chip HBM TB/s");
  expect_within(chip.link_gbps_per_chip, 1024, 0.01, "NeuronLink in-instance");
  expect_within(chip.z_link_gbps_per_chip, 256, 0.01, "NeuronLink inter-instance");
  EXPECT_EQ(trn2.level, "instance");
  EXPECT_EQ(trn2.chips, 16);
  expect_within(trn2.tflops_fp8 / 1000, 20.8, 0.01, "instance FP8 PFLOPS");
  expect_within(trn2.hbm_gib / 1024, 1.5, 0.01, "instance HBM TiB");
  expect_within(trn2.hbm_tbps, 46, 0.01, "instance HBM TB/s");
  const auto ultra = derive_peaks(default_system("trn2u"));
  ASSERT_EQ(ultra.size(), 3u);
  EXPECT_EQ(ultra[2].level, "ultraserver");
  EXPECT_EQ(ultra[2].chips, 64);
  expect_within(ultra[2].tflops_fp8 / 1000, 83.2, 0.01, "UltraServer FP8 PFLOPS");
  expect_within(ultra[2].hbm_gib / 1024, 6, 0.01, "UltraServer HBM TiB");
  expect_within(ultra[2].hbm_tbps, 185, 0.01, "UltraServer HBM TB/s");
  // The per-core figures are 8x short of the chip's at one clock (hardware.md's note).
  EXPECT_LT(chip.tflops_bf16_core_clock, 0.96 * chip.tflops_bf16);
}

void expect_config_error(const std::string& json, const std::string& needle) {
  try {
    parse_system_config(json, "cfg.json");
    ADD_FAILURE() << "accepted: " << json;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("cfg.json"), std::string::npos) << e.what();
  }
}

TEST(TlmConfig, BadConfigurationsNameTheKeyAndWhatWasExpected) {
  expect_config_error(R"({"x": 4, "colour": 3})", "key 'colour': expected a known key");
  expect_config_error(R"({"x": "four"})", "key 'x': expected an integer, found \"four\"");
  expect_config_error(R"({"x": 0})", "key 'x': expected an integer in [1, 64], found 0");
  expect_config_error(R"({"chip": {"link": {"gbps": -5}}})", "key 'chip.link.gbps': expected a number in");
  expect_config_error(R"({"chip": {"hbm_stacks": 2.5}})", "key 'chip.hbm_stacks': expected an integer");
  expect_config_error(R"({"chip": {"core_barrier_ns": -1}})", "key 'chip.core_barrier_ns': expected a number in");
  expect_config_error(R"({"lnc": 3})", "key 'lnc': expected an integer in [1, 2], found 3");
  expect_config_error(R"({"lnc": 2, "chip": {"cores": 3}})", "key 'chip.cores': expected an even number at lnc 2");
  expect_config_error(R"({"chip": {"z_link": {"latency": 1}}})", "key 'chip.z_link.latency'");
  expect_config_error(R"({"system": "trn3"})", "key 'system': expected \"chip\", \"trn2\" or \"trn2u\"");
  expect_config_error(R"({"x": 4,)", "not valid JSON");
  expect_config_error(R"([1, 2])", "expected a JSON object");
  // A good one keeps the named system's defaults for what it does not give.
  const SystemConfig c = parse_system_config(R"({"system": "trn2u", "chip": {"link": {"gbps": 200}}})", "ok");
  EXPECT_EQ(c.chips(), 64);
  EXPECT_EQ(c.chip.link.gbps, 200);
  EXPECT_EQ(c.chip.z_link.gbps, 64);
}

TEST(TlmTopology, TorusWiringJoinsEachPortToTheNeighboursOppositePort) {
  for (const char* name : {"trn2", "trn2u"}) {
    System::reset_kernel();
    System system(default_system(name));
    const Topology& t = system.topology();
    int links = 0;
    for (int r = 0; r < t.chips(); ++r) {
      for (int p = 0; p < kNumPorts; ++p) {
        ASSERT_EQ(system.link(r, p) != nullptr, t.has_port(p)) << name << " chip " << r << " " << port_name(p);
        if (!t.has_port(p)) continue;
        ++links;
        const int n = t.neighbor(r, p);
        EXPECT_EQ(t.neighbor(n, p ^ 1), r) << "the way back";
        EXPECT_EQ(t.hops(r, n), 1);
        // Exactly one coordinate changes, by one around its ring.
        const Coord a = t.coord(r), b = t.coord(n);
        const int d = port_dim(p), size = t.dim(d);
        EXPECT_EQ((a.c[d] + (port_plus(p) ? 1 : size - 1)) % size, b.c[d]);
        for (int o = 0; o < 3; ++o)
          if (o != d) EXPECT_EQ(a.c[o], b.c[o]);
      }
    }
    EXPECT_EQ(links, std::string(name) == "trn2" ? 16 * 4 : 64 * 6) << name;
  }
}

TEST(TlmTopology, UltraServerJoinsTheChipsAtOneXyPositionInARing) {
  const Topology t(4, 4, 4);
  for (int r = 0; r < 64; ++r) {
    const auto ring = t.ring(r, 2);
    ASSERT_EQ(ring.size(), 4u);
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(t.coord(ring[i]).c[0], t.coord(r).c[0]);
      EXPECT_EQ(t.coord(ring[i]).c[1], t.coord(r).c[1]);
      EXPECT_EQ(t.coord(ring[i]).c[2], int(i));
      EXPECT_EQ(t.neighbor(ring[i], kZPlus), ring[(i + 1) % 4]);
    }
  }
}

TEST(TlmTopology, SnakeVisitsEveryChipOnceThroughNeighbours) {
  for (const Topology& t : {Topology(4, 4, 1), Topology(4, 4, 4), Topology(2, 4, 2)}) {
    const auto s = t.snake();
    ASSERT_EQ(int(s.size()), t.chips());
    EXPECT_EQ(std::set<int>(s.begin(), s.end()).size(), s.size());
    for (size_t i = 0; i < s.size(); ++i) EXPECT_EQ(t.hops(s[i], s[(i + 1) % s.size()]), 1) << "step " << i;
  }
}

TEST(TlmTopology, RoutesAreDimensionOrderedMinimalAndReachTheDestination) {
  const Topology t(4, 4, 4);
  for (int s = 0; s < 64; ++s) {
    for (int d = 0; d < 64; ++d) {
      const auto route = t.route(s, d);
      int at = s, minimal = 0, last_dim = -1;
      for (int k = 0; k < 3; ++k) {
        const int diff = std::abs(t.coord(s).c[k] - t.coord(d).c[k]);
        minimal += std::min(diff, t.dim(k) - diff);
      }
      for (int p : route) {
        EXPECT_GE(port_dim(p), last_dim) << s << " -> " << d;
        last_dim = port_dim(p);
        at = t.neighbor(at, p);
      }
      EXPECT_EQ(at, d);
      EXPECT_EQ(int(route.size()), minimal) << s << " -> " << d;
    }
  }
  // Half-way round a ring: even coordinates go +, odd go -, so exchanges at distance 2 share no link.
  EXPECT_EQ(t.route(0, 2), (std::vector<int>{kXPlus, kXPlus}));
  EXPECT_EQ(t.route(1, 3), (std::vector<int>{kXMinus, kXMinus}));
}

TEST(TlmTopology, DatelineVirtualChannelsMakeRoutingDeadlockFree) {
  for (const Topology& t : {Topology(4, 4, 1), Topology(4, 4, 4), Topology(8, 8, 1)})
    EXPECT_EQ(t.dependency_cycle(true), "") << t.dim(0) << "x" << t.dim(1) << "x" << t.dim(2);
  // The check can fail: on 8-chip rings one virtual channel gives a cyclic dependency.
  const std::string cycle = Topology(8, 8, 1).dependency_cycle(false);
  EXPECT_NE(cycle, "");
  EXPECT_NE(cycle.find(" vc0 -> "), std::string::npos) << cycle;  // e.g. round one Y ring
}

TEST(TlmNetwork, LatencyAndBandwidthOfOneHopSeveralHopsAndAZHop) {
  const SystemConfig c = default_system("trn2u");
  const uint64_t bytes = 1 << 20;
  const double ser = bytes / (c.chip.link.gbps * 1e3), ser_z = bytes / (c.chip.z_link.gbps * 1e3);  // us
  const Topology t(4, 4, 4);
  const int far = t.rank(Coord{{2, 1, 0}});  // 3 hops: +X +X +Y
  const int top = t.rank(Coord{{0, 0, 3}});
  const auto r = run_transfers(c, {{0, 1, bytes, 0}, {32, far + 32, bytes, 0}, {top, 0, bytes, 0}});
  EXPECT_EQ(r[0].hops, 1);
  EXPECT_NEAR(r[0].arrival_us, 1.0 + ser, 1e-3);
  EXPECT_EQ(r[1].hops, 3);
  EXPECT_NEAR(r[1].arrival_us, 3 * 1.0 + ser, 1e-3);  // cut-through: latency per hop, bytes once
  EXPECT_EQ(r[2].hops, 1);                            // z = 3 -> z = 0 wraps round the Z ring
  EXPECT_NEAR(r[2].arrival_us, 1.0 + ser_z, 1e-3);
}

TEST(TlmNetwork, FlowsSharingALinkAreSerialisedAndOthersAreNot) {
  const SystemConfig c = default_system("trn2");
  const uint64_t bytes = 4 << 20;
  const double ser = bytes / (c.chip.link.gbps * 1e3);
  // 0 -> 2 and 1 -> 2 both cross the +X link from chip 1 to chip 2.
  const auto shared = run_transfers(c, {{0, 2, bytes, 0}, {1, 2, bytes, 0}});
  const double first = std::min(shared[0].arrival_us, shared[1].arrival_us);
  const double last = std::max(shared[0].arrival_us, shared[1].arrival_us);
  EXPECT_GE(last - first, ser - 1.0 - 1e-3) << first << " " << last;
  EXPECT_GE(last, 2 * ser);
  // 0 -> 1 and 2 -> 3 share nothing: both arrive after one hop.
  const auto apart = run_transfers(c, {{0, 1, bytes, 0}, {2, 3, bytes, 0}});
  EXPECT_NEAR(apart[0].arrival_us, 1.0 + ser, 1e-3);
  EXPECT_NEAR(apart[1].arrival_us, 1.0 + ser, 1e-3);
  // A message issued later in simulated time does not jump ahead of one already on the link.
  const auto later = run_transfers(c, {{1, 2, bytes, 5.0}, {1, 2, bytes, 0.0}});
  EXPECT_NEAR(later[1].arrival_us, 1.0 + ser, 1e-3);
  EXPECT_NEAR(later[0].arrival_us, 1.0 + 2 * ser, 1e-3);
}

struct CollectiveCase {
  int chips;
  CollectiveOp op;
  CollectiveAlgo algo;
};

std::string case_name(const ::testing::TestParamInfo<CollectiveCase>& info) {
  std::string algo = collective_algo_name(info.param.algo);
  for (char& ch : algo)
    if (ch == '-') ch = '_';
  return fmt::format("{}_{}_{}", collective_op_name(info.param.op), algo, info.param.chips);
}

class TlmCollective : public ::testing::TestWithParam<CollectiveCase> {};

TEST_P(TlmCollective, DataIsBitExactAndTimeMatchesTheClosedForm) {
  const CollectiveCase k = GetParam();
  const SystemConfig c = default_system(k.chips == 16 ? "trn2" : "trn2u");
  CollectiveOptions o;
  o.op = k.op;
  o.algo = k.algo;
  o.bytes = 256 * 1024 / collective_granule(c, k.algo) * collective_granule(c, k.algo);
  o.seed = test::test_seed(7);
  const CollectiveResult r = run_collective(c, o);
  ASSERT_TRUE(r.data_checked);
  const uint64_t elements = o.bytes / 4;
  EXPECT_EQ(r.elements_checked, k.op == CollectiveOp::kReduceScatter ? elements : elements * k.chips);
  EXPECT_GT(r.messages, 0u);
  if (k.algo == CollectiveAlgo::kRing && k.chips == 64) {
    // The 64-chip ring crosses 4 slower Z links; the closed form charges every step at the
    // slowest link, an upper bound the pipelined ring beats.
    EXPECT_LE(r.sim_time_us, r.closed_form_us * 1.0001);
    EXPECT_GE(r.sim_time_us, r.closed_form_us * 0.70);
  } else if (k.algo == CollectiveAlgo::kMultiring && k.chips == 64) {
    // Streams in different phases share the slower Z links (tb/tlm/README.md): never faster
    // than the closed form, which assumes no sharing.
    EXPECT_GE(r.sim_time_us, r.closed_form_us * 0.9999);
    EXPECT_LE(r.sim_time_us, r.closed_form_us * 1.5);
  } else {
    EXPECT_NEAR(r.sim_time_us / r.closed_form_us, 1.0, 0.05) << r.sim_time_us << " vs " << r.closed_form_us;
  }
}

std::vector<CollectiveCase> all_cases() {
  std::vector<CollectiveCase> out;
  for (int chips : {16, 64})
    for (auto op : {CollectiveOp::kAllReduce, CollectiveOp::kReduceScatter, CollectiveOp::kAllGather,
                    CollectiveOp::kAllToAll})
      for (auto algo : {CollectiveAlgo::kRing, CollectiveAlgo::kTorus2d, CollectiveAlgo::kTorus2dSplit,
                        CollectiveAlgo::kRhd, CollectiveAlgo::kHier, CollectiveAlgo::kMultiring})
        if (!(algo == CollectiveAlgo::kHier && chips == 16)) out.push_back({chips, op, algo});
  return out;
}

INSTANTIATE_TEST_SUITE_P(All, TlmCollective, ::testing::ValuesIn(all_cases()), case_name);

// Simulated time is exact, so the issue's goal can be a test: on a Trn2 instance at 64 MiB and
// more, multiring's all-reduce takes at most 1 / 0.8 of the injection bound 2(p-1)/p n / (4 b).
TEST(TlmCollectiveChecks, MultiringAllReduceReachesEightyPercentOfTheInjectionBound) {
  const SystemConfig c = default_system("trn2");
  for (uint64_t mib : {64, 256}) {
    CollectiveOptions o;
    o.algo = CollectiveAlgo::kMultiring;
    o.bytes = mib << 20;
    o.data = false;
    const CollectiveResult r = run_collective(c, o);
    const double bound_us = 2.0 * 15 / 16 * static_cast<double>(o.bytes) / (4 * c.chip.link.gbps * 1e9) * 1e6;
    EXPECT_LE(r.sim_time_us, bound_us / 0.8) << mib << " MiB";
    EXPECT_NEAR(r.sim_time_us, r.closed_form_us, 1e-3 * r.closed_form_us) << mib << " MiB";
  }
}

TEST(TlmCollectiveChecks, TimingOnlyRunTakesTheSameSimulatedTime) {
  CollectiveOptions o;
  o.algo = CollectiveAlgo::kTorus2dSplit;
  o.bytes = 1 << 20;
  const auto with_data = run_collective(default_system("trn2"), o);
  o.data = false;
  const auto timing_only = run_collective(default_system("trn2"), o);
  EXPECT_TRUE(with_data.data_checked);
  EXPECT_FALSE(timing_only.data_checked);
  EXPECT_EQ(with_data.sim_time_us, timing_only.sim_time_us);
  EXPECT_EQ(with_data.link_bytes, timing_only.link_bytes);
}

TEST(TlmCollectiveChecks, ResultDoesNotDependOnTheQuantum) {
  CollectiveOptions o;
  o.algo = CollectiveAlgo::kHier;
  o.bytes = 1 << 20;
  o.data = false;
  SystemConfig fine = default_system("trn2u"), coarse = fine;
  fine.quantum_ns = 10;
  coarse.quantum_ns = 100000;
  EXPECT_EQ(run_collective(fine, o).sim_time_us, run_collective(coarse, o).sim_time_us);
}

TEST(TlmCollectiveChecks, CorruptedMessageIsCaughtWithChipAndElement) {
  CollectiveOptions o;
  o.bytes = 64 * 1024;
  o.inject_corruption = true;
  try {
    run_collective(default_system("trn2"), o);
    FAIL() << "a corrupted message went unnoticed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("element"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected"), std::string::npos) << e.what();
  }
}

TEST(TlmCollectiveChecks, LostMessageEndsTheRunNamingTheWaitingProcesses) {
  CollectiveOptions o;
  o.bytes = 64 * 1024;
  o.inject_lost_message = true;
  o.limit_seconds = 0.01;
  try {
    run_collective(default_system("trn2"), o);
    FAIL() << "a lost message went unnoticed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("did not finish"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("waits for tag 0x0 from chip 0"), std::string::npos) << e.what();
  }
}

TEST(TlmCollectiveChecks, CombinationsThatDoNotApplyAreRefused) {
  CollectiveOptions o;
  o.algo = CollectiveAlgo::kHier;
  EXPECT_THROW(run_collective(default_system("trn2"), o), Error);
  o.algo = CollectiveAlgo::kRing;
  o.bytes = 1000;  // not a multiple of 16 chips x 4 bytes
  try {
    run_collective(default_system("trn2"), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("must be a positive multiple of 64"), std::string::npos) << e.what();
  }
  SystemConfig three = default_system("trn2");
  three.x = 3;
  o.algo = CollectiveAlgo::kRhd;
  o.bytes = 12 * 4 * 16;
  EXPECT_THROW(run_collective(three, o), Error);
  // The ring works on any torus.
  o.algo = CollectiveAlgo::kRing;
  EXPECT_TRUE(run_collective(three, o).data_checked);
}

}  // namespace
}  // namespace ncore::tlmsys

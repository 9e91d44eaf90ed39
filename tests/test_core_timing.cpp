// The golden core's timing presets (model/core/core_timing.h): each clock-domain crossing and
// each fixed cost, cycle for cycle against the rule computed here from the published figures;
// clocks changed at random leave every result bit-exact.

#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/core/core_model.h"
#include "model/core/program.h"
#include "tests/seed.h"
#include "tests/timing_test_util.h"

namespace ncore::model {
namespace {

const std::string kPrograms = NCORE_SOURCE_DIR "/tests/programs/";

struct Timed {
  CoreResult result;
  std::map<std::pair<int, size_t>, InstrTiming> at;  // (queue, index) -> its times
  const InstrTiming& of(isa::Queue q, size_t i) const { return at.at({static_cast<int>(q), i}); }
};

// Runs a program text on the golden core with the given timing, without instruction fetch (so
// that only the costs under test set the times), recording every instruction's times.
Timed run_text(const std::string& text, const CoreTiming& t) {
  CoreConfig cfg;
  cfg.clocks = t.clocks;
  cfg.costs = t.costs;
  cfg.fetch.enabled = false;
  const Program prog = assemble(text, "timing_test.s");
  CoreModel core(cfg, prog);
  core.load_tensors();
  core.record_timeline(true);
  Timed r;
  r.result = core.run();
  EXPECT_EQ(r.result.status, CoreStatus::kDone) << r.result.message;
  for (const InstrTiming& e : r.result.timeline) r.at[{e.queue, e.index}] = e;
  return r;
}

CoreTiming zero_costs(CoreTiming t) {
  t.costs = CoreCosts{};
  return t;
}

uint64_t next_edge_after(uint64_t t, uint64_t divide) { return (t / divide + 1) * divide; }
uint64_t edge_at_or_after(uint64_t t, uint64_t divide) { return (t + divide - 1) / divide * divide; }

TEST(CoreTiming, PresetsCarryThePublishedClocks) {
  // hardware.md: Tensor / Scalar / Vector 2.4 / 1.2 / 0.96 GHz on trn2, 2.8 / 1.4 / 1.12 on trn1.
  const std::map<std::string, std::array<double, 3>> published = {{"trn2", {2.4, 1.2, 0.96}}, {"trn1", {2.8, 1.4, 1.12}}};
  for (const auto& [name, ghz] : published) {
    const CoreTiming t = timing_preset(name);
    EXPECT_NEAR(t.clocks.ghz(ClockDomain::kTensor), ghz[0], 1e-12) << name;
    EXPECT_NEAR(t.clocks.ghz(ClockDomain::kScalar), ghz[1], 1e-12) << name;
    EXPECT_NEAR(t.clocks.ghz(ClockDomain::kVector), ghz[2], 1e-12) << name;
  }
  EXPECT_DOUBLE_EQ(timing_preset("trn2").costs.dma.engine_bytes_per_ns, 23.0);  // DMA bandwidth guide
  EXPECT_DOUBLE_EQ(timing_preset("trn1").costs.dma.engine_bytes_per_ns, 17.0);
  // uniform is what a default configuration (and the RTL core) runs.
  const CoreTiming u = timing_preset("uniform");
  const CoreConfig d;
  EXPECT_EQ(u.clocks.divide, d.clocks.divide);
  EXPECT_DOUBLE_EQ(u.clocks.base_ghz, d.clocks.base_ghz);
  EXPECT_TRUE(u.costs == d.costs);
  EXPECT_THROW(timing_preset("trn3"), Error);
}

TEST(CoreTiming, AWaitSeesASignalAtTheWaitersNextEdge) {
  const std::string text = R"(.sem s
.sem t
.queue act
activation func=identity in0=fp32 out=fp32 partitions=1 src0=sbuf:0x0 src0_ap=[[1,1]] dst=sbuf:0x40 dst_ap=[[1,1]] signal=s+=1
nop wait=t>=1
.queue dve
memset value=0 out=fp32 partitions=1 dst=sbuf:0x100 dst_ap=[[1,8]] wait=s>=1 signal=t+=1
)";
  for (const auto& [scalar, vector] : {std::pair{4, 5}, std::pair{5, 4}, std::pair{3, 7}, std::pair{2, 2}, std::pair{1, 6}}) {
    CoreTiming t = zero_costs(timing_preset("trn2"));
    t.clocks.divide[static_cast<size_t>(ClockDomain::kScalar)] = scalar;
    t.clocks.divide[static_cast<size_t>(ClockDomain::kVector)] = vector;
    const Timed r = run_text(text, t);
    const uint64_t signalled = r.of(isa::Queue::kAct, 0).complete;
    const uint64_t memset = r.of(isa::Queue::kDve, 0).issue;
    EXPECT_EQ(memset, next_edge_after(signalled, static_cast<uint64_t>(vector))) << scalar << " " << vector;
    // and back: the act queue's nop issues at its first edge after the memset's signal
    EXPECT_EQ(r.of(isa::Queue::kAct, 1).issue, next_edge_after(r.of(isa::Queue::kDve, 0).complete, static_cast<uint64_t>(scalar)))
        << scalar << " " << vector;
  }
}

// 8 independent instructions back to back on one queue, only the last signalling: the
// interval between their completions.
std::vector<uint64_t> intervals(const Timed& r, isa::Queue q, size_t n) {
  std::vector<uint64_t> d;
  for (size_t i = 1; i < n; ++i) d.push_back(r.of(q, i).complete - r.of(q, i - 1).complete);
  return d;
}

TEST(CoreTiming, VectorInstructionsHoldTheEngineTheMinimumInterval) {
  std::string text = ".sem s\n.queue dve\n";
  for (int i = 0; i < 8; ++i)
    text += fmt::format("memset value=0 out=fp32 partitions=128 dst=sbuf:{:#x} dst_ap=[[1,32]]{}\n", 128 * i,
                        i == 7 ? " signal=s+=1" : "");
  const Timed r = run_text(text, timing_preset("trn2"));
  // nki.isa memset: max(MIN_II, N) = 64 Vector cycles for N = 32; a Vector cycle is 5 base cycles.
  for (uint64_t d : intervals(r, isa::Queue::kDve, 8)) EXPECT_EQ(d, 64u * 5);
  // Its results land the pipeline's latency after it stops streaming.
  EXPECT_EQ(r.of(isa::Queue::kDve, 0).complete - r.of(isa::Queue::kDve, 0).start, (64u + 100) * 5);
}

TEST(CoreTiming, AReductionPaysTheIntervalTwice) {
  std::string text = ".sem s\n.queue dve\n";
  for (int i = 0; i < 8; ++i)
    text += fmt::format("tensor_scalar_reduce op0=multiply s0=2.0 op1=add acc_enable=1 acc_addr={:#x} in0=fp32 out=fp32 "
                        "partitions=128 src0=sbuf:0x0 src0_ap=[[1,32]] dst=sbuf:{:#x} dst_ap=[[1,32]]{}\n",
                        0x4000 + 32 * i, 0x1000 + 128 * i, i == 7 ? " signal=s+=1" : "");
  const Timed r = run_text(text, timing_preset("trn2"));
  // nki.isa tensor_scalar_reduce: max(MIN_II, N) + MIN_II = 128 Vector cycles for N = 32.
  for (uint64_t d : intervals(r, isa::Queue::kDve, 8)) EXPECT_EQ(d, 128u * 5);
}

TEST(CoreTiming, ADependentInstructionWaitsForThePipelineAndAnIndependentOneDoesNot) {
  const auto two = [](int second_src) {
    return fmt::format(R"(.sem s
.queue act
activation func=identity in0=fp32 out=fp32 partitions=1 src0=sbuf:0x0 src0_ap=[[1,1]] dst=sbuf:0x40 dst_ap=[[1,1]]
activation func=identity in0=fp32 out=fp32 partitions=1 src0=sbuf:{:#x} src0_ap=[[1,1]] dst=sbuf:0x80 dst_ap=[[1,1]] signal=s+=1
)",
                       second_src);
  };
  const CoreTiming t = timing_preset("trn1");
  const Timed dependent = run_text(two(0x40), t), independent = run_text(two(0x20), t);
  // A Scalar cycle is 4 base cycles. Dependent: 64 (MIN_II) + 200 (the pipeline) Scalar cycles,
  // the performance guide's 264 on trn1; independent: the interval alone.
  EXPECT_EQ(dependent.of(isa::Queue::kAct, 1).start - dependent.of(isa::Queue::kAct, 0).start, 264u * 4);
  EXPECT_EQ(independent.of(isa::Queue::kAct, 1).start - independent.of(isa::Queue::kAct, 0).start, 64u * 4);
  // 189 ns on trn1 (264 cycles at 1.4 GHz), to the nanosecond.
  EXPECT_NEAR(t.clocks.ns(264 * 4), 188.57, 0.01);
}

TEST(CoreTiming, ADmaStartsAfterItsDescriptorIsGeneratedOrItsSemaphoreLatency) {
  const std::string text = fmt::format(R"(.sem s
.sem d
.tensor src hbm addr=0x0 dtype=fp32 shape=4x64 init=random seed=4
.queue dve
memset value=0 out=fp32 partitions=1 dst=sbuf:0x1000 dst_ap=[[1,8]] signal=s+=1
.queue sp
dma_copy engine=1 dir=hbm_to_sbuf hbm_addr=0x0 sbuf_addr=0x0 bytes=256 count1=4 hbm_stride1=256 sbuf_stride1={0} signal=d+=1
dma_copy engine=0 dir=hbm_to_sbuf hbm_addr=0x0 sbuf_addr=0x2000 bytes=256 count1=4 hbm_stride1=256 sbuf_stride1={0} wait=s>=1 signal=d+=1
)",
                                       kSbufPartitionStride);
  const Timed r = run_text(text, timing_preset("trn2"));
  // Trainium2 Architecture Guide: a DGE DMA instruction about 600 ns; about 1,300 ns from a
  // semaphore signal on another engine to the DMA's start. Base cycles at 4.8 GHz, on DMA edges.
  const InstrTiming& lone = r.of(isa::Queue::kSp, 0);
  EXPECT_EQ(lone.start, edge_at_or_after(lone.issue + 2880, 2));
  const uint64_t signalled = r.of(isa::Queue::kDve, 0).complete;
  EXPECT_EQ(r.of(isa::Queue::kSp, 1).start, edge_at_or_after(signalled + 6240, 2));
}

TEST(CoreTiming, ADmaEngineMovesNoFasterThanItsRateAndPaysEachRow) {
  const auto one = [](int bytes) {
    return fmt::format(R"(.sem d
.tensor src hbm addr=0x0 dtype=fp32 shape=4x2048 init=random seed=4
.queue sp
dma_copy engine=0 dir=hbm_to_sbuf hbm_addr=0x0 sbuf_addr=0x0 bytes={0} count1=4 hbm_stride1={0} sbuf_stride1={1} signal=d+=1
)",
                       bytes, kSbufPartitionStride);
  };
  const CoreTiming t = timing_preset("trn2");
  const Timed big = run_text(one(8192), t), small = run_text(one(4096), t);
  const auto took = [](const Timed& r) { return r.of(isa::Queue::kSp, 0).complete - r.of(isa::Queue::kSp, 0).start; };
  // 4 rows at 23 B/ns, each row also costing the time of 256 bytes (the DMA bandwidth guide's
  // curve as ncore takes it): base cycles at 4.8 GHz.
  const auto least = [](double bytes) { return std::ceil(4 * (bytes + 256) / 23.0 * 4.8 - 1e-9); };
  EXPECT_GE(static_cast<double>(took(big)), least(8192));
  EXPECT_NEAR(static_cast<double>(took(big) - took(small)), least(8192) - least(4096), 2.0);
}

TEST(CoreTiming, TheTensorEngineStreamsAtHalfRateAfterIdleUnlessThrottlingIsOff) {
  std::string text = ".sem s\n.queue pe\nload_stationary dtype=bf16 k=128 m=128 sbuf_addr=0x0 sbuf_stride=2\n";
  for (int i = 0; i < 3; ++i)
    text += fmt::format("multiply_moving dtype=bf16 k=128 n=512 sbuf_addr=0x100 sbuf_stride=2 psum_bank={} psum_offset=0 "
                        "accumulate=0{}\n",
                        i, i == 2 ? " signal=s+=1" : "");
  CoreTiming t = timing_preset("trn2");
  const Timed on = run_text(text, t);
  t.costs.throttle.enabled = false;
  const Timed off = run_text(text, t);
  const auto first_mm = [](const Timed& r) { return r.of(isa::Queue::kPe, 2).start - r.of(isa::Queue::kPe, 1).start; };
  // 512 Tensor cycles (2 base cycles each) at 50% (Neuron Explorer docs: starts near 50%).
  EXPECT_EQ(first_mm(on), 1024u * 2);
  EXPECT_EQ(first_mm(off), 512u * 2);
}

TEST(CoreTiming, FastLoadStationaryLoadsFourColumnsACycle) {
  const std::string text = ".sem s\n.queue pe\nload_stationary dtype=bf16 k=128 m=128 sbuf_addr=0x0 sbuf_stride=2 signal=s+=1\n";
  CoreTiming t = zero_costs(timing_preset("trn2"));
  const Timed slow = run_text(text, t);
  t.costs.tensor.ls_columns_per_cycle = timing_preset("trn2").costs.tensor.ls_columns_per_cycle;
  const Timed fast = run_text(text, t);
  const auto took = [](const Timed& r) { return r.of(isa::Queue::kPe, 0).complete - r.of(isa::Queue::kPe, 0).start; };
  // NKI performance guide: an LS of 128 elements about 128 / 4 = 32 cycles. The engine commits
  // the cycle after its last column and drains the next (2 base cycles a Tensor cycle).
  EXPECT_EQ(took(slow), (128u + 2) * 2);
  EXPECT_EQ(took(fast), (32u + 2) * 2);
}

// Clocks changed at random, with and without the silicon's fixed costs: every example program
// gives the outputs of the uniform timing, bit for bit.
TEST(CoreTiming, RandomClocksLeaveEveryResultBitExact) {
  const uint64_t seed = test::test_seed(49);
  SplitMix64 rng(seed);
  std::vector<std::string> programs;
  for (const auto& dir : {kPrograms, kPrograms + "small/"})
    for (const auto& e : std::filesystem::directory_iterator(dir))
      if (e.path().extension() == ".s" && e.path().filename() != "collectives_8.s") programs.push_back(e.path().string());
  std::sort(programs.begin(), programs.end());
  ASSERT_GE(programs.size(), 10u);
  for (const std::string& path : programs) {
    const Program prog = assemble_file(path);
    const auto outputs = [&](const CoreConfig& cfg, std::string* why) {
      CoreModel core(cfg, prog);
      core.load_tensors();
      const CoreResult r = core.run();
      *why = fmt::format("{}: {} ({} base cycles)", core_status_name(r.status), r.message, r.cycles);
      std::vector<std::vector<uint8_t>> out;
      for (const TensorDecl& t : prog.tensors)
        if (t.output) out.push_back(core.tensor_bytes(t));
      return out;
    };
    std::string why;
    const auto reference = outputs(CoreConfig{}, &why);
    for (int trial = 0; trial < 3; ++trial) {
      CoreConfig cfg;
      cfg.clocks.base_ghz = 1.0 + static_cast<double>(rng.next() % 50) / 10.0;
      test::randomize_dividers(cfg.clocks, rng);
      if (rng.next() % 2) cfg.costs = timing_preset(rng.next() % 2 ? "trn2" : "trn1").costs;
      const std::string what = fmt::format("{} trial {} (base {} GHz, {}, {} costs; NCORE_SEED={})", path, trial,
                                           cfg.clocks.base_ghz, test::dividers_name(cfg.clocks),
                                           cfg.costs == CoreCosts{} ? "no" : "silicon", seed);
      const auto got = outputs(cfg, &why);
      EXPECT_EQ(why.rfind("done", 0), 0u) << what << ": " << why;
      EXPECT_TRUE(got == reference) << what;
    }
  }
}

}  // namespace
}  // namespace ncore::model

// The tensor-engine RTL in lockstep co-simulation with the golden model (tb/tensor/te_sim.h).
// Every test checks that it compared something: PSUM writes, MM retirements, rejections.

#include <gtest/gtest.h>

#include "model/error.h"
#include "tb/tensor/gemm_plan.h"
#include "tb/tensor/te_sim.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::DType;
using model::TeInstruction;

tb::TeSimOptions options(uint64_t seed, double stall) {
  tb::TeSimOptions o;
  o.seed = seed;
  o.cmd_stall = stall;
  o.sbuf_stall = stall;
  if (const char* w = std::getenv("NCORE_WAVES")) o.waves = w;
  return o;
}

void expect_clean(const tb::TeRunResult& r, uint64_t min_mm) {
  std::printf("[ cosim    ] %llu cycles, %llu PSUM writes, %llu MMs, %llu rejections, %llu "
              "read back checked; busy %llu\n",
              static_cast<unsigned long long>(r.cycles),
              static_cast<unsigned long long>(r.psum_writes_checked),
              static_cast<unsigned long long>(r.mm_checked),
              static_cast<unsigned long long>(r.rejections_checked),
              static_cast<unsigned long long>(r.readback_checked),
              static_cast<unsigned long long>(r.counters.busy));
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_GE(r.mm_checked, min_mm);
  EXPECT_GT(r.psum_writes_checked, 0u);
}

TEST(TensorRtl, SmallGemmEveryArraySize) {
  for (const auto& [rows, cols] : tb::te_sim_sizes()) {
    if (rows > 32) continue;
    const uint64_t seed = test::test_seed(100 + rows * 7 + cols);
    auto sim = tb::make_te_sim(rows, cols, options(seed, 0.2));
    model::SplitMix64 rng(seed);
    tb::GemmShape shape{rows * 2 + 1, cols + 3, 40, DType::kBf16, DType::kBf16};
    const auto plan = tb::plan_gemm(shape, rows, cols, sim->sbuf(), rng, true);
    const auto r = sim->run(plan.program);
    expect_clean(r, 1);
    EXPECT_EQ(r.counters.macs, plan.macs) << rows << "x" << cols;
  }
}

}  // namespace
}  // namespace ncore

// Negative tests of the tensor engine's assertions: the harness breaks one interface rule on
// purpose, or its top upsets one register inside the engine (tb::TeFault), and the RTL's SVA
// must stop the simulation naming the assertion. The same program without the fault runs
// clean, so the stop is the fault's doing.

#include <unistd.h>

#include <gtest/gtest.h>

#include "tb/tensor/te_sim.h"
#include "tests/te_test_util.h"

namespace ncore {
namespace {

using model::DType;
using tb::TeFault;

// Twelve MMs of N = 100, a new stationary loaded (into the other weight bank) after every
// third: the instruction queue fills (ready drops), PSUM reads meet banks in flight (held off)
// and each LS loads while an MM streams. `sbuf_stall` holds SBUF requests back at random.
tb::TeRunResult run_with(TeFault fault, double sbuf_stall = 0.0) {
  auto opts = test::options(1, 0.0);
  opts.sbuf_stall = sbuf_stall;
  opts.fault = fault;
  opts.probe_reads = 0.3;
  opts.watchdog = 5000;
  auto sim = tb::make_te_sim(8, 8, opts);
  model::SplitMix64 rng(1);
  sim->sbuf().write_tile(model::random_tile(DType::kBf16, 8, 8, rng), 0, 2);
  sim->sbuf().write_tile(model::random_tile(DType::kBf16, 8, 100, rng), 1024, 2);
  std::vector<model::TeInstruction> program;
  for (int i = 0; i < 12; ++i) {
    if (i % 3 == 0) program.push_back(model::load_stationary(DType::kBf16, 8, 8, 0, 2));
    program.push_back(model::multiply_moving(DType::kBf16, 8, 100, 1024, 2, i % 8, 0, false));
  }
  return sim->run(program);
}

// Verilator prints an assertion's message on stdout; the death test reads stderr.
void run_expecting_stop(TeFault fault, double sbuf_stall = 0.0) {
  dup2(STDERR_FILENO, STDOUT_FILENO);
  run_with(fault, sbuf_stall);
}

// The SBUF stall rate of the test whose upset needs an MM held while the LS writes.
constexpr double kSbufStall = 0.3;

TEST(TensorSva, WithoutAFaultTheProgramRunsClean) {
  const auto r = run_with(TeFault::kNone);
  test::expect_clean(r, 12);
  EXPECT_GT(r.probes_checked, 0u);
  EXPECT_GT(r.counters.stall_psum_rd, 0u) << "no PSUM read was held off: the fault would not bite";
  const auto stalled = run_with(TeFault::kNone, kSbufStall);
  test::expect_clean(stalled, 12);
  EXPECT_GT(stalled.counters.stall_sbuf_mv, 0u)
      << "no moving request was held: the LS-side fault would not bite";
}

TEST(TensorSvaDeathTest, CmdPayloadChangingWhileStalledFires) {
  EXPECT_DEATH(run_expecting_stop(TeFault::kCmdPayloadChangesWhileStalled), "CmdPayloadStable");
}

TEST(TensorSvaDeathTest, StationaryResponseWithoutRequestFires) {
  EXPECT_DEATH(run_expecting_stop(TeFault::kStResponseWithoutRequest), "StRspOneCycleAfterReq");
}

TEST(TensorSvaDeathTest, MovingResponseWithoutRequestFires) {
  EXPECT_DEATH(run_expecting_stop(TeFault::kMvResponseWithoutRequest), "MvRspOneCycleAfterReq");
}

TEST(TensorSvaDeathTest, PsumReadChangingWhileHeldOffFires) {
  EXPECT_DEATH(run_expecting_stop(TeFault::kPsumReadChangesWhileStalled), "PsumRdReqStable");
}

// Internal invariants (FIFO occupancy, the PSUM and weight bank hazards): register upsets in
// the harness top, once the target is live.
TEST(TensorSvaDeathTest, CommandQueueCountPastItsDepthFires) {
  EXPECT_DEATH(run_expecting_stop(TeFault::kUpsetCmdFifoCount), "FifoCountInRange");
}

TEST(TensorSvaDeathTest, PsumWritesForgottenInFlightFire) {
  EXPECT_DEATH(run_expecting_stop(TeFault::kUpsetPsumPending), "PsumWritesInFlightAreCounted");
}

// The MM streaming with the bank now being loaded is what stops the run
// (MmNeverReadsLoadingBank: the weight-bank hazard seen from the MM side).
TEST(TensorSvaDeathTest, LoadMovedOntoTheStreamingWeightBankFires) {
  EXPECT_DEATH(run_expecting_stop(TeFault::kUpsetLsBank), "MmNeverReadsLoadingBank");
}

// The same hazard seen from the LS side: the upset lands in a cycle the LS writes a weight row
// while the MM on that bank is held by the SBUF, so no MM read meets it in that cycle.
TEST(TensorSvaDeathTest, LoadWritingTheBankOfAHeldMmFires) {
  EXPECT_DEATH(run_expecting_stop(TeFault::kUpsetLsBankWhileMmStalled, kSbufStall),
               "LsWritesOnlyAFreeBank");
}

}  // namespace
}  // namespace ncore

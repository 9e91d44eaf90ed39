// Negative tests of the HBM controller's assertions: the harness breaks one rule on purpose, or
// its top upsets one register inside the controller (tb::HbmFault), and the RTL's SVA must stop
// the simulation naming the assertion. The same traffic without the fault runs clean and makes
// the read port stall, so the stop is the fault's doing.

#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/hbm_test_util.h"

namespace ncore {
namespace {

using model::HbmConfig;
using model::HbmTraceEntry;
using test::sim_options;

// ---------------------------------------------------------------------------------------------
// Assertions: the harness breaks a rule and the simulation must stop naming the assertion.

tb::HbmSimResult run_with(tb::HbmFault fault) {
  HbmConfig c;
  std::vector<HbmTraceEntry> trace;
  for (uint64_t a = 0; a < 16384; a += 32) trace.push_back({0, false, a * 17 % (1 << 20) / 32 * 32, 32});
  auto o = sim_options(1, 0.0);
  o.fault = fault;
  return tb::run_hbm_rtl(model::hbm_bursts(trace, c, 1), c, o);
}

void run_expecting_stop(tb::HbmFault fault) {
  dup2(STDERR_FILENO, STDOUT_FILENO);  // Verilator prints the assertion on stdout
  run_with(fault);
}

TEST(HbmSva, WithoutAFaultTheTrafficRunsCleanAndTheReadPortStalls) {
  const auto r = run_with(tb::HbmFault::kNone);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_GT(r.rd_port_stalls, 0u) << "the read port never stalled: the fault would not bite";
}

TEST(HbmSvaDeathTest, ReadPayloadChangingWhileStalledFires) {
  EXPECT_DEATH(run_expecting_stop(tb::HbmFault::kRdPayloadChangesWhileStalled), "RdReqStable");
}

TEST(HbmSvaDeathTest, DramDataWithoutAReadFires) {
  EXPECT_DEATH(run_expecting_stop(tb::HbmFault::kDramDataWithoutRead), "DramDataOnlyWhenExpected");
}

// The default timings have tCWL < CL + BL, so tRTW 0 leaves write data on top of read data.
TEST(HbmSvaDeathTest, ConfigurationPastTheValidatorFires) {
  const model::HbmTiming t;
  ASSERT_LT(t.cwl, t.cl + t.bl) << "tRTW 0 would be a legal configuration: the fault would not bite";
  EXPECT_DEATH(run_expecting_stop(tb::HbmFault::kConfigBypassesValidation),
               "ConfigTurnaroundCoversReadData");
}

// Internal invariants: register upsets in the harness top, once the target is live.
TEST(HbmSvaDeathTest, ReadReturnQueueFullAtARdFires) {
  EXPECT_DEATH(run_expecting_stop(tb::HbmFault::kUpsetInFlightFull), "InFlightNeverOverflows");
}

TEST(HbmSvaDeathTest, RefreshOwedPastTheLimitFires) {
  EXPECT_DEATH(run_expecting_stop(tb::HbmFault::kUpsetRefreshDebt), "RefreshDebtBounded");
}

}  // namespace
}  // namespace ncore

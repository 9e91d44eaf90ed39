// Negative test of the DMA's internal assertion: the harness top upsets one register inside the
// engine (tb::DmaFault) and the RTL's SVA must stop the simulation naming the assertion. The
// same store list without the upset runs clean, so the stop is the upset's doing.
// (RspMatchesAReadInFlight fires on an HBM response with no read in flight: test_core_rtl.)

#include <unistd.h>

#include <cstdlib>
#include <vector>

#include <gtest/gtest.h>

#include "model/dma/dma.h"
#include "tb/dma/dma_sim.h"

namespace ncore {
namespace {

using tb::DmaList;

// One engine stores 4 KiB from SBUF to HBM: 128 bursts through the staging FIFO.
const std::vector<DmaList> kStoreList = [] {
  model::DmaDescriptor d;
  d.to_hbm = true;
  d.hbm_addr = 0x100000;
  d.sbuf_addr = 0x2000;
  d.bytes = 4096;
  return std::vector<DmaList>{{3, {d}}};
}();

tb::DmaSimResult run_with(tb::DmaFault fault) {
  tb::DmaSimOptions o;
  o.seed = 4;
  o.fault = fault;
  if (const char* w = std::getenv("NCORE_WAVES")) o.waves = w;
  return tb::run_dma_rtl(kStoreList, o);
}

TEST(DmaSva, WithoutAFaultTheStoreRunsClean) {
  const auto r = run_with(tb::DmaFault::kNone);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.lists_done, 1u);
  EXPECT_EQ(r.hbm_checked, 128u) << "the store's bursts were not all compared";
}

TEST(DmaSvaDeathTest, StagingQueueShownFullAsDataArrivesFires) {
  EXPECT_DEATH(
      {
        dup2(STDERR_FILENO, STDOUT_FILENO);  // Verilator prints the assertion on stdout
        run_with(tb::DmaFault::kUpsetStageFull);
      },
      "StageNeverOverflows");
}

}  // namespace
}  // namespace ncore

// Negative tests of the vector engine's assertions: the harness breaks one interface rule on
// purpose, or its top upsets one state register (tb::VeFault), and the RTL's SVA must stop
// the simulation naming the assertion. The same program without the fault runs clean with the
// instruction port held off, so the stop is the fault's doing.

#include <unistd.h>

#include <gtest/gtest.h>

#include "tb/vector/ve_random.h"
#include "tb/vector/ve_sim.h"

namespace ncore {
namespace {

tb::VeSimResult run_with(tb::VeFault fault) {
  tb::VeSimOptions o;
  o.fault = fault;
  tb::VeSim sim(8, o);
  std::vector<model::VeInstruction> program;
  for (int i = 0; i < 3; ++i)
    program.push_back(tb::simple_ve_instruction(sim.config(), isa::Opcode::kTensorCopy,
                                                model::DType::kBf16, model::DType::kFp32, 16));
  return sim.run(program);
}

void run_expecting_stop(tb::VeFault fault) {
  dup2(STDERR_FILENO, STDOUT_FILENO);  // Verilator prints the assertion on stdout
  run_with(fault);
}

TEST(VeSva, WithoutAFaultTheProgramRunsCleanAndInstructionsWait) {
  const auto r = run_with(tb::VeFault::kNone);
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.counters.executed, 3u);
  // Instructions waited while the engine was busy: the fault has a held-off cycle to bite in.
  EXPECT_GT(r.cmd_held_off, 0u);
}

TEST(VeSvaDeathTest, InstructionChangingWhileStalledFires) {
  EXPECT_DEATH(run_expecting_stop(tb::VeFault::kCmdChangesWhileStalled), "VeCmdStable");
}

TEST(VeSvaDeathTest, ReadResponseWithoutARequestFires) {
  EXPECT_DEATH(run_expecting_stop(tb::VeFault::kResponseWithoutRequest), "VeRspHasRequest");
}

// The state machine's invariants (FSM kind): register upsets in the harness top.
TEST(VeSvaDeathTest, StateMachineIdlingWithAWriteQueuedFires) {
  EXPECT_DEATH(run_expecting_stop(tb::VeFault::kUpsetStateIdle), "VeNoWriteWhenIdle");
}

TEST(VeSvaDeathTest, ProducedCountPastTheDestinationFires) {
  EXPECT_DEATH(run_expecting_stop(tb::VeFault::kUpsetProduced), "VeProducedBound");
}

}  // namespace
}  // namespace ncore

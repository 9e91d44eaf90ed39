// Benchmark (never a pass/fail test): the example programs on the golden NeuronCore, side by
// side: simulated cycles, tensor-engine utilization, HBM bandwidth, and wall-clock seconds per
// simulated microsecond. Prints the README table ("NeuronCore programs").

#include <chrono>
#include <cstdio>

#include <fmt/format.h>

#include "model/core/core_model.h"
#include "model/core/program.h"

int main() {
  using namespace ncore::model;
  const CoreConfig cfg;
  fmt::print("| program | instructions | cycles | simulated us | PE utilization | HBM GB/s | wall s | wall s per simulated us |\n");
  fmt::print("|---|---|---|---|---|---|---|---|\n");
  for (const char* name : {"gemm_bf16_1024.s", "softmax.s", "rmsnorm.s"}) {
    const Program p = assemble_file(std::string(NCORE_SOURCE_DIR "/tests/programs/") + name);
    const auto t0 = std::chrono::steady_clock::now();
    CoreModel core(cfg, p);
    core.load_tensors();
    const CoreResult r = core.run();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.status != CoreStatus::kDone) {
      fmt::print(stderr, "{}: {}\n", name, r.message);
      return 1;
    }
    fmt::print("| {} | {} | {} | {:.2f} | {:.1f}% | {:.1f} | {:.2f} | {:.3f} |\n", name, p.instructions(), r.cycles,
               r.microseconds(cfg), 100 * r.te_utilization(cfg), r.hbm_gbps(cfg), wall, wall / r.microseconds(cfg));
  }
  return 0;
}

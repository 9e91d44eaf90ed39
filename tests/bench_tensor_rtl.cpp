// Benchmark, not a test: the tensor-engine RTL's simulation speed at every built array size,
// and cycles and utilization of 128x128 BF16 GEMMs, each run in lockstep with the golden
// model. Prints Markdown tables for the README.
//   bench_tensor_rtl [speed|utilization|all]

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "tb/tensor/gemm_plan.h"
#include "tb/tensor/te_sim.h"

namespace {

using ncore::model::DType;

void speed() {
  std::printf("\n| array | simulated cycles/s | PE-updates/s (M) | wall s per PE-update, "
              "relative to 16x16 |\n|---|---|---|---|\n");
  double base = 0;
  for (const auto& [rows, cols] : ncore::tb::te_sim_sizes()) {
    if (rows != cols || rows < 16) continue;
    ncore::tb::TeSimOptions o;
    o.readback = false;
    auto sim = ncore::tb::make_te_sim(rows, cols, o);
    ncore::model::SplitMix64 rng(1);
    // Back-to-back full MMs: the array is busy every cycle.
    const int mms = rows >= 128 ? 4 : 16;
    std::vector<ncore::model::TeInstruction> program = {
        ncore::model::load_stationary(DType::kBf16, rows, cols, 0, 2)};
    sim->sbuf().write_tile(ncore::model::random_tile(DType::kBf16, rows, cols, rng), 0, 2);
    sim->sbuf().write_tile(ncore::model::random_tile(DType::kBf16, rows, 512, rng), 4096, 2);
    for (int i = 0; i < mms; ++i)
      program.push_back(ncore::model::multiply_moving(DType::kBf16, rows, 512, 4096, 2, i % 8, 0,
                                                      false));
    const auto r = sim->run(program);
    if (!r.ok) {
      std::printf("FAILED: %s\n", r.failure.c_str());
      return;
    }
    const double cps = r.cycles / r.wall_seconds;
    const double pe_per_s = cps * rows * cols;
    const double cost = 1.0 / pe_per_s;
    if (base == 0) base = cost;
    std::printf("| %dx%d | %.0f | %.1f | %.2f |\n", rows, cols, cps, pe_per_s / 1e6, cost / base);
    std::fflush(stdout);
  }
}

void utilization() {
  struct Shape { int k, n, m; };
  const Shape shapes[] = {{128, 128, 512}, {128, 128, 128}, {64, 128, 512}, {256, 128, 512},
                          {128, 128, 2048}, {512, 512, 512}, {1024, 1024, 1024}};
  std::printf("\n| (K, N, M) | cycles | MACs | PE utilization | array busy | wall s |\n"
              "|---|---|---|---|---|---|\n");
  for (const Shape& s : shapes) {
    ncore::tb::TeSimOptions o;
    o.readback = false;
    auto sim = ncore::tb::make_te_sim(128, 128, o);
    ncore::model::SplitMix64 rng(1);
    const auto plan = ncore::tb::plan_gemm({s.k, s.n, s.m, DType::kBf16, DType::kBf16}, 128,
                                           128, sim->sbuf(), rng, false);
    const auto r = sim->run(plan.program);
    if (!r.ok) {
      std::printf("FAILED: %s\n", r.failure.c_str());
      return;
    }
    std::printf("| (%d, %d, %d) | %llu | %llu | %.2f%% | %.2f%% | %.1f |\n", s.k, s.n, s.m,
                static_cast<unsigned long long>(r.cycles),
                static_cast<unsigned long long>(r.counters.macs),
                100.0 * r.counters.macs / (static_cast<double>(r.cycles) * 128 * 128),
                100.0 * r.counters.busy / static_cast<double>(r.cycles), r.wall_seconds);
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  if (what == "speed" || what == "all") speed();
  if (what == "utilization" || what == "all") utilization();
  return 0;
}

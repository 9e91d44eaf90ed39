// Benchmark, not a test: the tensor-engine RTL's simulation speed at every built array size,
// cycles and utilization of 128x128 BF16 GEMMs, and the MACs per cycle of each mode over
// dense BF16, each run in lockstep with the golden model. Prints Markdown tables for the
// README.
//   bench_tensor_rtl [speed|utilization|modes|tiling|all]

#include <chrono>
#include <cstdio>
#include <algorithm>
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

// Back-to-back full tiles in each mode, side by side in one run: per K block one full LS and
// eight MMs of N = 512 (a moving free size of 4096). MACs are dense-equivalent.
void modes() {
  int size = 0;
  for (const auto& [rows, cols] : ncore::tb::te_sim_sizes())
    if (rows == cols) size = std::max(size, rows);
  using ncore::tb::GemmMode;
  struct Row { const char* name; GemmMode mode; DType st, mv; int k_per_block; };
  const Row rows[] = {
      {"dense BF16", GemmMode::kDense, DType::kBf16, DType::kBf16, 1},
      {"dense FP8", GemmMode::kDense, DType::kE4m3, DType::kE4m3, 1},
      {"double-row FP8", GemmMode::kDoubleRow, DType::kE4m3, DType::kE5m2, 2},
      {"sparse 4:8 BF16", GemmMode::kSparse4of8, DType::kBf16, DType::kBf16, 2},
      {"sparse 4:12 BF16", GemmMode::kSparse4of12, DType::kBf16, DType::kBf16, 3},
      {"sparse 4:16 BF16", GemmMode::kSparse4of16, DType::kBf16, DType::kBf16, 4},
  };
  std::printf("\n%dx%d array, 2 K blocks x (1 LS + 8 MMs of N = 512):\n\n"
              "| mode | K | cycles | MACs | MACs per cycle | over dense BF16 | goal |\n"
              "|---|---|---|---|---|---|---|\n", size, size);
  double dense = 0;
  for (const Row& row : rows) {
    ncore::tb::TeSimOptions o;
    o.readback = false;
    auto sim = ncore::tb::make_te_sim(size, size, o);
    ncore::model::SplitMix64 rng(1);
    const int k = 2 * size * row.k_per_block;
    const auto plan = ncore::tb::plan_gemm({k, size, 4096, row.st, row.mv, row.mode}, size,
                                           size, sim->sbuf(), rng, false);
    const auto r = sim->run(plan.program);
    if (!r.ok) {
      std::printf("FAILED: %s\n", r.failure.c_str());
      return;
    }
    const double per_cycle = static_cast<double>(r.counters.macs) / r.cycles;
    if (dense == 0) dense = per_cycle;
    std::printf("| %s | %d | %llu | %llu | %.1f | %.3fx | %s |\n", row.name, k,
                static_cast<unsigned long long>(r.cycles),
                static_cast<unsigned long long>(r.counters.macs), per_cycle, per_cycle / dense,
                row.k_per_block == 1 ? "-" : (std::to_string(row.k_per_block) + ".0x").c_str());
    std::fflush(stdout);
  }
  // Transpose: FP32 elements moved per cycle, transpose mode against an identity matmul.
  std::printf("\n| FP32 transpose of %d x %d, 32 times | cycles | ratio |\n|---|---|---|\n",
              size, size);
  uint64_t identity_cycles = 0;
  for (GemmMode mode : {GemmMode::kDense, GemmMode::kTranspose}) {
    ncore::tb::TeSimOptions o;
    o.readback = false;
    auto sim = ncore::tb::make_te_sim(size, size, o);
    ncore::model::SplitMix64 rng(1);
    // Identity matmul: stationary = the data, moving = I (N = size); transpose mode the same.
    ncore::model::Tile data = ncore::model::random_tile(DType::kFp32, size, size, rng);
    ncore::model::Tile eye(DType::kFp32, size, size);
    for (int i = 0; i < size; ++i) eye.at(i, i) = 0x3F800000u;
    sim->sbuf().write_tile(data, 0, 4);
    sim->sbuf().write_tile(eye, 4096, 4);
    const bool t = mode == GemmMode::kTranspose;
    std::vector<ncore::model::TeInstruction> program;
    auto ls = ncore::model::load_stationary(DType::kFp32, size, size, 0, 4);
    ls.transpose = t;
    program.push_back(ls);
    for (int i = 0; i < 32; ++i) {
      auto mm = ncore::model::multiply_moving(DType::kFp32, size, size, 4096, 4, i % 8, 0, false);
      mm.transpose = t;
      program.push_back(mm);
    }
    const auto r = sim->run(program);
    if (!r.ok) {
      std::printf("FAILED: %s\n", r.failure.c_str());
      return;
    }
    if (!t) identity_cycles = r.cycles;
    std::printf("| %s | %llu | %.2fx |\n", t ? "transpose mode" : "identity matmul",
                static_cast<unsigned long long>(r.cycles),
                static_cast<double>(identity_cycles) / static_cast<double>(r.cycles));
  }
}

// Small matmuls (each fits a quarter of the rows and columns) as a batch: one at a time on
// the whole array against four at a time on the diagonal tiles of a 4x4 tiling, side by side.
void tiling() {
  int size = 0;
  for (const auto& [rows, cols] : ncore::tb::te_sim_sizes())
    if (rows == cols) size = std::max(size, rows);
  const int q = size / 4;
  std::printf("\n%dx%d array, 16 matmuls of K = %d, N = %d, M = 512 (BF16):\n\n"
              "| tiling | cycles | MACs per cycle | speed-up |\n|---|---|---|---|\n",
              size, size, q, q);
  uint64_t untiled = 0;
  for (const char* name : {"1x1", "2x2", "4x4"}) {
    ncore::tb::TeSimOptions o;
    o.readback = false;
    auto sim = ncore::tb::make_te_sim(size, size, o);
    ncore::model::SplitMix64 rng(1);
    ncore::tb::GemmShape shape{q, q, 512, DType::kBf16, DType::kBf16};
    shape.row_split = shape.col_split = name[0] == '1' ? 0 : name[0] == '2' ? 1 : 2;
    ncore::tb::GemmPlan plan;
    if (shape.row_split == 0) {  // untiled: the same 16 matmuls one after another
      for (int b = 0; b < 16; ++b) {
        auto one = ncore::tb::plan_gemm(shape, size, size, sim->sbuf(), rng, false);
        for (auto& i : one.program) {
          if (i.opcode == ncore::isa::Opcode::kMultiplyMoving) i.psum_bank = b % 8;
          plan.program.push_back(i);
        }
        plan.macs += one.macs;
      }
    } else {
      shape.batch = 16;
      plan = ncore::tb::plan_gemm(shape, size, size, sim->sbuf(), rng, false);
    }
    const auto r = sim->run(plan.program);
    if (!r.ok) {
      std::printf("FAILED: %s\n", r.failure.c_str());
      return;
    }
    if (untiled == 0) untiled = r.cycles;
    std::printf("| %s | %llu | %.1f | %.2fx |\n", name, static_cast<unsigned long long>(r.cycles),
                static_cast<double>(r.counters.macs) / r.cycles,
                static_cast<double>(untiled) / static_cast<double>(r.cycles));
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string what = argc > 1 ? argv[1] : "all";
  if (what == "speed" || what == "all") speed();
  if (what == "utilization" || what == "all") utilization();
  if (what == "modes" || what == "all") modes();
  if (what == "tiling" || what == "all") tiling();
  return 0;
}

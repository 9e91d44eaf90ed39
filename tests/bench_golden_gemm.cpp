// Benchmark, not a test: the golden model's bit-exact BF16 GEMM against OpenBLAS sgemm on one
// thread, side by side in one run. Prints a table of GFLOP/s and the ratio for the README.
//
// The golden GEMM is the shape the tensor engine runs: K split into 128-row accumulation
// groups (LoadStationary + MultiplyMoving, accumulate after the first), M into 128-column
// stationaries and N into 512-element PSUM banks (at most 8 N tiles, so N <= 4096). OpenBLAS computes the same product in FP32
// with fused multiply-adds and its own order: a speed reference, not a numeric one.

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>
#include <cblas.h>

#include "model/tensor/tensor_engine.h"

namespace {

using ncore::model::DType;
using ncore::model::Tile;

struct Shape {
  int k, m, n;
};
const std::vector<Shape> kShapes = {{128, 128, 512}, {512, 512, 512}, {1024, 1024, 1024}};

Tile finite_tile(int rows, int cols, uint64_t seed) {
  ncore::model::SplitMix64 rng(seed);
  Tile t(DType::kBf16, rows, cols);
  for (auto& b : t.bits) b = 0x3E00u | (rng.next32() & 0x81FFu);
  return t;
}

Tile sub_tile(const Tile& t, int r0, int rows, int c0, int cols) {
  Tile s(t.dtype, rows, cols);
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c) s.at(r, c) = t.at(r0 + r, c0 + c);
  return s;
}

void golden_gemm(benchmark::State& state) {
  const Shape s = kShapes[state.range(0)];
  const Tile a = finite_tile(s.k, s.m, 1), b = finite_tile(s.k, s.n, 2);
  // Pre-cut the operand tiles so the loop times only what the engine computes.
  std::vector<Tile> stationaries, movings;
  for (int k0 = 0; k0 < s.k; k0 += 128) {
    for (int m0 = 0; m0 < s.m; m0 += 128) stationaries.push_back(sub_tile(a, k0, 128, m0, 128));
    for (int n0 = 0; n0 < s.n; n0 += 512) movings.push_back(sub_tile(b, k0, 128, n0, 512));
  }
  const int m_tiles = s.m / 128, n_tiles = s.n / 512, k_tiles = s.k / 128;
  ncore::model::TensorEngine te;
  for (auto _ : state) {
    // One stationary serves every N tile of its row block (banks 0..n_tiles-1), as a kernel
    // on the hardware would schedule it.
    for (int mt = 0; mt < m_tiles; ++mt) {
      for (int kt = 0; kt < k_tiles; ++kt) {
        te.load_stationary(stationaries[kt * m_tiles + mt]);
        for (int nt = 0; nt < n_tiles; ++nt)
          te.multiply_moving(movings[kt * n_tiles + nt], {nt, 0, kt > 0});
      }
    }
    benchmark::DoNotOptimize(te.psum(0, 0, 0));
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * s.k * s.m * s.n * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void openblas_sgemm(benchmark::State& state) {
  const Shape s = kShapes[state.range(0)];
  const Tile a = finite_tile(s.k, s.m, 1), b = finite_tile(s.k, s.n, 2);
  std::vector<float> fa(a.bits.size()), fb(b.bits.size()), c(static_cast<size_t>(s.m) * s.n);
  for (size_t i = 0; i < fa.size(); ++i) fa[i] = ncore::model::to_float(DType::kBf16, a.bits[i]);
  for (size_t i = 0; i < fb.size(); ++i) fb[i] = ncore::model::to_float(DType::kBf16, b.bits[i]);
  openblas_set_num_threads(1);
  for (auto _ : state) {
    // C[M,N] = A[K,M]^T @ B[K,N]
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s.m, s.n, s.k, 1.0f, fa.data(), s.m,
                fb.data(), s.n, 0.0f, c.data(), s.n);
    benchmark::DoNotOptimize(c.data());
  }
  state.counters["GFLOPs"] = benchmark::Counter(2.0 * s.k * s.m * s.n * 1e-9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(golden_gemm)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->MinTime(1.0);
BENCHMARK(openblas_sgemm)->DenseRange(0, 2)->Unit(benchmark::kMillisecond)->MinTime(1.0);

// Collects GFLOP/s per run so main can print the side-by-side ratio table.
class RatioReporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> gflops;
  void ReportRuns(const std::vector<Run>& runs) override {
    // Keyed by "name/arg": the full name may carry options such as "/min_time:1.000".
    for (const auto& r : runs)
      gflops[r.run_name.function_name + "/" + r.run_name.args] = r.counters.at("GFLOPs");
    ConsoleReporter::ReportRuns(runs);
  }
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  RatioReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\n| K x M x N | golden bit-exact BF16 GFLOP/s | OpenBLAS sgemm 1 thread GFLOP/s "
              "| ratio |\n|---|---|---|---|\n");
  for (size_t i = 0; i < kShapes.size(); ++i) {
    const std::string suffix = "/" + std::to_string(i);
    const auto g = reporter.gflops.find("golden_gemm" + suffix);
    const auto o = reporter.gflops.find("openblas_sgemm" + suffix);
    if (g == reporter.gflops.end() || o == reporter.gflops.end()) continue;
    std::printf("| %d x %d x %d | %.1f | %.1f | %.0f%% |\n", kShapes[i].k, kShapes[i].m,
                kShapes[i].n, g->second, o->second, 100.0 * g->second / o->second);
  }
  return 0;
}

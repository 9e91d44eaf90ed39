// The RTL's two speed levers (issue 52) give exactly the default build's outputs and cycles:
//   - the fast PE build (rtl/common/README.md, "The fast PE build"): the tensor engine and the
//     NeuronCore built with host-FPU PEs (part one of its proof, the arithmetic pair by pair, is
//     tests/test_host_fp.cpp);
//   - the array as column slices on threads (tb/tensor/array_slices.h; rtl/tensor/README.md,
//     "Column slices"), on every thread count, in both arithmetics.
// Each run is also co-simulated against the golden model, as every RTL test is.

#include <cfenv>
#include <limits>
#include <string>
#include <vector>

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include "model/core/program.h"
#include "tb/core/core_sim.h"
#include "tb/tensor/gemm_plan.h"
#include "tb/tensor/te_sim.h"
#include "tests/seed.h"
#include "tests/te_test_util.h"

namespace ncore {
namespace {

using model::DType;
using tb::PeArith;

struct GemmCase {
  const char* name;
  tb::GemmMode mode;
  DType stationary, moving;
};

// Every PE operation (dense, double-row, sparse, transpose) and the types that take the
// multiplier's special paths (FP32 subnormals, FP8), each operand drawn from every value class.
constexpr GemmCase kCases[] = {
    {"dense bf16", tb::GemmMode::kDense, DType::kBf16, DType::kBf16},
    {"dense fp32", tb::GemmMode::kDense, DType::kFp32, DType::kFp32},
    {"dense e4m3 x fp16", tb::GemmMode::kDense, DType::kE4m3, DType::kFp16},
    {"double-row e5m2", tb::GemmMode::kDoubleRow, DType::kE5m2, DType::kE5m2},
    {"sparse 4:8 bf16", tb::GemmMode::kSparse4of8, DType::kBf16, DType::kBf16},
    {"transpose fp32", tb::GemmMode::kTranspose, DType::kFp32, DType::kFp32},
};

// One GEMM case on one array model (arith, threads, engine_cols: TeSimOptions), co-simulated.
tb::TeRunResult run_gemm(int rows, int cols, const GemmCase& c, uint64_t seed, PeArith arith, int threads,
                         int engine_cols = -1) {
  tb::TeSimOptions o = test::options(seed, 0.2);
  o.pe_arith = arith;
  o.array_threads = threads;
  o.array_engine_cols = engine_cols;
  auto sim = tb::make_te_sim(rows, cols, o);
  model::SplitMix64 rng(seed);
  const tb::GemmShape shape{rows * 2 + 4, cols + 3, 40, c.stationary, c.moving, c.mode};
  const auto plan = tb::plan_gemm(shape, rows, cols, sim->sbuf(), rng, true);
  tb::TeRunResult r = sim->run(plan.program);
  test::expect_clean(r, 2);
  return r;
}

void expect_same_run(const tb::TeRunResult& r, const tb::TeRunResult& reference) {
  EXPECT_EQ(r.psum_write_digest, reference.psum_write_digest) << "PSUM writes (data or cycle) differ";
  EXPECT_EQ(r.cycles, reference.cycles);
  EXPECT_EQ(r.psum_writes_checked, reference.psum_writes_checked);
  EXPECT_EQ(r.counters.macs, reference.counters.macs);
  EXPECT_EQ(r.counters.busy, reference.counters.busy);
}

TEST(FastPe, ArrayGemmsInEveryModeGiveTheDefaultBuildsWritesAndCycles) {
  int sizes = 0;
  for (const auto& [rows, cols] : tb::te_sim_fast_sizes()) {
    if (rows > 32) continue;  // full size: the benchmark (scripts/speed_bench ...@host-fpu)
    ++sizes;
    for (const GemmCase& c : kCases) {
      SCOPED_TRACE(fmt::format("{}x{} {}", rows, cols, c.name));
      const uint64_t seed = test::test_seed(5200 + static_cast<uint64_t>(&c - kCases));
      expect_same_run(run_gemm(rows, cols, c, seed, PeArith::kHostFpu, 0),
                      run_gemm(rows, cols, c, seed, PeArith::kLogic, 0));
    }
  }
  EXPECT_GT(sizes, 0) << "no fast-PE array of 32x32 or less is built";
}

// The array in column slices on 1 to 4 threads, split evenly, by the arithmetic's default, with
// odd widths and with the engine's thread left no columns, in both arithmetics, against the
// array inside the engine (logic): the same writes in the same cycles.
TEST(ArraySlices, GemmsInEveryModeGiveTheWholeArraysWritesAndCyclesOnEveryThreadCountAndSplit) {
  struct Split {
    int threads, engine_cols;
  };
  constexpr Split kSplits[] = {{1, -1}, {2, -1}, {2, 0}, {3, 5}, {4, 40}};
  int sizes = 0;
  for (PeArith arith : {PeArith::kLogic, PeArith::kHostFpu}) {
    for (const auto& [rows, cols] : tb::te_sim_sliced_sizes(arith)) {
      if (rows > 32) continue;  // full size: the benchmark (scripts/speed_bench --threads)
      ++sizes;
      for (const GemmCase& c : kCases) {
        const uint64_t seed = test::test_seed(5300 + static_cast<uint64_t>(&c - kCases));
        const tb::TeRunResult whole = run_gemm(rows, cols, c, seed, PeArith::kLogic, 0);
        for (const Split& split : kSplits) {
          tb::TeSimOptions o;
          o.pe_arith = arith;
          o.array_engine_cols = split.engine_cols;
          SCOPED_TRACE(fmt::format("{}x{} {} {}, {} threads, slices of {} columns", rows, cols, c.name,
                                   tb::pe_arith_name(arith), split.threads,
                                   fmt::join(tb::array_slice_widths(cols, split.threads, tb::array_engine_cols(o)), "+")));
          expect_same_run(run_gemm(rows, cols, c, seed, arith, split.threads, split.engine_cols), whole);
        }
      }
    }
  }
  EXPECT_EQ(sizes, 2) << "expected the 16x16 array in column slices in both arithmetics";
}

// The split: every column once, the engine's thread engine_cols fewer where the columns allow.
TEST(ArraySlices, TheEnginesThreadTakesItsShareFewerColumns) {
  using W = std::vector<int>;
  EXPECT_EQ(tb::array_slice_widths(128, 1, 34), W({128}));
  EXPECT_EQ(tb::array_slice_widths(128, 2, 0), W({64, 64}));
  EXPECT_EQ(tb::array_slice_widths(128, 2, 34), W({47, 81}));  // 47 + 34 = 81
  EXPECT_EQ(tb::array_slice_widths(128, 4, 14), W({22, 36, 35, 35}));
  EXPECT_EQ(tb::array_slice_widths(16, 4, 40), W({0, 6, 5, 5}));  // the engine's thread: the engine alone
  EXPECT_EQ(tb::array_slice_widths(16, 16, 0), W(16, 1));
  EXPECT_EQ(tb::array_slice_widths(16, 2, std::numeric_limits<int>::max()), W({0, 16}));  // no overflow
}

// More threads than columns is refused.
TEST(ArraySlices, MoreThreadsThanColumnsIsAClearError) {
  tb::TeSimOptions o;
  o.array_threads = 17;
  try {
    tb::make_te_sim(16, 16, o);
    ADD_FAILURE() << "17 threads for 16 columns were accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("--threads 17: at most 16 for a 16-column array"), std::string::npos)
        << e.what();
  }
}

// A cycle whose slices never all count as done (TeFault::kSliceNeverDone: the last slice is
// stepped but not counted) is reported by the watchdog, not waited on for ever.
TEST(ArraySlices, ASliceNeverCountedIsReportedByTheWatchdog) {
  tb::TeSimOptions o = test::options(test::test_seed(5400), 0.0);
  o.array_threads = 2;
  o.array_watchdog_seconds = 0.5;
  o.fault = tb::TeFault::kSliceNeverDone;
  try {
    tb::make_te_sim(16, 16, o);  // its reset's first clock edge
    ADD_FAILURE() << "a slice never counted was not reported";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("array slices: 1 of 2 slices made the clock edge within 0.5 s"),
              std::string::npos)
        << e.what();
  }
}

// The small example programs (a GEMM, softmax, PSUM writes, collectives) on the size-8 core.
TEST(FastPe, CoreProgramsGiveTheDefaultBuildsOutputsAndCycles) {
  int sizes = 0;
  for (int size : tb::core_rtl_fast_sizes()) {
    if (size != 8) continue;  // the examples are written for size 8
    ++sizes;
    for (const char* name : {"gemm_8.s", "softmax_8.s", "psum_writes_8.s", "collectives_8.s"}) {
      SCOPED_TRACE(name);
      const model::Program p = model::assemble_file(std::string(NCORE_SOURCE_DIR "/tests/programs/small/") + name);
      tb::CoreSimResult runs[2];
      for (PeArith arith : {PeArith::kLogic, PeArith::kHostFpu}) {
        tb::CoreSimOptions o;
        o.size = size;
        o.watchdog = 20'000;
        o.max_cycles = 2'000'000;
        o.timeline = true;
        o.pe_arith = arith;
        tb::CoreSimResult& r = runs[arith == PeArith::kHostFpu];
        r = tb::run_core_rtl(p, o);
        EXPECT_EQ(r.status, model::CoreStatus::kDone) << r.message;
        EXPECT_TRUE(r.ok && r.compared) << r.failure;
        EXPECT_GT(r.psum_words_compared, 0u);
      }
      const tb::CoreSimResult &logic = runs[0], &host = runs[1];
      EXPECT_EQ(host.cycles, logic.cycles);
      EXPECT_EQ(host.te_macs, logic.te_macs);
      EXPECT_EQ(host.semaphores, logic.semaphores);
      EXPECT_FALSE(logic.outputs.empty());
      EXPECT_EQ(host.outputs, logic.outputs);
      ASSERT_EQ(host.timeline.size(), logic.timeline.size());
      for (size_t i = 0; i < host.timeline.size(); ++i) {
        const model::InstrTiming &a = host.timeline[i], &b = logic.timeline[i];
        EXPECT_TRUE(a.queue == b.queue && a.index == b.index && a.issue == b.issue && a.complete == b.complete)
            << "instruction " << i << " issue/commit " << a.issue << "/" << a.complete << " against "
            << b.issue << "/" << b.complete;
      }
    }
  }
  EXPECT_GT(sizes, 0) << "no fast-PE core of size 8 is built";
}

// Round toward zero for one scope (the fast models' start-up check refuses it).
class RoundTowardZero {
 public:
  RoundTowardZero() { EXPECT_EQ(std::fesetround(FE_TOWARDZERO), 0); }
  ~RoundTowardZero() { std::fesetround(FE_TONEAREST); }
  RoundTowardZero(const RoundTowardZero&) = delete;
  RoundTowardZero& operator=(const RoundTowardZero&) = delete;
};

// `run` throws the start-up check's error.
template <class Run>
void expect_environment_refused(const char* what, Run run) {
  SCOPED_TRACE(what);
  try {
    RoundTowardZero fault;
    run();
    ADD_FAILURE() << "ran with the rounding mode toward zero";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("needs the default floating-point environment"), std::string::npos)
        << e.what();
  }
}

// Every kind of host-FPU model checks the floating-point environment when it starts, on the
// thread that makes it (slices too): proof that the host path is the one running, and that a
// faulty environment stops a run instead of changing its numbers.
TEST(FastPe, AFaultyFloatingPointEnvironmentStopsEveryHostFpuModel) {
  const model::Program gemm =
      model::assemble_file(std::string(NCORE_SOURCE_DIR "/tests/programs/small/gemm_8.s"));
  auto run_array = [](int threads) {
    tb::TeSimOptions o;
    o.pe_arith = PeArith::kHostFpu;
    o.array_threads = threads;
    auto sim = tb::make_te_sim(16, 16, o);
    model::SplitMix64 rng(1);
    const tb::GemmShape shape{20, 16, 8, DType::kBf16, DType::kBf16, tb::GemmMode::kDense};
    sim->run(tb::plan_gemm(shape, 16, 16, sim->sbuf(), rng, true).program);
  };
  expect_environment_refused("16x16 array, whole", [&] { run_array(0); });
  expect_environment_refused("16x16 array, slices on 2 threads", [&] { run_array(2); });
  expect_environment_refused("size-8 core", [&] {
    tb::CoreSimOptions o;
    o.size = 8;
    o.pe_arith = PeArith::kHostFpu;
    tb::run_core_rtl(gemm, o);
  });
  // The same runs in the logic arithmetic are not checked, and pass.
  RoundTowardZero fault;
  tb::CoreSimOptions o;
  o.size = 8;
  o.pe_arith = PeArith::kLogic;  // named: the fast PE build's default is the host FPU
  EXPECT_EQ(tb::run_core_rtl(gemm, o).status, model::CoreStatus::kDone);
}

// A harness asked for a fast-PE size that is not built says so and names the built ones.
TEST(FastPe, AnUnbuiltSizeIsAClearError) {
  tb::TeSimOptions o;
  o.pe_arith = PeArith::kHostFpu;
  try {
    tb::make_te_sim(12, 8, o);
    if (!NCORE_FAST_PE) ADD_FAILURE() << "a 12x8 fast-PE array is built only with -DNCORE_FAST_PE=ON";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("no fast-PE (host FPU) RTL model of a 12x8 array is built"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ncore

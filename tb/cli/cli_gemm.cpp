// ncore gemm: a GEMM tiled into LoadStationary/MultiplyMoving pairs, run on the golden model,
// the RTL, or both in lockstep.

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/common/error.h"
#include "model/common/sbuf.h"
#include "tb/cli/commands.h"
#include "tb/cli/pe_arith_option.h"
#include "tb/cli/waves_options.h"
#include "tb/tensor/gemm_plan.h"
#include "tb/tensor/te_sim.h"

namespace ncore::cli {
namespace {

struct GemmOptions {
  int k = 128, n = 128, m = 512;
  std::string dtype = "bf16", dtype_moving;
  std::string mode = "dense";
  std::string tiling = "1x1";
  int batch = 0;  // 0: one matmul per diagonal tile
  std::string engine = "cosim";
  int rows = 128, cols = 128;
  uint64_t seed = 1;
  double stall = 0.0;
  WavesOptions waves;
  tb::PeArith pe_arith = tb::kBuildPeArith;
  int threads = -1;  // the array's threads (TeSimOptions::array_threads); -1: array_threads_default
  int engine_cols = -1;  // TeSimOptions::array_engine_cols
  bool json = false, all_classes = false;
};

// --threads by default, where this size is built in column slices for this arithmetic and has
// 64 columns or more (a small array gains nothing from threads: the per-cycle fork and join
// outweighs its work): the machine's cores, at most one per kMinColsPerThread columns; otherwise
// 0, the array inside the engine.
constexpr int kMinColsPerThread = 16;  // ncore's own choice: narrower slices cost more than they share
int array_threads_default(int rows, int cols, tb::PeArith arith) {
  if (cols < 64) return 0;
  for (const auto& [r, c] : tb::te_sim_sliced_sizes(arith))
    if (r == rows && c == cols)
      return std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, cols / kMinColsPerThread);
  return 0;
}

struct GemmReport {
  uint64_t cycles = 0, macs = 0, busy = 0, compared = 0, mismatches = 0;
  int threads = 0;  // the array's (RTL)
  std::vector<int> slice_cols;  // the columns of each thread's slice (threads > 0)
  double wall = 0;
  std::string failure;
};

// "RxC" with R, C in {1, 2, 4} -> split codes; the default batch is one matmul per diagonal tile.
void parse_tiling(const std::string& text, tb::GemmShape& shape) {
  const auto code = [](char c) { return c == '1' ? 0 : c == '2' ? 1 : c == '4' ? 2 : -1; };
  if (text.size() != 3 || text[1] != 'x' || code(text[0]) < 0 || code(text[2]) < 0)
    throw Error(fmt::format("gemm: --tiling '{}' is not RxC with R and C each 1, 2 or 4 (for "
                            "example 4x4 or 2x1)", text));
  shape.row_split = code(text[0]);
  shape.col_split = code(text[2]);
  shape.batch = std::min(1 << shape.row_split, 1 << shape.col_split);
}

GemmReport run_golden(const GemmOptions& o, const tb::GemmShape& shape) {
  model::Sbuf sbuf(o.rows, 229376);
  model::SplitMix64 rng(o.seed);
  const auto plan = tb::plan_gemm(shape, o.rows, o.cols, sbuf, rng, o.all_classes);
  model::TensorEngine te({o.rows, o.cols, 8, 512, 229376});
  const auto start = std::chrono::steady_clock::now();
  for (const auto& i : plan.program) {
    const auto err = te.execute(i, sbuf);
    if (err != model::TeError::kNone)
      throw Error(fmt::format("gemm: the planner made an illegal instruction ({}): {}",
                              model::te_error_name(err), model::describe(i)));
  }
  GemmReport r;
  r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.macs = te.macs();
  return r;
}

GemmReport run_rtl(const GemmOptions& o, const tb::GemmShape& shape, bool check) {
  tb::TeSimOptions so;
  so.check = check;
  so.seed = o.seed;
  so.cmd_stall = o.stall;
  so.sbuf_stall = o.stall;
  o.waves.apply(so);
  so.pe_arith = o.pe_arith;
  so.array_threads = o.threads >= 0 ? o.threads : array_threads_default(o.rows, o.cols, o.pe_arith);
  so.array_engine_cols = o.engine_cols;
  so.readback = false;
  so.reproduce = fmt::format("ncore gemm --mode {} --tiling {} --batch {} --k {} --n {} --m {} "
                             "--dtype {} --dtype-moving {} --engine {} --rows {} --cols {} "
                             "--seed {} --stall {}{} --pe-arith {} --threads {}{} --waves fail.fst", o.mode,
                             o.tiling, shape.batch, o.k, o.n, o.m, o.dtype,
                             o.dtype_moving.empty() ? o.dtype : o.dtype_moving, o.engine,
                             o.rows, o.cols, o.seed, o.stall,
                             o.all_classes ? " --all-classes" : "", tb::pe_arith_name(o.pe_arith),
                             so.array_threads,
                             o.engine_cols >= 0 ? fmt::format(" --engine-cols {}", o.engine_cols) : "");
  auto sim = tb::make_te_sim(o.rows, o.cols, so);
  model::SplitMix64 rng(o.seed);
  const auto plan = tb::plan_gemm(shape, o.rows, o.cols, sim->sbuf(), rng, o.all_classes);
  const auto result = sim->run(plan.program);
  GemmReport r;
  r.cycles = result.cycles;
  r.macs = result.counters.macs;
  r.busy = result.counters.busy;
  r.compared = result.psum_writes_checked;
  r.mismatches = result.ok ? 0 : 1;
  r.failure = result.failure;
  r.wall = result.wall_seconds;
  r.threads = so.array_threads;
  if (so.array_threads > 0) r.slice_cols = tb::array_slice_widths(o.cols, so.array_threads, tb::array_engine_cols(so));
  return r;
}

}  // namespace

void add_gemm_command(CLI::App& app) {
  auto o = std::make_shared<GemmOptions>();
  CLI::App* cmd = app.add_subcommand(
      "gemm", "Run a GEMM out[N, M] = stationary[K, N]^T @ moving[K, M] as LS/MM pairs");
  cmd->add_option("--k", o->k, "contraction size K (split into array-row accumulation groups)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--n", o->n, "stationary free size N: output partitions (split by columns)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--m", o->m, "moving free size M: output elements (split into <= 512)")
      ->capture_default_str()->check(CLI::Range(1, 1 << 16));
  cmd->add_option("--mode", o->mode,
                  "dense, double-row (FP8: 2 K rows per PE), transpose (the stationary "
                  "transposed into PSUM, --m unused), sparse-4:8, sparse-4:12 or sparse-4:16 "
                  "(the stationary drawn 4:G sparse along K, loaded compressed with tags)")
      ->capture_default_str()
      ->check(CLI::IsMember({"dense", "double-row", "transpose", "sparse-4:8", "sparse-4:12",
                             "sparse-4:16"}));
  cmd->add_option("--tiling", o->tiling,
                  "RxC: split the PE rows into R and the columns into C tiles (1, 2 or 4 each); "
                  "runs --batch independent matmuls, each fitting one tile, on the diagonal "
                  "tiles in parallel")
      ->capture_default_str();
  cmd->add_option("--batch", o->batch, "matmuls with --tiling (default: one per diagonal tile)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--dtype", o->dtype, "stationary type (and moving, unless --dtype-moving)")
      ->capture_default_str();
  cmd->add_option("--dtype-moving", o->dtype_moving, "moving type");
  cmd->add_option("--engine", o->engine, "golden, rtl, or cosim (RTL checked against golden)")
      ->capture_default_str()->check(CLI::IsMember({"golden", "rtl", "cosim"}));
  cmd->add_option("--rows", o->rows, "array rows (a built RTL size)")->capture_default_str();
  cmd->add_option("--cols", o->cols, "array columns (a built RTL size)")->capture_default_str();
  cmd->add_option("--seed", o->seed, "seed of the operands and the back-pressure")
      ->capture_default_str();
  cmd->add_option("--stall", o->stall, "chance of back-pressure per cycle on every port")
      ->capture_default_str()->check(CLI::Range(0.0, 0.95));
  cmd->add_flag("--all-classes", o->all_classes,
                "operands from every value class (NaN, Inf, subnormals, ...), not just finite");
  add_waves_options(cmd, o->waves);
  cmd->add_flag("--json", o->json, "print one JSON object");
  add_pe_arith_option(cmd, o->pe_arith);
  cmd->add_option("--threads", o->threads,
                  "RTL: threads stepping the PE array as column slices (0: the array inside the engine, one "
                  "model; default: the machine's cores, up to one per 16 columns, for arrays of 64 columns or more "
                  "built in slices)")
      ->check(CLI::Range(0, tb::kMaxArrayThreads));
  cmd->add_option("--engine-cols", o->engine_cols,
                  "RTL with --threads: the engine's evaluation counted in array columns, which the engine's "
                  "thread then takes fewer of (host speed only; default: the PE arithmetic's, "
                  "tests/README.md \"Issue 52\")")
      ->check(CLI::Range(0, 4096));
  cmd->callback([o] {
    tb::GemmShape shape{
        o->k, o->n, o->m, model::parse_dtype(o->dtype),
        model::parse_dtype(o->dtype_moving.empty() ? o->dtype : o->dtype_moving),
        tb::parse_gemm_mode(o->mode)};
    parse_tiling(o->tiling, shape);
    if (o->batch > 0) shape.batch = o->batch;
    GemmReport r;
    if (o->engine == "golden") r = run_golden(*o, shape);
    else r = run_rtl(*o, shape, o->engine == "cosim");
    const double pe_cycles = static_cast<double>(r.cycles) * o->rows * o->cols;
    // Dense-equivalent MACs: double-row and sparse modes exceed one per PE-cycle.
    const double utilization = r.cycles ? static_cast<double>(r.macs) / pe_cycles : 0.0;
    const double macs_per_cycle = r.cycles ? static_cast<double>(r.macs) / r.cycles : 0.0;
    if (o->json) {
      nlohmann::json j = {{"engine", o->engine}, {"mode", o->mode}, {"tiling", o->tiling},
                          {"batch", shape.batch}, {"k", o->k}, {"n", o->n},
                          {"m", o->m}, {"macs_per_cycle", macs_per_cycle},
                          {"rows", o->rows}, {"cols", o->cols}, {"seed", o->seed},
                          {"cycles", r.cycles}, {"macs", r.macs},
                          {"utilization", utilization}, {"busy_cycles", r.busy},
                          {"psum_writes_compared", r.compared}, {"mismatches", r.mismatches},
                          {"wall_seconds", r.wall}};
      if (o->engine != "golden") {
        j["pe_arith"] = tb::pe_arith_name(o->pe_arith);
        j["threads"] = r.threads;
        if (r.threads > 0) j["slice_cols"] = r.slice_cols;
      }
      if (!r.failure.empty()) j["failure"] = r.failure;
      fmt::print("{}\n", j.dump(2));
    } else {
      fmt::print("gemm {} tiling {} (batch {}) K={} N={} M={} {} x {} on a {}x{} array, "
                 "engine {}, seed {}\n", o->mode, o->tiling, shape.batch, o->k, o->n, o->m,
                 o->dtype,
                 o->dtype_moving.empty() ? o->dtype : o->dtype_moving, o->rows, o->cols,
                 o->engine, o->seed);
      if (o->engine != "golden") {
        fmt::print("  cycles       {}\n", r.cycles);
        fmt::print("  utilization  {:.2f}% of PE-cycles did a (dense-equivalent) MAC, {:.1f} "
                   "MACs per cycle (array busy {:.2f}% of cycles)\n", 100 * utilization,
                   macs_per_cycle, r.cycles ? 100.0 * r.busy / r.cycles : 0.0);
      }
      fmt::print("  MACs         {}\n", r.macs);
      if (o->engine == "cosim")
        fmt::print("  mismatches   {} ({} PSUM writes compared)\n", r.mismatches, r.compared);
      fmt::print("  wall time    {:.3f} s{}\n", r.wall,
                 o->engine == "golden" || r.wall == 0
                     ? ""
                     : fmt::format(" ({:.0f} simulated cycles/s)", r.cycles / r.wall));
    }
    if (!r.failure.empty()) throw Error("gemm: co-simulation mismatch\n" + r.failure);
  });
}

}  // namespace ncore::cli

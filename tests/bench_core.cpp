// Benchmark (never a pass/fail test): every example program on the RTL core and on the golden
// core, side by side in one run: RTL cycles, golden cycles and their ratio; the golden core's
// simulated cycles per wall second with data and timing only (CoreConfig::timing_only, the
// median of three runs of run(), after the tensors are loaded); the RTL core's alone (no
// co-simulation, no waves). Prints the README table of issue 27 (rtl/core/README.md, "Programs
// on the golden core"). With --mix N, instead: N random engine-mix programs
// (test::random_engine_mix, seeds --mix-seed on) at --mix-size, golden against RTL cycles, and
// how many fall inside 5% and 10%, at the timing preset --mix-timing (uniform by default; the
// RTL core takes every cost of trn2 and trn1).
//
//   build/tests/bench_core [--no-rtl] [--only NAME]
//   build/tests/bench_core --mix N [--mix-size 8|128] [--mix-seed S] [--mix-timing uniform|trn2|trn1]

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "model/core/core_model.h"
#include "model/core/program.h"
#include "tb/core/core_sim.h"
#include "tests/bench_golden.h"
#include "tests/core_random_programs.h"

namespace {

using namespace ncore;

struct Golden {
  uint64_t cycles = 0;
  double cycles_per_second = 0;
};

// The median of three runs' speed (test::time_golden); the cycles are the same every time.
Golden run_golden(const model::Program& p, int size, bool timing_only,
                  const model::CoreTiming& timing = model::timing_preset("uniform")) {
  model::CoreConfig cfg = tb::core_config_for_size(size);
  cfg.timing_only = timing_only;
  cfg.clocks = timing.clocks;
  cfg.costs = timing.costs;
  const test::GoldenTimed t = test::time_golden(p, cfg);
  return {t.result.cycles, t.cycles_per_second};
}

std::string grouped(double v) {
  std::string s = fmt::format("{:.0f}", v);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

// Golden against RTL cycles on random engine-mix programs: a table, then the range of the ratios
// and how many are inside 5%.
int run_mix(int count, int size, uint64_t first_seed, const std::string& preset) {
  const model::CoreTiming timing = model::timing_preset(preset);
  fmt::print("| seed | size | timing | RTL cycles | golden cycles | golden / RTL |\n|---|---|---|---|---|---|\n");
  double lo = 1e30, hi = 0;
  int inside = 0, inside10 = 0;
  for (int i = 0; i < count; ++i) {
    const uint64_t seed = first_seed + static_cast<uint64_t>(i);
    model::SplitMix64 rng(seed);
    const model::Program p = test::random_engine_mix(rng, size);
    tb::CoreSimOptions o;
    o.size = size;
    o.cosim = false;
    o.costs = timing.costs;
    o.clocks = timing.clocks;
    const tb::CoreSimResult r = tb::run_core_rtl(p, o);
    if (r.status != model::CoreStatus::kDone || !r.ok)
      throw Error(fmt::format("engine mix seed {}: RTL: {}{}", seed, r.message, r.failure));
    const Golden g = run_golden(p, size, true, timing);
    const double ratio = static_cast<double>(g.cycles) / static_cast<double>(r.cycles);
    lo = std::min(lo, ratio), hi = std::max(hi, ratio);
    inside += std::abs(ratio - 1.0) <= 0.05;
    inside10 += std::abs(ratio - 1.0) <= 0.10;
    fmt::print("| {} | {} | {} | {} | {} | {:.3f} |\n", seed, size, preset, grouped(static_cast<double>(r.cycles)),
               grouped(static_cast<double>(g.cycles)), ratio);
    std::fflush(stdout);
  }
  fmt::print("\ngolden / RTL {:.3f} to {:.3f}; {} of {} inside 5%, {} inside 10%\n", lo, hi, inside, count, inside10);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("the example programs on the RTL and golden cores: cycles and simulation speed");
  bool no_rtl = false;
  std::string only;
  app.add_flag("--no-rtl", no_rtl, "golden core only (the RTL's gemm_bf16_1024 takes minutes)");
  app.add_option("--only", only, "one program (its file name)");
  int mix = 0, mix_size = 8;
  uint64_t mix_seed = 1000;
  app.add_option("--mix", mix, "instead of the examples: this many random engine-mix programs")
      ->check(CLI::Range(0, 100000));
  app.add_option("--mix-size", mix_size, "--mix: the core size (a size the RTL core is built at)")
      ->check(CLI::IsMember(tb::core_rtl_sizes()));
  app.add_option("--mix-seed", mix_seed, "--mix: the first program's seed (then +1 each)");
  std::string mix_timing = "uniform";
  app.add_option("--mix-timing", mix_timing, "--mix: the timing preset of both cores")
      ->check(CLI::IsMember({"uniform", "trn2", "trn1"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    app.exit(e);  // help, or the bad option and what was expected
    return e.get_exit_code() == 0 ? 0 : 1;
  }
  if (mix > 0) {
    try {
      return run_mix(mix, mix_size, mix_seed, mix_timing);
    } catch (const Error& e) {
      fmt::print(stderr, "bench_core: {}\n", e.what());
      return 1;
    }
  }

  struct Case {
    std::string file;
    int size;
  };
  std::vector<Case> cases;
  for (const char* f : {"gemm_bf16_1024.s", "gemm_fp8_double_row.s", "softmax.s", "attention_head.s", "rmsnorm.s"})
    cases.push_back({f, 128});
  for (const char* f : {"small/gemm_8.s", "small/softmax_8.s", "small/psum_writes_8.s", "small/collectives_8.s"})
    cases.push_back({f, 8});
  const std::vector<int> built = tb::core_rtl_sizes();

  fmt::print("| program | size | RTL cycles | golden cycles | golden / RTL | golden cycles/s (data) | "
             "golden cycles/s (timing only) | timing only / data | RTL cycles/s |\n");
  fmt::print("|---|---|---|---|---|---|---|---|---|\n");
  try {
    for (const Case& c : cases) {
      if (!only.empty() && c.file.find(only) == std::string::npos) continue;
      const model::Program p = model::assemble_file(std::string(NCORE_SOURCE_DIR "/tests/programs/") + c.file);
      const Golden data = run_golden(p, c.size, false), timing = run_golden(p, c.size, true);
      if (data.cycles != timing.cycles)
        throw Error(fmt::format("{}: {} cycles with data, {} timing only", c.file, data.cycles, timing.cycles));
      std::string rtl_cycles = "-", ratio = "-", rtl_speed = "-";
      if (!no_rtl && std::find(built.begin(), built.end(), c.size) != built.end()) {
        tb::CoreSimOptions o;
        o.size = c.size;
        o.cosim = false;
        const tb::CoreSimResult r = tb::run_core_rtl(p, o);
        if (r.status != model::CoreStatus::kDone || !r.ok)
          throw Error(fmt::format("{}: RTL: {}{}", c.file, r.message, r.failure));
        rtl_cycles = grouped(static_cast<double>(r.cycles));
        ratio = fmt::format("{:.3f}", static_cast<double>(data.cycles) / static_cast<double>(r.cycles));
        rtl_speed = grouped(static_cast<double>(r.cycles) / r.wall_seconds);
      }
      fmt::print("| {} | {} | {} | {} | {} | {} | {} | {:.1f}x | {} |\n", c.file, c.size, rtl_cycles,
                 grouped(static_cast<double>(data.cycles)), ratio, grouped(data.cycles_per_second),
                 grouped(timing.cycles_per_second), timing.cycles_per_second / data.cycles_per_second, rtl_speed);
      std::fflush(stdout);
    }
  } catch (const Error& e) {
    fmt::print(stderr, "bench_core: {}\n", e.what());
    return 1;
  }
  return 0;
}

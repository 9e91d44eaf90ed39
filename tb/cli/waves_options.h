#pragma once
// --waves FILE --from C --to C: the same three options, with the same meaning, on every command
// that runs RTL (gemm, hbm, vec, run), read into the harness's BenchOptions names.

#include <string>

#include <CLI/CLI.hpp>

#include "tb/common/bench_options.h"

namespace ncore::cli {

struct WavesOptions {
  std::string waves;
  uint64_t from = 0, to = UINT64_MAX;
  void apply(tb::BenchOptions& o) const {
    o.waves = waves;
    o.waves_from = from;
    o.waves_to = to;
  }
};

inline void add_waves_options(CLI::App* cmd, WavesOptions& o) {
  cmd->add_option("--waves", o.waves, "RTL: write an FST waves file here (scripts/waves opens it)");
  cmd->add_option("--from", o.from, "RTL: first cycle in the waves (the cycle numbers of failure reports)");
  cmd->add_option("--to", o.to, "RTL: last cycle in the waves");
}

}  // namespace ncore::cli

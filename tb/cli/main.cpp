// ncore: the command-line front end of the golden model (and, later, of the RTL harnesses).

#include <cstdio>
#include <iostream>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "model/error.h"
#include "tb/cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"ncore: cycle-accurate NeuronCore-v3-style tensor engine, golden model and tools"};
  app.require_subcommand(1);
  ncore::cli::add_cast_command(app);
  ncore::cli::add_decode_command(app);
  ncore::cli::add_matmul_command(app);
  ncore::cli::add_gemm_command(app);
  ncore::cli::add_hbm_command(app);
  ncore::cli::add_vec_command(app);
  ncore::cli::add_run_command(app);
  ncore::cli::add_tlm_command(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const ncore::Error& e) {
    std::fflush(stdout);
    fmt::print(stderr, "ncore: error: {}\n", e.what());
    return 1;
  }
  return 0;
}

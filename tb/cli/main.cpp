// ncore: the command-line front end of the golden model, the RTL harnesses and the TLM system.
// Every failure ends here the same way: "ncore: error: <what>" on stderr and exit status 1
// (help and --version exit 0).

#include <cstdio>
#include <exception>
#include <new>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "model/common/error.h"
#include "tb/cli/commands.h"

namespace {

int report(const std::string& what) {
  std::fflush(stdout);
  fmt::print(stderr, "ncore: error: {}\n", what);
  return 1;
}

}  // namespace

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
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // the command has reported its failure itself
  } catch (const CLI::ParseError& e) {
    return report(fmt::format("{} (ncore --help lists the commands and their options)", e.what()));
  } catch (const ncore::Error& e) {
    return report(e.what());
  } catch (const std::bad_alloc&) {
    return report("out of memory: an input asked for more than this machine has (a limit is missing; please report it)");
  } catch (const std::exception& e) {
    // Anything else is a bug in ncore, still reported as an error rather than an abort.
    return report(fmt::format("internal error: {}", e.what()));
  }
  return 0;
}

#pragma once
// Each subcommand of the ncore tool registers itself on the application here.

#include <CLI/CLI.hpp>

namespace ncore::cli {

void add_cast_command(CLI::App& app);
void add_decode_command(CLI::App& app);
void add_matmul_command(CLI::App& app);
void add_gemm_command(CLI::App& app);
void add_hbm_command(CLI::App& app);
void add_vec_command(CLI::App& app);
void add_run_command(CLI::App& app);  // run, asm, disasm
void add_tlm_command(CLI::App& app);  // tlm info, tlm collective, tlm run

}  // namespace ncore::cli

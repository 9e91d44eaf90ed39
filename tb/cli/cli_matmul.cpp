// ncore matmul: one nc_matmul on the golden model, from hex files or random data.

#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "model/common/error.h"
#include "model/tensor/tensor_engine.h"
#include "tb/cli/commands.h"
#include "tb/cli/hex_io.h"

namespace ncore::cli {

void add_matmul_command(CLI::App& app) {
  struct Options {
    std::optional<int> k, m, n;
    std::string dtype = "bf16", stationary_type, moving_type;
    std::string stationary_file, moving_file, out_file;
    uint64_t seed = 1;
    bool decode = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "matmul", "Run one nc_matmul (stationary[K,M]^T @ moving[K,N] -> PSUM[M,N] in FP32) on "
                "the golden model");
  cmd->add_option("--k", opts->k, "contraction size K (partitions), 1..128");
  cmd->add_option("--m", opts->m, "stationary free size M (output partitions), 1..128");
  cmd->add_option("--n", opts->n, "moving free size N (output elements), 1..512");
  cmd->add_option("--dtype", opts->dtype, "type of both operands")->capture_default_str();
  cmd->add_option("--stationary-type", opts->stationary_type, "type of the stationary operand");
  cmd->add_option("--moving-type", opts->moving_type, "type of the moving operand");
  cmd->add_option("--stationary", opts->stationary_file,
                  "hex file: K lines of M patterns (default: random from --seed)");
  cmd->add_option("--moving", opts->moving_file,
                  "hex file: K lines of N patterns (default: random from --seed)");
  cmd->add_option("--seed", opts->seed, "seed of the random operands")->capture_default_str();
  cmd->add_option("--out", opts->out_file, "write the result here instead of stdout");
  cmd->add_flag("--decode", opts->decode, "print values instead of FP32 hex patterns");
  cmd->callback([opts] {
    const model::DType stationary_type = model::parse_dtype(
        opts->stationary_type.empty() ? opts->dtype : opts->stationary_type);
    const model::DType moving_type =
        model::parse_dtype(opts->moving_type.empty() ? opts->dtype : opts->moving_type);
    if (opts->stationary_file.empty() != opts->moving_file.empty())
      throw Error("matmul: give both --stationary and --moving, or neither (random operands)");

    model::Tile stationary, moving;
    model::SplitMix64 rng(opts->seed);
    if (opts->stationary_file.empty()) {
      if (!opts->k || !opts->m || !opts->n)
        throw Error("matmul: random operands need --k, --m and --n");
      // Shapes are checked by the engine below; reject negatives before allocating.
      for (int v : {*opts->k, *opts->m, *opts->n})
        if (v < 1 || v > 4096) throw Error(fmt::format("matmul: shape {} is out of range", v));
      stationary = model::random_tile(stationary_type, *opts->k, *opts->m, rng);
      moving = model::random_tile(moving_type, *opts->k, *opts->n, rng);
    } else {
      stationary = read_tile(opts->stationary_file, stationary_type);
      moving = read_tile(opts->moving_file, moving_type);
      const auto expect = [](const std::optional<int>& want, int got, const char* field,
                             const std::string& file) {
        if (want && *want != got)
          throw Error(fmt::format("{}: --{} is {} but the file gives {}", file, field, *want, got));
      };
      expect(opts->k, stationary.rows, "k", opts->stationary_file);
      expect(opts->m, stationary.cols, "m", opts->stationary_file);
      expect(opts->k, moving.rows, "k", opts->moving_file);
      expect(opts->n, moving.cols, "n", opts->moving_file);
    }

    model::TensorEngine engine;
    engine.load_stationary(stationary);
    engine.multiply_moving(moving, {});

    std::string text = fmt::format(
        "# nc_matmul K={} M={} N={} stationary={} moving={}{}\n", stationary.rows,
        stationary.cols, moving.cols, model::dtype_name(stationary_type),
        model::dtype_name(moving_type),
        opts->stationary_file.empty() ? fmt::format(" seed={}", opts->seed) : "");
    for (int m = 0; m < stationary.cols; ++m) {
      for (int n = 0; n < moving.cols; ++n) {
        const uint32_t bits = engine.psum(m, 0, n);
        text += n ? " " : "";
        text += opts->decode ? format_value(bits, model::DType::kFp32)
                             : format_pattern(bits, model::DType::kFp32);
      }
      text += '\n';
    }
    if (opts->out_file.empty()) {
      fmt::print("{}", text);
    } else {
      std::ofstream out(opts->out_file);
      if (!(out << text)) throw Error(fmt::format("{}: cannot write the result", opts->out_file));
    }
  });
}

}  // namespace ncore::cli

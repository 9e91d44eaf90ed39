// ncore cast and ncore decode: the numerics library on hex patterns, one per line.

#include <cstdio>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "model/common/error.h"
#include "model/common/numerics.h"
#include "tb/cli/commands.h"
#include "tb/cli/hex_io.h"

namespace ncore::cli {
namespace {

// All of stdin is read and checked before anything is printed, so a bad line leaves no
// half-written output behind.
std::vector<uint32_t> read_patterns(std::istream& in, model::DType type) {
  std::vector<uint32_t> patterns;
  for (const Line& line : read_lines(in)) {
    std::string token = line.text;
    token.erase(0, token.find_first_not_of(" \t\r"));
    token.erase(token.find_last_not_of(" \t\r") + 1);
    patterns.push_back(parse_pattern(token, type, fmt::format("stdin:{}", line.number)));
  }
  return patterns;
}

model::DType type_option(const std::string& value, const char* option) {
  try {
    return model::parse_dtype(value);
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", option, e.what()));
  }
}

}  // namespace

void add_cast_command(CLI::App& app) {
  struct Options {
    std::string from, to, round = "rne";
    uint64_t seed = 1;
    bool saturate = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "cast", "Convert hex bit patterns on stdin from one type to another, one per line");
  cmd->add_option("--from", opts->from, "source type: " + model::dtype_list())->required();
  cmd->add_option("--to", opts->to, "target type: " + model::dtype_list())->required();
  cmd->add_option("--round", opts->round, "rne (round to nearest even) or sr (stochastic)")
      ->check(CLI::IsMember({"rne", "sr"}));
  cmd->add_option("--seed", opts->seed, "seed of the stochastic-rounding random bits");
  cmd->add_flag("--sat,!--no-sat", opts->saturate,
                "saturate overflow and Inf to the largest finite value (default: --no-sat)");
  cmd->callback([opts] {
    const model::DType from = type_option(opts->from, "--from");
    const model::DType to = type_option(opts->to, "--to");
    const model::CastMode mode{opts->round == "sr" ? model::Rounding::kStochastic
                                                   : model::Rounding::kNearestEven,
                               opts->saturate};
    model::SplitMix64 rng(opts->seed);
    for (uint32_t bits : read_patterns(std::cin, from)) {
      const uint32_t random_bits = mode.rounding == model::Rounding::kStochastic ? rng.next32() : 0;
      fmt::print("{}\n", format_pattern(model::cast(from, bits, to, mode, random_bits), to));
    }
  });
}

// GTKWave's translate-filter protocol: one value in, one line out, flushed at once, forever.
// Values GTKWave cannot show as hex (x, z, mixed) pass through unchanged.
void stream_values(model::DType type) {
  for (std::string line; std::getline(std::cin, line);) {
    std::string token = line;
    token.erase(0, token.find_first_not_of(" \t\r"));
    token.erase(token.find_last_not_of(" \t\r") + 1);
    try {
      fmt::print("{}\n", format_value(parse_pattern(token, type, "stdin"), type));
    } catch (const Error&) {
      fmt::print("{}\n", token);
    }
    std::fflush(stdout);
  }
}

void add_decode_command(CLI::App& app) {
  struct Options {
    std::string type;
    bool stream = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "decode", "Print the value and class of hex bit patterns on stdin, one per line");
  cmd->add_option("--type", opts->type, "type of the patterns: " + model::dtype_list())
      ->required();
  cmd->add_flag("--stream", opts->stream,
                "GTKWave translate filter: value only, each line answered at once, bad "
                "lines echoed instead of failing");
  cmd->callback([opts] {
    const model::DType type = type_option(opts->type, "--type");
    if (opts->stream) return stream_values(type);
    for (uint32_t bits : read_patterns(std::cin, type))
      fmt::print("{} {}\n", format_value(bits, type),
                 model::value_class_name(model::classify(type, bits)));
  });
}

}  // namespace ncore::cli

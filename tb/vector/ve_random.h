#pragma once
// Random vector-engine programs for tests, the CLI and the benchmark: legal instructions of
// every opcode, type, ALU operation, rounding mode, partition range and 1-4-D access pattern
// (negative strides included), with their source data (every value class of the type) written
// into the initial memories; optionally an illegal field now and then.

#include <cstdint>
#include <optional>
#include <vector>

#include "model/vector/vector_engine.h"

namespace ncore::tb {

struct VeGenOptions {
  int max_elements = 48;                 // free size of an instruction's source, at most
  std::optional<isa::Opcode> opcode; // only this opcode; otherwise any
  std::optional<model::DType> in_type;   // force the input types (float class), and
  std::optional<model::DType> out_type;  // the output type
  double psum_share = 0.2;               // chance an operand lives in PSUM
  double illegal = 0.0;                  // chance an instruction gets one illegal field
  std::optional<int> partitions;         // this many partitions (from a legal start); else any
};

// Appends `count` instructions to `program`, writing their inputs into `mem`.
void random_ve_program(const model::VeConfig& cfg, model::VeMemory& mem,
                       model::SplitMix64& rng, int count, const VeGenOptions& gen,
                       std::vector<model::VeInstruction>& program);

// One legal instruction over contiguous data: `elements` elements of src0 (and src1) at
// the start of SBUF, the result after them; for directed tests, the CLI and the benchmark.
model::VeInstruction simple_ve_instruction(const model::VeConfig& cfg, isa::Opcode op,
                                           model::DType in, model::DType out,
                                           uint32_t elements);

}  // namespace ncore::tb

#pragma once
// Reading and writing bit patterns as hex text, with errors that name the file and line.

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

#include "model/common/numerics.h"
#include "model/tensor/tensor_engine.h"

namespace ncore::cli {

// One non-blank line of input: its 1-based number and its text with any '#' comment removed.
struct Line {
  int number;
  std::string text;
};
std::vector<Line> read_lines(std::istream& in);

// Parses one hex pattern ("3f80" or "0x3f80") that must fit in `type`'s storage.
// `where` is "file:line" for the error message.
uint32_t parse_pattern(const std::string& token, model::DType type, const std::string& where);

// "3f80": zero-padded to the type's width, lower case.
std::string format_pattern(uint32_t bits, model::DType type);

// The value as a person reads it: "-inf", "nan", "-0", or the shortest decimal that
// round-trips (an integer for the integer types).
std::string format_value(uint32_t bits, model::DType type);

// A tile from a text file: one row per line, patterns separated by white space.
model::Tile read_tile(const std::string& path, model::DType type);

}  // namespace ncore::cli

#include "tb/cli/hex_io.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "model/common/error.h"

namespace ncore::cli {

std::vector<Line> read_lines(std::istream& in) {
  std::vector<Line> lines;
  std::string text;
  for (int number = 1; std::getline(in, text); ++number) {
    if (const auto hash = text.find('#'); hash != std::string::npos) text.resize(hash);
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    lines.push_back({number, text});
  }
  return lines;
}

uint32_t parse_pattern(const std::string& token, model::DType type, const std::string& where) {
  std::string digits = token;
  if (digits.size() > 2 && digits[0] == '0' && (digits[1] == 'x' || digits[1] == 'X'))
    digits = digits.substr(2);
  const int bits = model::storage_bits(type);
  const bool hex = !digits.empty() &&
                   digits.find_first_not_of("0123456789abcdefABCDEF") == std::string::npos;
  if (!hex)
    throw Error(fmt::format("{}: '{}' is not a hex bit pattern (expected up to {} hex digits "
                            "for {})", where, token, bits / 4, model::dtype_name(type)));
  const size_t first = digits.find_first_not_of('0');
  const size_t significant = first == std::string::npos ? 0 : digits.size() - first;
  const uint64_t value = significant > 8 ? ~uint64_t{0} : std::stoull(digits, nullptr, 16);
  if (value > model::storage_mask(type))
    throw Error(fmt::format("{}: '{}' does not fit in the {} bits of {}", where, token, bits,
                            model::dtype_name(type)));
  return static_cast<uint32_t>(value);
}

std::string format_pattern(uint32_t bits, model::DType type) {
  return fmt::format("{:0{}x}", bits & model::storage_mask(type), model::storage_bits(type) / 4);
}

std::string format_value(uint32_t bits, model::DType type) {
  if (!model::is_float(type)) {
    const int n = model::storage_bits(type);
    const uint32_t masked = bits & model::storage_mask(type);
    const int64_t v = static_cast<int64_t>(masked ^ (1u << (n - 1))) - (int64_t{1} << (n - 1));
    return fmt::format("{}", v);
  }
  const float v = model::to_float(type, bits);
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0.0f) return std::signbit(v) ? "-0" : "0";
  return fmt::format("{}", v);  // shortest representation that round-trips
}

model::Tile read_tile(const std::string& path, model::DType type) {
  std::ifstream in(path);
  if (!in) throw Error(fmt::format("{}: cannot open the file", path));
  model::Tile tile;
  tile.dtype = type;
  for (const Line& line : read_lines(in)) {
    const std::string where = fmt::format("{}:{}", path, line.number);
    std::istringstream tokens(line.text);
    std::vector<uint32_t> row;
    for (std::string token; tokens >> token;) row.push_back(parse_pattern(token, type, where));
    if (tile.rows == 0) {
      tile.cols = static_cast<int>(row.size());
    } else if (static_cast<int>(row.size()) != tile.cols) {
      throw Error(fmt::format("{}: expected {} patterns in this row, as in the first row, "
                              "found {}", where, tile.cols, row.size()));
    }
    tile.bits.insert(tile.bits.end(), row.begin(), row.end());
    ++tile.rows;
  }
  if (tile.rows == 0) throw Error(fmt::format("{}: no rows (the file is empty)", path));
  return tile;
}

}  // namespace ncore::cli

#include "model/common/npy.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/common/error.h"

namespace ncore::model {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicBytes = 6;

// The header dict, parsed strictly: string keys; values a string, True/False, or a tuple of
// non-negative integers.
class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& path) : s_(text), path_(path) {}

  NpyArray parse() {
    NpyArray a;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (!peek('}')) {
      const std::string key = string_literal();
      expect(':');
      if (key == "descr") {
        a.descr = string_literal();
        have_descr = true;
      } else if (key == "fortran_order") {
        if (boolean()) fail("'fortran_order': False (C order)", "True");
        have_order = true;
      } else if (key == "shape") {
        a.shape = tuple();
        have_shape = true;
      } else {
        fail("the keys 'descr', 'fortran_order' and 'shape'", fmt::format("'{}'", key));
      }
      if (!peek('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != s_.size()) fail("the end of the header after '}'", fmt::format("'{}'", s_.substr(pos_, 16)));
    if (!have_descr || !have_order || !have_shape)
      fail("the keys 'descr', 'fortran_order' and 'shape'", fmt::format("a header without '{}'",
                                                                         !have_descr ? "descr"
                                                                         : !have_order ? "fortran_order"
                                                                                       : "shape"));
    return a;
  }

 private:
  [[noreturn]] void fail(const std::string& expected, const std::string& found) const {
    throw Error(fmt::format("{}: .npy header at byte {}: expected {}, found {}", path_, pos_, expected, found));
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  std::string here() const { return pos_ < s_.size() ? fmt::format("'{}'", s_[pos_]) : "the end of the header"; }
  void expect(char c) {
    if (!peek(c)) fail(fmt::format("'{}'", c), here());
    ++pos_;
  }
  std::string string_literal() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("a quoted string", here());
    const char quote = s_[pos_++];
    const size_t end = s_.find(quote, pos_);
    if (end == std::string::npos) fail("a closing quote", "the end of the header");
    std::string out = s_.substr(pos_, end - pos_);
    pos_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    for (const auto& [word, value] : {std::pair<const char*, bool>{"True", true}, {"False", false}}) {
      const std::string w(word);
      if (s_.compare(pos_, w.size(), w) == 0) {
        pos_ += w.size();
        return value;
      }
    }
    fail("True or False", here());
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (!peek(')')) {
      skip_space();
      const size_t start = pos_;
      int64_t v = 0;
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
        if (v > (INT64_MAX - 9) / 10) fail("a dimension below 2^63", "a longer number");
        v = v * 10 + (s_[pos_++] - '0');
      }
      if (pos_ == start) fail("a dimension (a non-negative integer)", here());
      dims.push_back(v);
      if (!peek(')')) expect(',');
    }
    expect(')');
    return dims;
  }

  const std::string& s_;
  const std::string& path_;
  size_t pos_ = 0;
};

}  // namespace

uint64_t NpyArray::elements() const {
  uint64_t n = 1;
  for (int64_t d : shape) n *= static_cast<uint64_t>(d);
  return n;
}

int npy_itemsize(const std::string& descr) {
  if (descr.size() < 3 || !std::all_of(descr.begin() + 2, descr.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
    return 0;
  return std::stoi(descr.substr(2));
}

NpyArray read_npy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(fmt::format("{}: cannot open the .npy file", path));
  std::error_code ec;
  const uint64_t file_bytes = std::filesystem::file_size(path, ec);
  if (ec) throw Error(fmt::format("{}: cannot read the .npy file's size ({})", path, ec.message()));
  char magic[kMagicBytes + 2] = {};
  if (!in.read(magic, sizeof magic) || std::string(magic, kMagicBytes) != std::string(kMagic, kMagicBytes))
    throw Error(fmt::format("{}: expected a .npy file (it starts with \\x93NUMPY), found other bytes", path));
  const int major = static_cast<uint8_t>(magic[6]), minor = static_cast<uint8_t>(magic[7]);
  if (major < 1 || major > 3 || minor != 0)
    throw Error(fmt::format("{}: expected .npy format version 1.0, 2.0 or 3.0, found {}.{}", path, major, minor));
  uint8_t len_bytes[4] = {};
  const int len_size = major == 1 ? 2 : 4;
  if (!in.read(reinterpret_cast<char*>(len_bytes), len_size))
    throw Error(fmt::format("{}: expected the .npy header length, found the end of the file", path));
  uint64_t header_len = 0;
  for (int i = len_size - 1; i >= 0; --i) header_len = header_len << 8 | len_bytes[i];
  const uint64_t data_start = kMagicBytes + 2 + static_cast<uint64_t>(len_size) + header_len;
  if (data_start > file_bytes)
    throw Error(fmt::format("{}: expected a header of {} bytes, found a file of {} bytes", path, header_len,
                            file_bytes));
  std::string header(header_len, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_len));
  NpyArray a = HeaderParser(header, path).parse();

  const int itemsize = npy_itemsize(a.descr);
  if (itemsize <= 0 || (a.descr[0] != '<' && a.descr[0] != '|') || (a.descr[0] == '|' && itemsize != 1))
    throw Error(fmt::format("{}: expected a little-endian numeric descr such as '<f4' or '|u1', found '{}'", path,
                            a.descr));
  uint64_t bytes = static_cast<uint64_t>(itemsize);
  for (int64_t d : a.shape)
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      throw Error(fmt::format("{}: expected a shape that fits in memory, found one of more than 2^64 bytes", path));
  if (bytes != file_bytes - data_start)
    throw Error(fmt::format("{}: expected {} bytes of data for shape ({}) of '{}', found {}", path, bytes,
                            fmt::join(a.shape, ", "), a.descr, file_bytes - data_start));
  a.data.resize(bytes);
  if (!in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(bytes)))
    throw Error(fmt::format("{}: expected {} bytes of data, found fewer", path, bytes));
  return a;
}

void write_npy(const std::string& path, const NpyArray& a) {
  const int itemsize = npy_itemsize(a.descr);
  if (itemsize <= 0 || a.data.size() != a.elements() * static_cast<uint64_t>(itemsize))
    throw Error(fmt::format("{}: {} bytes do not make an array of shape ({}) of '{}'", path, a.data.size(),
                            fmt::join(a.shape, ", "), a.descr));
  // Python's tuples: (), (3,), (2, 3).
  const std::string dims =
      a.shape.size() == 1 ? fmt::format("{},", a.shape[0]) : fmt::format("{}", fmt::join(a.shape, ", "));
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", a.descr, dims);
  // Padded with spaces and a newline so that the data starts on a multiple of 64 bytes.
  const bool v1 = header.size() + 1 + kMagicBytes + 4 <= 65535;
  const size_t prefix = kMagicBytes + 2 + (v1 ? 2 : 4);
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header.push_back('\n');
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(fmt::format("{}: cannot open for writing", path));
  out.write(kMagic, kMagicBytes);
  const char version[2] = {static_cast<char>(v1 ? 1 : 2), 0};
  out.write(version, 2);
  const uint64_t len = header.size();
  for (int i = 0; i < (v1 ? 2 : 4); ++i) out.put(static_cast<char>(len >> (8 * i)));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(a.data.data()), static_cast<std::streamsize>(a.data.size()));
  if (!out) throw Error(fmt::format("{}: cannot write the .npy file", path));
}

}  // namespace ncore::model

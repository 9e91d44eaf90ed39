// model/common/npy.h: the .npy reader and writer at the edges numpy's files reach (the tool's
// round trip against numpy itself is tests/npy_io.py).

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "model/common/error.h"
#include "model/common/npy.h"

namespace ncore::model {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("ncore_test_npy_" + name)).string();
}

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(Npy, WritesNumpysHeaderAndReadsItBack) {
  // Shapes as Python writes tuples: (), (3,), (2, 3); the data starts at a multiple of 64.
  const struct {
    std::vector<int64_t> shape;
    std::string tuple;
  } cases[] = {{{}, "()"}, {{3}, "(3,)"}, {{2, 3}, "(2, 3)"}};
  for (const auto& c : cases) {
    NpyArray a;
    a.descr = "<i2";
    a.shape = c.shape;
    for (uint64_t i = 0; i < a.elements() * 2; ++i) a.data.push_back(static_cast<uint8_t>(i * 7 + 1));
    const std::string path = temp_path("roundtrip.npy");
    write_npy(path, a);
    const std::string text = file_text(path);
    const std::string header = "{'descr': '<i2', 'fortran_order': False, 'shape': " + c.tuple + ", }";
    EXPECT_EQ(text.substr(10, header.size()), header);
    EXPECT_EQ((text.size() - a.data.size()) % 64, 0u);
    const NpyArray b = read_npy(path);
    EXPECT_EQ(b.descr, a.descr);
    EXPECT_EQ(b.shape, a.shape);
    EXPECT_EQ(b.data, a.data);
    std::remove(path.c_str());
  }
}

TEST(Npy, ReadsFormatVersionTwo) {
  // Version 2.0: a 4-byte header length (numpy writes it for headers past 64 KiB).
  const std::string header = "{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }\n";
  std::string file = std::string("\x93NUMPY\x02\x00", 8);
  for (int i = 0; i < 4; ++i) file.push_back(static_cast<char>(header.size() >> (8 * i)));
  file += header + "abcd";
  const std::string path = temp_path("v2.npy");
  std::ofstream(path, std::ios::binary) << file;
  const NpyArray a = read_npy(path);
  EXPECT_EQ(a.shape, std::vector<int64_t>{4});
  EXPECT_EQ(std::string(a.data.begin(), a.data.end()), "abcd");
  std::remove(path.c_str());
}

TEST(Npy, RefusesWhatItCannotHoldWithoutAllocatingIt) {
  // A shape of 2^62 elements in a tiny file: refused from the file's size, never allocated.
  const std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,), }\n";
  std::string file = std::string("\x93NUMPY\x01\x00", 8);
  file.push_back(static_cast<char>(header.size()));
  file.push_back(0);
  file += header;
  const std::string path = temp_path("huge.npy");
  std::ofstream(path, std::ios::binary) << file;
  try {
    read_npy(path);
    FAIL() << "a 2^64-byte shape was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a shape that fits in memory"), std::string::npos) << e.what();
  }
  std::remove(path.c_str());
}

TEST(Npy, WriterRefusesDataThatIsNotTheShape) {
  NpyArray a;
  a.descr = "<f4";
  a.shape = {2, 2};
  a.data.assign(12, 0);
  EXPECT_THROW(write_npy(temp_path("bad.npy"), a), Error);
}

}  // namespace
}  // namespace ncore::model

#pragma once
// NumPy's .npy format (format versions 1.0, 2.0 and 3.0): a C-order array of one dtype, its
// bytes as they are in memory. ncore reads and writes little-endian arrays only, never a
// Fortran-order one, and no object arrays.
//
// The header is a Python dict literal, {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }:
// parsed here (numpy's own writer makes exactly this; nothing else is accepted).

#include <cstdint>
#include <string>
#include <vector>

namespace ncore::model {

struct NpyArray {
  std::string descr;            // numpy's type string: '<f4', '<u2', '|u1', ...
  std::vector<int64_t> shape;   // () for a scalar
  std::vector<uint8_t> data;    // elements * itemsize bytes, C order
  uint64_t elements() const;
};

// Reads `path`. Anything malformed (cannot open, not .npy, an unknown version, a header that is
// not numpy's dict, Fortran order, a descr of the wrong byte order or size, data shorter or
// longer than the shape says) throws ncore::Error naming the file, what was expected and what
// was found. Allocates no more than the file holds.
NpyArray read_npy(const std::string& path);

// Writes `array` to `path` (format 1.0, or 2.0 when the header needs it); throws ncore::Error
// when the file cannot be written or the data does not match the shape and descr.
void write_npy(const std::string& path, const NpyArray& array);

// Bytes per element of a descr such as '<f4' (the digits after the type letter).
int npy_itemsize(const std::string& descr);

}  // namespace ncore::model

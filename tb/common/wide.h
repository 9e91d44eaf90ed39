#pragma once
// Little-endian arrays of 64-bit words (an HBM burst, a packed instruction from
// isa::pack_instr) to and from a Verilated wide port (32-bit words, least significant first).

#include <array>
#include <cstddef>
#include <cstdint>

#include "model/hbm/hbm.h"

namespace ncore::tb {

// Fills every 32-bit word of the port; words past the array are zero.
template <size_t N, class W>
void to_wide(const std::array<uint64_t, N>& d, W& w) {
  constexpr size_t words = sizeof(W) / sizeof(uint32_t);
  for (size_t i = 0; i < words; ++i)
    w[i] = i / 2 < N ? static_cast<uint32_t>(d[i / 2] >> (32 * (i % 2))) : 0u;
}

template <class W>
model::HbmData from_wide(const W& w) {
  model::HbmData d;
  for (int i = 0; i < 4; ++i) d[i] = (static_cast<uint64_t>(w[2 * i + 1]) << 32) | w[2 * i];
  return d;
}

}  // namespace ncore::tb

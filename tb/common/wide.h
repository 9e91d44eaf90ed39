#pragma once
// A 32-byte HBM burst (four 64-bit words) to and from a Verilated 256-bit port (eight 32-bit
// words, least significant first).

#include "model/hbm/hbm.h"

namespace ncore::tb {

template <class W>
void to_wide(const model::HbmData& d, W& w) {
  for (int i = 0; i < 4; ++i) {
    w[2 * i] = static_cast<uint32_t>(d[i]);
    w[2 * i + 1] = static_cast<uint32_t>(d[i] >> 32);
  }
}

template <class W>
model::HbmData from_wide(const W& w) {
  model::HbmData d;
  for (int i = 0; i < 4; ++i) d[i] = (static_cast<uint64_t>(w[2 * i + 1]) << 32) | w[2 * i];
  return d;
}

}  // namespace ncore::tb

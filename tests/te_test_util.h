#pragma once
// Shared by the tensor-engine co-simulation tests.

#include <cstdlib>
#include <string>
#include <vector>

#include "model/numerics.h"
#include "model/sbuf.h"
#include "model/tensor_engine.h"
#include "tb/tensor/te_sim.h"

namespace ncore::test {

inline const std::vector<model::DType> kInputTypes = {
    model::DType::kFp32, model::DType::kTf32, model::DType::kBf16,
    model::DType::kFp16, model::DType::kE4m3, model::DType::kE5m2};

// Harness options from a seed and a back-pressure probability; NCORE_WAVES (and
// NCORE_WAVES_FROM / NCORE_WAVES_TO) add an FST dump.
inline tb::TeSimOptions options(uint64_t seed, double stall) {
  tb::TeSimOptions o;
  o.seed = seed;
  o.cmd_stall = stall;
  o.sbuf_stall = stall;
  if (const char* w = std::getenv("NCORE_WAVES")) o.waves = w;
  if (const char* f = std::getenv("NCORE_WAVES_FROM")) o.wave_from = std::strtoull(f, nullptr, 0);
  if (const char* t = std::getenv("NCORE_WAVES_TO")) o.wave_to = std::strtoull(t, nullptr, 0);
  return o;
}

// The modes one LoadStationary can take, by name (for bins and messages).
inline std::string mode_name(const model::TeModes& m) {
  if (m.double_row) return "double-row";
  if (m.transpose) return "transpose";
  if (m.sparsity != model::TeSparsity::kDense)
    return "sparse-4:" + std::to_string(model::sparsity_group(m.sparsity));
  return "dense";
}

inline void set_modes(model::TeInstruction& i, const model::TeModes& m) {
  i.double_row = m.double_row;
  i.transpose = m.transpose;
  i.sparsity = m.sparsity;
}

// Appends an LS in `modes` and `mms` MMs that use it, operands of every value class written
// to the SBUF from `addr` on (advanced past them). Shapes are random within the array:
// P partitions (a multiple of 4 when sparse), M columns, N up to 48. A transpose's moving
// tile is the identity half the time (a true transpose) and random otherwise (the
// last-nonzero-row rule); its MMs overwrite, at odd and even 16-bit offsets.
inline void append_mode_program(int rows, int cols, const model::TeModes& modes,
                                model::DType ts, model::DType tm, int mms, model::Sbuf& sbuf,
                                model::SplitMix64& rng, uint32_t& addr,
                                std::vector<model::TeInstruction>& program) {
  const bool sparse = modes.sparsity != model::TeSparsity::kDense;
  const int group = model::sparsity_group(modes.sparsity);
  const int p = sparse ? 4 * (1 + static_cast<int>(rng.below(rows / 4)))
                       : 1 + static_cast<int>(rng.below(rows));
  const int m = 1 + static_cast<int>(rng.below(cols));
  const int st_bytes = model::storage_bits(ts) / 8, mv_bytes = model::storage_bits(tm) / 8;
  const auto align = [&](uint32_t a) { return (a + 3) / 4 * 4; };
  const model::Tile st = model::random_tile(ts, modes.double_row ? 2 * p : p, m, rng);
  addr = align(addr);
  model::write_te_operand(sbuf, st, modes, true, addr, st_bytes);
  auto ls = model::load_stationary(ts, p, m, addr, st_bytes);
  set_modes(ls, modes);
  addr += static_cast<uint32_t>(st.rows / p * m * st_bytes);
  if (sparse) {
    model::Tile tags(model::DType::kInt16, p, m);
    for (auto& t : tags.bits) t = rng.below(4) == 0 ? rng.below(16) : rng.below(group);
    addr = align(addr);
    model::write_te_tags(sbuf, tags, addr);
    ls.tag_addr = addr;
    addr += static_cast<uint32_t>(2 * ((m + 3) / 4));
  }
  program.push_back(ls);
  for (int i = 0; i < mms; ++i) {
    const bool identity = modes.transpose && rng.below(2) == 0;
    const int n = identity ? p : 1 + static_cast<int>(rng.below(48));
    const int k_mv = modes.double_row ? 2 * p : sparse ? p / 4 * group : p;
    model::Tile mv = model::random_tile(tm, k_mv, n, rng);
    if (identity) {
      for (int r = 0; r < p; ++r)
        for (int c = 0; c < n; ++c)
          mv.at(r, c) = r == c ? model::from_fp32(0x3F800000u, tm, {}) : 0u;
    }
    addr = align(addr);
    model::write_te_operand(sbuf, mv, modes, false, addr, mv_bytes);
    const int offset = static_cast<int>(rng.below(64));
    auto mm = model::multiply_moving(tm, p, n, addr, mv_bytes, static_cast<int>(rng.below(8)),
                                     offset, !modes.transpose && i > 0 && rng.below(2));
    set_modes(mm, modes);
    addr += static_cast<uint32_t>(k_mv / p * n * mv_bytes);
    program.push_back(mm);
  }
}

}  // namespace ncore::test

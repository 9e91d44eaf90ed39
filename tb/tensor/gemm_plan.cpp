#include "tb/tensor/gemm_plan.h"

#include <algorithm>

#include <fmt/format.h>

#include "model/error.h"

namespace ncore::tb {

namespace {

// A value near 1 (both signs), so long sums stay finite and informative.
uint32_t ordinary_value(model::DType t, model::SplitMix64& rng) {
  const float v = (0.25f + static_cast<float>(rng.below(1u << 20)) / (1u << 20)) *
                  (rng.below(2) ? -1.0f : 1.0f);
  return model::from_fp32(model::float_to_bits(v), t, {});
}

}  // namespace

GemmPlan plan_gemm(const GemmShape& s, int rows, int cols, model::Sbuf& sbuf,
                   model::SplitMix64& rng, bool all_classes) {
  constexpr int kBankElems = 512, kBanks = 8;
  const int st_bytes = model::storage_bits(s.stationary_type) / 8;
  const int mv_bytes = model::storage_bits(s.moving_type) / 8;
  const int k_blocks = (s.k + rows - 1) / rows;
  const uint64_t st_block_bytes = static_cast<uint64_t>(s.stationary_free) * st_bytes;
  const uint64_t mv_block_bytes = static_cast<uint64_t>(s.moving_free) * mv_bytes;
  const uint64_t st_base = 0, mv_base = k_blocks * st_block_bytes;
  const uint64_t mv_base_aligned = (mv_base + 3) / 4 * 4;
  const uint64_t needed = mv_base_aligned + k_blocks * mv_block_bytes;
  if (needed > sbuf.bytes_per_partition())
    throw Error(fmt::format("gemm: operands need {} bytes per SBUF partition, the SBUF has {}",
                            needed, sbuf.bytes_per_partition()));

  // Operands: K block kb lives on partitions 0..rows-1 at its own address.
  auto value = [&](model::DType t) {
    return all_classes ? model::random_value(t, rng) : ordinary_value(t, rng);
  };
  for (int kb = 0; kb < k_blocks; ++kb) {
    const int k_here = std::min(rows, s.k - kb * rows);
    for (int p = 0; p < k_here; ++p) {
      for (int j = 0; j < s.stationary_free; ++j)
        sbuf.write(p, static_cast<uint32_t>(st_base + kb * st_block_bytes + j * st_bytes),
                   st_bytes, value(s.stationary_type));
      for (int j = 0; j < s.moving_free; ++j)
        sbuf.write(p, static_cast<uint32_t>(mv_base_aligned + kb * mv_block_bytes + j * mv_bytes),
                   mv_bytes, value(s.moving_type));
    }
  }

  GemmPlan plan;
  const int n_chunks = (s.moving_free + kBankElems - 1) / kBankElems;
  for (int c0 = 0; c0 < s.stationary_free; c0 += cols) {
    const int m_here = std::min(cols, s.stationary_free - c0);
    for (int g0 = 0; g0 < n_chunks; g0 += kBanks) {  // at most 8 PSUM banks per pass
      const int g1 = std::min(n_chunks, g0 + kBanks);
      for (int kb = 0; kb < k_blocks; ++kb) {
        const int k_here = std::min(rows, s.k - kb * rows);
        plan.program.push_back(model::load_stationary(
            s.stationary_type, k_here, m_here,
            static_cast<uint32_t>(st_base + kb * st_block_bytes + c0 * st_bytes), st_bytes));
        for (int g = g0; g < g1; ++g) {
          const int n0 = g * kBankElems;
          const int n_here = std::min(kBankElems, s.moving_free - n0);
          plan.program.push_back(model::multiply_moving(
              s.moving_type, k_here, n_here,
              static_cast<uint32_t>(mv_base_aligned + kb * mv_block_bytes + n0 * mv_bytes),
              mv_bytes, g - g0, 0, kb > 0));
          plan.macs += static_cast<uint64_t>(k_here) * m_here * n_here;
        }
      }
    }
  }
  return plan;
}

}  // namespace ncore::tb

// The DMA engines' RTL against the HBM reference controller and an SBUF model: contiguous and
// 3-D strided transfers both ways, scatter/gather lists, a round trip through HBM within one
// engine, every refusal code, and random lists on all sixteen engines from a seed
// (NCORE_SEED=S reruns one). Every byte the descriptors touch is compared at the end.

#include <cstdlib>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/dma/dma.h"
#include "model/common/error.h"
#include "model/common/numerics.h"
#include "tb/dma/dma_sim.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::DmaDescriptor;
using model::DmaError;
using tb::DmaList;

constexpr uint64_t kRegionHbm = 4ull << 20;                     // per engine
constexpr uint64_t kRegionSbuf = model::kDmaSbufBytes / 16;     // per engine

DmaDescriptor contiguous(bool to_hbm, uint64_t hbm, uint64_t sbuf, uint64_t bytes) {
  DmaDescriptor d;
  d.to_hbm = to_hbm;
  d.hbm_addr = hbm;
  d.sbuf_addr = sbuf;
  d.bytes = bytes;
  return d;
}

tb::DmaSimOptions options(uint64_t seed, double stall) {
  tb::DmaSimOptions o;
  o.seed = seed;
  o.stall = stall;
  if (const char* w = std::getenv("NCORE_WAVES")) o.waves = w;
  return o;
}

void expect_clean(const tb::DmaSimResult& r, size_t lists) {
  ASSERT_TRUE(r.ok) << r.failure;
  EXPECT_EQ(r.lists_done, lists);
  EXPECT_GT(r.sbuf_checked + r.hbm_checked, 0u) << "nothing was compared";
}

// A transposing load: HBM [rows, cols] of 2-byte elements into SBUF, column c of row r at
// partition p0 + c, byte 2r of the row (the reference: model::dma_transpose_block).
DmaDescriptor transposing(uint64_t hbm, uint64_t partition, uint64_t offset, uint64_t rows, uint64_t cols) {
  DmaDescriptor d = contiguous(false, hbm, partition * 229376 + offset, 2 * cols);
  d.transpose = true;
  d.count1 = rows;
  d.hbm_stride1 = 2 * cols + 32 * (rows % 3);  // rows apart in HBM now and then
  d.sbuf_stride1 = 0;
  return d;
}

TEST(DmaRtl, SixteenEnginesLoadSixtyFourKibEach) {
  std::vector<DmaList> lists;
  for (int e = 0; e < 16; ++e)
    lists.push_back({e, {contiguous(false, e * kRegionHbm, e * kRegionSbuf, 65536)}});
  const auto r = tb::run_dma_rtl(lists, options(1, 0.0));
  expect_clean(r, 16);
  EXPECT_EQ(r.bursts, 16u * 2048);
  EXPECT_EQ(r.sbuf_checked, 16u * 2048);
  EXPECT_EQ(r.err_code, 0);
}

TEST(DmaRtl, StridedThreeDimensionalTransfersBothWays) {
  DmaDescriptor load;  // 3 planes x 5 rows x 96 bytes, gathered from strided HBM
  load.hbm_addr = 0x10000;
  load.sbuf_addr = 229376 * 3 + 64;
  load.bytes = 96;
  load.count1 = 5;
  load.count2 = 3;
  load.hbm_stride1 = 4096 + 32;
  load.hbm_stride2 = 1 << 16;
  load.sbuf_stride1 = 229376;  // one row per partition
  load.sbuf_stride2 = 128;
  DmaDescriptor store = load;  // scattered back to HBM from another SBUF place
  store.to_hbm = true;
  store.hbm_addr = 0x200000;
  store.sbuf_addr = 229376 * 40;
  store.hbm_stride1 = 96;
  store.hbm_stride2 = 96 * 5;
  const auto r = tb::run_dma_rtl({{2, {load}}, {9, {store}}}, options(2, 0.3));
  expect_clean(r, 2);
  EXPECT_EQ(r.bursts, 2u * 3 * 5 * 3);
}

// One engine: SBUF -> HBM, then the same HBM back into another SBUF place, then a gather list:
// descriptors of an engine are ordered, so the load reads what the store wrote.
TEST(DmaRtl, RoundTripAndScatterGatherListsKeepOrderWithinAnEngine) {
  std::vector<DmaList> lists = {
      {5, {contiguous(true, 0x400000, 0x1000, 8192),
           contiguous(false, 0x400000, 0x80000, 8192)}},
      {5, {contiguous(false, 0x400000 + 4096, 0x90000, 1024),
           contiguous(false, 0x400000, 0x91000, 512), contiguous(true, 0x500000, 0x80000, 2048)}},
  };
  const auto r = tb::run_dma_rtl(lists, options(3, 0.2));
  expect_clean(r, 2);
}

TEST(DmaRtl, IllegalDescriptorsAreRefusedWithTheirCode) {
  const uint64_t hbm = model::hbm_capacity_bytes(1);
  struct Case {
    DmaDescriptor d;
    DmaError code;
  };
  std::vector<Case> cases;
  DmaDescriptor d = contiguous(false, 0, 0, 64);
  d.bytes = 0;
  cases.push_back({d, DmaError::kZero});
  d = contiguous(false, 16, 0, 64);
  cases.push_back({d, DmaError::kAlign});
  d = contiguous(false, 0, 0, 64);
  d.sbuf_stride1 = 8;
  cases.push_back({d, DmaError::kAlign});
  d = contiguous(false, hbm - 32, 0, 64);
  cases.push_back({d, DmaError::kHbmRange});
  d = contiguous(true, 0, model::kDmaSbufBytes - 32, 64);
  cases.push_back({d, DmaError::kSbufRange});
  d = contiguous(false, 0, 0, 64);
  d.count1 = 3;
  d.sbuf_stride1 = model::kDmaSbufBytes / 2;
  cases.push_back({d, DmaError::kSbufRange});
  // Transposes: SBUF -> HBM, two planes, rows not a multiple of 16, a row stride in SBUF,
  // rows past the partition's end, columns past the last partition.
  d = transposing(0, 0, 0, 16, 16);
  d.to_hbm = true;
  cases.push_back({d, DmaError::kTranspose});
  d = transposing(0, 0, 0, 16, 16);
  d.count2 = 2;
  cases.push_back({d, DmaError::kTranspose});
  cases.push_back({transposing(0, 0, 0, 24, 16), DmaError::kTranspose});
  d = transposing(0, 0, 0, 16, 16);
  d.sbuf_stride1 = 32;
  cases.push_back({d, DmaError::kTranspose});
  cases.push_back({transposing(0, 0, 229376 - 32, 32, 16), DmaError::kTranspose});
  cases.push_back({transposing(0, 120, 0, 16, 16), DmaError::kTranspose});
  for (const auto& c : cases) {
    ASSERT_EQ(model::dma_check(c.d, hbm), c.code);
    // The refused descriptor sits inside a list between two legal ones; the list still
    // completes, flagged, and the legal ones still move their data.
    const auto r = tb::run_dma_rtl(
        {{7, {contiguous(false, 0x1000, 0x2000, 256), c.d, contiguous(true, 0x3000, 0x4000, 256)}},
         {8, {contiguous(false, 0x9000, 0x9000, 128)}}},
        options(4, 0.0));
    ASSERT_TRUE(r.ok) << r.failure;
    EXPECT_EQ(r.err_code, static_cast<int>(c.code));
    EXPECT_EQ(r.lists_done, 2u);
    EXPECT_EQ(r.bursts, 8u + 8u + 4u);
  }
}

TEST(DmaRtl, TransposeLoadsBlocksOfSixteenRows) {
  // One engine alone; then eight at once beside plain copies, whose responses take the SBUF
  // port from the drain unit; then a list of two transposes and a copy on one engine.
  const auto one = tb::run_dma_rtl({{3, {transposing(0x10000, 0, 64, 64, 128)}}}, options(11, 0.0));
  expect_clean(one, 1);
  EXPECT_EQ(one.bursts, 64u * 256 / 32);
  // Destinations never overlap across engines (their order is free): the copies write the first
  // 4 KiB of their partitions, each transpose its own 256 bytes above 8 KiB.
  std::vector<DmaList> lists;
  for (int e = 0; e < 8; ++e)
    lists.push_back({e, {transposing(e * kRegionHbm, 8 * e, 8192 + 256 * e, 16 * (1 + e % 3), 16 * (1 + e % 8))}});
  for (int e = 8; e < 16; ++e) lists.push_back({e, {contiguous(e % 2, e * kRegionHbm, e * kRegionSbuf, 4096)}});
  lists.push_back({2, {transposing(0x7000000, 100, 16384, 32, 16), contiguous(false, 0x7100000, 100 * 229376 + 20480, 64),
                       transposing(0x7200000, 112, 16384, 16, 16)}});
  const auto many = tb::run_dma_rtl(lists, options(12, 0.3));
  expect_clean(many, lists.size());
}

TEST(DmaRtl, FieldsTooWideForTheDescriptorAreAnError) {
  DmaDescriptor d = contiguous(false, 0, 0, 65536 + 32);
  EXPECT_THROW(tb::run_dma_rtl({{0, {d}}}, options(5, 0.0)), Error);
  d = contiguous(false, 0, 0, 64);
  d.count1 = 4096;
  EXPECT_THROW(tb::run_dma_rtl({{0, {d}}}, options(5, 0.0)), Error);
}

// Random lists on every engine, each engine in its own HBM and SBUF region; destinations of one
// descriptor never overlap (the engines may write its bursts in any order).
DmaDescriptor random_descriptor(model::SplitMix64& rng, int e) {
  DmaDescriptor d;
  d.to_hbm = rng.below(3) == 0;
  d.bytes = 32 * (1 + rng.below(24));
  d.count1 = 1 + rng.below(6);
  d.count2 = 1 + rng.below(3);
  const uint64_t row = d.bytes + 32 * rng.below(4);
  d.hbm_stride1 = row;
  d.hbm_stride2 = row * d.count1 + 32 * rng.below(64);
  d.sbuf_stride1 = rng.below(2) ? 229376 : row;
  d.sbuf_stride2 = d.sbuf_stride1 == 229376 ? row : row * d.count1 + 32 * rng.below(8);
  d.hbm_addr = e * kRegionHbm + 32 * rng.below(static_cast<uint32_t>(kRegionHbm / 64 / 32));
  d.sbuf_addr = 8ull * e * 229376 + 32 * rng.below(64);  // partitions 8e .. 8e + 7
  if (rng.below(20) == 0) d.bytes = 0;  // now and then a refused one
  if (rng.below(5) == 0) {
    // A transposing load: 16 or 32 columns from any partition, into the engine's own 2 KiB of
    // every partition above 128 KiB (the copies stay below).
    d = transposing(d.hbm_addr, rng.below(97), 131072 + 2048 * e + 32 * rng.below(8), 16 * (1 + rng.below(3)),
                    16 * (1 + rng.below(2)));
    if (rng.below(20) == 0) d.count1 = 8;  // refused
  }
  return d;
}

TEST(DmaRtlRandom, RandomListsOnEveryEngineFromASeed) {
  const uint64_t base = test::test_seed(70000);
  const int seeds = std::getenv("NCORE_SEED") ? 1 : 12;
  for (int i = 0; i < seeds; ++i) {
    const uint64_t seed = base + static_cast<uint64_t>(i);
    model::SplitMix64 rng(seed);
    std::vector<DmaList> lists;
    for (int e = 0; e < 16; ++e)
      for (uint32_t l = 0, n = rng.below(3); l < n; ++l) {
        DmaList list{e, {}};
        for (uint32_t k = 0, m = 1 + rng.below(3); k < m; ++k)
          list.descriptors.push_back(random_descriptor(rng, e));
        lists.push_back(list);
      }
    auto o = options(seed, rng.below(3) * 0.3);
    o.hbm.sched = rng.below(4) == 0 ? model::HbmSched::kFcfs : model::HbmSched::kReorder;
    o.hbm.channels = 1 << rng.below(2);
    const auto r = tb::run_dma_rtl(lists, o);
    SCOPED_TRACE(fmt::format("seed {} (reproduce: NCORE_SEED={})", seed, seed));
    expect_clean(r, lists.size());
    if (HasFailure()) break;
  }
}

}  // namespace
}  // namespace ncore

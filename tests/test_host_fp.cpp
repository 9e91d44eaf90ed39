// The fast PE build's proof, part one (rtl/common/README.md, "The fast PE build"): the host-FPU
// multiply (on unpacked operands, the array's, and on FP32 bits, the vector engine's) and add
// (rtl/common/nc_host_fp.h) against the synthesizable fp32_mul and fp32_add
// (tb/common/nc_pe_fp_probe.sv), bit for bit:
//   - every pair of FP8 values (E4M3 and E5M2, both orders), and every pair of BF16 values
//     (2^32 pairs, in 16 shards that CTest runs as separate tests);
//   - millions of random FP32 pairs over every value class, and pairs built on the rounding
//     boundaries (ties of products and of sums, results at the subnormal edge and at overflow);
//   - every subnormal and random FP32 words through the unpacked form and back (pack);
//   - the floating-point environment: the default one passes the start-up check, and flushing
//     subnormals or rounding toward zero both fail it and make results differ.
// Part two, the whole array and core in both builds, is tests/test_rtl_fast.cpp. The mutant builds
// of this file (tests/CMakeLists.txt) compile nc_host_fp.h with a fault and must fail.

#include <cfenv>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

#include "Vnc_pe_fp_probe.h"
#include "model/common/numerics.h"
#include "rtl/common/nc_host_fp.h"
#include "tests/fp_operands.h"
#include "tests/seed.h"

namespace ncore {
namespace {

using model::DType;

constexpr int kLanes = 64;  // nc_pe_fp_probe's default

// Feeds operand pairs to the probe kLanes at a time and compares each lane with the host.
class Comparer {
 public:
  void pair(uint32_t a, uint32_t b) {
    probe_->a_i[fill_] = a;
    probe_->b_i[fill_] = b;
    if (++fill_ == kLanes) flush();
  }
  void flush() {
    if (fill_ == 0) return;
    probe_->eval();
    for (int l = 0; l < fill_; ++l) {
      const uint32_t a = probe_->a_i[l], b = probe_->b_i[l];
      const uint32_t mul = nc_host_fp::mul(probe_->a_unpacked_o[l], probe_->b_unpacked_o[l]);
      const uint32_t mul_bits = nc_host_fp::mul_bits(a, b);  // the vector engine's form
      const uint32_t add = nc_host_fp::add(a, b);
      ++checked_;
      if (mul != probe_->mul_o[l]) report("*", a, b, mul, probe_->mul_o[l]);
      if (mul_bits != probe_->mul_o[l]) report("* (on bits)", a, b, mul_bits, probe_->mul_o[l]);
      if (add != probe_->add_o[l]) report("+", a, b, add, probe_->add_o[l]);
    }
    fill_ = 0;
  }
  uint64_t checked() const { return checked_; }
  uint64_t mismatches() const { return mismatches_; }
  // The gtest failure for a run: how many differed and the first few, with their operands.
  ::testing::AssertionResult result() {
    flush();
    if (mismatches_ == 0 && checked_ > 0) return ::testing::AssertionSuccess();
    if (checked_ == 0) return ::testing::AssertionFailure() << "no pair was compared";
    return ::testing::AssertionFailure() << "the host FPU differs from the logic in " << mismatches_ << " of "
                                         << checked_ << " pairs:" << examples_;
  }

 private:
  void report(const char* op, uint32_t a, uint32_t b, uint32_t host, uint32_t logic) {
    if (++mismatches_ <= 5)
      examples_ += fmt::format("\n  {:08x} {} {:08x}: host {:08x}, logic {:08x}", a, op, b, host, logic);
  }
  std::unique_ptr<Vnc_pe_fp_probe> probe_ = std::make_unique<Vnc_pe_fp_probe>();
  int fill_ = 0;
  uint64_t checked_ = 0, mismatches_ = 0;
  std::string examples_;
};

std::vector<uint32_t> every_value(DType t) {
  std::vector<uint32_t> v;
  for (uint32_t p = 0; p < (1u << model::storage_bits(t)); ++p) v.push_back(model::to_fp32_bits(t, p));
  return v;
}

TEST(HostFp, EveryFp8PairMultipliesAndAddsAsTheLogic) {
  std::vector<uint32_t> values = every_value(DType::kE4m3);
  const std::vector<uint32_t> e5m2 = every_value(DType::kE5m2);
  values.insert(values.end(), e5m2.begin(), e5m2.end());
  Comparer c;
  for (uint32_t a : values)
    for (uint32_t b : values) c.pair(a, b);
  EXPECT_TRUE(c.result());
  EXPECT_EQ(c.checked(), values.size() * values.size());
}

// Every BF16 pair, as 16 shards of 2^28 pairs (the first operand's top four bits): each shard
// is its own CTest test (HostFpBf16.EveryBf16Pair.ShardN) so that they run in parallel.
class HostFpBf16 : public ::testing::TestWithParam<int> {};

TEST_P(HostFpBf16, EveryBf16PairMultipliesAndAddsAsTheLogic) {
  const uint32_t shard = static_cast<uint32_t>(GetParam());
  Comparer c;
  for (uint32_t a = shard << 12; a < (shard + 1) << 12; ++a)
    for (uint32_t b = 0; b < 0x10000u; ++b) c.pair(a << 16, b << 16);
  EXPECT_TRUE(c.result());
  EXPECT_EQ(c.checked(), uint64_t{1} << 28);
}
INSTANTIATE_TEST_SUITE_P(Shards, HostFpBf16, ::testing::Range(0, 16));

// A value 1 + i * 2^-12 (i < 2^11) times 2^e, negated on request: two such operands multiply to
// (1 + (i + j) 2^-12 + i j 2^-24) 2^(e + f), whose last term decides the rounding, so small i
// and j put products on and next to the ties.
uint32_t tie_operand(uint32_t i, int biased_exp, bool negative) {
  return (negative ? 0x80000000u : 0u) | static_cast<uint32_t>(biased_exp) << 23 | i << 11;
}

TEST(HostFp, RandomFp32PairsAndRoundingBoundariesMatchTheLogic) {
  model::SplitMix64 rng(test::test_seed(52));
  Comparer c;
  for (int n = 0; n < 4000000; ++n) {
    const uint32_t a = test::operand(rng);
    // Half of the sums pair a value with a near-negation of itself: cancellation paths.
    c.pair(a, rng.below(2) ? test::operand(rng) : (a ^ 0x80000000u) + rng.below(5) - 2);
  }
  for (int n = 0; n < 1000000; ++n) {
    // Products on the ties, at every exponent: normal, subnormal (biased sums near 127 - 23),
    // overflowing (biased sums near 381).
    const int ea = 1 + static_cast<int>(rng.below(254)), eb = 1 + static_cast<int>(rng.below(254));
    const uint32_t a = tie_operand(rng.below(8), ea, rng.below(2)), b = tie_operand(rng.below(8), eb, rng.below(2));
    c.pair(a, b);
    // Sums on the ties: x + half an ulp of x (times an odd number, and a shade off), at exponent
    // gaps that keep the half-ulp bit, including the subnormal range.
    const uint32_t x = rng.next32() & 0xFF7FFFFFu;
    const int ex = static_cast<int>((x >> 23) & 0xFFu);
    if (ex > 25) {
      const uint32_t half_ulp = static_cast<uint32_t>(ex - 24) << 23;  // 2^(e - 24) as FP32
      c.pair(x, (half_ulp | (rng.below(4) << 21) | (rng.below(2) ? 0x80000000u : 0u)) + rng.below(3) - 1);
    }
  }
  EXPECT_TRUE(c.result());
}

// pack() reverses the array edge's unpack for every FP32 value but NaN (any NaN packs to the
// canonical one): every subnormal and every exponent's ends, and random words. A product by 1.0
// returns its operand exactly, so mul(x, 1.0) == x checks pack on both the host and the logic.
TEST(HostFp, PackReversesUnpackOnEverySubnormalAndRandomWords) {
  model::SplitMix64 rng(test::test_seed(53));
  Comparer c;
  const uint32_t one = 0x3F800000u;
  for (uint32_t m = 0; m < (1u << 23); ++m) {
    c.pair(m, one);
    c.pair(0x80000000u | m, one);
  }
  for (uint32_t e = 0; e < 256; ++e)
    for (uint32_t m : {0u, 1u, 0x400000u, 0x7FFFFFu}) c.pair(e << 23 | m, one);
  for (int n = 0; n < 1000000; ++n) c.pair(rng.next32(), one);
  EXPECT_TRUE(c.result());
}

// Subnormal products and sums, which an environment that flushes them gets wrong.
void subnormal_pairs(Comparer& c) {
  for (uint32_t m = 1; m < (1u << 23); m += 4099) {
    c.pair(m, 0x3F800000u);       // a subnormal operand times 1
    c.pair(m, m + 0x00800000u);   // a subnormal plus a normal
    c.pair(0x20000000u | m, 0x1F000000u | m);  // normal operands, subnormal product
  }
  for (int k = 1; k < 4096; ++k) c.pair(0x3F800000u + static_cast<uint32_t>(k), 0x3F800000u + static_cast<uint32_t>(3 * k));
}

TEST(HostFp, DefaultEnvironmentPassesAndFaultyOnesAreCaught) {
  EXPECT_EQ(nc_host_fp::environment_error(), "");
  {
    Comparer c;
    subnormal_pairs(c);
    EXPECT_TRUE(c.result());
  }
  // Round toward zero: the start-up check refuses it, and the products and sums differ.
  ASSERT_EQ(std::fesetround(FE_TOWARDZERO), 0);
  const std::string round_error = nc_host_fp::environment_error();
  Comparer round_toward_zero;
  subnormal_pairs(round_toward_zero);
  round_toward_zero.flush();
  std::fesetround(FE_TONEAREST);
  EXPECT_NE(round_error.find("round-to-nearest-even"), std::string::npos) << round_error;
  EXPECT_GT(round_toward_zero.mismatches(), 0u);
#if defined(__x86_64__) || defined(__i386__)
  for (unsigned flag : {0x8000u, 0x0040u}) {  // MXCSR.FTZ, MXCSR.DAZ
    const unsigned saved = _mm_getcsr();
    _mm_setcsr(saved | flag);
    const std::string flush_error = nc_host_fp::environment_error();
    Comparer flushed;
    subnormal_pairs(flushed);
    flushed.flush();
    _mm_setcsr(saved);
    EXPECT_NE(flush_error.find(flag == 0x8000u ? "MXCSR.FTZ" : "MXCSR.DAZ"), std::string::npos) << flush_error;
    EXPECT_GT(flushed.mismatches(), 0u) << "MXCSR flag " << flag;
  }
#endif
  EXPECT_EQ(nc_host_fp::environment_error(), "");
  EXPECT_THROW(
      {
        std::fesetround(FE_UPWARD);
        try {
          nc_host_fp::require_environment();
        } catch (...) {
          std::fesetround(FE_TONEAREST);
          throw;
        }
        std::fesetround(FE_TONEAREST);
      },
      std::runtime_error);
}

}  // namespace
}  // namespace ncore

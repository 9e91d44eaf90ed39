// The golden vector engine against values worked out by hand: each opcode, the documented
// reduction and scan orders, NaN and signed-zero rules of max/min, the integer class, the
// transpose and shuffle permutations, stochastic-rounding reproducibility, and every refusal.

#include <cmath>

#include <gtest/gtest.h>

#include "model/common/error.h"
#include "model/vector/vector_engine.h"

namespace ncore {
namespace {

using model::AluOp;
using model::DType;
using model::MemSpace;
using model::VeError;
using model::VeInstruction;
using isa::Opcode;

constexpr uint32_t f(float x) { return __builtin_bit_cast(uint32_t, x); }

class VectorModel : public ::testing::Test {
 protected:
  model::VeConfig cfg{8, 4096, 1024};
  model::VeMemory mem{cfg};

  static model::VeAccess row(uint32_t addr, uint16_t n, MemSpace s = MemSpace::kSbuf) {
    model::VeAccess a;
    a.space = s;
    a.addr = addr;
    a.count = {n, 1, 1, 1};
    return a;
  }
  VeInstruction base(Opcode op, uint16_t n, DType t = DType::kFp32) {
    VeInstruction in;
    in.opcode = op;
    in.in0 = in.in1 = in.out = t;
    in.partitions = cfg.lanes;
    in.src0 = row(0, n);
    in.src1 = row(1024, n);
    in.dst = row(2048, n);
    return in;
  }
  void set(int lane, uint32_t addr, std::initializer_list<float> v) {
    for (float x : v) {
      mem.sbuf.write(lane, addr, 4, f(x));
      addr += 4;
    }
  }
  std::vector<uint32_t> run(const VeInstruction& in, int lane) {
    const auto writes = model::ve_writes(in, cfg, mem);
    model::ve_apply(writes, in, mem);
    std::vector<uint32_t> out;
    for (const auto& w : writes) out.push_back(w.data[lane]);
    return out;
  }
};

TEST_F(VectorModel, TensorTensorAndTensorScalarByHand) {
  set(3, 0, {1.5f, -2.0f, 0.1f});
  set(3, 1024, {2.25f, 0.5f, 3.0f});
  auto in = base(Opcode::kTensorTensor, 3);
  in.op0 = AluOp::kSubtract;
  EXPECT_EQ(run(in, 3), (std::vector<uint32_t>{f(-0.75f), f(-2.5f), f(0.1f - 3.0f)}));
  // out = (s0 - x) * s1 with reverse0: (10 - x) * 2
  in = base(Opcode::kTensorScalar, 3);
  in.op0 = AluOp::kSubtract;
  in.reverse0 = true;
  in.s0 = f(10.0f);
  in.op1 = AluOp::kMultiply;
  in.s1 = f(2.0f);
  EXPECT_EQ(run(in, 3), (std::vector<uint32_t>{f(17.0f), f(24.0f), f((10.0f - 0.1f) * 2.0f)}));
  // Per-partition scalar: lane 3's word at 4000.
  mem.sbuf.write(3, 4000, 4, f(-1.0f));
  in.s1_per_partition = true;
  in.s1 = 4000;
  EXPECT_EQ(run(in, 3), (std::vector<uint32_t>{f(-8.5f), f(-12.0f), f(-(10.0f - 0.1f))}));
  // bypass passes the tensor side through whatever reverse says
  in.op0 = AluOp::kBypass;
  in.op1 = AluOp::kBypass;
  in.reverse1 = true;
  EXPECT_EQ(run(in, 3), (std::vector<uint32_t>{f(1.5f), f(-2.0f), f(0.1f)}));
}

TEST_F(VectorModel, ReduceFoldsInOrderAndScanRestartsEachRow) {
  // 1e8 + 1 - 1e8 in FP32 left to right is 0 (1 is lost), right to left would be 1.
  set(0, 0, {1e8f, 1.0f, -1e8f, 4.0f, 5.0f, 6.0f});
  auto in = base(Opcode::kTensorReduce, 3);
  in.src0.count = {3, 2, 1, 1};
  in.src0.stride = {1, 3, 0, 0};
  in.dst.count = {2, 1, 1, 1};
  in.op0 = AluOp::kAdd;
  EXPECT_EQ(run(in, 0), (std::vector<uint32_t>{f(0.0f), f(15.0f)}));
  in.op0 = AluOp::kMax;
  EXPECT_EQ(run(in, 0), (std::vector<uint32_t>{f(1e8f), f(6.0f)}));
  // Reducing -0 alone keeps -0 (the fold starts from the first element, not +0).
  set(1, 0, {-0.0f});
  in.src0.count = {1, 1, 1, 1};
  in.dst.count = {1, 1, 1, 1};
  in.op0 = AluOp::kAdd;
  EXPECT_EQ(run(in, 1), (std::vector<uint32_t>{0x80000000u}));
  // scan: acc = (acc * in0) + in1, acc = 1 at each row of 2
  set(2, 0, {2.0f, 3.0f, 4.0f, 5.0f});
  set(2, 1024, {1.0f, 1.0f, 0.5f, 0.5f});
  in = base(Opcode::kTensorTensorScan, 4);
  in.src0.count = in.src1.count = in.dst.count = {2, 2, 1, 1};
  in.src0.stride = in.src1.stride = in.dst.stride = {1, 2, 0, 0};
  in.op0 = AluOp::kMultiply;
  in.op1 = AluOp::kAdd;
  in.s0 = f(1.0f);
  EXPECT_EQ(run(in, 2), (std::vector<uint32_t>{f(3.0f), f(10.0f), f(4.5f), f(23.0f)}));
}

TEST_F(VectorModel, MaxMinNanAndSignedZero) {
  const uint32_t nan = 0x7FC00000u;
  EXPECT_EQ(model::ve_alu(AluOp::kMax, f(-0.0f), f(0.0f), false), f(0.0f));
  EXPECT_EQ(model::ve_alu(AluOp::kMin, f(0.0f), f(-0.0f), false), f(-0.0f));
  EXPECT_EQ(model::ve_alu(AluOp::kMax, 0xFFC00001u, f(1.0f), false), nan);
  EXPECT_EQ(model::ve_alu(AluOp::kMin, f(1.0f), 0x7F800001u, false), nan);
  EXPECT_EQ(model::ve_alu(AluOp::kMax, f(-INFINITY), f(-3.0f), false), f(-3.0f));
  EXPECT_EQ(model::ve_alu(AluOp::kSubtract, f(INFINITY), f(INFINITY), false), nan);
}

TEST_F(VectorModel, IntegerClassShiftsAndClamps) {
  for (int l = 0; l < cfg.lanes; ++l) {
    mem.sbuf.write(l, 0, 2, 0x8001u);  // int16 -32767
    mem.sbuf.write(l, 2, 2, 0x00F0u);  // 240
  }
  auto in = base(Opcode::kTensorScalar, 2, DType::kInt16);
  in.op0 = AluOp::kAshr;
  in.s0 = 4;
  in.op1 = AluOp::kBypass;
  in.out = DType::kInt8;
  // -32767 >> 4 = -2048 -> clamps to -128; 240 >> 4 = 15
  EXPECT_EQ(run(in, 5), (std::vector<uint32_t>{0x80u, 15u}));
  in.op0 = AluOp::kShl;
  in.out = DType::kInt32;
  EXPECT_EQ(run(in, 5), (std::vector<uint32_t>{static_cast<uint32_t>(-32767 * 16), 240u * 16}));
  // mixing a bitwise op with a float type is refused
  in.in0 = DType::kBf16;
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kDtype);
}

TEST_F(VectorModel, TransposeAndShufflePermutePartitions) {
  // Lanes 8: quadrants of 2. Element e of partition p holds 16 * p + e.
  for (int l = 0; l < cfg.lanes; ++l)
    for (uint32_t e = 0; e < 4; ++e) mem.sbuf.write(l, e * 2, 2, 16u * l + e);
  auto in = base(Opcode::kTranspose, 4, DType::kBf16);
  in.dst = row(2048, 4);
  const auto writes = model::ve_writes(in, cfg, mem);
  ASSERT_EQ(writes.size(), 4u);
  // block 0 (elements 0,1): out[p][j] = in[j][p] inside each pair of partitions
  EXPECT_EQ(writes[0].data[4], 16u * 4 + 0);  // p=4 (quadrant base 4, p'=0), j=0: in[4][0]
  EXPECT_EQ(writes[0].data[5], 16u * 4 + 1);  // p'=1, j=0: in[4][1]
  EXPECT_EQ(writes[1].data[4], 16u * 5 + 0);  // j=1: in[5][0]
  EXPECT_EQ(writes[3].data[5], 16u * 5 + 3);  // block 1, j=1, p'=1: in[5][3]
  in = base(Opcode::kShuffle, 4, DType::kBf16);
  in.shuffle[0] = 1;
  in.shuffle[1] = 1;
  const auto sh = model::ve_writes(in, cfg, mem);
  EXPECT_EQ(sh[2].data[6], 16u * 7 + 2);
  EXPECT_EQ(sh[2].data[7], 16u * 7 + 2);
}

TEST_F(VectorModel, StochasticRoundingReproducesFromTheSeed) {
  for (int l = 0; l < cfg.lanes; ++l)
    for (uint32_t e = 0; e < 16; ++e) mem.sbuf.write(l, 4 * e, 4, f(1.0f + 0x1p-10f * (e + 1)));
  auto in = base(Opcode::kTensorCopy, 16);
  in.out = DType::kBf16;
  in.stochastic = true;
  in.seed = 1234;
  const auto a = model::ve_writes(in, cfg, mem), b = model::ve_writes(in, cfg, mem);
  int up = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].data, b[i].data);
    for (int l = 0; l < cfg.lanes; ++l) up += a[i].data[l] != 0x3F80u;
  }
  // 1 + k/1024 sits k/8 of the way to the next BF16 step: some round up, most do not.
  EXPECT_GT(up, 0);
  EXPECT_LT(up, 16 * cfg.lanes);
  in.seed = 1235;
  EXPECT_NE(model::ve_writes(in, cfg, mem)[5].data, a[5].data);
}

TEST_F(VectorModel, ActivationScalesBiasesAndSums) {
  model::VeConfig scfg = cfg;
  scfg.scalar_engine = true;
  set(2, 0, {1.0f, -4.0f, 3.0f});
  auto in = base(Opcode::kActivation, 3);
  in.act_func = model::ActFunc::kRelu;
  in.s0 = f(2.0f);   // scale
  in.s1 = f(-1.0f);  // bias
  in.acc_enable = true;
  in.acc_addr = 4000;
  const auto writes = model::ve_writes(in, scfg, mem);
  ASSERT_EQ(writes.size(), 4u);  // three elements, then the sum
  EXPECT_EQ(writes[0].data[2], f(1.0f));   // relu(2 * 1 - 1)
  EXPECT_EQ(writes[1].data[2], f(0.0f));   // relu(-9)
  EXPECT_EQ(writes[2].data[2], f(5.0f));
  EXPECT_EQ(writes[3].addr, 4000u);
  EXPECT_EQ(writes[3].data[2], f(6.0f));
  // activation belongs to the scalar engine only; the scalar engine takes nothing else
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kOpcode);
  auto copy = base(Opcode::kTensorCopy, 3);
  EXPECT_EQ(model::ve_check(copy, scfg), VeError::kOpcode);
  in.act_func = static_cast<model::ActFunc>(10);
  EXPECT_EQ(model::ve_check(in, scfg), VeError::kAluOp);
  in.act_func = model::ActFunc::kExp;
  in.acc_addr = 4002;
  EXPECT_EQ(model::ve_check(in, scfg), VeError::kAddress);
}

TEST_F(VectorModel, EveryRefusalCode) {
  auto ok = base(Opcode::kTensorTensor, 4);
  ok.op0 = AluOp::kAdd;
  ASSERT_EQ(model::ve_check(ok, cfg), VeError::kNone);
  auto in = ok;
  in.opcode = static_cast<Opcode>(9);
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kOpcode);
  in = ok;
  in.out = static_cast<DType>(12);
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kDtype);
  in = ok;
  in.op0 = AluOp::kBypass;
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kAluOp);
  in = ok;
  in.opcode = Opcode::kTensorReduce;
  in.op0 = AluOp::kMultiply;
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kAluOp);
  in = ok;
  in.partitions = 3;  // 3 > a quadrant of 2: must start at 0 or 4
  in.start_partition = 2;
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kPartitions);
  in.start_partition = 4;
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kNone);
  in = ok;
  in.opcode = Opcode::kTranspose;
  in.partitions = 3;
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kPartitions);
  in = ok;
  in.src1.count = {5, 1, 1, 1};
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kShape);
  in = ok;
  in.src0 = row(0, 4097, MemSpace::kPsum);  // PSUM free size at most 4K
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kShape);
  in = ok;
  in.src0.addr = 2;  // FP32 misaligned
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kAddress);
  in = ok;
  in.src0.stride = {-1, 0, 0, 0};  // walks below address 0
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kAddress);
  in.src0.addr = 12;
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kNone);
  in = ok;
  in.dst.addr = cfg.sbuf_bytes - 12;  // 4 elements need 16 bytes
  EXPECT_EQ(model::ve_check(in, cfg), VeError::kAddress);
  EXPECT_THROW(model::ve_writes(in, cfg, mem), Error);
}

}  // namespace
}  // namespace ncore

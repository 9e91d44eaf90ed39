// The NeuronCore instruction set: the generated layout, encoding and decoding, the assembler's
// syntax and errors, and the builder API.

#include <regex>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "model/core/core_isa.h"
#include "model/core/program.h"
#include "tests/seed.h"

namespace ncore::model {
namespace {

// A legal word of opcode `o`: random header and payload fields, reserved bits zero.
isa::Word random_word(const isa::OpcodeInfo& o, SplitMix64& rng) {
  isa::Word w{};
  auto fill = [&](const isa::FormatInfo& f) {
    for (int i = 0; i < f.field_count; ++i)
      if (f.fields[i].width) isa::set_bits(w, f.fields[i].lsb, f.fields[i].width, rng.next());
  };
  fill(isa::kFormats[static_cast<int>(isa::Format::kHeader)]);
  fill(isa::kFormats[static_cast<int>(o.format)]);
  isa::set_bits(w, 0, 8, static_cast<uint64_t>(o.opcode));
  isa::HeaderFields h = isa::unpack_header(w);
  h.sig_op = static_cast<isa::SigOp>(static_cast<int>(h.sig_op) % isa::kNumSigOp);
  if (!h.wait_en) h.wait_sem = h.wait_value = 0;   // unused fields must be zero
  if (h.sig_op == isa::SigOp::kNone) h.sig_sem = h.sig_value = 0;
  isa::pack(w, h);
  return w;
}

isa::Queue first_queue(const isa::OpcodeInfo& o) {
  for (int q = 0; q < isa::kNumQueue; ++q)
    if (o.queue_mask >> q & 1) return static_cast<isa::Queue>(q);
  return isa::Queue::kPe;
}

TEST(Isa, FormatsFitTheWordAndFieldsDoNotOverlap) {
  for (const auto& f : isa::kFormats) {
    std::vector<bool> used(isa::kWordBits, false);
    for (int i = 0; i < f.field_count; ++i)
      for (int b = f.fields[i].lsb; b < f.fields[i].lsb + f.fields[i].width; ++b) {
        ASSERT_LT(b, isa::kWordBits) << f.name << "." << f.fields[i].name;
        EXPECT_FALSE(used[b]) << f.name << "." << f.fields[i].name << " bit " << b;
        used[b] = true;
      }
  }
}

TEST(Isa, EncodeDecodeRoundTripsEveryField) {
  SplitMix64 rng(test::test_seed(1));
  for (const auto& o : isa::kOpcodes)
    for (int n = 0; n < 500; ++n) {
      const isa::Word w = random_word(o, rng);
      CoreInstr in;
      std::string why;
      ASSERT_EQ(decode(w, first_queue(o), &in, &why), DecodeError::kNone) << o.name << ": " << why;
      EXPECT_EQ(encode(in), w) << o.name << " trial " << n;
    }
}

TEST(Isa, DecoderRejectsIllegalWords) {
  std::string why;
  isa::Word w{};
  isa::set_bits(w, 0, 8, 0xFF);
  EXPECT_EQ(decode(w, isa::Queue::kPe, nullptr, &why), DecodeError::kIllegalOpcode);
  EXPECT_NE(why.find("0xff"), std::string::npos) << why;

  isa::set_bits(w, 0, 8, static_cast<uint64_t>(isa::Opcode::kLoadStationary));
  EXPECT_EQ(decode(w, isa::Queue::kDve, nullptr, &why), DecodeError::kWrongQueue);
  EXPECT_EQ(decode(w, isa::Queue::kPe, nullptr, &why), DecodeError::kNone);

  isa::Word r = w;
  r[15] |= uint64_t{1} << 63;  // bit 1023: above every format
  EXPECT_EQ(decode(r, isa::Queue::kPe, nullptr, &why), DecodeError::kIllegalReserved);
  EXPECT_NE(why.find("bit 1023"), std::string::npos) << why;
  r = w;                        // wait fields without wait_en, signal fields without sig_op
  isa::set_bits(r, isa::kFormats[0].fields[2].lsb, 1, 1);
  EXPECT_EQ(decode(r, isa::Queue::kPe, nullptr, &why), DecodeError::kIllegalReserved);
  EXPECT_NE(why.find("wait_en is 0"), std::string::npos) << why;
  r = w;
  r[0] |= uint64_t{1} << 62;   // header's reserved bits
  EXPECT_EQ(decode(r, isa::Queue::kPe, nullptr, &why), DecodeError::kIllegalReserved);
  r = w;                        // a ve-format bit is reserved in a te-format word
  isa::set_bits(r, isa::kFormats[static_cast<int>(isa::Format::kTe)].lsb +
                       isa::kFormats[static_cast<int>(isa::Format::kTe)].bits, 1, 1);
  EXPECT_EQ(decode(r, isa::Queue::kPe, nullptr, &why), DecodeError::kIllegalReserved);

  isa::Word s = w;
  isa::HeaderFields h = isa::unpack_header(s);
  h.sig_op = static_cast<isa::SigOp>(3);  // not a sig_op
  isa::pack(s, h);
  EXPECT_EQ(decode(s, isa::Queue::kPe, nullptr, &why), DecodeError::kIllegalSigOp);
}

// ---- assembler ---------------------------------------------------------------------------

std::string asm_error(const std::string& text) {
  try {
    assemble(text, "t.s");
  } catch (const AsmError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Asm, ErrorsNameFileLineColumnAndReason) {
  struct Case {
    const char* text;
    const char* expect;  // a prefix "t.s:L:C:" and a fragment of the reason
    const char* reason;
  } cases[] = {
      {"nop\n", "t.s:1:1:", "before any '.queue'"},
      {".queue pe\n  frobnicate k=1\n", "t.s:2:3:", "unknown instruction 'frobnicate'"},
      {".queue dve\nload_stationary k=1 m=1\n", "t.s:2:1:", "cannot go in the dve queue"},
      {".queue pe\nload_stationary k=600 m=1\n", "t.s:2:19:", "field k: expected an unsigned 9-bit value, found 600"},
      {".queue pe\nload_stationary k=1 m=1 bogus=3\n", "t.s:2:25:", "has no field 'bogus'"},
      {".queue pe\nload_stationary k=nowhere m=1\n", "t.s:2:19:", "unknown name 'nowhere'"},
      {".queue pe\nload_stationary k=(1+2 m=1\n", "t.s:2:", "expected ')'"},
      {".queue sp\nsem_wait ready>=1\n", "t.s:2:10:", "expected a semaphore"},
      {".sem a\n.queue sp\nsem_wait a>=70000\n", "t.s:3:", "0..65535"},
      {".rept i 2\nnop\n", "t.s:1:1:", "without a matching '.endr'"},
      {".queue pe\n.if 1\nnop\n", "t.s:2:1:", "without a matching '.endif'"},
      {".queue pe\nload_stationary dtype=fp64 k=1 m=1\n", "t.s:2:23:", "fp64"},
      {".queue pe\nload_stationary k=0 m=1\n", "t.s:2:1:", "tensor engine would refuse this (K out of range)"},
      {".queue dve\ntensor_copy partitions=200\n", "t.s:2:1:", "vector engine would refuse this (partitions)"},
      {".queue sp\ndma_copy bytes=33\n", "t.s:2:1:", "DMA engines would refuse this descriptor (misaligned)"},
      {".tensor X hbm dtype=bf16 shape=4x4\n", "t.s:1:1:", "addr= is required"},
      {".tensor X sbuf addr=0 shape=200x4\n", "t.s:1:1:", "leave the 128 SBUF partitions"},
      {".equ A 1\n.equ A 2\n", "t.s:2:6:", "'A' is already defined"},
      {".queue pe\nx:\nx: nop\n", "t.s:3:1:", "label 'x' defined twice"},
      {".queue act\nactivation func=softplus\n", "t.s:2:", "softplus"},
      {".queue dve\nmemset value=300 out=int8 dst_ap=[[1,4]]\n", "t.s:2:14:", "300 does not fit int8"},
      {".queue dve\nmemset value=2.5 out=int16 dst_ap=[[1,4]]\n", "t.s:2:14:", "expected an integer for int16"},
      {".queue dve\nmemset value=1e6 out=e4m3 dst_ap=[[1,4]]\n", "t.s:2:14:", "overflows e4m3"},
      {".queue dve\nmemset value=bits:0x1ff out=int8 dst_ap=[[1,4]]\n", "t.s:2:1:", "vector engine would refuse this (value)"},
      {".queue dve\niota pattern=[[1,8]] dst_ap=[[1,16]]\n", "t.s:2:14:", "they must agree"},
      {".queue dve\ntensor_copy value=1\n", "t.s:2:19:", "tensor_copy has no value"},
      {".queue dve\naffine_select cmp=above\n", "t.s:2:19:", "unknown comparison 'above'"},
      {".queue dve\nbn_stats src0_ap=[[1,600]] dst_ap=[[1,6]]\n", "t.s:2:1:", "vector engine would refuse this (shape)"},
      {".queue sp\ndma_transpose bytes=32 count1=8 hbm_stride1=32\n", "t.s:2:1:", "would refuse this descriptor (transpose"},
  };
  for (const auto& c : cases) {
    const std::string e = asm_error(c.text);
    EXPECT_EQ(e.rfind(c.expect, 0), 0u) << c.text << " -> " << e;
    EXPECT_NE(e.find(c.reason), std::string::npos) << c.text << " -> " << e;
  }
}

TEST(Asm, ReptIfAndExpressions) {
  const Program p = assemble(R"(
.equ BASE 0x100
.sem go 2
.queue dve
.rept i 4
  .if (i%2)==0
    tensor_copy partitions=4 src0=BASE+i*64 dst=sbuf:0x2000+i*64 src0_ap=[[1,16]] dst_ap=[[1,16]] wait=go>=i
  .else
    tensor_scalar partitions=4 op0=multiply s0=2 src0=BASE dst=psum:PSUM_BANK src0_ap=[[32,2],[1,16]] dst_ap=[[16,2],[1,16]] signal=go+=1
  .endif
.endr
)",
                             "t.s");
  ASSERT_EQ(p.queues[2].size(), 4u);
  EXPECT_EQ(p.sem_init[0], 2u);
  EXPECT_EQ(p.queues[2][2].ve.src0.addr, 0x100u + 128);
  EXPECT_EQ(p.queues[2][2].wait_value, 2u);
  const VeInstruction& ts = p.queues[2][1].ve;
  EXPECT_EQ(ts.opcode, Opcode::kTensorScalar);
  EXPECT_EQ(ts.s0, 0x40000000u);  // 2 in a float-class instruction is 2.0f
  EXPECT_EQ(ts.dst.space, MemSpace::kPsum);
  EXPECT_EQ(ts.dst.addr, 2048u);
  EXPECT_EQ(ts.src0.count[0], 16);
  EXPECT_EQ(ts.src0.count[1], 2);
  EXPECT_EQ(ts.src0.stride[1], 32);
  EXPECT_EQ(p.queues[2][1].sig_op, isa::SigOp::kIncrement);
  EXPECT_EQ(p.queues[2][3].loc.line, 9);
}

// The engine operations of issue 29: values converted to the output type, NKI's pattern, the
// comparison names, and dma_transpose (a transposing dma_copy).
TEST(Asm, EngineOperationsFieldsAndValues) {
  const Program p = assemble(R"(
.queue dve
memset value=-3 out=int8 partitions=8 dst=0 dst_ap=[[1,16]]
memset value=1.5 out=bf16 partitions=8 dst=64 dst_ap=[[1,16]]
iota offset=5 channel_multiplier=16 pattern=[[4,2],[1,16]] out=fp32 partitions=8 dst=128 dst_ap=[[16,2],[1,16]]
affine_select cmp=greater_equal channel_multiplier=1 pattern=[[-1,16]] value=-inf in0=fp32 out=fp32 partitions=8 src0=0 src0_ap=[[1,16]] dst=512 dst_ap=[[1,16]]
.queue sp
dma_transpose engine=1 hbm_addr=0 sbuf_addr=0 bytes=32 count1=16 hbm_stride1=32
)", "t.s");
  const auto& dve = p.queues[static_cast<int>(isa::Queue::kDve)];
  ASSERT_EQ(dve.size(), 4u);
  EXPECT_EQ(dve[0].ve.value, 0xFDu);
  EXPECT_EQ(dve[1].ve.value, 0x3FC0u);
  EXPECT_EQ(dve[2].ve.offset, 5);
  EXPECT_EQ(dve[2].ve.channel_multiplier, 16);
  EXPECT_EQ(dve[2].ve.step[0], 1);
  EXPECT_EQ(dve[2].ve.step[1], 4);
  EXPECT_EQ(dve[3].ve.cmp_op, isa::CmpOp::kGreaterEqual);
  EXPECT_EQ(dve[3].ve.step[0], -1);
  EXPECT_EQ(dve[3].ve.value, 0xFF800000u);
  const auto& sp = p.queues[static_cast<int>(isa::Queue::kSp)];
  ASSERT_EQ(sp.size(), 1u);
  EXPECT_TRUE(sp[0].dma.transpose);
  EXPECT_FALSE(sp[0].dma.to_hbm);
}

TEST(Asm, DisassemblyAssemblesBackToTheSameWords) {
  for (const char* name : {"gemm_bf16_1024.s", "softmax.s", "rmsnorm.s", "causal_attention.s", "layernorm.s",
                           "dma_transpose.s"}) {
    const Program p = assemble_file(std::string(NCORE_SOURCE_DIR "/tests/programs/") + name);
    std::string text;
    for (int i = 0; i < kNumSemaphores; ++i) text += fmt::format(".sem x{}\n", i);
    for (int q = 0; q < isa::kNumQueue; ++q) {
      text += fmt::format(".queue {}\n", isa::kQueueNames[q]);
      for (const auto& in : p.queues[q]) text += disassemble(in) + "\n";
    }
    const Program back = assemble(text, "disassembly.s");
    for (int q = 0; q < isa::kNumQueue; ++q) {
      ASSERT_EQ(back.queues[q].size(), p.queues[q].size()) << name;
      for (size_t i = 0; i < p.queues[q].size(); ++i)
        ASSERT_EQ(encode(back.queues[q][i]), encode(p.queues[q][i]))
            << name << " " << isa::kQueueNames[q] << "[" << i << "]: " << disassemble(p.queues[q][i]);
    }
  }
}

TEST(Asm, BuilderMakesTheSameProgram) {
  const Program text = assemble(R"(
.sem loaded
.queue sp
dma_copy engine=3 dir=hbm_to_sbuf hbm_addr=0x1000 sbuf_addr=0 bytes=256 count1=4 hbm_stride1=256 sbuf_stride1=SBUF_PARTITION signal=loaded+=1
.queue pe
nc_matmul dtype=bf16 k=4 m=8 n=64 stationary=0 moving=0x40 stride=2 psum_bank=1 wait=loaded>=1
.queue act
activation func=exp scale=0.5 bias=-1 partitions=8 src0=psum:2048 dst=0x800 src0_ap=[[1,64]] dst_ap=[[1,64]] tag=7
)",
                                "t.s");
  ProgramBuilder b;
  const int loaded = b.semaphore("loaded");
  DmaDescriptor d;
  d.hbm_addr = 0x1000;
  d.bytes = 256;
  d.count1 = 4;
  d.hbm_stride1 = 256;
  d.sbuf_stride1 = kSbufPartitionStride;
  b.dma(d, 3).signal(loaded);
  b.pe(load_stationary(DType::kBf16, 4, 8, 0, 2)).wait(loaded, 1);
  b.pe(multiply_moving(DType::kBf16, 4, 64, 0x40, 2, 1, 0, false));
  VeInstruction a;
  a.act_func = ActFunc::kExp;
  a.s0 = float_to_bits(0.5f);
  a.s1 = float_to_bits(-1.0f);
  a.partitions = 8;
  a.src0 = {MemSpace::kPsum, 2048, {64, 1, 1, 1}, {1, 0, 0, 0}};
  a.dst = {MemSpace::kSbuf, 0x800, {64, 1, 1, 1}, {1, 0, 0, 0}};
  b.act(a).tag(7);
  const Program built = b.take();
  for (int q = 0; q < isa::kNumQueue; ++q) {
    ASSERT_EQ(built.queues[q].size(), text.queues[q].size()) << q;
    for (size_t i = 0; i < built.queues[q].size(); ++i)
      EXPECT_EQ(encode(built.queues[q][i]), encode(text.queues[q][i]))
          << isa::kQueueNames[q] << "[" << i << "]\n  built: " << disassemble(built.queues[q][i])
          << "\n  text:  " << disassemble(text.queues[q][i]);
  }
}

}  // namespace
}  // namespace ncore::model
